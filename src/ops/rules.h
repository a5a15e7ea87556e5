// The rules each primitive provides, gathered in one table indexed by
// Primitive. Each family file in src/ops/ fills the entries of its primitives.
#pragma once

#include <array>
#include <vector>
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

  // Derivative rules, written with the public ops (passing node.where) so the
  // derivative graph traces, compiles and differentiates again like user code.
  // Only floating inputs and outputs carry derivatives.

  /// Reverse mode: one cotangent per input given the output's cotangent; an
  /// empty Array for an input that gets none (integers, indices, zero).
  std::vector<Array> (*vjp)(const Node& node, std::span<const Array> inputs, const Array& output,
                            const Array& cotangent) = nullptr;
  /// Forward mode: the output's tangent given one tangent per input (an
  /// empty Array stands for zero; at least one is non-empty).
  Array (*jvp)(const Node& node, std::span<const Array> inputs, const Array& output,
               std::span<const Array> tangents) = nullptr;
  /// Set instead of vjp/jvp when the primitive has no derivative, with why
  /// (e.g. "bool result", "piecewise constant: zero almost everywhere").
  const char* no_derivative = nullptr;
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
