// Op-by-op execution for the first calls of a graph (see the header).
#include "backend/interp/op_by_op.h"

#include "backend/interp/fused_trees.h"
#include "backend/interp/interpreter.h"
#include "ops/common/apply.h"
#include "ops/common/rules.h"
#include "runtime/blas.h"
#include "runtime/compile_profile.h"

namespace kiln::interp {

namespace {

// Kernels write over a dead input where they can (`donated`), as the
// optimized code does: a first tier then needs less fresh memory, which is
// slow to write the first time (a page fault per 4 KiB, 14 us each in some
// virtual machines). The MLP step's first call grows by 13-14 MB, not 16.

// What eager code runs for the node in a first tier: its single-operation
// graph interpreted (kiln's vector math) or compiled with quick machine
// code, as the first tier's kernels were compiled.
Array eager_kernel(const ir::Node& node, std::span<const Array> inputs, std::span<const char> donated) {
  runtime::CodeQualityScope quick(runtime::CodeQuality::quick);
  if (Array result = detail::apply_compiled(node.op, inputs, node.attrs, node.where, true, donated); result.defined())
    return result;
  return detail::apply(node.op, inputs, node.attrs, node.where);
}

Array matmul_kernel(const ir::Node& node, std::span<const Array> inputs, std::span<const char>) {
  return runtime::blas_matmul(node, inputs);
}

// A node whose reference kernel rounds as its native code does: eager's
// compiled kernel if it is compiled already, or its interpreted code (both
// faster on large arrays: on every thread), else the reference kernel, with
// no compile.
Array compiled_if_at_hand(const ir::Node& node, std::span<const Array> inputs, std::span<const char> donated) {
  runtime::CodeQualityScope quick(runtime::CodeQuality::quick);
  if (Array result = detail::apply_compiled(node.op, inputs, node.attrs, node.where, false, donated); result.defined())
    return result;
  return reference_kernel(node, inputs, donated);
}

using NodeKernel = Array (*)(const ir::Node&, std::span<const Array>, std::span<const char>);

NodeKernel node_kernel(const ir::Node& node) {
  if (runtime::blas_handles(node)) return &matmul_kernel;
  if (ops::native_differs_from_reference(ops::rules(node.op), node.type.dtype)) return &eager_kernel;
  if (!node.inputs.empty() && !ir::is_control(node.op) && ops::rules(node.op).fusion != ops::Fusion::collective &&
      detail::eager_compiler_for(node.type.size()))
    return &compiled_if_at_hand;
  return nullptr;
}

// Whether a fused tree may hold the node (fused_trees.h): an elementwise node
// over operands of its shape, or a broadcast along leading axes, that eager
// code runs compiled or interpreted.
bool fusable(const ir::Graph& graph, const ir::Node& node, NodeKernel kernel) {
  if (kernel != &eager_kernel && kernel != &compiled_if_at_hand) return false;
  if (node.op == ir::Primitive::broadcast) {
    const ir::Node& operand = graph.nodes[static_cast<size_t>(node.inputs[0])];
    return !node.symbolic && operand.type.size() < node.type.size() &&
           ir::repeats_along_leading_axes(operand.type.shape, node.type.shape);
  }
  return ops::rules(node.op).fusion == ops::Fusion::elementwise;
}

// A transpose of the last two axes read only by BLAS products is not
// materialized: they read its operand, flagged transposed, as the optimized
// code's products do (the MLP step's backward pass has five).
void read_transposes_as_flags(const ir::Graph& graph, std::vector<Program::Choice>& choices) {
  size_t count = graph.nodes.size();
  std::vector<char> flagged = ir::transposes_read_as_flags(graph, &runtime::blas_handles);
  for (ir::ValueId output : graph.outputs) flagged[static_cast<size_t>(output)] = 0;
  for (size_t i = 0; i < count; ++i) {
    const ir::Node& node = graph.nodes[i];
    if (!runtime::blas_handles(node) || node.inputs.size() != 2) continue;
    auto a = static_cast<size_t>(node.inputs[0]), b = static_cast<size_t>(node.inputs[1]);
    bool transpose_a = flagged[a] != 0, transpose_b = flagged[b] != 0;
    if (!transpose_a && !transpose_b) continue;
    choices[i].reads = {transpose_a ? graph.nodes[a].inputs[0] : node.inputs[0],
                        transpose_b ? graph.nodes[b].inputs[0] : node.inputs[1]};
    choices[i].kernel = [transpose_a, transpose_b](const ir::Node& product, std::span<const Array> operands,
                                                   std::span<const char>) {
      return runtime::blas_matmul(product, operands[0], transpose_a, operands[1], transpose_b);
    };
  }
  for (size_t i = 0; i < count; ++i)
    if (flagged[i]) choices[i] = {.inlined = true};
}

std::vector<Program::Choice> op_by_op_choices(const ir::Graph& graph) {
  std::vector<Program::Choice> choices(graph.nodes.size());
  std::vector<char> fusable_nodes(graph.nodes.size(), 0);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const ir::Node& node = graph.nodes[i];
    NodeKernel kernel = node_kernel(node);
    if (kernel) choices[i].kernel = kernel;
    fusable_nodes[i] = fusable(graph, node, kernel);
  }
  fuse_trees(graph, fusable_nodes, choices);
  read_transposes_as_flags(graph, choices);
  return choices;
}

bool fuses(ops::Fusion fusion) { return fusion == ops::Fusion::elementwise || fusion == ops::Fusion::reduction; }

// Native sin, cos and pow are libmvec's vector functions in a loop's vector
// body and libm's in its scalar remainder, which round differently: which
// elements get which depends on how a loop is split, so fused and op-by-op
// code may differ in the last bit.
bool split_dependent(const ir::Node& node) {
  bool libmvec = node.op == ir::Primitive::sin || node.op == ir::Primitive::cos || node.op == ir::Primitive::pow;
  return libmvec && is_floating(node.type.dtype);
}

bool graph_exact(const ir::Graph& graph) {
  for (const ir::Node& node : graph.nodes) {
    for (const auto& body : node.bodies)
      if (!graph_exact(*body)) return false;
    if (split_dependent(node)) return false;
    if (!fuses(ops::rules(node.op).fusion)) continue;
    for (ir::ValueId input : node.inputs) {
      const ir::Node& producer = graph.nodes[static_cast<size_t>(input)];
      if (is_half(producer.type.dtype) && ops::rules(producer.op).fusion == ops::Fusion::elementwise &&
          producer.op != ir::Primitive::literal)
        return false;
    }
  }
  return true;
}

}  // namespace

bool op_by_op_exact(const ir::Graph& graph) { return graph_exact(graph); }

std::shared_ptr<const runtime::Executable> op_by_op_executable(std::shared_ptr<const ir::Graph> graph) {
  return interpreted_executable(std::move(graph), &op_by_op_choices, "op by op");
}

}  // namespace kiln::interp
