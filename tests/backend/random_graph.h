// Random graphs for differential testing: from a seed, a valid graph of
// elementwise chains, broadcasts, reductions, matmuls, movement and indexing
// over random shapes and dtypes, with the arrays it runs on and, per output,
// how far a compiled result may be from the interpreter's.
//
// Tolerances come from a forward error analysis done while generating: every
// value carries an interval holding all its elements and a bound on how far
// the compiled value may be from the reference one. Exact operations (IEEE
// arithmetic, comparisons, conversions, movement, indexing, max/min) on
// bitwise-equal inputs give bitwise-equal results; only transcendentals (a
// few ulps), float sums and products (reassociated) and BLAS matmul introduce
// differences, which later operations propagate through their Lipschitz
// constants. Discontinuous operations (comparisons, floor, float-to-integer
// conversion, argmax, ...) are applied only to values known to be exact, and
// domain-restricted ones (log, sqrt, division) only where the perturbed value
// stays inside the domain, so any mismatch beyond the bound is a bug.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cache/backend_choice.h"
#include "differential.h"

namespace kiln::testing {

struct RandomGraphOptions {
  int min_steps = 2;
  int max_steps = 12;
  int max_rank = 4;
  int max_extent = 5;
  /// Per cent of graphs whose float arguments hold NaN and infinities.
  int special_values_percent = 10;
  /// Per cent of graphs with large arrays (up to ~100k elements), which the
  /// runtime splits across threads.
  int large_percent = 3;
  /// When set, arguments hold about this many elements (a benchmark corpus
  /// at realistic sizes) and no value grows past 8 times as many.
  int64_t elements = 0;
};

struct RandomGraph {
  uint64_t seed = 0;
  std::optional<DifferentialCase> test;
  std::vector<Tolerance> tolerances;  // one per output
  /// One line per generated step: what was applied, the value's interval and error bound.
  std::string recipe;
};

/// The graph for `seed` (deterministic). Throws std::logic_error naming the
/// seed if the generator itself produced an invalid operation.
RandomGraph make_random_graph(uint64_t seed, const RandomGraphOptions& options = {});

/// Compiles the graph with `backend` and runs it against the interpreter.
/// Empty when every output agrees within its tolerance; otherwise a report
/// with the seed, the recipe, the graph, the plan and the mismatches.
std::string check_random_graph(const RandomGraph& graph, const runtime::Backend& backend = cache::default_backend());

}  // namespace kiln::testing
