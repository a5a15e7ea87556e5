// Control flow nodes at run time: the semantics of while_loop, cond and scan
// written once over "run body b on these arguments", which each executor
// supplies — eager code replays the body graphs operation by operation, the
// interpreter interprets them, the native backend runs their compiled code.
#pragma once

#include <span>
#include <unordered_map>
#include <vector>

#include "ir/control.h"
#include "kiln/jit.h"

namespace kiln::ops {

/// Runs body `body` of the node being run. `donated[k]`: the loop made
/// argument k (a previous iteration's carry, a row of a scanned operand) and
/// gives it up, so its memory may hold a result.
using BodyRunner = detail::FunctionRef<std::vector<Array>(
    size_t body, std::span<const Array> arguments, std::span<const Array> captures, std::span<const char> donated)>;

/// By control node: how many element nodes read it.
using ElementCounts = std::unordered_map<ir::ValueId, int>;
ElementCounts count_elements(const ir::Graph& graph);

/// The results of the control nodes an executor has run, until their element
/// nodes take them: result 0 is the control node's own value.
class ControlResults {
 public:
  /// Counts the graph's element nodes: for passes that run a graph once.
  explicit ControlResults(const ir::Graph& graph);
  /// Counts made once by an executable, which keeps them alive: nothing is
  /// scanned on a run.
  explicit ControlResults(const ElementCounts& counts) : counts_(&counts) {}
  /// Stores the results some element node reads and returns result 0.
  Array keep(ir::ValueId control, std::vector<Array> results);
  /// The result an element node names; once every element node of its
  /// control node has taken its own, nothing is held.
  Array take(const ir::Node& element);

 private:
  struct Pending {
    std::vector<Array> results;
    int untaken = 0;
  };
  ElementCounts owned_;
  const ElementCounts* counts_ = &owned_;
  std::unordered_map<ir::ValueId, Pending> pending_;
};

/// Every result of a control node (ir::control_result_types) from concrete operands.
std::vector<Array> run_control(const ir::Node& node, std::span<const Array> operands, BodyRunner run_body);

/// Records a control node (and an element node per further result) in the
/// active trace, or runs it now on concrete operands, replaying its bodies
/// operation by operation. Returns every result.
std::vector<Array> apply_control(const ir::Node& node, std::span<const Array> operands);

/// One node through the public operations: a literal, a control node (its
/// results kept in `control_results`), an element of one, or a primitive.
Array apply_node(const ir::Node& node, ir::ValueId id, std::span<const Array> inputs, ControlResults& control_results);

/// Evaluates `graph` operation by operation through the public operations
/// (eagerly, or recorded into the active trace).
std::vector<Array> apply_graph(const ir::Graph& graph, std::span<const Array> arguments,
                               std::span<const Array> captures);

}  // namespace kiln::ops
