// Process-wide totals over every jitted function (kiln::global_cache_stats),
// kept in atomics so that a hit adds to them without a shared lock.
#pragma once

#include "kiln/jit.h"

namespace kiln::cache {

/// Adds the nonzero fields of `delta` to the process-wide totals.
void add_global(const CacheStats& delta);
/// The same for one call, and for one hit: every jitted call counts one, so
/// these skip building and scanning a whole CacheStats.
void count_global_call();
void count_global_hit();

}  // namespace kiln::cache
