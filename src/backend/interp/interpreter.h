// The reference interpreter: runs a Graph node by node with the primitives'
// reference kernels. It is the oracle compiled code is tested against.
#pragma once

#include <functional>
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
  /// A node's kernel over the values its step reads. `donated[k]`: value k
  /// is read here for the last time and its memory is the run's own, so the
  /// kernel may write its result over it.
  using Kernel =
      std::function<Array(const ir::Node& node, std::span<const Array> inputs, std::span<const char> donated)>;
  /// How a node runs: by `kernel` (null: its reference kernel, and a node
  /// computed from constants alone is folded) over the values `reads`
  /// (empty: its inputs); or, `inlined`, in no step of its own: the kernels
  /// of the nodes reading it compute it with themselves (a fused tree of
  /// elementwise nodes reads the tree's leaves).
  struct Choice {
    Kernel kernel;
    std::vector<ir::ValueId> reads;
    bool inlined = false;
  };
  /// The choices for a graph's nodes, by node id; empty: every node by its reference kernel.
  using Choose = std::vector<Choice> (*)(const ir::Graph& graph);
  explicit Program(std::shared_ptr<const ir::Graph> graph, Choose choose = nullptr);
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
                                                                  Program::Choose choose, std::string_view name);

}  // namespace kiln::interp

namespace kiln::detail {
/// Runs a traced graph with the reference interpreter.
std::vector<Array> interpret(const Graph& graph, const std::vector<Array>& arguments,
                             const std::vector<Array>& captures);
}  // namespace kiln::detail
