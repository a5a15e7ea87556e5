// The one interface between the cache and a backend: a compiled graph that
// runs on concrete inputs. Inputs are, in order, the graph's explicit
// arguments and then its implicit inputs (captures, lifted literals).
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "kiln/error.h"

namespace kiln::runtime {

/// What a run returns, known before it runs: by output, its type, or the
/// input (its position among the arguments, then the implicit inputs) that
/// it returns as it is (-1 for none).
struct OutputPlan {
  std::vector<detail::AbstractValue> types;
  std::vector<int> passed_inputs;
};
/// The OutputPlan of running a graph with no symbols.
OutputPlan output_plan(const ir::Graph& graph);

class Executable {
 public:
  virtual ~Executable() = default;
  /// Thread-safe: many calls may run at once. `donated[k]` (when given) says
  /// the caller gives up argument k: its memory may hold an output.
  virtual std::vector<Array> run(std::span<const Array> arguments, std::span<const Array> implicit_inputs,
                                 std::span<const char> donated = {}) const = 0;
  /// What run returns for these inputs, checked as run checks them (a
  /// symbolic graph throws SizesDoNotFit at sizes its rules refuse), without
  /// running: what a call queued for later returns at once. Empty when the
  /// executable cannot say, and the call runs at once.
  virtual std::optional<OutputPlan> plan_outputs(std::span<const Array>, std::span<const Array>) const {
    return std::nullopt;
  }
  virtual std::string_view backend() const = 0;
  /// True while runs take a first tier because the optimized code is still
  /// compiling (cache/tiered_compile.h).
  virtual bool interim() const { return false; }
};

/// Thrown by Backend::load when saved bytes do not describe the graph's
/// executable (another plan, a missing symbol): the saved entry is wrong,
/// unlike a failure of this process (no memory, a linker error).
class SavedExecutableMismatch : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The graph as a backend runs it and, by that graph's node ids, the fused
/// kernel computing each node (-1: a step of its own, or no kernels at all):
/// what pictures of the graph draw as clusters.
struct FusedView {
  std::shared_ptr<const ir::Graph> graph;
  std::vector<int32_t> groups;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  /// Compiles a verified graph; throws kiln::Error if it cannot.
  virtual std::shared_ptr<const Executable> compile(std::shared_ptr<const ir::Graph> graph) const = 0;
  /// Whether the graph's compiled results equal running it op by op as
  /// eager code does, bit for bit: a first tier may then serve its calls.
  virtual bool matches_op_by_op(const ir::Graph&) const { return true; }
  /// Called on a thread before its first compile is handed to kiln's compile
  /// thread. The process's exit hook stops that thread and runs before every
  /// static destructor registered earlier: statics the code generator makes
  /// lazily must be made here, or they are destroyed at exit while a compile
  /// still uses them.
  virtual void prepare_background_compiles() const {}
  /// An executable running `graph` as its compiled code would, bit for bit,
  /// with nothing to compile, or null where the backend has none for it:
  /// what a first tier's eager operations run while no code is compiled.
  /// `at_any_size`: also where compiled code would win counting its compile
  /// (for a caller that compiles nothing either way).
  virtual std::shared_ptr<const Executable> interpret(std::shared_ptr<const ir::Graph>,
                                                      bool /*at_any_size*/ = false) const {
    return nullptr;
  }
  /// Whether `interpret` serves `node` of `graph` run alone, as an eager operation.
  virtual bool interprets(const ir::Graph&, const ir::Node&) const { return false; }
  virtual FusedView fused_view(std::shared_ptr<const ir::Graph> graph) const { return {std::move(graph), {}}; }
  /// What compiled code depends on besides the graph and kiln's build (the
  /// code generator's version, the target and its CPU features): saved
  /// executables are loaded only where it is the same.
  virtual std::string target() const { return {}; }
  /// The executable as bytes that load() turns back into it, in a later
  /// process of the same build on the same machine; empty when it cannot be saved.
  virtual std::string save(const Executable&) const { return {}; }
  /// The executable save() wrote for `graph`, linked without compiling.
  /// Throws SavedExecutableMismatch when the bytes do not describe it.
  virtual std::shared_ptr<const Executable> load(std::shared_ptr<const ir::Graph>, std::string_view) const {
    return nullptr;
  }
};

/// A symbolic graph's shape rules held at the sizes it was traced at, not
/// necessarily at a call's (a slice of the first 8 rows, take from an axis
/// that is empty at this size): its executables refuse such a call before
/// running anything, with the rule's own message, and jit traces it afresh.
class SizesDoNotFit : public Error {
 public:
  using Error::Error;
};

/// The concrete graph at the symbols' `values` (ir::instantiate) with every
/// node's shape rule checked at those sizes, bodies included; throws
/// SizesDoNotFit where one fails. What executables prepare once per binding.
ir::Graph instantiate_checked(const ir::Graph& graph, std::span<const int64_t> values);

/// Throws kiln::Error unless `count` inputs are given for the graph's input nodes `ids`.
void check_input_count(const ir::Graph& graph, const std::vector<ir::ValueId>& ids, size_t count, const char* what);

/// Puts `arrays` into `values` at the graph's input nodes `ids`, checking
/// their number and that each is a concrete array of the input's type.
/// `what` names the inputs in errors ("arguments", "captures").
void bind_inputs(std::vector<Array>& values, const ir::Graph& graph, const std::vector<ir::ValueId>& ids,
                 std::span<const Array> arrays, const char* what);

}  // namespace kiln::runtime
