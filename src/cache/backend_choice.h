// KILN_BACKEND picks the backend behind jit and compiled eager operations:
// the native LLVM backend (default) or the reference interpreter.
// JitOptions::device picks another device's: "cuda" for NVIDIA GPUs.
#pragma once

#include <string>

#include "runtime/executable.h"

namespace kiln::cache {

/// The backend KILN_BACKEND names, read once (an unknown name warns and means llvm).
const runtime::Backend& default_backend();
/// Whether that backend is the native one: eager operations compile only there.
bool native_backend_chosen();

/// The backend of JitOptions::device: null for "cpu" (the default backend),
/// the process's GPU backend for "cuda". Raises kiln::Error naming the
/// function `name` at `where` for an unknown device or a GPU that is not
/// there, and why.
const runtime::Backend* device_backend(const std::string& device, const std::string& name, Location where);

/// Connects to_device to the GPU backend (called before main, cache/eager.cpp).
void connect_devices();

}  // namespace kiln::cache
