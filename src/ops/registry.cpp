// Builds the rule table once, from every family's registration.
#include "ops/rules.h"

namespace kiln::ops {

namespace {
RuleTable build_table() {
  RuleTable table{};
  register_leaf_rules(table);
  register_creation_rules(table);
  register_random_rules(table);
  register_unary_rules(table);
  register_binary_rules(table);
  register_movement_rules(table);
  register_reduce_rules(table);
  register_matmul_rules(table);
  register_indexing_rules(table);
  return table;
}
}  // namespace

const PrimitiveRules& rules(Primitive op) {
  static const RuleTable table = build_table();
  return table[static_cast<size_t>(op)];
}

std::string ints_string(const std::vector<int64_t>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) text += ",";
    text += std::to_string(values[i]);
  }
  return text + "]";
}

}  // namespace kiln::ops
