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

/// What a rank is about to do, in a fixed size so that every rank's can be
/// exchanged with one all_gather whatever it is: ranks that disagree find out
/// together, instead of pairing unrelated calls and hanging.
struct Intent {
  static constexpr size_t max_dims = 8;
  char operation[24] = {};
  int32_t setting = 0;  // a reduction, an axis, a root
  int32_t dtype = 0;
  int32_t ndim = 0;
  int32_t line = 0;
  int64_t dims[max_dims] = {};  // a shape, or a digest
  char where[48] = {};          // a file name, a function name

  bool same_as(const Intent& other) const;
  std::string text() const;
};
/// Every rank's intent, in rank order.
std::vector<Intent> exchange(const Intent& mine);

}  // namespace kiln::comm
