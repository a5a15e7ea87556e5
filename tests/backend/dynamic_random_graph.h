// Random shape-generic functions for differential testing of symbolic
// graphs: from a seed, a function of arguments with one or two dynamic
// dimensions (symbols) and a random sequence of operations on them —
// elementwise steps broadcasting against static operands, reductions and
// softmax over dynamic and static axes, matmuls contracting static or
// dynamic dimensions, reshapes merging and splitting dynamic dimensions,
// concatenation, slicing, take, select and conversions.
//
// The function is traced at the probe points of its sizes and fitted to one
// symbolic graph, as jit does; that graph is compiled once and run at
// several sizes of each symbol (2, 3 and random ones up to a few hundred),
// against the interpreter's run of the same graph. Tolerances come from the
// error analysis of random_graph.h done at each of those sizes: a sum over a
// dynamic axis of n elements is allowed the error of n elements there.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cache/backend_choice.h"
#include "differential.h"
#include "transform/symbolic_fit.h"

namespace kiln::testing {

/// The probe grid jit uses where the function is valid everywhere: steps of
/// +1 and the first two check points above the hints.
transform::ProbeGrid probe_grid_above(const std::vector<int64_t>& hints);

struct DynamicGraphOptions {
  int min_steps = 2;
  int max_steps = 10;
  /// Symbols per function: 1, or up to this many.
  int max_symbols = 2;
  /// Sizes each function runs at: every symbol at 2, then at 3 (or 3 and 2
  /// mixed), then random sizes up to max_size.
  int runs = 5;
  int64_t max_size = 300;
  /// No value holds more elements at any run: larger steps are redrawn.
  int64_t max_elements = 40000;
  /// Per cent of functions whose float arguments hold NaN and infinities.
  int special_values_percent = 5;
};

/// One call of the compiled function: the symbols' sizes and what it runs on.
struct DynamicRun {
  std::vector<int64_t> sizes;  // one per symbol
  std::vector<Array> arguments;
  std::vector<Tolerance> tolerances;  // one per output
  /// The function traced at these sizes, whose interpretation the symbolic
  /// graph's must equal exactly.
  std::optional<Graph> traced;
  std::vector<Array> traced_captures;
};

struct DynamicRandomGraph {
  uint64_t seed = 0;
  std::vector<int64_t> hints;  // the sizes traced at first, which the graph's types hold
  /// The fitted symbolic graph; empty when tracing or fitting failed.
  std::optional<Graph> graph;
  std::vector<Array> captures;
  std::vector<DynamicRun> runs;
  /// One line per step: what was applied, its symbolic type, bounds and error.
  std::string recipe;
  /// Why there is no graph, or why it does not hold at a run's sizes; empty when neither.
  std::string failure;
};

/// The function for `seed` (deterministic), traced and fitted. Throws
/// std::logic_error naming the seed if the generator itself produced an
/// invalid operation.
DynamicRandomGraph make_dynamic_random_graph(uint64_t seed, const DynamicGraphOptions& options = {});

/// Compiles the symbolic graph once with `backend` and runs it at every run's
/// sizes against the interpreter. Empty when every output of every run
/// agrees within its tolerance; otherwise a report with the seed, the
/// recipe, the graph and the mismatches by sizes.
std::string check_dynamic_random_graph(const DynamicRandomGraph& graph,
                                       const runtime::Backend& backend = cache::default_backend());

}  // namespace kiln::testing
