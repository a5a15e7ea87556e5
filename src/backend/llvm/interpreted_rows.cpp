// Column reductions run interpreted in the compiled kernel's order (see the header).
#include "backend/llvm/interpreted_rows.h"

#include <algorithm>

#include "backend/llvm/interpreted_node.h"
#include "backend/llvm/kernel_emitter.h"
#include "backend/llvm/plan.h"
#include "ops/common/rules.h"

namespace kiln::llvm_backend {

namespace {

std::vector<size_t> sorted_axes(const ir::Node& node) {
  std::vector<size_t> axes;
  for (int64_t axis : node.attrs.ints) axes.push_back(static_cast<size_t>(axis));
  std::sort(axes.begin(), axes.end());
  return axes;
}

// How the compiled kernel (KernelEmitter::emit_accumulating_rows and
// emit_widened_rows) adds: input element (outer, row, i) at
// (outer * rows + row) * inner + i into output element outer * inner + i.
struct RowLayout {
  int64_t outers = 1, rows = 1, inner = 1;
};

RowLayout layout_of(const Shape& shape, const std::vector<size_t>& axes) {
  RowLayout layout;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d < axes.front()) layout.outers *= shape[d];
    else if (d <= axes.back()) layout.rows *= shape[d];
    else layout.inner *= shape[d];
  }
  return layout;
}

// f64 values, and f32 products: each factor or term combined in order into
// an accumulator of the accumulation dtype, from the identity, rounded once.
template <class T, class A>
void accumulate_rows(const T* in, T* out, const RowLayout& layout, bool sum) {
  for (int64_t outer = 0; outer < layout.outers; ++outer)
    for (int64_t i = 0; i < layout.inner; ++i) {
      const T* column = in + outer * layout.rows * layout.inner + i;
      A total = sum ? A(0) : A(1);
      for (int64_t row = 0; row < layout.rows; ++row) {
        A value = static_cast<A>(column[row * layout.inner]);
        total = sum ? total + value : total * value;
      }
      out[outer * layout.inner + i] = static_cast<T>(total);
    }
}

// f32 sums: each block of KernelEmitter::widened_block rows added in f32,
// each block's sum added to an f64 total, rounded once.
void add_widened_rows(const float* in, float* out, const RowLayout& layout) {
  constexpr int64_t block = KernelEmitter::widened_block;
  for (int64_t outer = 0; outer < layout.outers; ++outer)
    for (int64_t i = 0; i < layout.inner; ++i) {
      const float* column = in + outer * layout.rows * layout.inner + i;
      double total = 0.0;
      for (int64_t first = 0; first < layout.rows; first += block) {
        float partial = 0.0f;
        for (int64_t row = first; row < std::min(first + block, layout.rows); ++row)
          partial = partial + column[row * layout.inner];
        total = total + static_cast<double>(partial);
      }
      out[outer * layout.inner + i] = static_cast<float>(total);
    }
}

class RowsExecutable final : public InterpretedNode {
 public:
  using InterpretedNode::InterpretedNode;

 private:
  void compute(std::span<const detail::ArrayImpl* const> operands, detail::ArrayImpl& result) const override {
    const detail::ArrayImpl& input = *operands[0];
    RowLayout layout = layout_of(input.type.shape, sorted_axes(node()));
    bool sum = ops::rules(node().op).reduction == ops::Reduction::sum;
    if (node().type.dtype == DType::f64)
      accumulate_rows<double, double>(input.data<double>(), result.mutable_data<double>(), layout, sum);
    else if (sum) add_widened_rows(input.data<float>(), result.mutable_data<float>(), layout);
    else accumulate_rows<float, double>(input.data<float>(), result.mutable_data<float>(), layout, false);
  }
};

}  // namespace

bool interprets_rows(const ir::Graph& graph, const ir::Node& node) {
  const ir::Node* input = interpretable_reduction_input(graph, node);
  // (One output element would be a reduction to one value, which plan.cpp may split across threads.)
  return input && node.type.size() > 1 && accumulates_rows(input->type.shape, sorted_axes(node), node.type.dtype);
}

std::shared_ptr<const runtime::Executable> interpreted_rows_executable(std::shared_ptr<const ir::Graph> graph) {
  const ir::Node* node = single_node(*graph);
  if (!node || !interprets_rows(*graph, *node)) return nullptr;
  return std::make_shared<RowsExecutable>(graph, *node);
}

}  // namespace kiln::llvm_backend
