// Graph simplification (see the header). One forward pass per round builds
// the simplified node list: each node, its inputs renamed to their simplified
// values, is rewritten until no rule applies and is then looked up among the
// nodes kept so far by a canonical byte key. Rules only read a node's
// producers, which come earlier, so a single pass almost always reaches the
// fixed point; the next round confirms it.
#include "transform/simplify.h"

#include <cmath>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/dispatch.h"
#include "ir/dead_code.h"
#include "kiln/error.h"
#include "ops/common/rules.h"
#include "transform/verify.h"

namespace kiln::transform {

namespace {

using ir::Graph;
using ir::Node;
using ir::Primitive;
using ir::ValueId;

constexpr int max_rounds = 4;
// Every rule removes a node or shortens a chain of producers, so a node
// settles after a few rewrites; this only bounds a bug.
constexpr int max_rewrites_per_node = 16;

// The nodes kept so far, which rewritten nodes read their producers from.
using Nodes = std::vector<Node>;

const Node& producer(const Nodes& nodes, ValueId id) { return nodes[static_cast<size_t>(id)]; }

// A literal operand: a literal node, seen through the broadcasts that copy its
// one value to every element.
const Node* literal_behind(const Nodes& nodes, ValueId id) {
  const Node* node = &producer(nodes, id);
  while (node->op == Primitive::broadcast) node = &producer(nodes, node->inputs[0]);
  // A symbolic literal's value depends on the call's sizes: no rule may read its hint.
  return node->op == Primitive::literal && !node->symbolic ? node : nullptr;
}

Array literal_array(const Node& literal) { return ops::rules(Primitive::literal).evaluate(literal, {}); }

// Whether `id` is a literal operand holding `value` (with the sign bit
// `negative`, which tells -0.0 from +0.0) once rounded to its dtype. Bool
// true reads as 1, false as 0.
bool is_literal(const Nodes& nodes, ValueId id, double value, bool negative) {
  const Node* literal = literal_behind(nodes, id);
  if (!literal) return false;
  Array held = literal_array(*literal);
  // Complex arithmetic with 0 or 1 is no identity where a part is infinite
  // or a zero's sign matters (C99's complex product recovers infinities): no
  // complex literal takes part in these rules.
  if (is_complex(literal->type.dtype)) return false;
  double element = detail::dispatch(literal->type.dtype, [&]<class T>() {
    if constexpr (detail::is_complex_element<T>) return 0.0;
    else return static_cast<double>(detail::impl(held)->data<T>()[0]);
  });
  return element == value && std::signbit(element) == negative;
}

// What a rule made of a node.
struct Outcome {
  enum Kind { none, rewritten, replaced };
  Kind kind = none;
  ValueId value = -1;  // replaced: the existing value the node equals
};

// The node is `id` when their types agree exactly; a rule never changes a
// value's dtype, shape or weak flag.
Outcome same_as(const Nodes& nodes, const Node& node, ValueId id) {
  if (ir::same_symbolic_type(producer(nodes, id), node)) return {Outcome::replaced, id};
  return {};
}

// A node whose inputs are all literals and whose result is 0-d becomes a
// literal computed by the primitive's reference kernel, so folding agrees
// bit for bit with running the graph. Larger results stay as they are (a
// broadcast of a literal is cheaper to recompute than to store).
bool fold(const Nodes& nodes, Node& node) {
  if (node.op == Primitive::literal || node.inputs.empty() || !node.type.shape.empty()) return false;
  // A loop or branch over literals still runs its bodies: no reference kernel folds it.
  if (ops::rules(node.op).fusion == ops::Fusion::control) return false;
  // Communication happens when the graph runs, on every rank alike.
  if (ops::rules(node.op).fusion == ops::Fusion::collective) return false;
  // The reference kernel (libm) would give another value than the compiled
  // vector math gives the same operation on an input.
  if (ops::native_differs_from_reference(ops::rules(node.op), node.type.dtype)) return false;
  std::vector<Array> values;
  for (ValueId id : node.inputs) {
    const Node& input = producer(nodes, id);
    if (input.op != Primitive::literal || input.symbolic) return false;
    values.push_back(literal_array(input));
  }
  Array result;
  try {
    result = ops::rules(node.op).evaluate(node, values);
  } catch (const Error&) {
    return false;  // left to run time, which reports it
  }
  Node literal;
  literal.op = Primitive::literal;
  literal.type = node.type;
  literal.where = node.where;
  literal.attrs.dtype = node.type.dtype;
  if (node.type.weak) literal.attrs.ints = {1};
  literal.attrs.scalar =
      detail::dispatch(node.type.dtype, [&]<class T>() { return Scalar(detail::impl(result)->data<T>()[0]); });
  node = std::move(literal);
  return true;
}

// Additive zeros, kept only where exact for every x: IEEE gives
// -0.0 + (+0.0) = +0.0, so for floats x + 0.0 is not x (XLA folds it
// anyway; kiln keeps it), while x + (-0.0) and x - (+0.0) are x for every
// x, -0.0 and NaN included. Integers and bool have a single zero.
// Multiplying or dividing by one is exact (bool: x and true). For add, sub,
// mul and div.
Outcome rewrite_identity_operand(const Nodes& nodes, const Node& node) {
  const std::vector<ValueId>& in = node.inputs;
  auto replaced_if = [&](bool holds, ValueId id) -> Outcome { return holds ? same_as(nodes, node, id) : Outcome{}; };
  // The operand other than `identity` in a commutative operation.
  auto either_side = [&](double identity, bool negative) {
    Outcome outcome = replaced_if(is_literal(nodes, in[1], identity, negative), in[0]);
    if (outcome.kind == Outcome::none) outcome = replaced_if(is_literal(nodes, in[0], identity, negative), in[1]);
    return outcome;
  };
  if (node.op == Primitive::add) return either_side(0, is_floating(node.type.dtype));
  if (node.op == Primitive::mul) return either_side(1, false);
  // sub and div: only on the right.
  return replaced_if(is_literal(nodes, in[1], node.op == Primitive::sub ? 0 : 1, false), in[0]);
}

// Whether `shape` is the operand's shape with axes of extent 1 put before it.
bool prepends_unit_axes(const Shape& shape, const Node& operand) {
  const Shape& inner = operand.type.shape;
  if (operand.symbolic || shape.size() < inner.size()) return false;
  size_t added = shape.size() - inner.size();
  for (size_t a = 0; a < shape.size(); ++a)
    if (shape[a] != (a < added ? 1 : inner[a - added])) return false;
  return true;
}

// Reshapes keep row-major order, so only the last one matters; a broadcast
// of a broadcast goes straight to the final shape (each extent of the inner
// input is 1 or already the final one).
Outcome rewrite_reshape_or_broadcast(const Nodes& nodes, Node& node) {
  Outcome outcome = same_as(nodes, node, node.inputs[0]);
  if (outcome.kind != Outcome::none) return outcome;
  const Node& inner = producer(nodes, node.inputs[0]);
  // A broadcast that only prepends axes of extent 1 copies no element: the
  // same bytes, a reshape (a view, where the broadcast was a copy). Literals
  // keep their broadcasts, which the rules above see through and kernels
  // inline. A broadcast of such a reshape broadcasts its operand.
  if (node.op == Primitive::broadcast && inner.op != Primitive::literal && !node.symbolic &&
      prepends_unit_axes(node.type.shape, inner)) {
    node.op = Primitive::reshape;
    return {Outcome::rewritten};
  }
  if (node.op == Primitive::broadcast && inner.op == Primitive::reshape && !inner.symbolic &&
      prepends_unit_axes(inner.type.shape, producer(nodes, inner.inputs[0]))) {
    node.inputs[0] = inner.inputs[0];
    return {Outcome::rewritten};
  }
  if (inner.op != node.op) return {};
  node.inputs[0] = inner.inputs[0];
  return {Outcome::rewritten};
}

// Moving only axes of extent 1 keeps the elements in row-major order (a row
// [1, n] turned into a column [n, 1], as the derivative of a matmul by a
// vector does): the same bytes, a reshape.
bool moves_only_unit_axes(const Nodes& nodes, const Node& transpose) {
  const Shape& input_shape = producer(nodes, transpose.inputs[0]).type.shape;
  int64_t previous = -1;
  bool in_order = true;
  for (int64_t axis : transpose.attrs.ints) {
    if (input_shape[static_cast<size_t>(axis)] == 1) continue;
    in_order = in_order && axis > previous;
    previous = axis;
  }
  return in_order;
}

Outcome rewrite_transpose(const Nodes& nodes, Node& node) {
  const std::vector<int64_t>& perm = node.attrs.ints;
  bool identity = true;
  for (size_t a = 0; a < perm.size(); ++a) identity = identity && perm[a] == static_cast<int64_t>(a);
  if (identity) return same_as(nodes, node, node.inputs[0]);
  if (moves_only_unit_axes(nodes, node)) {
    node.op = Primitive::reshape;
    node.attrs.ints.clear();
    node.attrs.shape = node.type.shape;
    if (node.symbolic) {
      auto symbolic = std::make_shared<ir::SymbolicNode>(*node.symbolic);
      symbolic->ints.clear();
      symbolic->attr_shape = symbolic->shape;
      node.symbolic = std::move(symbolic);
    }
    return {Outcome::rewritten};
  }
  // Output axis a of the outer transpose is inner axis perm[a], which is
  // axis inner_perm[perm[a]] of the inner transpose's input.
  const Node& inner = producer(nodes, node.inputs[0]);
  if (inner.op != Primitive::transpose) return {};
  std::vector<int64_t> composed(perm.size());
  for (size_t a = 0; a < perm.size(); ++a) composed[a] = inner.attrs.ints[static_cast<size_t>(perm[a])];
  node.inputs[0] = inner.inputs[0];
  node.attrs.ints = std::move(composed);
  return {Outcome::rewritten};
}

// What a rule may ask of the pass building the simplified graph: how many
// readers a kept value has, and a node added ahead of the one being
// rewritten (itself simplified and merged with an equal one first).
struct Builder {
  virtual ~Builder() = default;
  virtual int readers(ValueId id) const = 0;
  virtual ValueId add(Node node) = 0;
};

// Per element, and exact: the native code computes each element as the
// reference does, wherever it sits in the loop (no vector math that a scalar
// remainder would round differently, no f16 kept wider), so computing it
// after a gather gives the same bits.
bool exact_per_element(const Node& node) {
  // (Literals and iota have no inputs; a broadcast repeats elements.)
  const ops::PrimitiveRules& rules = ops::rules(node.op);
  if (rules.fusion != ops::Fusion::elementwise || node.inputs.empty() || node.op == Primitive::broadcast) return false;
  return !ops::native_differs_from_reference(rules, node.type.dtype) && !node.symbolic;
}

// A gather (take, slice, dynamic_slice) of an elementwise value that nothing
// else reads moves before it: op(a, b)[i] = op(a[i], b[i]), so only the
// gathered elements are computed instead of the whole operand (a take of 16
// columns out of 512 no longer multiplies all 512). Operands of the
// elementwise node's shape are gathered alike, a broadcast scalar is
// broadcast to the gathered shape; any other operand keeps the rule away.
Outcome rewrite_gather_of_elementwise(const Nodes& nodes, Node& node, Builder& builder) {
  if (node.symbolic) return {};
  ValueId source_id = node.inputs[0];
  const Node elementwise = producer(nodes, source_id);  // a copy: adding nodes moves the list
  if (!exact_per_element(elementwise) || builder.readers(source_id) != 1) return {};
  if (shape_size(node.type.shape) >= shape_size(elementwise.type.shape)) return {};
  auto broadcasts_a_scalar = [&](const Node& input) {
    return input.op == Primitive::broadcast && producer(nodes, input.inputs[0]).type.shape.empty() &&
           !producer(nodes, input.inputs[0]).symbolic;
  };
  for (ValueId operand : elementwise.inputs) {
    const Node& input = producer(nodes, operand);
    if (input.symbolic || (input.type.shape != elementwise.type.shape && !broadcasts_a_scalar(input))) return {};
  }
  std::vector<ValueId> operands;
  for (ValueId operand : elementwise.inputs) {
    Node moved = producer(nodes, operand);
    if (broadcasts_a_scalar(moved)) {
      moved.attrs.shape = node.type.shape;
      moved.type.shape = node.type.shape;
    } else {
      DType dtype = moved.type.dtype;
      bool weak = moved.type.weak;
      moved = node;
      moved.inputs[0] = operand;
      moved.type = {dtype, weak, node.type.shape};
    }
    operands.push_back(builder.add(std::move(moved)));
  }
  Node result = elementwise;
  result.inputs = std::move(operands);
  result.type.shape = node.type.shape;
  node = std::move(result);
  return {Outcome::rewritten};
}

Outcome rewrite(const Nodes& nodes, Node& node, Builder& builder) {
  if (fold(nodes, node)) return {Outcome::rewritten};
  // Rewrites exist for a few primitives only; every other node stays as it is.
  // (An if-chain rather than a switch: kiln keeps no default: branches in
  // switches over primitives.)
  const Primitive op = node.op;
  if (op == Primitive::add || op == Primitive::sub || op == Primitive::mul || op == Primitive::div)
    return rewrite_identity_operand(nodes, node);
  // Negation flips the sign bit (wraps for integers), twice is nothing.
  if (op == Primitive::neg) {
    const Node& inner = producer(nodes, node.inputs[0]);
    return inner.op == Primitive::neg ? same_as(nodes, node, inner.inputs[0]) : Outcome{};
  }
  // Same type in and out: dtype and weak flag for convert, shape for the others.
  if (op == Primitive::convert) return same_as(nodes, node, node.inputs[0]);
  if (op == Primitive::reshape || op == Primitive::broadcast) return rewrite_reshape_or_broadcast(nodes, node);
  if (op == Primitive::transpose) return rewrite_transpose(nodes, node);
  // A slice whose result has its operand's type takes every element; a pad
  // (never by a negative amount) whose result has it adds none.
  if (op == Primitive::slice || op == Primitive::pad) {
    Outcome outcome = same_as(nodes, node, node.inputs[0]);
    if (outcome.kind != Outcome::none || op == Primitive::pad) return outcome;
  }
  if (op == Primitive::slice || op == Primitive::take || op == Primitive::dynamic_slice)
    return rewrite_gather_of_elementwise(nodes, node, builder);
  return {};
}

// Everything that makes two nodes compute the same value: primitive, type,
// attributes (a literal's value bit for bit, so -0.0 and 0.0 stay apart) and
// inputs. The source line is left out: merged nodes keep the first one's.
void canonical_key(const Node& node, std::string& key) {
  key.clear();
  auto add = [&](const auto& value) { key.append(reinterpret_cast<const char*>(&value), sizeof(value)); };
  auto add_all = [&](const auto& values) {
    add(values.size());
    for (const auto& value : values) add(value);
  };
  add(node.op);
  add(node.type.dtype);
  add(node.type.weak);
  add_all(node.type.shape);
  add_all(node.attrs.ints);
  add_all(node.attrs.shape);
  add(node.attrs.dtype);
  const Scalar& scalar = node.attrs.scalar;
  add(scalar.kind());
  if (scalar.kind() == Scalar::Kind::floating) add(scalar.as_double());
  else if (scalar.kind() == Scalar::Kind::complex) {
    add(scalar.as_complex().real());
    add(scalar.as_complex().imag());
  } else add(scalar.as_int());
  add_all(node.inputs);
  // Control nodes are the same only over the same bodies (the objects: equal
  // bodies traced twice stay apart, which costs a duplicate, never a wrong merge).
  for (const auto& body : node.bodies) add(body.get());
  // Nodes equal at the hints may differ at other sizes.
  ir::append_symbolic(node, key);
}

// One forward pass over the graph: builds the simplified node list.
class SimplifyPass final : public Builder {
 public:
  explicit SimplifyPass(const Graph& graph) : readers_in_graph_(graph.nodes.size(), 0) {
    for (const Node& node : graph.nodes)
      for (ValueId input : node.inputs) ++readers_in_graph_[static_cast<size_t>(input)];
    for (ValueId output : graph.outputs) ++readers_in_graph_[static_cast<size_t>(output)];
    kept_.reserve(graph.nodes.size());
  }

