// The interpreter as a backend: "compiling" keeps the graph, running
// interprets it. Compiled backends plug in behind the same interface.
#include <optional>

#include "backend/interp/interpreter.h"
#include "runtime/binding_cache.h"
#include "runtime/blas.h"

namespace kiln::interp {

using runtime::Backend;
using runtime::Executable;

namespace {
// Compiled graphs run matrix products through BLAS; everything else through
// the reference kernels until a native backend takes over.
Array matmul_kernel(const ir::Node& node, std::span<const Array> inputs, std::span<const char>) {
  return runtime::blas_matmul(node, inputs);
}
std::vector<Program::Choice> runtime_kernels(const ir::Graph& graph) {
  std::vector<Program::Choice> choices(graph.nodes.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (runtime::blas_handles(graph.nodes[i])) choices[i].kernel = &matmul_kernel;
  return choices;
}

class InterpretedGraph final : public Executable {
 public:
  InterpretedGraph(std::shared_ptr<const ir::Graph> graph, Program::Choose choose, std::string_view name)
      : graph_(std::move(graph)), choose_(choose), name_(name) {
    if (!ir::is_symbolic(*graph_)) program_.emplace(graph_, choose_);
  }
  std::vector<Array> run(std::span<const Array> arguments, std::span<const Array> implicit_inputs,
                         std::span<const char> donated) const override {
    if (program_) return program_->run(arguments, implicit_inputs, donated);
    return instance(arguments, implicit_inputs)->run(arguments, implicit_inputs, donated);
  }
  std::optional<runtime::OutputPlan> plan_outputs(std::span<const Array> arguments,
                                                  std::span<const Array> implicit_inputs) const override {
    if (program_) return runtime::output_plan(*graph_);
    return runtime::output_plan(instance(arguments, implicit_inputs)->graph());
  }
  std::string_view backend() const override { return name_; }

 private:
  // A symbolic graph is prepared once per binding of its symbols.
  std::shared_ptr<const interp::Program> instance(std::span<const Array> arguments,
                                                  std::span<const Array> implicit_inputs) const {
    auto prepare = [&](const std::vector<int64_t>& values) {
      return interp::Program(std::make_shared<const ir::Graph>(runtime::instantiate_checked(*graph_, values)), choose_);
    };
    return instances_.get(ir::bind_symbols(*graph_, arguments, implicit_inputs), prepare);
  }

  std::shared_ptr<const ir::Graph> graph_;
  Program::Choose choose_;
  std::string_view name_;
  std::optional<interp::Program> program_;
  runtime::BindingCache<interp::Program> instances_;
};

class InterpreterBackend final : public Backend {
 public:
  std::string_view name() const override { return "interp"; }
  std::shared_ptr<const Executable> compile(std::shared_ptr<const ir::Graph> graph) const override {
    return interpreted_executable(std::move(graph), &runtime_kernels, "interp");
  }
};
}  // namespace

std::shared_ptr<const Executable> interpreted_executable(std::shared_ptr<const ir::Graph> graph, Program::Choose choose,
                                                         std::string_view name) {
  return std::make_shared<InterpretedGraph>(std::move(graph), choose, name);
}

const Backend& interpreter_backend() {
  static const InterpreterBackend backend;
  return backend;
}

}  // namespace kiln::interp
