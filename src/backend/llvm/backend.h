// The native backend: graphs fused, compiled to vectorized multi-threaded
// loops with LLVM's ORC JIT, and run by the runtime's executor.
#pragma once

#include "runtime/executable.h"

namespace kiln::llvm_backend {

const runtime::Backend& llvm_backend();

}  // namespace kiln::llvm_backend
