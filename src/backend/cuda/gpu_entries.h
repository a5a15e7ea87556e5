// The GPU entries of a plan's kernels as LLVM IR (see ptx.h for what an
// entry does), for either of two places they run: NVIDIA GPUs, where each
// thread reads its position in the grid from PTX's special registers, or
// the host, where an emulated device passes the position as four trailing
// parameters (thread, block size, block, grid size) and runs the grid's
// threads one after another. Both run the same IR otherwise.
#pragma once

#include <llvm/IR/Module.h>

#include <map>
#include <string>
#include <vector>

#include "backend/cuda/ptx.h"

namespace kiln::cuda_backend {

enum class GridSource { special_registers, parameters };

/// What a kernel is, for errors about its GPU code: its root's primitive and
/// type, and the user's line that made the root.
struct KernelOrigin {
  std::string description;
  Location where;
};

struct GpuEntries {
  std::vector<GpuKernel> kernels;  // by the plan's kernel index
  std::map<std::string, KernelOrigin> origin_of_entry;
};

/// Emits every kernel of `plan` into `module` with its entry.
GpuEntries emit_gpu_entries(llvm::Module& module, const ir::Graph& graph, const llvm_backend::Plan& plan,
                            GridSource grid);

/// Each entry's parameters, as an array of pointers to them (CUDA's
/// kernelParams): a host function `entry + "_launch"(void** parameters)`
/// calling the entry, which is how the emulated device calls entries of
/// different parameter lists alike.
void define_launchers(llvm::Module& module, const GpuEntries& entries);

}  // namespace kiln::cuda_backend
