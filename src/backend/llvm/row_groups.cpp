// Row groups (see RowGroup in the header): which consecutive steps may run
// block of rows by block of rows.
#include <algorithm>

#include "backend/llvm/plan.h"

namespace kiln::llvm_backend {

int64_t kernel_range(const ir::Graph& graph, const Kernel& kernel) {
  const ir::Node& root = graph.nodes[static_cast<size_t>(kernel.root)];
  int64_t total = shape_size(root.type.shape);
  if (kernel.chunked) return shape_size(kernel_space(graph, kernel));
  if (kernel.kind == Kernel::Kind::reduce || is_flat(graph, kernel)) return total;
  int64_t inner = root.type.shape.back();
  return inner == 0 ? 0 : total / inner;
}

namespace {

// Below this many rows, or this much work, blocking gains nothing.
constexpr int64_t min_rows = 16;
constexpr int64_t min_elements = int64_t{1} << 16;

// How many iterations of the kernel's parallel range cover one row of
// `rows`, or 0 when the kernel cannot be split by rows: a reduction must keep
// the leading axis, a row-wise elementwise kernel needs an axis after it.
int64_t row_scale(const ir::Graph& graph, const Kernel& kernel, int64_t rows) {
  if (kernel.kind == Kernel::Kind::standalone || kernel.chunked) return 0;
  const ir::Node& root = graph.nodes[static_cast<size_t>(kernel.root)];
  const Shape& space = kernel_space(graph, kernel);
  if (space.empty() || space[0] != rows || rows <= 0) return 0;
  if (kernel.kind == Kernel::Kind::reduce) {
    for (int64_t axis : root.attrs.ints)
      if (axis == 0) return 0;
  } else if (!is_flat(graph, kernel) && space.size() < 2) {
    return 0;
  }
  int64_t range = kernel_range(graph, kernel);
  return range % rows == 0 ? range / rows : 0;
}

}  // namespace

std::vector<RowGroup> find_row_groups(const ir::Graph& graph, const Plan& plan) {
  std::vector<RowGroup> groups;
  // Values produced by the group being built: a kernel may read them only at
  // its own rows, so they must index the leading axis as the kernel does.
  std::vector<char> in_group(graph.nodes.size(), 0);
  RowGroup group;
  int kernels_in_group = 0;
  bool linked = false;  // some kernel reads what another in the group wrote: blocking pays
  auto close = [&] {
    // Trailing views belong to whatever reads them next.
    while (group.end_step > group.first_step && group.scale[group.end_step - group.first_step - 1] == 0) {
      group.scale.pop_back();
      --group.end_step;
    }
    int64_t elements = 0;  // the elements the group's kernels loop over
    for (size_t s = group.first_step; s < group.end_step; ++s)
      if (plan.steps[s].kind == Step::Kind::kernel)
        elements += shape_size(kernel_space(graph, plan.kernels[static_cast<size_t>(plan.steps[s].kernel)]));
    if (linked && kernels_in_group >= 2 && group.rows >= min_rows && elements >= min_elements) groups.push_back(group);
    std::fill(in_group.begin(), in_group.end(), 0);
    group = RowGroup{};
    kernels_in_group = 0;
    linked = false;
  };
  auto fits = [&](size_t s) -> int64_t {  // the step's scale in the open group, or -1
    const Step& step = plan.steps[s];
    const ir::Node& node = graph.nodes[static_cast<size_t>(step.value)];
    if (step.kind == Step::Kind::view) {
      const Shape& source = graph.nodes[static_cast<size_t>(node.inputs[0])].type.shape;
      bool keeps_rows =
          !node.type.shape.empty() && node.type.shape[0] == group.rows && !source.empty() && source[0] == group.rows;
      return keeps_rows ? 0 : -1;
    }
    if (step.kind != Step::Kind::kernel) return -1;
    const Kernel& kernel = plan.kernels[static_cast<size_t>(step.kernel)];
    int64_t scale = row_scale(graph, kernel, group.rows);
    if (scale == 0) return -1;
    size_t rank = kernel_space(graph, kernel).size();
    for (ir::ValueId leaf : kernel.leaves) {
      if (!in_group[static_cast<size_t>(leaf)]) continue;
      const Shape& shape = graph.nodes[static_cast<size_t>(leaf)].type.shape;
      if (shape.size() != rank || shape[0] != group.rows) return -1;  // read across rows
    }
    return scale;
  };
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    int64_t scale = group.rows > 0 ? fits(s) : -1;
    if (scale < 0) {
      if (group.rows > 0) close();
      const Step& step = plan.steps[s];
      if (step.kind != Step::Kind::kernel) continue;
      const Kernel& kernel = plan.kernels[static_cast<size_t>(step.kernel)];
      const Shape& space = kernel_space(graph, kernel);
      if (space.empty()) continue;
      group.rows = space[0];
      group.first_step = s;
      scale = row_scale(graph, kernel, group.rows);
      if (scale == 0) {
        group = RowGroup{};
        continue;
      }
    }
    group.scale.push_back(scale);
    group.end_step = s + 1;
    kernels_in_group += scale > 0;
    if (plan.steps[s].kind == Step::Kind::kernel)
      for (ir::ValueId leaf : plan.kernels[static_cast<size_t>(plan.steps[s].kernel)].leaves)
        linked |= in_group[static_cast<size_t>(leaf)] != 0;
    in_group[static_cast<size_t>(plan.steps[s].value)] = 1;
    if (plan.steps[s].kind == Step::Kind::kernel)
      for (ir::ValueId extra : plan.kernels[static_cast<size_t>(plan.steps[s].kernel)].extra_roots)
        in_group[static_cast<size_t>(extra)] = 1;
  }
  if (group.rows > 0) close();
  return groups;
}

}  // namespace kiln::llvm_backend
