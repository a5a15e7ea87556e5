// What the execution timeline calls the steps of a plan: a kernel by the
// primitives fused into it ("exp·mul·add"), a row group by its kernels.
#pragma once

#include <string>
#include <vector>

#include "backend/llvm/plan.h"

namespace kiln::llvm_backend {

/// One name per step of the plan.
std::vector<std::string> step_names(const ir::Graph& graph, const Plan& plan);
/// One name per row group of the plan, from its steps' names.
std::vector<std::string> row_group_names(const Plan& plan, const std::vector<std::string>& step_names);

}  // namespace kiln::llvm_backend
