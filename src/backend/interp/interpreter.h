// The reference interpreter: runs a Graph node by node with the primitives'
// reference kernels. It is the oracle compiled code is tested against.
#pragma once

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ops/control/control.h"
#include "runtime/executable.h"
#include "runtime/step_program.h"

namespace kiln::interp {

/// The interpreter as a backend: "compiling" keeps the graph, running
/// interprets it (matrix products through BLAS).
const runtime::Backend& interpreter_backend();

/// Runs `graph` on concrete `arguments` and `captures` (in the graph's order).
/// Throws kiln::Error when their number or abstract values do not match.
std::vector<Array> run(const ir::Graph& graph, std::span<const Array> arguments, std::span<const Array> captures);

/// A graph prepared for repeated runs: small subgraphs that depend on no
/// input (literals and what is computed from them alone) are evaluated once,
/// and each value's last use is known in advance.
class Program {
 public:
  /// `donated[k]`: input k is read here for the last time and its memory is
  /// the run's own, so the kernel may write its result over it.
  using Kernel = Array (*)(const ir::Node& node, std::span<const Array> inputs, std::span<const char> donated);
  /// `choose` may replace a node's reference kernel (e.g. matmul by BLAS);
  /// returning null keeps the reference kernel. Nodes it replaces are not folded.
  explicit Program(std::shared_ptr<const ir::Graph> graph, Kernel (*choose)(const ir::Node&) = nullptr);
  /// `donated` as runtime::Executable::run takes it.
  std::vector<Array> run(std::span<const Array> arguments, std::span<const Array> captures,
                         std::span<const char> donated = {}) const;
  const ir::Graph& graph() const { return *graph_; }

 private:
  bool overwritten_here(size_t step, ir::ValueId input, const Array& value,
                        const std::vector<char>& overwritable) const;

  std::shared_ptr<const ir::Graph> graph_;
  runtime::StepProgram program_;  // the nodes not folded, in graph order, and the folded constants
  std::vector<Kernel> kernels_;   // by step
  // By step: the bodies of a control node, prepared alike once.
  std::vector<std::vector<std::shared_ptr<const Program>>> bodies_;
  ops::ElementCounts element_counts_;
};

/// The node's reference kernel, writing over a donated input where it can
/// (ops::DonatedInputs): a Program::Kernel.
Array reference_kernel(const ir::Node& node, std::span<const Array> inputs, std::span<const char> donated);

/// `graph` prepared to run node by node with the kernels `choose` picks (a
/// symbolic graph once per binding of its symbols); `name` is its backend().
std::shared_ptr<const runtime::Executable> interpreted_executable(std::shared_ptr<const ir::Graph> graph,
                                                                  Program::Kernel (*choose)(const ir::Node&),
                                                                  std::string_view name);

}  // namespace kiln::interp

namespace kiln::detail {
/// Runs a traced graph with the reference interpreter.
std::vector<Array> interpret(const Graph& graph, const std::vector<Array>& arguments,
                             const std::vector<Array>& captures);
}  // namespace kiln::detail
