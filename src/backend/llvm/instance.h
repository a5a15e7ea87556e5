// What running a compiled graph needs that depends on the sizes of a call:
// the graph at those sizes (what allocation, BLAS, views, reference kernels
// and control flow read), each kernel's constants, parallel range and work,
// and the rows of each row group. A static graph has one instance, made when
// it compiles. A symbolic graph's code serves every size, and an instance is
// made per binding of its symbols.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/llvm/codegen.h"

namespace kiln::llvm_backend {

struct Instance {
  std::vector<int64_t> values;                     // the symbols' values; empty for a static graph
  std::shared_ptr<const ir::Graph> graph;          // no symbols left
  std::vector<std::vector<uint64_t>> constants;    // per kernel: its buffers[0]
  std::vector<int64_t> ranges, works;              // per kernel
  std::vector<int64_t> group_rows;                 // per row group
  std::vector<std::vector<int64_t>> group_scales;  // per row group, per step of it
};

/// The instance of a static graph, from what compiling it found.
std::shared_ptr<const Instance> static_instance(std::shared_ptr<const ir::Graph> graph, const Plan& plan,
                                                const std::vector<CompiledKernel>& kernels);

/// The instance of a symbolic graph at the symbols' `values` (kept per
/// binding in a runtime::BindingCache).
Instance bind_instance(const ir::Graph& graph, const Plan& plan, const std::vector<CompiledKernel>& kernels,
                       const std::vector<int64_t>& values);

}  // namespace kiln::llvm_backend
