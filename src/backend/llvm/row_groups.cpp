// Row groups (see RowGroup in the header): which consecutive steps may run
// block of rows by block of rows.
#include <algorithm>

#include "backend/llvm/plan.h"
#include "backend/llvm/symbolic_sizes.h"

namespace kiln::llvm_backend {

int64_t kernel_range(const ir::Graph& graph, const Kernel& kernel) {
  const ir::Node& root = graph.nodes[static_cast<size_t>(kernel.root)];
  int64_t total = shape_size(root.type.shape);
  if (kernel.chunked) return shape_size(kernel_space(graph, kernel));
  if (kernel.kind == Kernel::Kind::reduce || is_flat(graph, kernel)) return total;
  int64_t inner = root.type.shape.back();
  return inner == 0 ? 0 : total / inner;
}

ir::DimExpr kernel_range_size(const ir::Graph& graph, const Kernel& kernel) {
  const ir::Node& root = graph.nodes[static_cast<size_t>(kernel.root)];
  if (kernel.chunked) return symbolic_size(kernel_space_node(graph, kernel));
  if (kernel.kind == Kernel::Kind::reduce || is_flat(graph, kernel)) return symbolic_size(root);
  std::vector<ir::DimExpr> shape = ir::symbolic_shape(root);
  if (shape.back() == ir::DimExpr::constant(0)) return ir::DimExpr::constant(0);
  ir::DimExpr rows = ir::DimExpr::constant(1);
  for (size_t d = 0; d + 1 < shape.size(); ++d) rows = rows * shape[d];
  return rows;
}

namespace {

// The leading extent of a node's shape, as a polynomial.
ir::DimExpr leading(const ir::Node& node) {
  const ir::DimExpr* symbolic = node.symbolic ? node.symbolic->dimension(0) : nullptr;
  return symbolic ? *symbolic : ir::DimExpr::constant(node.type.shape[0]);
}

// Below this many rows, or this much work, blocking gains nothing.
constexpr int64_t min_rows = 16;
constexpr int64_t min_elements = int64_t{1} << 16;

// How many iterations of the kernel's parallel range cover one row of
// `rows`, or 0 when the kernel cannot be split by rows: a reduction must keep
// the leading axis, a row-wise elementwise kernel needs an axis after it.
// In a symbolic graph the scale is at the hints; since the leading extent
// divides the range as polynomials, it divides it at every size.
int64_t row_scale(const ir::Graph& graph, const Kernel& kernel, const ir::DimExpr& row_count, int64_t rows) {
  if (kernel.kind == Kernel::Kind::standalone || kernel.chunked) return 0;
  const ir::Node& root = graph.nodes[static_cast<size_t>(kernel.root)];
  const Shape& space = kernel_space(graph, kernel);
  if (space.empty() || space[0] != rows || rows <= 0) return 0;
  if (graph.symbols && leading(kernel_space_node(graph, kernel)) != row_count) return 0;
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

namespace {

// Walks the plan's steps once, growing a group while each step fits it and
// closing it at the first that does not.
class RowGroupFinder {
 public:
  RowGroupFinder(const ir::Graph& graph, const Plan& plan)
      : graph_(graph), plan_(plan), in_group_(graph.nodes.size(), 0) {}

  std::vector<RowGroup> run() {
    for (size_t s = 0; s < plan_.steps.size(); ++s) {
      int64_t scale = group_.rows > 0 ? fits(s) : -1;
      if (scale < 0) {
        if (group_.rows > 0) close();
        scale = open(s);
        if (scale < 0) continue;
      }
      add(s, scale);
    }
    if (group_.rows > 0) close();
    return std::move(groups_);
  }

 private:
  // The step's scale in the open group, or -1.
  int64_t fits(size_t s) const {
    const Step& step = plan_.steps[s];
    const ir::Node& node = graph_.nodes[static_cast<size_t>(step.value)];
    if (step.kind == Step::Kind::view) {
      const ir::Node& source = graph_.nodes[static_cast<size_t>(node.inputs[0])];
      bool keeps_rows = !node.type.shape.empty() && node.type.shape[0] == group_.rows && !source.type.shape.empty() &&
                        source.type.shape[0] == group_.rows;
      if (keeps_rows && graph_.symbols)
        keeps_rows = leading(node) == group_.row_count && leading(source) == group_.row_count;
      return keeps_rows ? 0 : -1;
    }
    if (step.kind != Step::Kind::kernel) return -1;
    const Kernel& kernel = plan_.kernels[static_cast<size_t>(step.kernel)];
    int64_t scale = row_scale(graph_, kernel, group_.row_count, group_.rows);
    if (scale == 0) return -1;
    size_t rank = kernel_space(graph_, kernel).size();
    for (ir::ValueId leaf : kernel.leaves) {
      if (!in_group_[static_cast<size_t>(leaf)]) continue;
      const ir::Node& read = graph_.nodes[static_cast<size_t>(leaf)];
      const Shape& shape = read.type.shape;
      if (shape.size() != rank || shape[0] != group_.rows) return -1;  // read across rows
      if (graph_.symbols && leading(read) != group_.row_count) return -1;
    }
    return scale;
  }

  // Starts a group at step s, a kernel that can be split by rows: its scale, or -1.
  int64_t open(size_t s) {
    const Step& step = plan_.steps[s];
    if (step.kind != Step::Kind::kernel) return -1;
    const Kernel& kernel = plan_.kernels[static_cast<size_t>(step.kernel)];
    const ir::Node& space = kernel_space_node(graph_, kernel);
    if (space.type.shape.empty()) return -1;
    group_.rows = space.type.shape[0];
    group_.row_count = leading(space);
    group_.first_step = s;
    int64_t scale = row_scale(graph_, kernel, group_.row_count, group_.rows);
    if (scale == 0) {
      group_ = RowGroup{};
      return -1;
    }
    return scale;
  }

  void add(size_t s, int64_t scale) {
    const Step& step = plan_.steps[s];
    group_.scale.push_back(scale);
    group_.end_step = s + 1;
    kernels_in_group_ += scale > 0;
    if (step.kind == Step::Kind::kernel)
      for (ir::ValueId leaf : plan_.kernels[static_cast<size_t>(step.kernel)].leaves)
        linked_ |= in_group_[static_cast<size_t>(leaf)] != 0;
    in_group_[static_cast<size_t>(step.value)] = 1;
    if (step.kind == Step::Kind::kernel)
      for (ir::ValueId extra : plan_.kernels[static_cast<size_t>(step.kernel)].extra_roots)
        in_group_[static_cast<size_t>(extra)] = 1;
  }

  void close() {
    // Trailing views belong to whatever reads them next.
    while (group_.end_step > group_.first_step && group_.scale[group_.end_step - group_.first_step - 1] == 0) {
      group_.scale.pop_back();
      --group_.end_step;
    }
    // Symbolic rows may be many at any call: such a group is kept whatever
    // its size at the hints (a call with few rows runs them in one block).
    int64_t elements = 0;  // the elements the group's kernels loop over
    for (size_t s = group_.first_step; s < group_.end_step; ++s)
      if (plan_.steps[s].kind == Step::Kind::kernel)
        elements += shape_size(kernel_space(graph_, plan_.kernels[static_cast<size_t>(plan_.steps[s].kernel)]));
    bool large = (group_.rows >= min_rows && elements >= min_elements) || !group_.row_count.is_constant();
    if (linked_ && kernels_in_group_ >= 2 && large) groups_.push_back(group_);
    std::fill(in_group_.begin(), in_group_.end(), 0);
    group_ = RowGroup{};
    kernels_in_group_ = 0;
    linked_ = false;
  }

  const ir::Graph& graph_;
  const Plan& plan_;
  std::vector<RowGroup> groups_;
  // Values produced by the group being built: a kernel may read them only at
  // its own rows, so they must index the leading axis as the kernel does.
  std::vector<char> in_group_;
  RowGroup group_;
  int kernels_in_group_ = 0;
  bool linked_ = false;  // some kernel reads what another in the group wrote: blocking pays
};

}  // namespace

std::vector<RowGroup> find_row_groups(const ir::Graph& graph, const Plan& plan) {
  return RowGroupFinder(graph, plan).run();
}

}  // namespace kiln::llvm_backend
