// Instances of a compiled graph per binding of its symbols (see the header).
#include "backend/llvm/instance.h"

#include "runtime/executable.h"

namespace kiln::llvm_backend {

std::shared_ptr<const Instance> static_instance(std::shared_ptr<const ir::Graph> graph, const Plan& plan,
                                                const std::vector<CompiledKernel>& kernels) {
  auto instance = std::make_shared<Instance>();
  instance->graph = std::move(graph);
  for (const CompiledKernel& kernel : kernels) {
    instance->constants.push_back(kernel.constants);
    instance->ranges.push_back(kernel.range);
    instance->works.push_back(kernel.work_per_iteration);
  }
  for (const RowGroup& group : plan.row_groups) {
    instance->group_rows.push_back(group.rows);
    instance->group_scales.push_back(group.scale);
  }
  return instance;
}

Instance bind_instance(const ir::Graph& graph, const Plan& plan, const std::vector<CompiledKernel>& kernels,
                       const std::vector<int64_t>& values) {
  Instance instance;
  instance.graph = std::make_shared<const ir::Graph>(runtime::instantiate_checked(graph, values));
  for (size_t k = 0; k < kernels.size(); ++k) {
    instance.constants.push_back(kernel_constants(graph, plan.kernels[k], values));
    instance.ranges.push_back(kernels[k].range_count.evaluate(values));
    instance.works.push_back(kernels[k].work_count.evaluate(values));
  }
  // Each kernel's range is its rows times its scale at every size (see row_scale).
  for (const RowGroup& group : plan.row_groups) {
    int64_t rows = group.row_count.evaluate(values);
    std::vector<int64_t> scales;
    for (size_t s = group.first_step; s < group.end_step; ++s) {
      const Step& step = plan.steps[s];
      bool kernel = step.kind == Step::Kind::kernel && rows > 0;
      scales.push_back(kernel ? instance.ranges[static_cast<size_t>(step.kernel)] / rows : 0);
    }
    instance.group_rows.push_back(rows);
    instance.group_scales.push_back(std::move(scales));
  }
  instance.values = values;
  return instance;
}

}  // namespace kiln::llvm_backend
