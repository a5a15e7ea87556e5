// A small persistent thread pool that splits loop ranges across cores.
// Small ranges stay on the calling thread; the caller always takes a share.
#pragma once

#include <cstdint>
#include <functional>

namespace kiln::runtime {

/// Worker threads plus the caller (hardware concurrency, or KILN_THREADS).
int thread_count();
/// Uses at most `threads` of them from now on (benchmarks comparing equal threads).
void set_thread_limit(int threads);

/// Runs body(begin, end) over [0, range) in contiguous chunks, on several
/// threads when `range * cost_per_iteration` is large enough to pay for it.
void parallel_for(int64_t range, int64_t cost_per_iteration, const std::function<void(int64_t, int64_t)>& body);

}  // namespace kiln::runtime
