// The backend of the "cuda" device: a graph planned as for the CPU (the same
// fusion plan, llvm_backend::plan_graph), its kernels loaded on a Device, and
// its steps run there in order. Arguments are copied to the device at each
// call and results back to the host at its end.
//
// Matrix products are the device's (cuBLAS on a GPU); a step with no GPU
// code (a primitive run by its reference kernel) runs on the host between
// two copies. Loops and branches, and graphs with dynamic dimensions, are
// refused when compiled, with a kiln::Error naming the line.
#pragma once

#include <memory>

#include "backend/cuda/device.h"
#include "runtime/executable.h"

namespace kiln::cuda_backend {

/// A backend running on `device`.
std::unique_ptr<runtime::Backend> make_gpu_backend(std::shared_ptr<Device> device);

}  // namespace kiln::cuda_backend
