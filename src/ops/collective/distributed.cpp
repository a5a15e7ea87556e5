// The entry points of <kiln/distributed.h>. An eager collective first makes
// the ranks agree on what they are about to do (one small all_gather of a
// fixed-size comm::Intent: operation, dtype, shape, line), so ranks that
// disagree raise kiln::Error together instead of pairing unrelated MPI calls
// and hanging. Inside a trace nothing is exchanged: the graph is compared
// across ranks once, before it first runs (cache/rank_agreement.cpp).
#include "kiln/distributed.h"

#include <algorithm>
#include <cstring>

#include "comm/communicator.h"
#include "core/error_format.h"
#include "ops/collective/collective.h"
#include "ops/common/apply.h"
#include "ops/common/axes.h"
#include "trace/trace.h"

namespace kiln::distributed {

namespace {

void agree(const char* operation, int64_t setting, const Array& x, Location where) {
  if (comm::world().size == 1 || kiln::detail::current_trace()) return;
  const kiln::detail::AbstractValue& type = kiln::detail::impl_of(x, operation, where).type;
  comm::Intent mine;
  std::strncpy(mine.operation, operation, sizeof mine.operation - 1);
  mine.setting = static_cast<int32_t>(setting);
  mine.dtype = static_cast<int32_t>(type.dtype);
  mine.ndim = static_cast<int32_t>(type.ndim());
  for (size_t d = 0; d < std::min(type.shape.size(), comm::Intent::max_dims); ++d) mine.dims[d] = type.shape[d];
  std::string file = kiln::detail::location_string(where);
  file = file.substr(0, file.rfind(':'));
  std::strncpy(mine.where, file.c_str(), sizeof mine.where - 1);
  mine.line = static_cast<int32_t>(where.line());
  std::vector<comm::Intent> all = comm::exchange(mine);
  if (std::all_of(all.begin(), all.end(), [&](const comm::Intent& intent) { return intent.same_as(all[0]); })) return;
  std::string ranks;
  for (size_t r = 0; r < all.size(); ++r) ranks += "\n  rank " + std::to_string(r) + ": " + all[r].text();
  kiln::detail::raise(operation, "the ranks disagree on the collective they run:" + ranks, where,
                      "every rank must call the same collectives in the same order with the same dtypes and shapes");
}

int64_t axis_of(const Array& x, int64_t axis, const char* operation, Location where) {
  const kiln::detail::AbstractValue& type = kiln::detail::impl_of(x, operation, where).type;
  if (type.ndim() == 0)
    kiln::detail::raise(operation, "a 0-d array has no axis to gather or scatter along", where,
                        "reshape it to [1] first");
  return ops::normalize_axis(axis, type.ndim(), operation, type.shape, where);
}

}  // namespace

void init() { comm::world(); }
int rank() { return comm::world().rank; }
int world_size() { return comm::world().size; }
void barrier() { comm::barrier(); }

Array rank_array(Location where) {
  return kiln::detail::apply(ir::Primitive::rank, std::span<const Array>(), {}, where);
}

Array all_reduce(const Array& x, ReduceOp op, Location where) {
  agree("all_reduce", static_cast<int64_t>(op), x, where);
  return ops::collective(ir::Primitive::all_reduce, x, {static_cast<int64_t>(op)}, where);
}

Array all_gather(const Array& x, int64_t axis, Location where) {
  axis = axis_of(x, axis, "all_gather", where);
  agree("all_gather", axis, x, where);
  return ops::collective(ir::Primitive::all_gather, x, {axis}, where);
}

Array reduce_scatter(const Array& x, int64_t axis, ReduceOp op, Location where) {
  axis = axis_of(x, axis, "reduce_scatter", where);
  agree("reduce_scatter", axis, x, where);
  return ops::collective(ir::Primitive::reduce_scatter, x, {axis, static_cast<int64_t>(op)}, where);
}

Array broadcast(const Array& x, int root, Location where) {
  agree("broadcast", root, x, where);
  return ops::collective(ir::Primitive::broadcast_from, x, {root}, where);
}

namespace detail {

// Consecutive floating gradients of one dtype share a bucket until it holds
// about bucket_bytes; each bucket is flattened, concatenated, averaged with
// one all_reduce and split back.
std::vector<Array> average_leaves(const std::vector<Array>& leaves, int64_t bucket_bytes, Location where) {
  std::vector<Array> averaged(leaves.size());
  size_t first = 0;
  while (first < leaves.size()) {
    DType dtype = leaves[first].dtype();
    size_t end = first;
    int64_t bytes = 0;
    while (end < leaves.size() && leaves[end].dtype() == dtype && (end == first || bytes < bucket_bytes)) {
      bytes += leaves[end].size() * static_cast<int64_t>(dtype_size(dtype));
      ++end;
    }
    std::vector<Array> flat;
    for (size_t k = first; k < end; ++k) flat.push_back(reshape(leaves[k], {leaves[k].size()}, where));
    Array bucket = end - first == 1 ? flat[0] : concatenate(flat, 0, where);
    Array mean = all_reduce(bucket, ReduceOp::mean, where);
    int64_t offset = 0;
    for (size_t k = first; k < end; ++k) {
      int64_t count = leaves[k].size();
      Array part = end - first == 1 ? mean : slice(mean, {offset}, {offset + count}, {}, where);
      averaged[k] = reshape(part, leaves[k].shape(), where);
      offset += count;
    }
    first = end;
  }
  return averaged;
}

}  // namespace detail
}  // namespace kiln::distributed
