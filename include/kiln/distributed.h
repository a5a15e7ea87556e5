// More than one process: data-parallel training over MPI.
//
//   mpirun -np 4 ./train      (or ./train alone: a world of one)
//
//   kiln::distributed::init();
//   auto step = kiln::jit([](Params p, const Array& x, const Array& y) {
//     auto grads = kiln::grad(loss)(p, x, y);                  // this rank's shard
//     grads = kiln::distributed::average_gradients(grads);     // a few all_reduces
//     return update(p, grads);
//   });
//
// Collectives work eagerly and inside jit, where each is a node of the graph
// (printed with its line; the world's size is part of the key) that the
// compiled code runs itself, and they have derivatives, so grad of a
// function with collectives is right. Before a jitted graph with collectives
// first runs, the ranks compare it: a rank whose graph differs (a
// rank-dependent number, another shape) raises kiln::Error on every rank,
// naming what differs, instead of hanging. An eager collective whose dtype
// or shape differs between ranks raises the same way.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/array.h"
#include "kiln/tree.h"

namespace kiln::distributed {

enum class ReduceOp : uint8_t { sum, mean, max, min };

/// Joins the world mpirun started (a world of one when not launched by an
/// MPI launcher); idempotent. Collectives call it themselves.
void init();
int rank();
int world_size();
void barrier();
/// This process's rank as a 0-d i32 array; inside jit, read when the graph
/// runs, so a graph using it is the same on every rank (a C++ rank() baked
/// in as a number would make the ranks' graphs differ).
Array rank_array(Location where = Location::current());

/// Every rank's x combined elementwise; every rank gets the result. mean
/// needs a floating dtype; sum, max and min take any dtype but bool (max and
/// min do: any and all). Integer sums wrap modulo 2^bits; f16 and bf16 sums
/// and means are computed in f32 and rounded once.
Array all_reduce(const Array& x, ReduceOp op = ReduceOp::sum, Location where = Location::current());
/// Every rank's x concatenated along `axis`, in rank order.
Array all_gather(const Array& x, int64_t axis = 0, Location where = Location::current());
/// The sum (or mean) over ranks of x, split along `axis` into world_size()
/// equal blocks, of which rank r keeps block r.
Array reduce_scatter(const Array& x, int64_t axis = 0, ReduceOp op = ReduceOp::sum,
                     Location where = Location::current());
/// Rank `root`'s x on every rank.
Array broadcast(const Array& x, int root = 0, Location where = Location::current());

namespace detail {
std::vector<Array> average_leaves(const std::vector<Array>& leaves, int64_t bucket_bytes, Location where);
}

/// The mean over ranks of every array of a tree of gradients, with the
/// arrays packed into buckets of about `bucket_bytes` (one all_reduce per
/// bucket, not per array).
template <class Tree>
Tree average_gradients(const Tree& gradients, int64_t bucket_bytes = int64_t{32} << 20,
                       Location where = Location::current()) {
  std::vector<Array> averaged = detail::average_leaves(tree_leaves(gradients), bucket_bytes, where);
  size_t next = 0;
  return tree_map([&](const Array&) { return averaged[next++]; }, gradients);
}

}  // namespace kiln::distributed
