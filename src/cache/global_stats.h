// Process-wide totals over every jitted function (kiln::global_cache_stats),
// kept in atomics so that a hit adds to them without a shared lock.
#pragma once

#include "kiln/jit.h"

namespace kiln::cache {

/// Adds the nonzero fields of `delta` to the process-wide totals.
void add_global(const CacheStats& delta);

}  // namespace kiln::cache
