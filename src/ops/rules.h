// The rules each primitive provides, gathered in one table indexed by
// Primitive. Each family file in src/ops/ fills the entries of its primitives.
#pragma once

#include <array>
#include <span>
#include <string>

#include "ir/graph.h"

namespace kiln::ops {

using detail::AbstractValue;
using ir::Node;
using ir::Primitive;

struct PrimitiveRules {
  /// The result's type from the inputs' types and the node's attributes.
  /// Throws kiln::Error (naming node.where) for inputs the primitive rejects.
  AbstractValue (*infer)(const Node& node, std::span<const AbstractValue* const> inputs) = nullptr;
  /// Reference kernel: the result from concrete inputs. Simple and obviously
  /// correct; eager execution and the interpreter both run it.
  Array (*evaluate)(const Node& node, std::span<const Array> inputs) = nullptr;
  /// Attribute text for printed IR ("axes=[0,1]"); null prints nothing.
  std::string (*describe)(const Node& node) = nullptr;
};

using RuleTable = std::array<PrimitiveRules, ir::primitive_count>;

const PrimitiveRules& rules(Primitive op);

// One per family; the registry calls each once.
void register_leaf_rules(RuleTable& table);
void register_creation_rules(RuleTable& table);
void register_random_rules(RuleTable& table);
void register_unary_rules(RuleTable& table);
void register_binary_rules(RuleTable& table);
void register_movement_rules(RuleTable& table);
void register_reduce_rules(RuleTable& table);
void register_matmul_rules(RuleTable& table);
void register_indexing_rules(RuleTable& table);

/// "[0,1,2]"
std::string ints_string(const std::vector<int64_t>& values);

}  // namespace kiln::ops
