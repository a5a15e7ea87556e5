// Liveness and the run loop every backend's executable shares (see the header).
#include "runtime/step_program.h"

#include <algorithm>

#include "runtime/executable.h"

namespace kiln::runtime {

std::vector<int> last_reading_steps(std::span<const ProgramStep> steps, size_t value_count,
                                    std::span<const ir::ValueId> outputs) {
  std::vector<int> last(value_count, -1);
  for (size_t s = 0; s < steps.size(); ++s)
    for (ir::ValueId read : steps[s].reads) last[static_cast<size_t>(read)] = static_cast<int>(s);
  for (ir::ValueId output : outputs) last[static_cast<size_t>(output)] = static_cast<int>(steps.size());
  // Going backwards carries a view's life through chains of views to the
  // value that owns the memory.
  for (size_t s = steps.size(); s-- > 0;) {
    const ProgramStep& step = steps[s];
    if (step.shares_memory_of < 0) continue;
    auto source = static_cast<size_t>(step.shares_memory_of);
    last[source] = std::max(last[source], last[static_cast<size_t>(step.defines)]);
  }
  return last;
}

StepProgram::StepProgram(const ir::Graph& graph, std::vector<ProgramStep> steps, std::vector<Array> constants,
                         const char* implicit_inputs_name)
    : graph_(&graph),
      steps_(std::move(steps)),
      constants_(std::move(constants)),
      implicit_inputs_name_(implicit_inputs_name) {
  size_t count = graph.nodes.size();
  constants_.resize(count);
  last_reading_step_ = last_reading_steps(steps_, count, graph.outputs);
  defining_step_.assign(count, -1);
  nothing_overwritable_.assign(count, 0);
  for (size_t s = 0; s < steps_.size(); ++s)
    defining_step_[static_cast<size_t>(steps_[s].defines)] = static_cast<int>(s);
}

std::vector<Array> StepProgram::bind(std::span<const Array> arguments, std::span<const Array> implicit_inputs,
                                     const ir::Graph& types) const {
  std::vector<Array> values(graph_->nodes.size());
  bind_inputs(values, types, graph_->arguments, arguments, "arguments");
  bind_inputs(values, types, graph_->captures, implicit_inputs, implicit_inputs_name_);
  return values;
}

// An argument's buffer may also be another input's (the same array passed
// twice, or captured), or another live array's (a view of it, or the base it
// is a view of): overwriting it would change what those read. Only a buffer
// no other array refers to is taken over; other handles of the donated array
// itself see DonatedArrayError after the call.
std::vector<char> StepProgram::overwritable_arguments(std::span<const Array> arguments,
                                                      std::span<const Array> implicit_inputs,
                                                      std::span<const char> donated) const {
  std::vector<char> overwritable(graph_->nodes.size(), 0);
  for (size_t k = 0; k < donated.size() && k < graph_->arguments.size(); ++k) {
    if (!donated[k]) continue;
    const auto& buffer = detail::impl(arguments[k])->buffer;
    bool shared = buffer.use_count() > 1 || buffer->lent();
    for (size_t j = 0; j < arguments.size(); ++j) shared |= j != k && detail::impl(arguments[j])->buffer == buffer;
    for (const Array& capture : implicit_inputs) shared |= detail::impl(capture)->buffer == buffer;
    overwritable[static_cast<size_t>(graph_->arguments[k])] = !shared;
  }
  return overwritable;
}

void StepProgram::release_last_reads(size_t step, std::vector<Array>& values) const {
  for (ir::ValueId read : steps_[step].reads)
    if (last_reading_step_[static_cast<size_t>(read)] == static_cast<int>(step))
      values[static_cast<size_t>(read)] = Array();
}

std::vector<Array> StepProgram::outputs(const std::vector<Array>& values) const {
  std::vector<Array> outputs;
  outputs.reserve(graph_->outputs.size());
  for (ir::ValueId output : graph_->outputs) {
    // A folded constant is shared by every run: callers get their own copy
    // (a caller may donate it).
    const Array& constant = constants_[static_cast<size_t>(output)];
    outputs.push_back(constant.defined() ? detail::copy_of(constant) : values[static_cast<size_t>(output)]);
  }
  return outputs;
}

}  // namespace kiln::runtime
