// Batching rules of loops and branches: new control nodes over bodies traced
// from the batched replay of the original bodies (transform/batching.h).
//   while_loop: a carry is batched when its initial value is or the body
//     makes it so (a fixed point); a batched predicate runs the loop until
//     every lane is done, and a finished lane keeps its carries (JAX's rule);
//   scan: the scanned arrays' lane axis moves behind the step axis, so each
//     step reads a batch of rows;
//   cond: an unbatched index picks one branch batched as a whole; a batched
//     index runs every branch and each lane takes its own branch's results.
#include "core/error_format.h"
#include "ir/control.h"
#include "kiln/control.h"
#include "kiln/ops.h"
#include "ops/common/apply.h"
#include "ops/common/batching.h"
#include "trace/trace.h"
#include "transform/batching.h"

namespace kiln::transform {

namespace {

using Arrays = std::vector<Array>;
using Flags = std::vector<char>;

std::vector<Batched> paired(std::span<const Array> values, const Flags& batched) {
  std::vector<Batched> result;
  for (size_t k = 0; k < values.size(); ++k) result.push_back({values[k], batched[k] != 0});
  return result;
}

Flags flags_of(std::span<const Batched> values) {
  Flags result;
  for (const Batched& value : values) result.push_back(value.batched);
  return result;
}

Arrays values_of(std::span<const Batched> values) {
  Arrays result;
  for (const Batched& value : values) result.push_back(value.value);
  return result;
}

/// Each value batched where `wanted` says, broadcasting those that are not yet.
Arrays batched_as(std::span<const Batched> values, const Flags& wanted, int64_t size) {
  Arrays result;
  for (size_t k = 0; k < values.size(); ++k)
    result.push_back(wanted[k] && !values[k].batched ? ops::with_batch_axis(values[k].value, false, size)
                                                     : values[k].value);
  return result;
}

Arrays all_batched(std::span<const Batched> values, int64_t size) {
  return batched_as(values, Flags(values.size(), 1), size);
}

template <class T>
std::vector<T> slice(std::span<const T> values, size_t begin, size_t count) {
  return std::vector<T>(values.begin() + static_cast<std::ptrdiff_t>(begin),
                        values.begin() + static_cast<std::ptrdiff_t>(begin + count));
}

Flags joined(Flags a, const Flags& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

detail::TracedGraph trace_batched(const std::string& name, Location where, const Arrays& examples,
                                  detail::FunctionRef<Arrays(const Arrays&)> fn) {
  detail::TraceSession session(name, where);
  Arrays arguments;
  for (const Array& example : examples) arguments.push_back(session.argument(example));
  Graph graph = session.finish(fn(arguments));
  return {std::move(graph), session.captured()};
}

/// Lane mask `predicate` ([B]) shaped to select between values like `like` ([B, ...]).
Array lane_mask(const Array& predicate, const Array& like) {
  Shape shape(detail::impl(like)->type.shape.size(), 1);
  shape[0] = detail::impl(predicate)->type.shape[0];
  return reshape(predicate, shape);
}

Array truth(const Array& value) {
  if (detail::impl(value)->type.dtype == DType::bool_) return value;
  return not_equal(value, 0);
}

// ---- while_loop ---------------------------------------------------------------

Arrays batch_while(const ir::Node& node, std::span<const Batched> operands, int64_t size) {
  Location where = node.where;
  size_t n = ir::leading_operand_count(node, operands.size());
  std::vector<Batched> condition_captures =
      slice(operands, ir::body_capture_begin(node, 0, operands.size()), ir::body_capture_count(node, 0));
  std::vector<Batched> body_captures =
      slice(operands, ir::body_capture_begin(node, 1, operands.size()), ir::body_capture_count(node, 1));
  const ir::Graph& condition = *node.bodies[0];
  const ir::Graph& body = *node.bodies[1];
  Flags carried = flags_of(operands.first(n));
  for (bool changed = true; changed;) {
    Flags out = batched_outputs(body, carried, flags_of(body_captures));
    changed = false;
    for (size_t k = 0; k < n; ++k)
      if (out[k] && !carried[k]) carried[k] = changed = true;
  }
  bool lanes_differ = batched_outputs(condition, carried, flags_of(condition_captures))[0] != 0;
  // Lanes that stop at different steps keep their own carries: all batched.
  if (lanes_differ) carried.assign(n, 1);
  Arrays init = batched_as(operands.first(n), carried, size);
  auto predicate = [&](const Arrays& carries) {
    return batch_graph(condition, paired(carries, carried), condition_captures, size)[0].value;
  };
  auto step = [&](const Arrays& carries) {
    std::vector<Batched> next = batch_graph(body, paired(carries, carried), body_captures, size);
    return batched_as(next, carried, size);
  };
  auto condition_fn = [&](const Arrays& carries) -> Arrays {
    Array value = predicate(carries);
    return {lanes_differ ? any(truth(value)) : value};
  };
  auto body_fn = [&](const Arrays& carries) -> Arrays {
    Arrays next = step(carries);
    if (!lanes_differ) return next;
    Array running = truth(predicate(carries));
    for (size_t k = 0; k < n; ++k) next[k] = kiln::where(lane_mask(running, next[k]), next[k], carries[k]);
    return next;
  };
  std::vector<detail::TracedGraph> bodies;
  bodies.push_back(trace_batched("while_loop condition (vmap)", where, init, condition_fn));
  bodies.push_back(trace_batched("while_loop body (vmap)", where, init, body_fn));
  Arrays results = detail::control_flow(detail::ControlKind::while_loop, init, std::move(bodies), {}, where);
  for (size_t k = 0; k < n; ++k) results[k] = ops::with_batch_axis(results[k], carried[k], size);
  return results;
}

// ---- scan ------------------------------------------------------------------------

Arrays batch_scan(const ir::Node& node, std::span<const Batched> operands, int64_t size) {
  Location where = node.where;
  size_t leading = ir::leading_operand_count(node, operands.size());
  size_t n = ir::scan_carry_count(node), m = leading - n;
  std::vector<Batched> captures = slice(operands, leading, operands.size() - leading);
  const ir::Graph& body = *node.bodies[0];
  Flags carried = flags_of(operands.first(n)), scanned = flags_of(operands.subspan(n, m));
  for (bool changed = true; changed;) {
    Flags out = batched_outputs(body, joined(carried, scanned), flags_of(captures));
    changed = false;
    for (size_t k = 0; k < n; ++k)
      if (out[k] && !carried[k]) carried[k] = changed = true;
  }
  Arrays carries = batched_as(operands.first(n), carried, size);
  // A batched scanned array [B, L, ...] steps along L: [L, B, ...], rows [B, ...].
  Arrays xs;
  for (size_t k = 0; k < m; ++k) {
    const Batched& x = operands[n + k];
    xs.push_back(x.batched ? moveaxis(x.value, 0, 1) : x.value);
  }
  auto body_fn = [&](const Arrays& a) -> Arrays {
    Flags flags = joined(carried, scanned);
    std::vector<Batched> out = batch_graph(body, paired(a, flags), captures, size);
    Flags wanted = carried;
    wanted.resize(out.size(), 1);  // every stacked output batched: the node's results all are
    return batched_as(out, wanted, size);
  };
  Arrays examples = carries;
  for (const Array& x : xs) examples.push_back(detail::row_placeholder(x));
  std::vector<detail::TracedGraph> bodies;
  bodies.push_back(trace_batched("scan body (vmap)", where, examples, body_fn));
  Arrays all = carries;
  all.insert(all.end(), xs.begin(), xs.end());
  Arrays results =
      detail::control_flow(detail::ControlKind::scan, all, std::move(bodies),
                           {static_cast<int64_t>(n), ir::scan_length(node), ir::scan_reverse(node) ? 1 : 0}, where);
  for (size_t k = 0; k < n; ++k) results[k] = ops::with_batch_axis(results[k], carried[k], size);
  for (size_t k = n; k < results.size(); ++k) results[k] = moveaxis(results[k], 1, 0);  // [L, B, ...] -> [B, L, ...]
  return results;
}

// ---- cond --------------------------------------------------------------------------

Arrays batch_cond(const ir::Node& node, std::span<const Batched> operands, int64_t size) {
  Location where = node.where;
  size_t leading = ir::leading_operand_count(node, operands.size());
  std::vector<Batched> branch_operands = slice(operands, 1, leading - 1);
  auto branch_captures = [&](size_t b) {
    return slice(operands, ir::body_capture_begin(node, b, operands.size()), ir::body_capture_count(node, b));
  };
  size_t branches = node.bodies.size();
  if (!operands[0].batched) {
    Flags flags = flags_of(branch_operands);
    Arrays examples = values_of(branch_operands);
    std::vector<detail::TracedGraph> bodies;
    for (size_t b = 0; b < branches; ++b) {
      std::vector<Batched> captures = branch_captures(b);
      auto branch_fn = [&](const Arrays& a) {
        return all_batched(batch_graph(*node.bodies[b], paired(a, flags), captures, size), size);
      };
      bodies.push_back(trace_batched("cond branch " + std::to_string(b) + " (vmap)", where, examples, branch_fn));
    }
    Arrays index_and_operands{operands[0].value};
    index_and_operands.insert(index_and_operands.end(), examples.begin(), examples.end());
    return detail::control_flow(detail::ControlKind::cond, index_and_operands, std::move(bodies), {}, where);
  }
  // Lanes disagree on the branch: every branch runs on every lane, and each
  // lane keeps the results of its own.
  Array index = clip(operands[0].value, 0, static_cast<int64_t>(branches) - 1);
  Arrays results;
  for (size_t b = 0; b < branches; ++b) {
    Arrays out = all_batched(batch_graph(*node.bodies[b], branch_operands, branch_captures(b), size), size);
    if (b == 0) {
      results = std::move(out);
      continue;
    }
    Array chosen = equal(index, static_cast<int64_t>(b));
    for (size_t k = 0; k < results.size(); ++k) results[k] = kiln::where(lane_mask(chosen, out[k]), out[k], results[k]);
  }
  return results;
}

}  // namespace

std::vector<Array> batch_control(const ir::Node& node, std::span<const Batched> operands, int64_t size) {
  detail::LocationScope scope(node.where);
  if (node.op == ir::Primitive::while_loop) return batch_while(node, operands, size);
  if (node.op == ir::Primitive::scan) return batch_scan(node, operands, size);
  return batch_cond(node, operands, size);
}

}  // namespace kiln::transform
