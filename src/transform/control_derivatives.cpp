// Derivatives of loops and branches (see the header). Every body here is
// traced from the original body replayed with the autodiff passes, inside a
// fresh trace: operands become arguments, and outer values the derivative
// reads (a capture's tangent, the captures themselves) become captures.
#include "transform/control_derivatives.h"

#include "core/error_format.h"
#include "kiln/control.h"
#include "ops/common/apply.h"
#include "ops/control/control.h"
#include "trace/trace.h"
#include "transform/autodiff.h"

namespace kiln::transform {

namespace {

using detail::AbstractValue;
using Arrays = std::vector<Array>;

// Floating and complex values carry derivatives.
bool floating(const Array& value) {
  DType dtype = detail::impl(value)->type.dtype;
  return is_floating(dtype) || is_complex(dtype);
}

Array zero_of(const AbstractValue& type, Location where) {
  Array zero = detail::literal(0, type.dtype, false, where);
  return type.shape.empty() ? zero : broadcast_to(zero, type.shape, where);
}

Array or_zero(const Array& value, const AbstractValue& type, Location where) {
  return value.defined() ? value : zero_of(type, where);
}
Array or_zero(const Array& value, const Array& like, Location where) {
  return or_zero(value, detail::impl(like)->type, where);
}

// Branches of one cond return the same types: a cotangent that came out
// weakly typed (from a weak operand) is made strong, as zero_of's zeros are.
Array strong(const Array& value, Location where) {
  const AbstractValue& type = detail::impl(value)->type;
  return type.weak ? astype(value, type.dtype, where) : value;
}

std::vector<size_t> floating_positions(std::span<const Array> values) {
  std::vector<size_t> positions;
  for (size_t k = 0; k < values.size(); ++k)
    if (floating(values[k])) positions.push_back(k);
  return positions;
}

std::vector<size_t> floating_positions(const std::vector<AbstractValue>& types, size_t begin, size_t end) {
  std::vector<size_t> positions;
  for (size_t k = begin; k < end; ++k)
    if (is_floating(types[k].dtype) || is_complex(types[k].dtype)) positions.push_back(k - begin);
  return positions;
}

// The body with its captures as trailing arguments, so they get tangents and
// cotangents like the arguments.
std::shared_ptr<const ir::Graph> closed(const ir::Graph& body) {
  auto graph = std::make_shared<ir::Graph>(body);
  for (ir::ValueId id : graph->captures) {
    graph->nodes[static_cast<size_t>(id)].attrs.ints = {static_cast<int64_t>(graph->arguments.size()),
                                                        ir::argument_input};
    graph->arguments.push_back(id);
  }
  graph->captures.clear();
  return graph;
}

using BodyFunction = detail::FunctionRef<Arrays(const Arrays&)>;

detail::TracedGraph trace_derivative(const std::string& name, Location where, const Arrays& examples, BodyFunction fn) {
  detail::TraceSession session(name, where);
  Arrays arguments;
  for (const Array& example : examples) arguments.push_back(session.argument(example));
  Graph graph = session.finish(fn(arguments));
  return {std::move(graph), session.captured()};
}

Arrays slice(std::span<const Array> values, size_t begin, size_t count) {
  return Arrays(values.begin() + static_cast<std::ptrdiff_t>(begin),
                values.begin() + static_cast<std::ptrdiff_t>(begin + count));
}
Arrays slice(const Arrays& values, size_t begin, size_t count) {
  return slice(std::span<const Array>(values), begin, count);
}

Arrays joined(Arrays first, const Arrays& second) {
  first.insert(first.end(), second.begin(), second.end());
  return first;
}

Arrays rows_of(const Arrays& stacked) {
  Arrays rows;
  for (const Array& x : stacked) rows.push_back(detail::row_placeholder(x));
  return rows;
}

struct Layout {
  size_t leading;
  std::span<const Array> operands;
  Arrays captures(const ir::Node& node, size_t b) const {
    return slice(operands, ir::body_capture_begin(node, b, operands.size()), ir::body_capture_count(node, b));
  }
  size_t capture_begin(const ir::Node& node, size_t b) const {
    return ir::body_capture_begin(node, b, operands.size());
  }
};

// A cond's operands as both of its rules read them: the predicate, the `m`
// operands every branch receives, then each branch's captures.
struct CondOperands {
  CondOperands(const ir::Node& node, std::span<const Array> operands)
      : layout{ir::leading_operand_count(node, operands.size()), operands},
        m(layout.leading - 1),
        types(ir::control_result_types(node)),
        moving(floating_positions(operands.subspan(1, m))),
        differentiable(floating_positions(types, 0, types.size())) {}
  Layout layout;
  size_t m;
  std::vector<AbstractValue> types;    // of the results
  std::vector<size_t> moving;          // the floating operands among the m
  std::vector<size_t> differentiable;  // the floating results
};

// A scan's operands as both of its rules read them: n carries, m scanned
// arrays, then the body's captures; its results are n carries, then k_ys
// stacked arrays.
struct ScanOperands {
  ScanOperands(const ir::Node& node, std::span<const Array> operands)
      : layout{ir::leading_operand_count(node, operands.size()), operands},
        n(ir::scan_carry_count(node)),
        m(layout.leading - n),
        captures(layout.captures(node, 0)),
        types(ir::control_result_types(node)),
        k_ys(types.size() - n),
        carried(floating_positions(operands.first(n))),
        scanned(floating_positions(operands.subspan(n, m))),
        stacked(floating_positions(types, n, types.size())) {}
  Layout layout;
  size_t n, m;
  Arrays captures;
  std::vector<AbstractValue> types;  // of the results
  size_t k_ys;
  std::vector<size_t> carried;  // the floating carries
  std::vector<size_t> scanned;  // the floating scanned arrays
  std::vector<size_t> stacked;  // the floating stacked results
};

// A derivative's scan of `body` over `xs`, carrying `carry`; its body is
// traced on the carry and a row of each of `xs`.
Arrays derivative_scan(const std::string& name, Location where, const Arrays& carry, const Arrays& xs,
                       BodyFunction body, int64_t length, bool reverse) {
  std::vector<detail::TracedGraph> bodies;
  bodies.push_back(trace_derivative(name, where, joined(carry, rows_of(xs)), body));
  return detail::control_flow(detail::ControlKind::scan, joined(carry, xs), std::move(bodies),
                              {static_cast<int64_t>(carry.size()), length, reverse ? 1 : 0}, where);
}

// ---- forward mode --------------------------------------------------------------

// Forward mode through a closed body (its captures trailing arguments) inside
// a derivative body: `a` holds the body's `count` operands, then the tangents
// of those at `moving`; the captures and their tangents come from outside.
// The outputs, then the tangents of those at `differentiable`.
Arrays forward_through(const ir::Graph& body, const Arrays& a, size_t count, const std::vector<size_t>& moving,
                       const Arrays& captures, std::span<const Array> capture_tangents,
                       const std::vector<size_t>& differentiable, Location where) {
  Arrays arguments = joined(slice(a, 0, count), captures), argument_tangents(arguments.size()), outputs;
  for (size_t j = 0; j < moving.size(); ++j) argument_tangents[moving[j]] = a[count + j];
  for (size_t c = 0; c < captures.size(); ++c) argument_tangents[count + c] = capture_tangents[c];
  Arrays output_tangents = forward(body, arguments, {}, argument_tangents, outputs);
  for (size_t r : differentiable) outputs.push_back(or_zero(output_tangents[r], outputs[r], where));
  return outputs;
}

ControlJvp jvp_while(const ir::Node& node, std::span<const Array> operands, std::span<const Array> tangents) {
  Location where = node.where;
  Layout layout{ir::leading_operand_count(node, operands.size()), operands};
  size_t n = layout.leading;
  Arrays condition_captures = layout.captures(node, 0), body_captures = layout.captures(node, 1);
  size_t body_begin = layout.capture_begin(node, 1);
  std::vector<size_t> carried = floating_positions(operands.first(n));
  Arrays leading = slice(operands, 0, n);
  for (size_t k : carried) leading.push_back(or_zero(tangents[k], operands[k], where));
  auto body_graph = closed(*node.bodies[1]);
  auto condition_fn = [&](const Arrays& a) {
    return ops::apply_graph(*node.bodies[0], slice(a, 0, n), condition_captures);
  };
  auto body_fn = [&](const Arrays& a) {
    return forward_through(*body_graph, a, n, carried, body_captures,
                           tangents.subspan(body_begin, body_captures.size()), carried, where);
  };
  std::vector<detail::TracedGraph> bodies;
  bodies.push_back(trace_derivative("while_loop condition (jvp)", where, leading, condition_fn));
  bodies.push_back(trace_derivative("while_loop body (jvp)", where, leading, body_fn));
  Arrays results = detail::control_flow(detail::ControlKind::while_loop, leading, std::move(bodies), {}, where);
  ControlJvp out{slice(results, 0, n), Arrays(n)};
  for (size_t j = 0; j < carried.size(); ++j) out.tangents[carried[j]] = results[n + j];
  return out;
}

ControlJvp jvp_cond(const ir::Node& node, std::span<const Array> operands, std::span<const Array> tangents) {
  Location where = node.where;
  const CondOperands cond(node, operands);
  const auto& [layout, m, types, moving, differentiable] = cond;
  Arrays examples = slice(operands, 1, m);
  for (size_t k : moving) examples.push_back(or_zero(tangents[1 + k], operands[1 + k], where));
  std::vector<detail::TracedGraph> bodies;
  for (size_t b = 0; b < node.bodies.size(); ++b) {
    auto branch = closed(*node.bodies[b]);
    Arrays captures = layout.captures(node, b);
    size_t begin = layout.capture_begin(node, b);
    auto branch_fn = [&](const Arrays& a) {
      return forward_through(*branch, a, m, moving, captures, tangents.subspan(begin, captures.size()), differentiable,
                             where);
    };
    bodies.push_back(trace_derivative("cond branch " + std::to_string(b) + " (jvp)", where, examples, branch_fn));
  }
  Arrays leading = joined({operands[0]}, examples);
  Arrays results = detail::control_flow(detail::ControlKind::cond, leading, std::move(bodies), {}, where);
  ControlJvp out{slice(results, 0, types.size()), Arrays(types.size())};
  for (size_t j = 0; j < differentiable.size(); ++j) out.tangents[differentiable[j]] = results[types.size() + j];
  return out;
}

ControlJvp jvp_scan(const ir::Node& node, std::span<const Array> operands, std::span<const Array> tangents) {
  Location where = node.where;
  const ScanOperands scan(node, operands);
  const auto& [layout, n, m, captures, types, k_ys, carried, scanned, stacked] = scan;
  size_t capture_begin = layout.capture_begin(node, 0);
  Arrays carries = slice(operands, 0, n), xs = slice(operands, n, m);
  for (size_t k : carried) carries.push_back(or_zero(tangents[k], operands[k], where));
  for (size_t k : scanned) xs.push_back(or_zero(tangents[n + k], operands[n + k], where));
  auto body_graph = closed(*node.bodies[0]);
  size_t carry_count = carries.size();
  auto body_fn = [&](const Arrays& a) {
    Arrays arguments = joined(joined(slice(a, 0, n), slice(a, carry_count, m)), captures);
    Arrays argument_tangents(arguments.size()), outputs;
    for (size_t j = 0; j < carried.size(); ++j) argument_tangents[carried[j]] = a[n + j];
    for (size_t j = 0; j < scanned.size(); ++j) argument_tangents[n + scanned[j]] = a[carry_count + m + j];
    for (size_t c = 0; c < captures.size(); ++c) argument_tangents[n + m + c] = tangents[capture_begin + c];
    Arrays output_tangents = forward(*body_graph, arguments, {}, argument_tangents, outputs);
    Arrays result = slice(outputs, 0, n);
    for (size_t k : carried) result.push_back(or_zero(output_tangents[k], outputs[k], where));
    for (size_t r = 0; r < k_ys; ++r) result.push_back(outputs[n + r]);
    for (size_t r : stacked) result.push_back(or_zero(output_tangents[n + r], outputs[n + r], where));
    return result;
  };
  Arrays results =
      derivative_scan("scan body (jvp)", where, carries, xs, body_fn, ir::scan_length(node), ir::scan_reverse(node));
  ControlJvp out{joined(slice(results, 0, n), slice(results, carry_count, k_ys)), Arrays(types.size())};
  for (size_t j = 0; j < carried.size(); ++j) out.tangents[carried[j]] = results[n + j];
  for (size_t j = 0; j < stacked.size(); ++j) out.tangents[n + stacked[j]] = results[carry_count + k_ys + j];
  return out;
}

// ---- reverse mode ----------------------------------------------------------------

Arrays vjp_cond(const ir::Node& node, std::span<const Array> operands, std::span<const Array> result_cotangents) {
  Location where = node.where;
  const CondOperands cond(node, operands);
  const auto& [layout, m, types, moving, differentiable] = cond;
  // Every branch returns a cotangent for every branch's captures: zeros for
  // the branches not taken, so all branches return the same types.
  Arrays all_captures = slice(operands, layout.leading, operands.size() - layout.leading);
  std::vector<size_t> captured = floating_positions(all_captures);
  if (moving.empty() && captured.empty()) return Arrays(operands.size());
  Arrays examples = joined(slice(operands, 1, m), all_captures);
  for (size_t r : differentiable) examples.push_back(or_zero(result_cotangents[r], types[r], where));
  std::vector<detail::TracedGraph> bodies;
  for (size_t b = 0; b < node.bodies.size(); ++b) {
    auto branch = closed(*node.bodies[b]);
    size_t begin = layout.capture_begin(node, b) - layout.leading, count = ir::body_capture_count(node, b);
    auto branch_fn = [&](const Arrays& a) {
      Arrays arguments = joined(slice(a, 0, m), slice(a, m + begin, count));
      Replay forward_values = replay(*branch, arguments, {});
      Arrays output_cotangents(types.size());
      for (size_t j = 0; j < differentiable.size(); ++j)
        output_cotangents[differentiable[j]] = a[m + all_captures.size() + j];
      Arrays input_cotangents = backward(forward_values, output_cotangents), result;
      for (size_t k : moving) result.push_back(strong(or_zero(input_cotangents[k], a[k], where), where));
      for (size_t c : captured) {
        bool mine = c >= begin && c < begin + count;
        result.push_back(mine ? strong(or_zero(input_cotangents[m + c - begin], a[m + c], where), where)
                              : zero_of(detail::impl(a[m + c])->type, where));
      }
      return result;
    };
    bodies.push_back(trace_derivative("cond branch " + std::to_string(b) + " (vjp)", where, examples, branch_fn));
  }
  Arrays results =
      detail::control_flow(detail::ControlKind::cond, joined({operands[0]}, examples), std::move(bodies), {}, where);
  Arrays cotangents(operands.size());
  for (size_t j = 0; j < moving.size(); ++j) cotangents[1 + moving[j]] = results[j];
  for (size_t j = 0; j < captured.size(); ++j) cotangents[layout.leading + captured[j]] = results[moving.size() + j];
  return cotangents;
}

Arrays vjp_scan(const ir::Node& node, std::span<const Array> operands, std::span<const Array> result_cotangents,
                std::span<const Array> residuals) {
  Location where = node.where;
  const ScanOperands scan(node, operands);
  const auto& [layout, n, m, captures, types, k_ys, carried, scanned, stacked] = scan;
  std::vector<size_t> captured = floating_positions(captures);
  if (carried.empty() && captured.empty() && scanned.empty()) return Arrays(operands.size());
  // Carry: the carries' cotangents, then the captures' accumulated over the steps.
  Arrays carry;
  for (size_t k : carried) carry.push_back(or_zero(result_cotangents[k], operands[k], where));
  for (size_t c : captured) carry.push_back(zero_of(detail::impl(captures[c])->type, where));
  // Scanned: the saved input carries, the scanned arrays, the outputs' cotangents.
  Arrays xs = joined(Arrays(residuals.begin(), residuals.end()), slice(operands, n, m));
  for (size_t r : stacked) xs.push_back(or_zero(result_cotangents[n + r], types[n + r], where));
  auto body_graph = closed(*node.bodies[0]);
  size_t carry_count = carry.size();
  auto body_fn = [&](const Arrays& a) {
    size_t at = carry_count;
    Arrays arguments = joined(joined(slice(a, at, n), slice(a, at + n, m)), captures);
    Replay forward_values = replay(*body_graph, arguments, {});
    Arrays output_cotangents(n + k_ys);
    for (size_t j = 0; j < carried.size(); ++j) output_cotangents[carried[j]] = a[j];
    for (size_t j = 0; j < stacked.size(); ++j) output_cotangents[n + stacked[j]] = a[at + n + m + j];
    Arrays input_cotangents = backward(forward_values, output_cotangents), result;
    for (size_t k : carried) result.push_back(or_zero(input_cotangents[k], arguments[k], where));
    for (size_t j = 0; j < captured.size(); ++j) {
      const Array& step = input_cotangents[n + m + captured[j]];
      const Array& total = a[carried.size() + j];
      result.push_back(step.defined() ? add(Operand(total, where), Operand(step, where)) : total);
    }
    for (size_t k : scanned) result.push_back(or_zero(input_cotangents[n + k], arguments[n + k], where));
    return result;
  };
  // The steps in the opposite order; the saved carries are indexed by step either way.
  Arrays results =
      derivative_scan("scan body (vjp)", where, carry, xs, body_fn, ir::scan_length(node), !ir::scan_reverse(node));
  Arrays cotangents(operands.size());
  for (size_t j = 0; j < carried.size(); ++j) cotangents[carried[j]] = results[j];
  size_t capture_begin = layout.capture_begin(node, 0);
  for (size_t j = 0; j < captured.size(); ++j) cotangents[capture_begin + captured[j]] = results[carried.size() + j];
  for (size_t j = 0; j < scanned.size(); ++j) cotangents[n + scanned[j]] = results[carry_count + j];
  return cotangents;
}

}  // namespace

ControlJvp control_jvp(const ir::Node& node, std::span<const Array> operands, std::span<const Array> tangents) {
  detail::LocationScope scope(node.where);
  if (node.op == ir::Primitive::while_loop) return jvp_while(node, operands, tangents);
  if (node.op == ir::Primitive::cond) return jvp_cond(node, operands, tangents);
  return jvp_scan(node, operands, tangents);
}

void replay_scan(const ir::Node& node, std::span<const Array> operands, std::vector<Array>& results,
                 std::vector<Array>& residuals) {
  Location where = node.where;
  size_t n = ir::scan_carry_count(node), leading = ir::leading_operand_count(node, operands.size());
  Arrays captures = slice(operands, leading, operands.size() - leading);
  auto body_fn = [&](const Arrays& a) {
    return joined(ops::apply_graph(*node.bodies[0], a, captures), slice(a, 0, n));
  };
  Arrays examples = joined(slice(operands, 0, n), rows_of(slice(operands, n, leading - n)));
  std::vector<detail::TracedGraph> bodies;
  bodies.push_back(trace_derivative("scan body (saving carries)", where, examples, body_fn));
  Arrays all =
      detail::control_flow(detail::ControlKind::scan, slice(operands, 0, leading), std::move(bodies),
                           {static_cast<int64_t>(n), ir::scan_length(node), ir::scan_reverse(node) ? 1 : 0}, where);
  results = slice(all, 0, all.size() - n);
  residuals = slice(all, all.size() - n, n);
}

std::vector<Array> control_vjp(const ir::Node& node, std::span<const Array> operands,
                               std::span<const Array> result_cotangents, std::span<const Array> residuals) {
  detail::LocationScope scope(node.where);
  if (node.op == ir::Primitive::cond) return vjp_cond(node, operands, result_cotangents);
  if (node.op == ir::Primitive::scan) return vjp_scan(node, operands, result_cotangents, residuals);
  detail::raise("while_loop",
                "reverse-mode derivatives need the trip count, which a while_loop knows only when it runs", node.where,
                "use fori_loop with C++ integer bounds, or scan, whose trip counts are known when tracing; forward "
                "mode (jvp) works through while_loop");
}

}  // namespace kiln::transform
