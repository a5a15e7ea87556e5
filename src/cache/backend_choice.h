// KILN_BACKEND picks the backend behind jit and compiled eager operations:
// the native LLVM backend (default) or the reference interpreter.
#pragma once

#include "runtime/executable.h"

namespace kiln::cache {

/// The backend KILN_BACKEND names, read once (an unknown name warns and means llvm).
const runtime::Backend& default_backend();
/// Whether that backend is the native one: eager operations compile only there.
bool native_backend_chosen();

}  // namespace kiln::cache
