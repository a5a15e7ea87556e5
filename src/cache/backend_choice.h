// KILN_BACKEND picks the backend behind jit and compiled eager operations:
// the native LLVM backend (default) or the reference interpreter.
#pragma once

#include "runtime/executable.h"

namespace kiln::cache {

const runtime::Backend& default_backend();

}  // namespace kiln::cache
