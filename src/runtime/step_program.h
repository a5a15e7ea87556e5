// A graph as a program of steps, the form every backend's executable runs:
// which values each step reads and defines, when each value is read for the
// last time, and the loop that binds the inputs, runs the steps in order and
// releases each value after its last reader so long graphs do not hold every
// intermediate. What a step computes is the backend's business.
#pragma once

#include <algorithm>
#include <span>
#include <vector>

#include "ir/graph.h"

namespace kiln::runtime {

struct ProgramStep {
  std::vector<ir::ValueId> reads;
  ir::ValueId defines = -1;
  // A view shares this value's memory, so the value must live as long as the view.
  ir::ValueId shares_memory_of = -1;
};

/// By value id: the last step reading the value or a view of it; outputs
/// live to the end (steps.size()); -1 for values no step reads.
std::vector<int> last_reading_steps(std::span<const ProgramStep> steps, size_t value_count,
                                    std::span<const ir::ValueId> outputs);

class StepProgram {
 public:
  StepProgram() = default;
  /// `graph` must outlive the program. `constants` (by value id, undefined
  /// where not folded) are evaluated once and shared by every run.
  /// `implicit_inputs_name` is what errors call the implicit inputs.
  StepProgram(const ir::Graph& graph, std::vector<ProgramStep> steps, std::vector<Array> constants,
              const char* implicit_inputs_name);

  const ir::Graph& graph() const { return *graph_; }
  const std::vector<ProgramStep>& steps() const { return steps_; }
  const Array& constant(ir::ValueId value) const { return constants_[static_cast<size_t>(value)]; }
  int last_reading_step(ir::ValueId value) const { return last_reading_step_[static_cast<size_t>(value)]; }
  /// The step defining `value`; -1 for inputs and values no step names as the one it defines.
  int defining_step(ir::ValueId value) const { return defining_step_[static_cast<size_t>(value)]; }

  /// Runs the program: `run_from(step, values, overwritable)` runs steps
  /// [step, next) and returns next, so a backend may run several steps at
  /// once. Both vectors are by value id; `overwritable` marks the donated
  /// arguments (`donated[k]` for argument k) whose memory the run may take
  /// over. Throws kiln::Error when the inputs do not match the graph's
  /// input types, or those of `sizes`: a symbolic graph's program checks
  /// its inputs against the graph at the call's sizes (ir::instantiate).
  template <class RunFrom>
  std::vector<Array> run(std::span<const Array> arguments, std::span<const Array> implicit_inputs,
                         std::span<const char> donated, RunFrom&& run_from, const ir::Graph* sizes = nullptr) const {
    std::vector<Array> values = bind(arguments, implicit_inputs, sizes ? *sizes : *graph_);
    // Most calls donate nothing: they share one all-zero table.
    std::vector<char> donated_table;
    bool donating = std::any_of(donated.begin(), donated.end(), [](char d) { return d != 0; });
    if (donating) donated_table = overwritable_arguments(arguments, implicit_inputs, donated);
    const std::vector<char>& overwritable = donating ? donated_table : nothing_overwritable_;
    for (size_t step = 0; step < steps_.size();) {
      size_t next = run_from(step, values, overwritable);
      for (; step < next; ++step) release_last_reads(step, values);
    }
    return outputs(values);
  }

 private:
  std::vector<Array> bind(std::span<const Array> arguments, std::span<const Array> implicit_inputs,
                          const ir::Graph& types) const;
  std::vector<char> overwritable_arguments(std::span<const Array> arguments, std::span<const Array> implicit_inputs,
                                           std::span<const char> donated) const;
  void release_last_reads(size_t step, std::vector<Array>& values) const;
  std::vector<Array> outputs(const std::vector<Array>& values) const;

  const ir::Graph* graph_ = nullptr;
  std::vector<ProgramStep> steps_;
  std::vector<Array> constants_;
  const char* implicit_inputs_name_ = "implicit inputs";
  std::vector<int> last_reading_step_;      // by value id
  std::vector<int> defining_step_;          // by value id
  std::vector<char> nothing_overwritable_;  // by value id: all zero
};

}  // namespace kiln::runtime
