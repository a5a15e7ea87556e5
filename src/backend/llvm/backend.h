// The native backend: graphs fused, compiled to vectorized multi-threaded
// loops with LLVM's ORC JIT, and run by the runtime's executor.
#pragma once

#include <cstddef>

#include "runtime/executable.h"

namespace kiln::llvm_backend {

const runtime::Backend& llvm_backend();

/// Modules of native code optimized and generated so far in this process
/// (tests check that a symbolic graph compiles once for every size).
size_t modules_compiled();
/// Of those, the ones with quick machine code (runtime::CodeQuality).
size_t quick_modules_compiled();

}  // namespace kiln::llvm_backend
