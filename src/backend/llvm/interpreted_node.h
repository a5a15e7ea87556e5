// What the interpreted executables share (scalar_program.h, interpreted_rows.h,
// interpreted_inner.h):
// an eager operation's graph, its arguments and one node, run by C++ that
// gives the compiled kernel's bits, with nothing compiled.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/array_impl.h"
#include "ir/graph.h"
#include "runtime/executable.h"

namespace kiln::llvm_backend {

/// The most elements an interpreted operation takes: beyond, a compiled
/// kernel on every thread wins even counting its compile.
inline constexpr int64_t interpreted_elements_limit = int64_t{1} << 18;

/// The graph's one node when every other node is an argument (as an eager
/// operation traces), else null.
const ir::Node* single_node(const ir::Graph& graph);

/// The input of `node` when it is a reduction an interpreter may follow: a
/// sum or product of one static f32 or f64 input of its own dtype, of at most
/// interpreted_elements_limit elements, over the axes in its attributes; else null.
const ir::Node* interpretable_reduction_input(const ir::Graph& graph, const ir::Node& node);

class InterpretedNode : public runtime::Executable {
 public:
  /// Reads the arguments `node` reads, in its order.
  InterpretedNode(std::shared_ptr<const ir::Graph> graph, const ir::Node& node);
  /// Reads `operands`, arguments of the graph, to compute its output `node`.
  InterpretedNode(std::shared_ptr<const ir::Graph> graph, const ir::Node& node, std::vector<const ir::Node*> operands,
                  std::string name)
      : graph_(std::move(graph)), node_(node), operands_(std::move(operands)), name_(std::move(name)) {}

  std::vector<Array> run(std::span<const Array> arguments, std::span<const Array> implicit_inputs,
                         std::span<const char> donated) const final;
  std::optional<runtime::OutputPlan> plan_outputs(std::span<const Array>, std::span<const Array>) const final {
    return runtime::output_plan(*graph_);
  }
  std::string_view backend() const final { return "llvm"; }

 protected:
  const ir::Node& node() const { return node_; }
  /// Writes the node's value into `result` (of the node's type) from the
  /// arguments it reads, in order. `result` may share its memory with an
  /// operand of the same type where writes_over_operands says so.
  virtual void compute(std::span<const detail::ArrayImpl* const> operands, detail::ArrayImpl& result) const = 0;
  /// Whether compute reads each element of its operands before it writes
  /// that element of its result, so a donated operand's memory may hold it.
  virtual bool writes_over_operands() const { return false; }

 private:
  std::shared_ptr<const ir::Graph> graph_;
  const ir::Node& node_;
  std::vector<const ir::Node*> operands_;
  std::string name_;  // on the timeline
};

}  // namespace kiln::llvm_backend
