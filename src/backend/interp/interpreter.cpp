// Node-by-node execution with the reference kernels; values are released
// after their last use so long graphs do not hold every intermediate.
#include "backend/interp/interpreter.h"

#include "core/allocation_guard.h"
#include "core/array_impl.h"
#include "core/error_format.h"
#include "kiln/graph.h"
#include "ops/common/elementwise_result.h"
#include "ops/common/rules.h"
#include "ops/control/control.h"
#include "runtime/folding.h"
#include "telemetry/timeline.h"

namespace kiln::interp {

namespace {
// Every node but the inputs is a step, reading its inputs.
runtime::ProgramStep step_for_node(const ir::Graph& graph, size_t node) {
  return {.reads = graph.nodes[node].inputs, .defines = static_cast<ir::ValueId>(node)};
}
}  // namespace

Array reference_kernel(const ir::Node& node, std::span<const Array> inputs, std::span<const char> donated) {
  // Named on the timeline, as compiled kernels are: what a first tier ran where.
  telemetry::timeline::Span span;
  if (telemetry::timeline::recording())
    span.begin("kernel", ir::primitive_name(node.op), {{"elements", node.type.size()}}, "graph", "reference");
  ops::DonatedInputs donation(inputs, donated);
  return ops::rules(node.op).evaluate(node, inputs);
}

std::vector<Array> run(const ir::Graph& graph, std::span<const Array> arguments, std::span<const Array> captures) {
  // A symbolic graph runs as the concrete graph at the call's sizes.
  if (ir::is_symbolic(graph))
    return run(ir::instantiate(graph, ir::bind_symbols(graph, arguments, captures)), arguments, captures);
  // Unprepared runs fold nothing: the oracle evaluates every node as written.
  std::vector<runtime::ProgramStep> steps;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (graph.nodes[i].op != ir::Primitive::input) steps.push_back(step_for_node(graph, i));
  const runtime::StepProgram program(graph, std::move(steps), {}, "captures");
  std::vector<Array> inputs;
  ops::ControlResults control_results(graph);
  return program.run(arguments, captures, {}, [&](size_t step, std::vector<Array>& values, const std::vector<char>&) {
    auto id = static_cast<size_t>(program.steps()[step].defines);
    const ir::Node& node = graph.nodes[id];
    inputs.clear();
    for (ir::ValueId input : node.inputs) inputs.push_back(values[static_cast<size_t>(input)]);
    if (ir::is_control(node.op)) {
      auto run_body = [&](size_t b, std::span<const Array> body_arguments, std::span<const Array> body_captures,
                          std::span<const char>) { return run(*node.bodies[b], body_arguments, body_captures); };
      values[id] = control_results.keep(static_cast<ir::ValueId>(id), ops::run_control(node, inputs, run_body));
    } else if (node.op == ir::Primitive::element) {
      values[id] = control_results.take(node);
    } else {
      values[id] = ops::rules(node.op).evaluate(node, inputs);
    }
    return step + 1;
  });
}

Program::Program(std::shared_ptr<const ir::Graph> graph, Choose choose) : graph_(std::move(graph)) {
  size_t count = graph_->nodes.size();
  std::vector<Choice> choices = choose ? choose(*graph_) : std::vector<Choice>();
  std::vector<Array> constants(count);
  std::vector<runtime::ProgramStep> steps;
  std::vector<Array> inputs;
  for (size_t i = 0; i < count; ++i) {
    const ir::Node& node = graph_->nodes[i];
    if (node.op == ir::Primitive::input) continue;
    // A loop or branch runs its bodies at every run, however constant its
    // operands; a node given a kernel of its own runs it at every run too.
    bool control = ops::rules(node.op).fusion == ops::Fusion::control;
    Choice choice = choices.empty() || control ? Choice() : std::move(choices[i]);
    if (choice.inlined) continue;
    bool constant = !control && !choice.kernel && node.type.size() <= runtime::max_folded_elements;
    for (ir::ValueId input : node.inputs) constant = constant && constants[static_cast<size_t>(input)].defined();
    if (constant) {
      inputs.clear();
      for (ir::ValueId input : node.inputs) inputs.push_back(constants[static_cast<size_t>(input)]);
      constants[i] = ops::rules(node.op).evaluate(node, inputs);
    } else {
      runtime::ProgramStep step = step_for_node(*graph_, i);
      if (!choice.reads.empty()) step.reads = std::move(choice.reads);
      steps.push_back(std::move(step));
      kernels_.push_back(choice.kernel ? std::move(choice.kernel) : Kernel(&reference_kernel));
      bodies_.emplace_back();
      for (const auto& body : node.bodies) bodies_.back().push_back(std::make_shared<const Program>(body, choose));
    }
  }
  program_ = runtime::StepProgram(*graph_, std::move(steps), std::move(constants), "captures");
  element_counts_ = ops::count_elements(*graph_);
}

std::vector<Array> Program::run(std::span<const Array> arguments, std::span<const Array> captures,
                                std::span<const char> donated) const {
  constexpr size_t inline_inputs = 8;
  Array small[inline_inputs];
  char small_donated[inline_inputs];
  std::vector<Array> large;
  std::vector<char> large_donated;
  ops::ControlResults control_results(element_counts_);
  auto run_step = [&](size_t step, std::vector<Array>& values, const std::vector<char>& overwritable) {
    const runtime::ProgramStep& program_step = program_.steps()[step];
    auto id = static_cast<size_t>(program_step.defines);
    const ir::Node& node = graph_->nodes[id];
    const std::vector<ir::ValueId>& reads = program_step.reads;
    size_t arity = reads.size();
    Array* inputs = small;
    char* dead = small_donated;
    if (arity > inline_inputs) {
      large.resize(arity);
      large_donated.resize(arity);
      inputs = large.data();
      dead = large_donated.data();
    }
    for (size_t k = 0; k < arity; ++k) {
      ir::ValueId input = reads[k];
      const Array& value = values[static_cast<size_t>(input)];
      inputs[k] = value.defined() ? value : program_.constant(input);
    }
    // After every copy is made: a value read twice has two.
    for (size_t k = 0; k < arity; ++k) {
      ir::ValueId input = reads[k];
      const Array& value = values[static_cast<size_t>(input)];
      dead[k] = value.defined() && overwritten_here(step, input, value, overwritable);
    }
    std::span<const Array> operands(inputs, arity);
    // A refused allocation names the node's operation and traced line.
    detail::guard_allocation<detail::AllocationNaming::compiled_step>(
        ir::primitive_name(node.op).data(), node.type, node.where, [&] {
          if (ir::is_control(node.op)) {
            const auto& bodies = bodies_[step];
            auto run_body = [&](size_t b, std::span<const Array> body_arguments, std::span<const Array> body_captures,
                                std::span<const char>) { return bodies[b]->run(body_arguments, body_captures); };
            values[id] = control_results.keep(static_cast<ir::ValueId>(id), ops::run_control(node, operands, run_body));
          } else if (node.op == ir::Primitive::element) {
            values[id] = control_results.take(node);
          } else {
            values[id] = kernels_[step](node, operands, std::span<const char>(dead, arity));
          }
        });
    // The program releases values after their last step; these copies must not keep them alive.
    for (size_t k = 0; k < arity; ++k) inputs[k] = Array();
    return step + 1;
  };
  return program_.run(arguments, captures, donated, run_step);
}

// An argument's memory is the run's when the caller donated it (and no other
// array shares it: runtime::StepProgram::overwritable_arguments); a value
// computed here is the run's when only its slot and this step's copy hold it
// (a node reading it twice, a control node's kept result or a view keep
// another handle). Kernels check what they take for memory shared with a view.
bool Program::overwritten_here(size_t step, ir::ValueId input, const Array& value,
                               const std::vector<char>& overwritable) const {
  if (program_.last_reading_step(input) != static_cast<int>(step)) return false;
  if (graph_->nodes[static_cast<size_t>(input)].op == ir::Primitive::input)
    return overwritable[static_cast<size_t>(input)] != 0;
  return detail::impl(value).use_count() == 2;
}

}  // namespace kiln::interp

std::vector<kiln::Array> kiln::detail::interpret(const Graph& graph, const std::vector<Array>& arguments,
                                                 const std::vector<Array>& captures) {
  return interp::run(detail::ir_of(graph), arguments, captures);
}
