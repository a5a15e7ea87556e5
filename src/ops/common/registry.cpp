// Builds the rule table once, from every family's registration.
#include <string>
#include <vector>

#include "ops/common/rules.h"

namespace kiln::ops {

namespace {
RuleTable build_table() {
  RuleTable table{};
  register_leaf_rules(table);
  register_creation_rules(table);
  register_random_rules(table);
  register_unary_rules(table);
  register_binary_rules(table);
  register_bitwise_rules(table);
  register_movement_rules(table);
  register_reduce_rules(table);
  register_matmul_rules(table);
  register_indexing_rules(table);
  register_gather_scatter_rules(table);
  register_control_rules(table);
  register_collective_rules(table);
  register_sort_rules(table);
  register_cumulative_rules(table);
  register_linalg_rules(table);
  register_fft_rules(table);
  return table;
}
}  // namespace

const PrimitiveRules& rules(Primitive op) {
  static const RuleTable table = build_table();
  return table[static_cast<size_t>(op)];
}

std::vector<std::string> rule_problems(const PrimitiveRules& row) {
  std::vector<std::string> problems;
  if (!row.infer) problems.push_back("no shape/dtype rule");
  if (row.fusion == Fusion::control) {
    // Run by ops::run_control with each executor's bodies, differentiated by
    // transform/autodiff and batched by transform/batching over those bodies:
    // nothing more belongs in the row.
    if (row.evaluate || row.vjp || row.jvp || row.batch || row.lower || row.kernel != NativeKernel::none)
      problems.push_back("a control flow row with kernels or derivative rules of its own");
    return problems;
  }
  if (!row.evaluate) problems.push_back("no reference kernel");
  if (row.no_derivative) {
    if (row.vjp || row.jvp) problems.push_back("a derivative waiver but also a derivative rule");
    if (!*row.no_derivative) problems.push_back("a derivative waiver that gives no reason");
  } else {
    if (!row.vjp) problems.push_back("no vjp rule and no waiver");
    if (!row.jvp) problems.push_back("no jvp rule and no waiver");
  }
  if (row.never_batched) {
    if (row.batch) problems.push_back("a batching waiver but also a batching rule");
    if (!*row.never_batched) problems.push_back("a batching waiver that gives no reason");
  } else if (!row.batch) {
    problems.push_back("no batching rule and no waiver");
  }
  if (row.fusion == Fusion::unset) problems.push_back("no fusion kind");
  if (row.cost < 1) problems.push_back("a cost below 1");
  if (row.no_native_lowering) {
    if (!*row.no_native_lowering) problems.push_back("a native-lowering waiver that gives no reason");
  } else if (row.fusion == Fusion::elementwise && !row.lower) {
    problems.push_back("no native lowering (elementwise, but no scalar code) and no waiver");
  } else if (row.fusion == Fusion::reduction && row.reduction == Reduction::none) {
    problems.push_back("no native lowering (a reduction that names no combining operation) and no waiver");
  } else if ((row.fusion == Fusion::kernel || row.fusion == Fusion::matmul) && row.kernel == NativeKernel::none) {
    problems.push_back("no native lowering (a kernel of its own that names no native kernel) and no waiver");
  }
  if (row.fusion != Fusion::elementwise && row.lower) problems.push_back("scalar code but not elementwise");
  if (row.fusion != Fusion::reduction && row.reduction != Reduction::none)
    problems.push_back("a combining operation but not a reduction");
  if (row.fusion != Fusion::kernel && row.fusion != Fusion::matmul && row.kernel != NativeKernel::none)
    problems.push_back("a native kernel but neither a kernel of its own nor a matmul");
  return problems;
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
