// Fusion planning (see the header).
#include "backend/llvm/plan.h"

#include <algorithm>
#include <sstream>

namespace kiln::llvm_backend {

using ir::Primitive;

bool is_fusible_elementwise(Primitive op) {
  std::string_view family = ir::primitive_family(op);
  return family == "unary" || family == "binary" || op == Primitive::broadcast || op == Primitive::literal ||
         op == Primitive::iota;
}

bool is_fusible_reduction(Primitive op) {
  return op == Primitive::reduce_sum || op == Primitive::reduce_prod || op == Primitive::reduce_max ||
         op == Primitive::reduce_min;
}

namespace {
bool cheap(const ir::Graph& graph, ir::ValueId id) {
  const ir::Node& node = graph.nodes[static_cast<size_t>(id)];
  if (node.op == Primitive::literal || node.op == Primitive::iota) return true;
  if (node.op == Primitive::broadcast) return cheap(graph, node.inputs[0]);
  return false;
}
}  // namespace

Plan plan_graph(const ir::Graph& graph) {
  size_t count = graph.nodes.size();
  Plan plan;
  plan.materialized.assign(count, 0);
  std::vector<int> uses(count, 0);
  for (const ir::Node& node : graph.nodes)
    for (ir::ValueId input : node.inputs) ++uses[static_cast<size_t>(input)];

  auto materialize = [&](ir::ValueId id) { plan.materialized[static_cast<size_t>(id)] = 1; };
  for (ir::ValueId id : graph.outputs) materialize(id);
  for (size_t i = 0; i < count; ++i) {
    const ir::Node& node = graph.nodes[i];
    bool elementwise = is_fusible_elementwise(node.op);
    if (node.op == Primitive::input) materialize(static_cast<ir::ValueId>(i));
    if (!elementwise) {
      // Reductions, views and every other step read their inputs from memory,
      // except that a reduction computes its elementwise producer in place.
      if (node.op != Primitive::input) materialize(static_cast<ir::ValueId>(i));
      for (ir::ValueId input : node.inputs) {
        const ir::Node& producer = graph.nodes[static_cast<size_t>(input)];
        bool fused_into_reduction = is_fusible_reduction(node.op) && is_fusible_elementwise(producer.op) &&
                                    uses[static_cast<size_t>(input)] == 1;
        if (!fused_into_reduction) materialize(input);
      }
    } else if (uses[i] > 1 && !cheap(graph, static_cast<ir::ValueId>(i))) {
      materialize(static_cast<ir::ValueId>(i));
    }
  }
  // Cheap values are recomputed inside kernels rather than stored, unless a
  // non-kernel step or an output needs them in memory (handled above).

  std::vector<Primitive> reference;
  for (size_t i = 0; i < count; ++i) {
    if (!plan.materialized[i]) continue;
    const ir::Node& node = graph.nodes[i];
    auto id = static_cast<ir::ValueId>(i);
    if (node.op == Primitive::input) continue;
    if (node.op == Primitive::matmul) {
      plan.steps.push_back({Step::Kind::matmul, id, -1});
      continue;
    }
    if (node.op == Primitive::reshape) {
      plan.steps.push_back({Step::Kind::view, id, -1});
      continue;
    }
    bool reduce = is_fusible_reduction(node.op);
    if (!reduce && !is_fusible_elementwise(node.op)) {
      plan.steps.push_back({Step::Kind::reference, id, -1});
      if (std::find(reference.begin(), reference.end(), node.op) == reference.end()) reference.push_back(node.op);
      continue;
    }
    Kernel kernel;
    kernel.kind = reduce ? Kernel::Kind::reduce : Kernel::Kind::elementwise;
    kernel.root = id;
    // Collect the region: non-materialized elementwise ancestors.
    std::vector<char> in_region(count, 0);
    std::vector<ir::ValueId> stack{id};
    in_region[i] = 1;
    while (!stack.empty()) {
      ir::ValueId current = stack.back();
      stack.pop_back();
      for (ir::ValueId input : graph.nodes[static_cast<size_t>(current)].inputs) {
        auto at = static_cast<size_t>(input);
        if (in_region[at]) continue;
        if (plan.materialized[at]) {
          if (std::find(kernel.leaves.begin(), kernel.leaves.end(), input) == kernel.leaves.end())
            kernel.leaves.push_back(input);
          continue;
        }
        in_region[at] = 1;
        stack.push_back(input);
      }
    }
    for (size_t k = 0; k < count; ++k)
      if (in_region[k]) kernel.region.push_back(static_cast<ir::ValueId>(k));
    std::sort(kernel.leaves.begin(), kernel.leaves.end());
    plan.steps.push_back({Step::Kind::kernel, id, static_cast<int>(plan.kernels.size())});
    plan.kernels.push_back(std::move(kernel));
  }
  plan.reference_primitives = std::move(reference);
  return plan;
}

std::string describe(const ir::Graph& graph, const Plan& plan) {
  std::ostringstream out;
  for (const Step& step : plan.steps) {
    const ir::Node& node = graph.nodes[static_cast<size_t>(step.value)];
    out << "%" << step.value << " " << node.type.to_string() << ": ";
    switch (step.kind) {
      case Step::Kind::matmul: out << "matmul (BLAS)"; break;
      case Step::Kind::view: out << "view (reshape)"; break;
      case Step::Kind::reference: out << "reference kernel " << ir::primitive_name(node.op); break;
      case Step::Kind::kernel: {
        const Kernel& kernel = plan.kernels[static_cast<size_t>(step.kernel)];
        out << (kernel.kind == Kernel::Kind::reduce ? "reduce" : "elementwise") << " kernel of "
            << kernel.region.size() << " nodes [";
        for (size_t k = 0; k < kernel.region.size(); ++k)
          out << (k ? " " : "") << ir::primitive_name(graph.nodes[static_cast<size_t>(kernel.region[k])].op);
        out << "] reading";
        for (ir::ValueId leaf : kernel.leaves) out << " %" << leaf;
        break;
      }
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace kiln::llvm_backend
