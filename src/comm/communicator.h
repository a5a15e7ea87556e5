// The processes a program runs as, through MPI: who this one is, how many
// there are, and collectives on raw buffers. Launched by mpirun, MPI starts
// on first use; otherwise the world is this process alone and no MPI call is
// made, so the same program runs by itself. Calls are serialized: kiln asks
// MPI for MPI_THREAD_SERIALIZED and holds a lock around each call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/dtype.h"

namespace kiln::comm {

enum class ReduceOp : uint8_t { sum, mean, max, min };
const char* reduce_op_name(ReduceOp op);

struct World {
  int rank = 0;
  int size = 1;
  bool launched = false;  // started by an MPI launcher (mpirun)
};

/// This process's place in the world; starts MPI on first use when launched.
const World& world();
void barrier();

/// `count` elements of `dtype` combined across ranks (mean: the sum divided
/// by the world's size, for floating dtypes). `in` and `out` may be equal.
void all_reduce(const void* in, void* out, int64_t count, DType dtype, ReduceOp op);
/// Every rank's `bytes` bytes, in rank order, into `out` (size * bytes).
void all_gather(const void* in, void* out, int64_t bytes);
/// The sum over ranks of `in` (size * count elements), rank r keeping block r (count elements).
void reduce_scatter(const void* in, void* out, int64_t count, DType dtype, ReduceOp op);
/// Root's `bytes` bytes into every rank's `buffer`.
void broadcast(void* buffer, int64_t bytes, int root);
/// Every rank's text, in rank order.
std::vector<std::string> all_gather_text(const std::string& text);

}  // namespace kiln::comm
