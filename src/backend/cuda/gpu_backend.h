// The backend of the "cuda" device: a graph planned as for the CPU (the same
// fusion plan, llvm_backend::plan_graph), its kernels loaded on a Device, and
// its steps run there in order. Arguments already on the device are read in
// place, others are copied there at each call; results stay on the device
// (device-resident arrays: core/array_impl.h's DeviceStorage) until the
// host reads them.
//
// Matrix products are the device's (cuBLAS on a GPU); a step with no GPU
// code (a primitive run by its reference kernel) runs on the host between
// two copies. A loop or branch runs its compiled bodies on the device,
// reading each iteration's predicate or index on the host. A graph with
// dynamic dimensions compiles once; each binding of its symbols prepares
// the kernels' constants and ranges once, bodies included.
//
// Saved executables (the persistent cache) keep the plan's digest, each
// kernel's entry and range, and the device's code: PTX, which the driver
// compiles for its GPU when loaded.
#pragma once

#include <memory>

#include "backend/cuda/device.h"
#include "core/array_impl.h"
#include "runtime/executable.h"

namespace kiln::cuda_backend {

/// A backend running on `device`.
std::unique_ptr<runtime::Backend> make_gpu_backend(std::shared_ptr<Device> device);

/// `bytes` of host memory copied to `device`, as a device-resident array's storage.
std::shared_ptr<const detail::DeviceStorage> copy_to_device(Device& device, const void* data, size_t bytes);

}  // namespace kiln::cuda_backend
