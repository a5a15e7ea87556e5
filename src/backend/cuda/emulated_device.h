// A GPU emulated on the host (see device.h): the GPU entries compiled for the
// CPU, each launch running the grid's threads one after another, products
// through OpenBLAS in cuBLAS's column-major convention. What the CUDA device
// does differently is only where the entries run and whose product it is.
#pragma once

#include <memory>

#include "backend/cuda/device.h"

namespace kiln::cuda_backend {

/// A fresh emulated device with `blocks` resident blocks of `threads`
/// threads: a small grid, so that each thread runs several iterations.
std::shared_ptr<Device> make_emulated_device(int64_t blocks = 3, int64_t threads = 4);

}  // namespace kiln::cuda_backend