  // Says whether it changed anything.
  bool run(Graph& graph) {
    size_t count = graph.nodes.size();
    std::vector<ValueId> renamed(count, -1);
    for (size_t i = 0; i < count; ++i) {
      Node node = std::move(graph.nodes[i]);
      for (ValueId& input : node.inputs) input = renamed[static_cast<size_t>(input)];
      // Inputs are bound by position at run time: each stays, even if unused.
      ValueId value = node.op == Primitive::input ? keep(std::move(node)) : add(std::move(node));
      readers_[static_cast<size_t>(value)] += readers_in_graph_[i] - 1;
      renamed[i] = value;
    }
    graph.nodes = std::move(kept_);
    for (auto* ids : {&graph.arguments, &graph.captures, &graph.outputs})
      for (ValueId& id : *ids) id = renamed[static_cast<size_t>(id)];
    return changed_;
  }

  // The readers of a kept value among the nodes simplified so far and those
  // still to come (counted in the graph as given; merged nodes add theirs).
  int readers(ValueId id) const override { return readers_[static_cast<size_t>(id)]; }

  // Rewrites the node until no rule applies, then merges it with an equal
  // kept node or keeps it; the value it became, counted as read once.
  ValueId add(Node node) override {
    for (int step = 0; step < max_rewrites_per_node; ++step) {
      Outcome outcome = rewrite(kept_, node, *this);
      if (outcome.kind == Outcome::none) break;
      changed_ = true;
      if (outcome.kind == Outcome::replaced) {
        ++readers_[static_cast<size_t>(outcome.value)];
        return outcome.value;
      }
    }
    // (A rule's own additions are done by now: one key buffer serves all.)
    canonical_key(node, key_);
    // Only looked up, never iterated, so its order cannot leak into the result.
    auto [found, inserted] = by_key_.try_emplace(key_, static_cast<ValueId>(kept_.size()));
    if (!inserted) {
      changed_ = true;
      ++readers_[static_cast<size_t>(found->second)];
      return found->second;
    }
    return keep(std::move(node));
  }

 private:
  ValueId keep(Node node) {
    kept_.push_back(std::move(node));
    readers_.push_back(1);
    return static_cast<ValueId>(kept_.size() - 1);
  }

  std::vector<int> readers_in_graph_;  // by the given graph's ids
  Nodes kept_;
  std::vector<int> readers_;  // by kept id
  std::unordered_map<std::string, ValueId> by_key_;
  std::string key_;
  bool changed_ = false;
};

bool simplify_once(Graph& graph) {
  SimplifyPass pass(graph);
  return pass.run(graph);
}

}  // namespace

void simplify(ir::Graph& graph) {
  // Bodies first, each into a copy: the traced bodies are shared with the caches.
  for (Node& node : graph.nodes)
    for (auto& body : node.bodies) {
      auto simplified = std::make_shared<Graph>(*body);
      simplify(*simplified);
      body = std::move(simplified);
    }
  for (int round = 0; round < max_rounds; ++round) {
    size_t before = graph.nodes.size();
    bool changed = simplify_once(graph);
    ir::eliminate_dead_nodes(graph);
    if (!changed && graph.nodes.size() == before) break;
  }
  verify_after("simplify", graph);
}

}  // namespace kiln::transform
