// PTX for NVIDIA GPUs: the kernels of a fusion plan (llvm_backend::Plan)
// compiled by LLVM's NVPTX backend into one PTX module, which the CUDA
// driver compiles for its GPU when the module is loaded.
//
// Each kernel's loop body is the CPU backend's own (KernelEmitter), so a
// fused kernel computes the same values on both devices; only the entry
// differs. A GPU entry
//   kiln_gpu_kernel_N(constants, output, extra outputs..., leaves...,
//                     int64 range, int64 chunk, int64 output_stride)
// splits the kernel's parallel range (see llvm_backend::kernel_range) into
// iterations of `chunk` consecutive indices, and each GPU thread runs the
// body over one iteration after another, a grid's width apart. Iteration s
// writes its output at byte offset s * output_stride: zero for every kernel
// but a chunked reduction, whose slices each leave one partial result that
// the runtime then combines, in order, as the CPU backend does.
//
// sin, cos and pow have no NVPTX instruction: they become calls to the CUDA
// toolkit's libdevice (__nv_sinf, ...), which the runtime links in before the
// module is loaded (PtxModule::libdevice_functions lists them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/llvm/plan.h"
#include "backend/llvm/symbolic_sizes.h"

namespace kiln::cuda_backend {

/// What code is generated for: the GPU architecture (sm_XX) and the PTX
/// ISA version the module declares.
struct GpuTarget {
  int architecture = 90;
  int ptx_version = 78;
  bool operator==(const GpuTarget&) const = default;
  std::string architecture_name() const { return "sm_" + std::to_string(architecture); }
};

/// The newest target LLVM generates PTX for that runs on a GPU of compute
/// capability major.minor under a driver of `driver_version` (1000 * major +
/// 10 * minor, as cuDriverGetVersion reports it). PTX for an older
/// architecture than the GPU's is compiled for the GPU by the driver; a
/// driver older than the PTX version LLVM needs for the GPU is an error.
GpuTarget gpu_target(int major, int minor, int driver_version);

/// One kernel of the plan as the module's entry `entry`.
struct GpuKernel {
  std::string entry;
  int output_count = 1;  // the root and the extra roots
  int leaf_count = 0;
  std::vector<uint64_t> constants;  // the literal values this use passes (llvm_backend::kernel_constants)
  int64_t range = 0;                // the parallel range, at the graph's hints in a symbolic graph
  llvm_backend::SymbolicCount range_count;
  bool chunked = false;  // a reduction to one value, run in slices (see the header's comment)
  bool operator==(const GpuKernel&) const = default;
};

struct PtxModule {
  GpuTarget target;
  std::string ptx;
  std::vector<GpuKernel> kernels;                // by the plan's kernel index
  std::vector<std::string> libdevice_functions;  // called and left for libdevice to define
};

/// Compiles every kernel of `plan` into one PTX module for `target`.
/// Raises kiln::Error naming the kernel's root operation where a kernel
/// cannot be lowered for the GPU. With `libdevice` (the path of the CUDA
/// toolkit's libdevice.10.bc), the libdevice functions the kernels call are
/// linked in; without it they are left undefined (libdevice_functions).
PtxModule compile_ptx(const ir::Graph& graph, const llvm_backend::Plan& plan, const GpuTarget& target,
                      const std::string& name, const std::string& libdevice = "");

/// Where the CUDA toolkit's libdevice.10.bc is: KILN_LIBDEVICE, else under
/// CUDA_HOME, CUDA_PATH or /usr/local/cuda (nvvm/libdevice), else Debian's
/// nvidia-cuda-toolkit folder; empty when none exists.
std::string find_libdevice();

}  // namespace kiln::cuda_backend
