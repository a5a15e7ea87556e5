// The operand layout of control flow nodes (while_loop, cond, scan): leading
// operands (carries, an index, xs), then the captures of each body in turn —
// the outer values a body reads without receiving them as arguments. The
// last bodies.size() ints of the node count those captures, so passes that
// add captures (literal lifting) rewrite one list and one count.
#pragma once

#include <span>
#include <vector>

#include "ir/graph.h"

namespace kiln::ir {

inline bool is_control(Primitive op) {
  return op == Primitive::while_loop || op == Primitive::cond || op == Primitive::scan;
}

/// How many captures body `b` of a control node receives.
inline size_t body_capture_count(const Node& node, size_t b) {
  return static_cast<size_t>(node.attrs.ints[node.attrs.ints.size() - node.bodies.size() + b]);
}

/// The operands before the first body's captures, of `operands` in all
/// (shape rules run before the node's inputs are wired).
inline size_t leading_operand_count(const Node& node, size_t operands) {
  size_t captures = 0;
  for (size_t b = 0; b < node.bodies.size(); ++b) captures += body_capture_count(node, b);
  return operands - captures;
}
inline size_t leading_operand_count(const Node& node) { return leading_operand_count(node, node.inputs.size()); }

/// Where body `b`'s captures begin among the node's `operands` operands.
inline size_t body_capture_begin(const Node& node, size_t b, size_t operands) {
  size_t begin = leading_operand_count(node, operands);
  for (size_t k = 0; k < b; ++k) begin += body_capture_count(node, k);
  return begin;
}
inline size_t body_capture_begin(const Node& node, size_t b) { return body_capture_begin(node, b, node.inputs.size()); }

// scan's ints: {carries, length, reverse, captures}.
inline size_t scan_carry_count(const Node& node) { return static_cast<size_t>(node.attrs.ints[0]); }
inline int64_t scan_length(const Node& node) { return node.attrs.ints[1]; }
inline bool scan_reverse(const Node& node) { return node.attrs.ints[2] != 0; }

/// The types of every result of a control node, from its bodies: the carries
/// of a while loop, the outputs of the first branch, the carries and stacked
/// outputs ([length, ...]) of a scan.
inline std::vector<AbstractValue> control_result_types(const Node& node) {
  std::vector<AbstractValue> types;
  const Graph& body = *node.bodies.back();
  if (node.op == Primitive::while_loop) {
    for (ValueId id : body.outputs) types.push_back(body.nodes[static_cast<size_t>(id)].type);
    return types;
  }
  const Graph& first = *node.bodies.front();
  for (size_t k = 0; k < first.outputs.size(); ++k) {
    AbstractValue type = first.nodes[static_cast<size_t>(first.outputs[k])].type;
    if (node.op == Primitive::scan && k >= scan_carry_count(node))
      type.shape.insert(type.shape.begin(), scan_length(node));
    types.push_back(std::move(type));
  }
  return types;
}

}  // namespace kiln::ir
