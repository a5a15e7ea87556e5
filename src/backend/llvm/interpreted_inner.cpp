// Innermost-axis sums and products run interpreted in the compiled kernel's
// order (see the header).
#include "backend/llvm/interpreted_inner.h"

#include <vector>

#include "backend/llvm/interpreted_node.h"
#include "backend/llvm/kernel_emitter.h"
#include "backend/llvm/plan.h"
#include "ops/common/rules.h"

namespace kiln::llvm_backend {

namespace {

// One row of `count` values added (or multiplied) into `start` as the
// vectorized loop does: element e goes to lane e % lanes of partial vector
// (e / lanes) % partials; the partial vectors are combined in order, then
// their lanes halving (lane j with lane j + half); an unfolded loop leaves
// the elements past its last whole iteration, and a row shorter than one
// iteration, to a scalar loop in order. Lanes start at the operation's
// identity (-0.0 for a sum, whose + 0.0 would lose a -0.0), the first at
// `start`. `vectors` holds them (reused from row to row).
template <class T>
double reduce_row(const T* row, int64_t count, double start, bool sum, const InnerReductionShape& shape,
                  std::vector<double>& vectors) {
  auto combine = [sum](double a, double b) { return sum ? a + b : a * b; };
  auto lanes = static_cast<int64_t>(shape.lanes), partials = static_cast<int64_t>(shape.partials);
  int64_t step = lanes * partials;
  if (!shape.folded && count < step) {
    double total = start;
    for (int64_t e = 0; e < count; ++e) total = combine(total, static_cast<double>(row[e]));
    return total;
  }
  int64_t vectorized = shape.folded ? count : count - count % step;
  vectors.assign(static_cast<size_t>(step), sum ? -0.0 : 1.0);
  vectors[0] = start;
  for (int64_t e = 0; e < vectorized; ++e) {
    double& lane = vectors[static_cast<size_t>((e / lanes) % partials * lanes + e % lanes)];
    lane = combine(lane, static_cast<double>(row[e]));
  }
  for (int64_t p = 1; p < partials; ++p)
    for (int64_t j = 0; j < lanes; ++j)
      vectors[static_cast<size_t>(j)] =
          combine(vectors[static_cast<size_t>(p * lanes + j)], vectors[static_cast<size_t>(j)]);
  for (int64_t half = lanes / 2; half >= 1; half /= 2)
    for (int64_t j = 0; j < half; ++j)
      vectors[static_cast<size_t>(j)] =
          combine(vectors[static_cast<size_t>(j)], vectors[static_cast<size_t>(j + half)]);
  double total = vectors[0];
  for (int64_t e = vectorized; e < count; ++e) total = combine(total, static_cast<double>(row[e]));
  return total;
}

class InnerExecutable final : public InterpretedNode {
 public:
  using InterpretedNode::InterpretedNode;

 private:
  void compute(std::span<const detail::ArrayImpl* const> operands, detail::ArrayImpl& result) const override {
    const detail::ArrayImpl& input = *operands[0];
    int64_t count = input.type.shape.back(), rows = node().type.size();
    bool sum = ops::rules(node().op).reduction == ops::Reduction::sum;
    InnerReductionShape shape = inner_reduction_shape(count, DType::f64);
    double start = sum ? 0.0 : 1.0;
    std::vector<double> vectors;
    if (node().type.dtype == DType::f64) {
      const double* in = input.data<double>();
      double* out = result.mutable_data<double>();
      for (int64_t r = 0; r < rows; ++r) out[r] = reduce_row(in + r * count, count, start, sum, shape, vectors);
    } else {
      const float* in = input.data<float>();
      float* out = result.mutable_data<float>();
      for (int64_t r = 0; r < rows; ++r)
        out[r] = static_cast<float>(reduce_row(in + r * count, count, start, sum, shape, vectors));
    }
  }
};

}  // namespace

bool interprets_inner(const ir::Graph& graph, const ir::Node& node) {
  const ir::Node* input = interpretable_reduction_input(graph, node);
  if (!input || node.attrs.ints.size() != 1) return false;
  const Shape& shape = input->type.shape;
  if (shape.empty() || node.attrs.ints[0] != static_cast<int64_t>(shape.size()) - 1 || shape.back() == 0) return false;
  return node.type.size() > 1 || input->type.size() < chunked_reduction_minimum;
}

std::shared_ptr<const runtime::Executable> interpreted_inner_executable(std::shared_ptr<const ir::Graph> graph) {
  const ir::Node* node = single_node(*graph);
  if (!node || !interprets_inner(*graph, *node)) return nullptr;
  return std::make_shared<InnerExecutable>(graph, *node);
}

}  // namespace kiln::llvm_backend
