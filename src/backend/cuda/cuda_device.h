// An NVIDIA GPU through the CUDA driver (cuda_driver.h): the plan's kernels
// as PTX (ptx.h) loaded with cuModuleLoadDataEx, launched on the default
// stream, products through cuBLAS on the same stream, memory from
// cuMemAlloc kept in the device's cache of freed blocks.
#pragma once

#include <memory>

#include "backend/cuda/device.h"

namespace kiln::cuda_backend {

/// The process's CUDA device (GPU 0, or the one KILN_CUDA_DEVICE numbers),
/// opened on first use through KILN_CUDA_DRIVER or libcuda.so.1. Raises
/// kiln::Error saying why there is none (no driver, no GPU, an old driver),
/// again at each call.
std::shared_ptr<Device> cuda_device();

}  // namespace kiln::cuda_backend
