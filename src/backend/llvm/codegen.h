// LLVM IR for the kernels of a plan. Each kernel becomes
//   void kiln_kernel_N(char** buffers, int64_t begin, int64_t end)
// where buffers[0] holds the kernel's constants (its literals, 8 bytes each,
// then in a symbolic graph the values of its symbols, which the code reads
// its symbolic extents from), buffers[1] is the output and buffers[2..] the
// leaves, and [begin, end)
// is a slice of the kernel's parallel range (rows, elements or output
// elements), so a thread pool can split it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/llvm/object_code.h"
#include "backend/llvm/plan.h"
#include "backend/llvm/symbolic_sizes.h"

namespace kiln::llvm_backend {

using KernelFunction = void (*)(char** buffers, int64_t begin, int64_t end);

struct CompiledKernel {
  KernelFunction function = nullptr;
  // The linked module holding `function`: the last holder (an executable or
  // the kernel cache) to let go unlinks it, so compiled code is bounded like
  // the caches that hold it.
  std::shared_ptr<const void> code;
  std::shared_ptr<const ObjectCode> object;  // the module's object file, and the symbol of `function` in it
  std::string symbol;
  bool quick = false;               // machine code generated without optimization (runtime::CodeQuality::quick)
  std::vector<uint64_t> constants;  // the literal values this use of the kernel passes
  int64_t range = 0;                // iterations of the parallel loop
  int64_t work_per_iteration = 1;   // elements touched per iteration, to decide on threading
  // The same two as formulas in the symbols, which a symbolic graph's calls
  // evaluate (range and work_per_iteration are then at the hints).
  SymbolicCount range_count, work_count;
};

/// The values of the kernel's parameter literals, in slot order, as 8 bytes
/// each; in a symbolic graph, at the symbols' `values`, which follow them.
std::vector<uint64_t> kernel_constants(const ir::Graph& graph, const Kernel& kernel,
                                       std::span<const int64_t> values = {});

/// Generates, optimizes and links every kernel of `plan` not found in the
/// kernel cache: as one module, or as two compiled on two threads at once.
/// `dump_prefix` (optional) receives the optimized IR and assembly.
std::vector<CompiledKernel> compile_kernels(const ir::Graph& graph, const Plan& plan, const std::string& name,
                                            const std::string& dump_prefix);

}  // namespace kiln::llvm_backend
