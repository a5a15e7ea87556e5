// A small persistent thread pool that splits loop ranges across cores.
// A loop is cut into parts whose bounds depend only on its size (so results
// never depend on which thread ran what, or on how busy the machine is);
// threads claim parts, and the caller runs whatever no worker has started.
#pragma once

#include <cstdint>
#include <functional>

namespace kiln::runtime {

/// Worker threads plus the caller: the cores this process may run on,
/// divided among the MPI ranks sharing the node, or KILN_THREADS.
int thread_count();
/// Uses at most `threads` of them from now on (benchmarks comparing equal threads).
void set_thread_limit(int threads);

/// Runs body(begin, end) over [0, range) in contiguous parts, on several
/// threads when `range * cost_per_iteration` is large enough to pay for it
/// (and, measured as it runs, handing parts to other threads did pay for
/// loops of this size). `most_parts` caps the number of parts (0: the pool's
/// own cap), for bodies with a fixed cost per call such as a matrix product
/// packing its operand. When a part throws, the parts not yet started are
/// skipped and the first exception reaches the caller once no part runs.
void parallel_for(int64_t range, int64_t cost_per_iteration, const std::function<void(int64_t, int64_t)>& body,
                  int64_t most_parts = 0);

}  // namespace kiln::runtime
