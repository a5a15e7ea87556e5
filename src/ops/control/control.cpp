// Control flow primitives — while_loop, cond, scan and element: shape rules
// (each body against the operands it receives), printing, the run-time
// semantics every executor shares, and the entry point of <kiln/control.h>.
#include "ops/control/control.h"

#include <algorithm>
#include <cstring>

#include "core/dispatch.h"
#include "core/error_format.h"
#include "kiln/control.h"
#include "ops/common/apply.h"
#include "ops/common/rules.h"
#include "trace/trace.h"

namespace kiln {
namespace ops {
namespace {

using ir::Graph;
using ir::ValueId;

const AbstractValue& type_of_value(const Graph& graph, ValueId id) { return graph.nodes[static_cast<size_t>(id)].type; }

[[noreturn]] void reject(const Node& node, const std::string& message) {
  detail::raise(ir::primitive_name(node.op), message, node.where);
}

// Body `b` receives `arguments` (in order) and the node's operands for its captures.
void check_body_inputs(const Node& node, size_t b, std::span<const AbstractValue* const> operands,
                       const std::vector<AbstractValue>& arguments) {
  const Graph& body = *node.bodies[b];
  const std::string name = "body " + std::to_string(b) + " ('" + body.name + "')";
  if (body.arguments.size() != arguments.size())
    reject(node, name + " takes " + std::to_string(body.arguments.size()) + " arrays, the node passes " +
                     std::to_string(arguments.size()));
  for (size_t k = 0; k < arguments.size(); ++k)
    if (!(type_of_value(body, body.arguments[k]) == arguments[k]))
      reject(node, name + " argument " + std::to_string(k) + " is " +
                       type_of_value(body, body.arguments[k]).to_string() + ", the node passes " +
                       arguments[k].to_string());
  size_t begin = ir::body_capture_begin(node, b, operands.size()), count = ir::body_capture_count(node, b);
  if (body.captures.size() != count || begin + count > operands.size())
    reject(node, name + " has " + std::to_string(body.captures.size()) + " captures, the node passes " +
                     std::to_string(count));
  for (size_t k = 0; k < count; ++k)
    if (!(type_of_value(body, body.captures[k]) == *operands[begin + k]))
      reject(node, name + " capture " + std::to_string(k) + " is " + type_of_value(body, body.captures[k]).to_string() +
                       ", the node passes " + operands[begin + k]->to_string());
}

std::vector<AbstractValue> output_types(const Graph& body) {
  std::vector<AbstractValue> types;
  for (ValueId id : body.outputs) types.push_back(type_of_value(body, id));
  return types;
}

void check_outputs(const Node& node, size_t b, const std::vector<AbstractValue>& expected, size_t count) {
  std::vector<AbstractValue> got = output_types(*node.bodies[b]);
  if (got.size() < count || expected.size() < count)
    reject(node, "body " + std::to_string(b) + " returns " + std::to_string(got.size()) + " arrays, expected " +
                     std::to_string(count));
  for (size_t k = 0; k < count; ++k)
    if (!(got[k] == expected[k]))
      reject(node, "body " + std::to_string(b) + " result " + std::to_string(k) + " is " + got[k].to_string() +
                       ", expected " + expected[k].to_string());
}

void check_layout(const Node& node, size_t operands, size_t bodies, size_t ints_before_captures) {
  if (node.bodies.size() != bodies || node.attrs.ints.size() != ints_before_captures + bodies)
    reject(node, "needs " + std::to_string(bodies) + " bodies and " + std::to_string(ints_before_captures + bodies) +
                     " attributes");
  size_t captures = 0;
  for (size_t b = 0; b < bodies; ++b) captures += ir::body_capture_count(node, b);
  if (captures > operands) reject(node, "counts more captures than it has operands");
}

std::vector<AbstractValue> values_of(std::span<const AbstractValue* const> types) {
  std::vector<AbstractValue> values;
  for (const AbstractValue* type : types) values.push_back(*type);
  return values;
}

AbstractValue infer_while_loop(const Node& node, std::span<const AbstractValue* const> inputs) {
  check_layout(node, inputs.size(), 2, 0);
  size_t carries = ir::leading_operand_count(node, inputs.size());
  if (carries == 0) reject(node, "has no carry");
  std::vector<AbstractValue> carry = values_of(inputs.first(carries));
  check_body_inputs(node, 0, inputs, carry);
  check_body_inputs(node, 1, inputs, carry);
  std::vector<AbstractValue> predicate = output_types(*node.bodies[0]);
  if (predicate.size() != 1 || !predicate[0].shape.empty() || is_floating(predicate[0].dtype))
    reject(node, "the condition must return one 0-d bool or integer");
  check_outputs(node, 1, carry, carries);
  if (node.bodies[1]->outputs.size() != carries) reject(node, "the body returns more arrays than the carry holds");
  return carry[0];
}

AbstractValue infer_cond(const Node& node, std::span<const AbstractValue* const> inputs) {
  if (node.bodies.empty()) reject(node, "has no branch");
  check_layout(node, inputs.size(), node.bodies.size(), 0);
  size_t leading = ir::leading_operand_count(node, inputs.size());
  if (leading == 0 || !inputs[0]->shape.empty() || inputs[0]->dtype != DType::i32)
    reject(node, "the branch index must be a 0-d i32");
  std::vector<AbstractValue> operands = values_of(inputs.subspan(1, leading - 1));
  std::vector<AbstractValue> results = output_types(*node.bodies[0]);
  if (results.empty()) reject(node, "the branches return nothing");
  for (size_t b = 0; b < node.bodies.size(); ++b) {
    check_body_inputs(node, b, inputs, operands);
    check_outputs(node, b, results, results.size());
    if (node.bodies[b]->outputs.size() != results.size())
      reject(node, "the branches return different numbers of arrays");
  }
  return results[0];
}

AbstractValue infer_scan(const Node& node, std::span<const AbstractValue* const> inputs) {
  check_layout(node, inputs.size(), 1, 3);
  size_t carries = ir::scan_carry_count(node), leading = ir::leading_operand_count(node, inputs.size());
  int64_t length = ir::scan_length(node);
  if (carries > leading || length < 0) reject(node, "has inconsistent attributes");
  std::vector<AbstractValue> arguments = values_of(inputs.first(leading));
  for (size_t k = carries; k < leading; ++k) {
    AbstractValue& x = arguments[k];
    if (x.shape.empty() || x.shape[0] != length)
      reject(node, "scanned operand " + std::to_string(k - carries) + " is " + x.to_string() +
                       ", whose leading extent should be the length " + std::to_string(length));
    x.shape.erase(x.shape.begin());
  }
  check_body_inputs(node, 0, inputs, arguments);
  check_outputs(node, 0, arguments, carries);
  std::vector<AbstractValue> results = ir::control_result_types(node);
  if (results.empty()) reject(node, "returns nothing");
  return results[0];
}

AbstractValue infer_element(const Node& node, std::span<const AbstractValue* const> inputs) {
  if (inputs.size() != 1 || node.attrs.ints.size() != 2 || node.attrs.ints[0] < 1)
    reject(node, "reads one control node and names a result after the first");
  return AbstractValue{node.attrs.dtype, node.attrs.ints[1] != 0, node.attrs.shape};
}

std::string describe_cond(const Node& node) { return "branches=" + std::to_string(node.bodies.size()); }
std::string describe_scan(const Node& node) {
  return "length=" + std::to_string(ir::scan_length(node)) + (ir::scan_reverse(node) ? " reverse" : "");
}
std::string describe_element(const Node& node) { return "result=" + std::to_string(node.attrs.ints[0]); }

bool truthy(const Array& value) {
  const detail::ArrayImpl& impl = *detail::impl(value);
  return detail::dispatch(impl.type.dtype, [&]<class T>() { return impl.data<T>()[0] != T(0); });
}

int64_t integer_value(const Array& value) {
  const detail::ArrayImpl& impl = *detail::impl(value);
  return detail::dispatch(impl.type.dtype,
                          [&]<class T>() { return detail::convert_element<int64_t>(impl.data<T>()[0]); });
}

// Row t of x, as an array of its own.
Array row_of(const Array& x, int64_t t) {
  AbstractValue type = detail::impl(x)->type;
  type.shape.erase(type.shape.begin());
  Array row = detail::allocate(type);
  size_t bytes = type.bytes();
  if (bytes)
    std::memcpy(detail::impl(row)->mutable_data<char>(), detail::impl(x)->data<char>() + static_cast<size_t>(t) * bytes,
                bytes);
  return row;
}

// A carry may be overwritten by the next iteration when the loop made it: it
// is none of the node's operands, which belong to the caller.
std::vector<char> made_by_loop(std::span<const Array> carry, std::span<const Array> operands, size_t extra) {
  std::vector<char> owned(carry.size() + extra, 1);
  for (size_t k = 0; k < carry.size(); ++k)
    for (const Array& operand : operands)
      owned[k] = owned[k] && detail::impl(operand)->buffer != detail::impl(carry[k])->buffer;
  return owned;
}

std::vector<Array> run_while(const Node& node, std::span<const Array> operands, BodyRunner run_body) {
  size_t carries = ir::leading_operand_count(node, operands.size());
  auto captures = [&](size_t b) {
    return operands.subspan(ir::body_capture_begin(node, b, operands.size()), ir::body_capture_count(node, b));
  };
  std::vector<Array> carry(operands.begin(), operands.begin() + static_cast<std::ptrdiff_t>(carries));
  const std::vector<char> keep(carries, 0);
  while (truthy(run_body(0, carry, captures(0), keep).at(0))) {
    std::vector<char> owned = made_by_loop(carry, operands, 0);
    carry = run_body(1, carry, captures(1), owned);
  }
  return carry;
}

std::vector<Array> run_cond(const Node& node, std::span<const Array> operands, BodyRunner run_body) {
  // Out-of-range indices select the nearest branch, as in JAX.
  int64_t last = static_cast<int64_t>(node.bodies.size()) - 1;
  auto b = static_cast<size_t>(std::clamp<int64_t>(integer_value(operands[0]), 0, last));
  size_t leading = ir::leading_operand_count(node, operands.size());
  const std::vector<char> keep(leading - 1, 0);
  return run_body(b, operands.subspan(1, leading - 1),
                  operands.subspan(ir::body_capture_begin(node, b, operands.size()), ir::body_capture_count(node, b)),
                  keep);
}

std::vector<Array> run_scan(const Node& node, std::span<const Array> operands, BodyRunner run_body) {
  size_t carries = ir::scan_carry_count(node), leading = ir::leading_operand_count(node, operands.size());
  int64_t length = ir::scan_length(node);
  std::span<const Array> xs = operands.subspan(carries, leading - carries);
  std::span<const Array> captures = operands.subspan(leading);
  std::vector<AbstractValue> types = ir::control_result_types(node);
  std::vector<Array> results(operands.begin(), operands.begin() + static_cast<std::ptrdiff_t>(carries));
  for (size_t k = carries; k < types.size(); ++k) results.push_back(detail::allocate(types[k]));
  std::vector<Array> arguments;
  for (int64_t step = 0; step < length; ++step) {
    int64_t t = ir::scan_reverse(node) ? length - 1 - step : step;
    arguments.assign(results.begin(), results.begin() + static_cast<std::ptrdiff_t>(carries));
    for (const Array& x : xs) arguments.push_back(row_of(x, t));
    // The rows are the loop's own copies; carries only once the loop made them.
    std::vector<char> owned = made_by_loop(std::span<const Array>(arguments).first(carries), operands, xs.size());
    std::vector<Array> out = run_body(0, arguments, captures, owned);
    for (size_t k = 0; k < carries; ++k) results[k] = std::move(out[k]);
    for (size_t k = carries; k < types.size(); ++k) {
      size_t bytes = detail::impl(out[k])->type.bytes();
      if (bytes)
        std::memcpy(detail::impl(results[k])->mutable_data<char>() + static_cast<size_t>(t) * bytes,
                    detail::impl(out[k])->data<char>(), bytes);
    }
  }
  return results;
}

}  // namespace

std::vector<Array> run_control(const Node& node, std::span<const Array> operands, BodyRunner run_body) {
  if (node.op == Primitive::while_loop) return run_while(node, operands, run_body);
  if (node.op == Primitive::cond) return run_cond(node, operands, run_body);
  return run_scan(node, operands, run_body);
}

std::vector<Array> apply_control(const Node& node, std::span<const Array> operands) {
  const char* name = ir::primitive_name(node.op).data();
  std::vector<AbstractValue> types = ir::control_result_types(node);
  if (detail::TraceState* trace = detail::current_trace()) {
    const auto& owner = detail::current_trace_shared();
    Node recorded = node;
    recorded.inputs.clear();
    for (const Array& operand : operands) recorded.inputs.push_back(trace->value_of(operand, name, node.where));
    recorded.type = types[0];
    std::vector<Array> results{trace->record(std::move(recorded), owner)};
    auto control = static_cast<ValueId>(detail::impl(results[0])->value);
    for (size_t k = 1; k < types.size(); ++k) {
      Node element;
      element.op = Primitive::element;
      element.type = types[k];
      element.attrs.ints = {static_cast<int64_t>(k), types[k].weak ? 1 : 0};
      element.attrs.dtype = types[k].dtype;
      element.attrs.shape = types[k].shape;
      element.inputs = {control};
      element.where = node.where;
      results.push_back(trace->record(std::move(element), owner));
    }
    return results;
  }
  for (const Array& operand : operands)
    if (detail::impl(operand)->trace) detail::raise_leaked(*detail::impl(operand), name, node.where);
  auto replay_body = [&](size_t b, std::span<const Array> arguments, std::span<const Array> captures,
                         std::span<const char>) { return apply_graph(*node.bodies[b], arguments, captures); };
  return run_control(node, operands, replay_body);
}

Array apply_node(const Node& node, ValueId id, std::span<const Array> inputs, ControlResults& control_results) {
  if (node.op == Primitive::literal)
    return detail::literal(node.attrs.scalar, node.type.dtype, node.type.weak, node.where);
  if (ir::is_control(node.op)) return control_results.keep(id, apply_control(node, inputs));
  if (node.op == Primitive::element) return control_results.take(node);
  return detail::apply(node.op, inputs, node.attrs, node.where);
}

std::vector<Array> apply_graph(const Graph& graph, std::span<const Array> arguments, std::span<const Array> captures) {
  std::vector<Array> values(graph.nodes.size());
  for (size_t k = 0; k < graph.arguments.size(); ++k) values[static_cast<size_t>(graph.arguments[k])] = arguments[k];
  for (size_t k = 0; k < graph.captures.size(); ++k) values[static_cast<size_t>(graph.captures[k])] = captures[k];
  ControlResults control_results(graph);
  std::vector<Array> inputs;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    if (node.op == Primitive::input) continue;
    inputs.clear();
    for (ValueId input : node.inputs) inputs.push_back(values[static_cast<size_t>(input)]);
    values[i] = apply_node(node, static_cast<ValueId>(i), inputs, control_results);
  }
  std::vector<Array> outputs;
  for (ValueId id : graph.outputs) outputs.push_back(values[static_cast<size_t>(id)]);
  return outputs;
}

ElementCounts count_elements(const Graph& graph) {
  ElementCounts counts;
  for (const Node& node : graph.nodes)
    if (node.op == Primitive::element) ++counts[node.inputs[0]];
  return counts;
}

ControlResults::ControlResults(const Graph& graph) : owned_(count_elements(graph)) {}

Array ControlResults::keep(ValueId control, std::vector<Array> results) {
  Array first = results.at(0);
  auto readers = counts_->find(control);
  if (readers != counts_->end()) pending_[control] = {std::move(results), readers->second};
  return first;
}

Array ControlResults::take(const Node& element) {
  auto found = pending_.find(element.inputs[0]);
  Array result = found->second.results.at(static_cast<size_t>(element.attrs.ints[0]));
  if (--found->second.untaken == 0) pending_.erase(found);
  return result;
}

void register_control_rules(RuleTable& table) {
  auto control_row = [](auto infer, auto describe) {
    return PrimitiveRules{.infer = infer, .describe = describe, .fusion = Fusion::control};
  };
  table[static_cast<size_t>(Primitive::while_loop)] = control_row(&infer_while_loop, nullptr);
  table[static_cast<size_t>(Primitive::cond)] = control_row(&infer_cond, &describe_cond);
  table[static_cast<size_t>(Primitive::scan)] = control_row(&infer_scan, &describe_scan);
  table[static_cast<size_t>(Primitive::element)] = control_row(&infer_element, &describe_element);
}

}  // namespace ops

namespace detail {

std::vector<Array> control_flow(ControlKind kind, const std::vector<Array>& leading, std::vector<TracedGraph> bodies,
                                std::vector<int64_t> ints, Location where) {
  ir::Node node;
  node.op = kind == ControlKind::while_loop ? ir::Primitive::while_loop
            : kind == ControlKind::cond     ? ir::Primitive::cond
                                            : ir::Primitive::scan;
  node.where = where;
  std::vector<Array> operands = leading;
  for (TracedGraph& body : bodies) {
    operands.insert(operands.end(), body.captured.begin(), body.captured.end());
    ints.push_back(static_cast<int64_t>(body.captured.size()));
    node.bodies.push_back(shared_ir(body.graph));
  }
  node.attrs.ints = std::move(ints);
  const char* name = ir::primitive_name(node.op).data();
  std::vector<const AbstractValue*> types;
  for (const Array& operand : operands) types.push_back(&impl_of(operand, name, where).type);
  node.type = ops::rules(node.op).infer(node, types);
  return ops::apply_control(node, operands);
}

}  // namespace detail
}  // namespace kiln
