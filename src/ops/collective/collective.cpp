// Collectives across the processes of an MPI world — all_reduce, all_gather,
// reduce_scatter, broadcast, and rank (this process's place, read at run
// time so graphs stay the same on every rank): shape rules, the kernels
// (MPI through comm/communicator.h, called by eager code and by compiled
// graphs alike), derivatives, and the entry points of <kiln/distributed.h>.
//
// The last int of every collective node is the world's size it was traced
// for: part of the graph, so of every cache key.
#include "ops/collective/collective.h"

#include <algorithm>
#include <cstring>

#include "comm/communicator.h"
#include "core/error_format.h"
#include "kiln/distributed.h"
#include "ops/common/apply.h"
#include "ops/common/axes.h"
#include "ops/common/batching.h"
#include "ops/common/rules.h"
#include "trace/trace.h"

namespace kiln {
namespace ops {
namespace {

using comm::ReduceOp;

[[noreturn]] void reject(const Node& node, const std::string& message, const std::string& hint = {}) {
  detail::raise(ir::primitive_name(node.op), message, node.where, hint);
}

ReduceOp reduce_op(const Node& node, size_t index) { return static_cast<ReduceOp>(node.attrs.ints.at(index)); }
int64_t traced_world(const Node& node) { return node.attrs.ints.back(); }

// A graph traced for one world's size runs only in a world of that size.
void check_world(const Node& node) {
  int64_t here = comm::world().size;
  if (traced_world(node) != here)
    reject(node,
           "traced for a world of " + std::to_string(traced_world(node)) + " processes, running in a world of " +
               std::to_string(here),
           "trace (jit) the function again in this world");
}

void check_reduce_op(const Node& node, ReduceOp op, DType dtype) {
  if (op > ReduceOp::min) reject(node, "has no reduction operation " + std::to_string(static_cast<int>(op)));
  if ((op == ReduceOp::max || op == ReduceOp::min) && is_complex(dtype))
    reject(node,
           std::string(comm::reduce_op_name(op)) + " of " + std::string(dtype_name(dtype)) +
               " values: complex numbers have no order",
           "reduce kiln::real(x), kiln::imag(x) or kiln::abs(x)");
  if (op == ReduceOp::mean && !is_floating(dtype) && !is_complex(dtype))
    reject(node, "mean of " + std::string(dtype_name(dtype)) + " values", "convert to f32 or f64 first (astype)");
  if (dtype == DType::bool_ && (op == ReduceOp::sum || op == ReduceOp::mean))
    reject(node, std::string(comm::reduce_op_name(op)) + " of bool values",
           "use max (any) or min (all), or convert to an integer dtype first (astype)");
}

AbstractValue one_input(const Node& node, std::span<const AbstractValue* const> inputs, size_t ints) {
  if (inputs.size() != 1 || node.attrs.ints.size() != ints)
    reject(node, "takes one array and " + std::to_string(ints) + " attributes");
  return *inputs[0];
}

// ---- all_reduce: ints {op, world} ----

AbstractValue infer_all_reduce(const Node& node, std::span<const AbstractValue* const> inputs) {
  AbstractValue type = one_input(node, inputs, 2);
  check_reduce_op(node, reduce_op(node, 0), type.dtype);
  return type;
}

Array evaluate_all_reduce(const Node& node, std::span<const Array> inputs) {
  check_world(node);
  Array out = detail::allocate(node.type);
  comm::all_reduce(detail::impl(inputs[0])->data<char>(), detail::impl(out)->mutable_data<char>(), node.type.size(),
                   node.type.dtype, reduce_op(node, 0));
  return out;
}

Array reduce_across(const Array& x, ReduceOp op, Location where) {
  return collective(Primitive::all_reduce, x, {static_cast<int64_t>(op)}, where);
}

// max and min: the derivative goes to the ranks holding the extreme, shared
// equally between ties.
Array extreme_share(const Array& x, const Array& output, Location where) {
  Array holds = astype(equal(x, output), x.dtype(), where);
  return holds / reduce_across(holds, ReduceOp::sum, where);
}

std::vector<Array> all_reduce_vjp(const Node& node, std::span<const Array> inputs, const Array& output,
                                  const Array& cotangent) {
  ReduceOp op = reduce_op(node, 0);
  if (op == ReduceOp::sum || op == ReduceOp::mean) return {reduce_across(cotangent, op, node.where)};
  return {reduce_across(cotangent, ReduceOp::sum, node.where) * extreme_share(inputs[0], output, node.where)};
}

Array all_reduce_jvp(const Node& node, std::span<const Array> inputs, const Array& output,
                     std::span<const Array> tangents) {
  ReduceOp op = reduce_op(node, 0);
  if (op == ReduceOp::sum || op == ReduceOp::mean) return reduce_across(tangents[0], op, node.where);
  return reduce_across(tangents[0] * extreme_share(inputs[0], output, node.where), ReduceOp::sum, node.where);
}

// ---- all_gather: ints {axis, world} ----

AbstractValue infer_all_gather(const Node& node, std::span<const AbstractValue* const> inputs) {
  AbstractValue type = one_input(node, inputs, 2);
  int64_t axis = node.attrs.ints[0];
  if (axis < 0 || axis >= type.ndim())
    reject(node, "axis " + std::to_string(axis) + " of " + type.to_string(),
           "gather along an existing axis (reshape a 0-d value to [1] first)");
  type.shape[static_cast<size_t>(axis)] *= traced_world(node);
  return type;
}

// Rank r's x sits in the output at block r of `axis`: for each index of the
// axes before it, one run of (extent * later axes) elements per rank.
struct Blocks {
  int64_t outer = 1, run_bytes = 0;
};
Blocks blocks_along(const AbstractValue& type, int64_t axis) {
  Blocks blocks;
  for (int64_t d = 0; d < axis; ++d) blocks.outer *= type.shape[static_cast<size_t>(d)];
  blocks.run_bytes = static_cast<int64_t>(type.bytes()) / std::max<int64_t>(blocks.outer, 1);
  return blocks;
}

Array evaluate_all_gather(const Node& node, std::span<const Array> inputs) {
  check_world(node);
  const AbstractValue& type = detail::impl(inputs[0])->type;
  Array out = detail::allocate(node.type);
  int64_t world = comm::world().size, bytes = static_cast<int64_t>(type.bytes());
  if (node.attrs.ints[0] == 0 || bytes == 0) {
    comm::all_gather(detail::impl(inputs[0])->data<char>(), detail::impl(out)->mutable_data<char>(), bytes);
    return out;
  }
  std::string gathered(static_cast<size_t>(bytes * world), '\0');
  comm::all_gather(detail::impl(inputs[0])->data<char>(), gathered.data(), bytes);
  Blocks blocks = blocks_along(type, node.attrs.ints[0]);
  for (int64_t p = 0; p < blocks.outer; ++p)
    for (int64_t r = 0; r < world; ++r)
      std::memcpy(detail::impl(out)->mutable_data<char>() + (p * world + r) * blocks.run_bytes,
                  gathered.data() + r * bytes + p * blocks.run_bytes, static_cast<size_t>(blocks.run_bytes));
  return out;
}

Array gather_across(const Array& x, int64_t axis, Location where) {
  return collective(Primitive::all_gather, x, {axis}, where);
}
Array scatter_across(const Array& x, int64_t axis, ReduceOp op, Location where) {
  return collective(Primitive::reduce_scatter, x, {axis, static_cast<int64_t>(op)}, where);
}

std::vector<Array> all_gather_vjp(const Node& node, std::span<const Array>, const Array&, const Array& cotangent) {
  return {scatter_across(cotangent, node.attrs.ints[0], ReduceOp::sum, node.where)};
}
Array all_gather_jvp(const Node& node, std::span<const Array>, const Array&, std::span<const Array> tangents) {
  return gather_across(tangents[0], node.attrs.ints[0], node.where);
}

// ---- reduce_scatter: ints {axis, op, world} ----

AbstractValue infer_reduce_scatter(const Node& node, std::span<const AbstractValue* const> inputs) {
  AbstractValue type = one_input(node, inputs, 3);
  int64_t axis = node.attrs.ints[0], world = traced_world(node);
  ReduceOp op = reduce_op(node, 1);
  if (op != ReduceOp::sum && op != ReduceOp::mean)
    reject(node, std::string("reduces with ") + comm::reduce_op_name(op) + "; only sum and mean scatter",
           "use all_reduce with max or min, then slice");
  check_reduce_op(node, op, type.dtype);
  if (axis < 0 || axis >= type.ndim()) reject(node, "axis " + std::to_string(axis) + " of " + type.to_string());
  int64_t& extent = type.shape[static_cast<size_t>(axis)];
  if (extent % world != 0)
    reject(node,
           type.to_string() + " has " + std::to_string(extent) + " elements along axis " + std::to_string(axis) +
               ", not a multiple of the world's " + std::to_string(world) + " processes",
           "pad that axis to a multiple of world_size()");
  extent /= world;
  return type;
}

Array evaluate_reduce_scatter(const Node& node, std::span<const Array> inputs) {
  check_world(node);
  Array out = detail::allocate(node.type);
  int64_t world = comm::world().size, count = node.type.size();
  ReduceOp op = reduce_op(node, 1);
  if (node.attrs.ints[0] == 0 || count == 0) {
    comm::reduce_scatter(detail::impl(inputs[0])->data<char>(), detail::impl(out)->mutable_data<char>(), count,
                         node.type.dtype, op);
    return out;
  }
  // Rank r's block, spread along the axis, made contiguous first.
  Blocks blocks = blocks_along(node.type, node.attrs.ints[0]);
  int64_t block_bytes = static_cast<int64_t>(node.type.bytes());
  std::string arranged(static_cast<size_t>(block_bytes * world), '\0');
  for (int64_t p = 0; p < blocks.outer; ++p)
    for (int64_t r = 0; r < world; ++r)
      std::memcpy(arranged.data() + r * block_bytes + p * blocks.run_bytes,
                  detail::impl(inputs[0])->data<char>() + (p * world + r) * blocks.run_bytes,
                  static_cast<size_t>(blocks.run_bytes));
  comm::reduce_scatter(arranged.data(), detail::impl(out)->mutable_data<char>(), count, node.type.dtype, op);
  return out;
}

std::vector<Array> reduce_scatter_vjp(const Node& node, std::span<const Array>, const Array&, const Array& cotangent) {
  Array gathered = gather_across(cotangent, node.attrs.ints[0], node.where);
  if (reduce_op(node, 1) == ReduceOp::mean) gathered = gathered / static_cast<double>(traced_world(node));
  return {gathered};
}
Array reduce_scatter_jvp(const Node& node, std::span<const Array>, const Array&, std::span<const Array> tangents) {
  return scatter_across(tangents[0], node.attrs.ints[0], reduce_op(node, 1), node.where);
}

// ---- broadcast: ints {root, world} ----

AbstractValue infer_broadcast_from(const Node& node, std::span<const AbstractValue* const> inputs) {
  AbstractValue type = one_input(node, inputs, 2);
  if (node.attrs.ints[0] < 0 || node.attrs.ints[0] >= traced_world(node))
    reject(node, "root " + std::to_string(node.attrs.ints[0]) + " outside a world of " +
                     std::to_string(traced_world(node)) + " processes");
  return type;
}

Array evaluate_broadcast_from(const Node& node, std::span<const Array> inputs) {
  check_world(node);
  Array out = detail::allocate(node.type);
  size_t bytes = node.type.bytes();
  if (bytes) std::memcpy(detail::impl(out)->mutable_data<char>(), detail::impl(inputs[0])->data<char>(), bytes);
  comm::broadcast(detail::impl(out)->mutable_data<char>(), static_cast<int64_t>(bytes),
                  static_cast<int>(node.attrs.ints[0]));
  return out;
}

// Every rank's output is the root's input: the root's cotangent is the sum of all of them.
std::vector<Array> broadcast_from_vjp(const Node& node, std::span<const Array>, const Array&, const Array& cotangent) {
  Array total = reduce_across(cotangent, ReduceOp::sum, node.where);
  return {where(equal(distributed::rank_array(node.where), node.attrs.ints[0]), total, 0.0)};
}
Array broadcast_from_jvp(const Node& node, std::span<const Array>, const Array&, std::span<const Array> tangents) {
  return collective(Primitive::broadcast_from, tangents[0], {node.attrs.ints[0]}, node.where);
}

// ---- rank: no inputs, 0-d i32 ----

AbstractValue infer_rank(const Node& node, std::span<const AbstractValue* const> inputs) {
  if (!inputs.empty()) reject(node, "takes no input");
  return AbstractValue{.dtype = DType::i32, .shape = {}};
}
Array evaluate_rank(const Node& node, std::span<const Array>) {
  Array out = detail::allocate(node.type);
  *static_cast<int32_t*>(detail::impl(out)->buffer->data()) = comm::world().rank;
  return out;
}

std::string describe_all_reduce(const Node& node) { return comm::reduce_op_name(reduce_op(node, 0)); }
std::string describe_axis(const Node& node) { return "axis=" + std::to_string(node.attrs.ints[0]); }
std::string describe_reduce_scatter(const Node& node) {
  return "axis=" + std::to_string(node.attrs.ints[0]) + " " + comm::reduce_op_name(reduce_op(node, 1));
}
std::string describe_root(const Node& node) { return "root=" + std::to_string(node.attrs.ints[0]); }

}  // namespace

Array collective(Primitive op, const Array& x, std::vector<int64_t> ints, Location where) {
  ints.push_back(comm::world().size);
  return detail::apply(op, x, {.ints = std::move(ints)}, where);
}

void register_collective_rules(RuleTable& table) {
  // Every rank batches alike, so the lanes travel together in one message:
  // elementwise across ranks (all_reduce, broadcast) the batch axis is just
  // another axis; the gathering ones move their axis past it.
  auto row = [](auto infer, auto evaluate, auto describe, auto vjp, auto jvp, auto batch) {
    return PrimitiveRules{.infer = infer,
                          .evaluate = evaluate,
                          .describe = describe,
                          .vjp = vjp,
                          .jvp = jvp,
                          .batch = batch,
                          .fusion = Fusion::collective};
  };
  table[static_cast<size_t>(Primitive::all_reduce)] = row(&infer_all_reduce, &evaluate_all_reduce, &describe_all_reduce,
                                                          &all_reduce_vjp, &all_reduce_jvp, &batch_elementwise);
  table[static_cast<size_t>(Primitive::all_gather)] = row(&infer_all_gather, &evaluate_all_gather, &describe_axis,
                                                          &all_gather_vjp, &all_gather_jvp, &batch_shifting_first_int);
  table[static_cast<size_t>(Primitive::reduce_scatter)] =
      row(&infer_reduce_scatter, &evaluate_reduce_scatter, &describe_reduce_scatter, &reduce_scatter_vjp,
          &reduce_scatter_jvp, &batch_shifting_first_int);
  table[static_cast<size_t>(Primitive::broadcast_from)] =
      row(&infer_broadcast_from, &evaluate_broadcast_from, &describe_root, &broadcast_from_vjp, &broadcast_from_jvp,
          &batch_elementwise);
  table[static_cast<size_t>(Primitive::rank)] = {.infer = &infer_rank,
                                                 .evaluate = &evaluate_rank,
                                                 .no_derivative = "an integer result",
                                                 .never_batched = "no operands: the same in every lane",
                                                 .fusion = Fusion::collective};
}

}  // namespace ops
}  // namespace kiln
