// Probing a function at other sizes of its symbols (see the header).
#include "cache/dynamic_probe.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>

#include "transform/symbolic_fit.h"

namespace kiln::cache {

namespace {

std::string point_text(const std::vector<int64_t>& point) {
  std::string text;
  for (size_t i = 0; i < point.size(); ++i)
    text += (i ? ", s" : "s") + std::to_string(i) + " = " + std::to_string(point[i]);
  return text;
}

// The lines whose shape reads saw other sizes at other points read a dynamic size.
std::vector<Location> dynamic_reads(const std::vector<ProbeTrace>& traces) {
  std::vector<Location> lines;
  const auto& first = traces[0].reads;
  for (size_t k = 0; k < first.size(); ++k) {
    bool dynamic = false;
    for (size_t p = 1; p < traces.size(); ++p)
      dynamic = dynamic || k >= traces[p].reads.size() || traces[p].reads[k].first != first[k].first;
    Location line = first[k].second;
    bool known = std::any_of(lines.begin(), lines.end(), [&](const Location& seen) {
      return seen.line() == line.line() && std::string_view(seen.file_name()) == line.file_name();
    });
    if (dynamic && !known) lines.push_back(line);
  }
  return lines;
}

// Traces at the points the probe asks for, once each, and keeps what it
// learns: where the function fails bounds each symbol's valid range.
class Prober {
 public:
  Prober(const detail::CallArguments& arguments, const SymbolAssignment& symbols,
         const std::vector<std::vector<int64_t>>& failed,
         detail::FunctionRef<ProbeTrace(const std::vector<Shape>&)> trace_at)
      : arguments_(arguments), symbols_(symbols), trace_at_(trace_at), ranges_(symbols.bounds) {
    for (const std::vector<int64_t>& point : failed)
      if (point.size() == symbols.hints.size()) exclude(point);
  }

  /// The trace at `point`, or nothing where the point is outside the range
  /// or the function fails there.
  const ProbeTrace* at(const std::vector<int64_t>& point) {
    for (size_t i = 0; i < point.size(); ++i)
      if (!ranges_[i].contains(point[i])) return nullptr;
    if (auto known = traces_.find(point); known != traces_.end()) return known->second ? &*known->second : nullptr;
    std::optional<ProbeTrace>& slot = traces_[point];
    try {
      slot = trace_at_(shapes_at(arguments_, symbols_, point));
      return &*slot;
    } catch (const Error& error) {
      if (point == symbols_.hints) throw;  // at the call's own sizes: the user's error
      exclude(point);
      failures_.push_back(point);
      if (failure_.empty()) failure_ = "at " + point_text(point) + " the trace fails: " + error.what();
      return nullptr;
    }
  }

  /// Narrows each range whose edge a failure set to the exact edge: the
  /// function's validity (`holds`: it traces there and the fit holds) is
  /// taken to be an interval around the call's sizes in each symbol, so a
  /// bisection between a valid size and a failing one finds where it ends.
  template <class Holds>
  void bisect_edges(Holds holds) {
    const std::vector<int64_t>& hints = symbols_.hints;
    for (size_t i = 0; i < hints.size(); ++i) {
      for (int side : {1, -1}) {
        int64_t valid = hints[i];
        int64_t failing = side > 0 ? ranges_[i].max + 1 : ranges_[i].min - 1;
        bool set_by_failure =
            side > 0 ? ranges_[i].max < symbols_.bounds[i].max : ranges_[i].min > symbols_.bounds[i].min;
        if (!set_by_failure) continue;
        while ((failing - valid) * side > 1) {
          std::vector<int64_t> point = hints;
          point[i] = valid + (failing - valid) / 2;
          if (holds(point)) valid = point[i];
          else failing = point[i];
        }
        // Everything between the call's size and `valid` was traced or lies
        // between traced sizes; past it the function fails.
        if (side > 0) ranges_[i].max = valid;
        else ranges_[i].min = valid;
      }
    }
  }

  const std::vector<SizeRange>& ranges() const { return ranges_; }
  const std::string& failure() const { return failure_; }
  std::vector<std::vector<int64_t>> failures() const { return failures_; }

  /// A failure at `point` (the trace fails, or the fit does not hold there)
  /// bounds the range of every symbol it moved.
  void exclude(const std::vector<int64_t>& point) {
    for (size_t i = 0; i < point.size(); ++i) {
      if (point[i] > symbols_.hints[i]) ranges_[i].max = std::min(ranges_[i].max, point[i] - 1);
      if (point[i] < symbols_.hints[i]) ranges_[i].min = std::max(ranges_[i].min, point[i] + 1);
    }
  }

 private:
  const detail::CallArguments& arguments_;
  const SymbolAssignment& symbols_;
  detail::FunctionRef<ProbeTrace(const std::vector<Shape>&)> trace_at_;
  std::vector<SizeRange> ranges_;
  std::map<std::vector<int64_t>, std::optional<ProbeTrace>> traces_;
  std::vector<std::vector<int64_t>> failures_;
  std::string failure_;
};

std::vector<int64_t> moved(std::vector<int64_t> point, const std::vector<int64_t>& offsets) {
  for (size_t i = 0; i < point.size(); ++i) point[i] += offsets[i];
  return point;
}

// The grid's step per symbol: +1 where the function is valid there, else -1.
// A symbol valid on neither side cannot be fitted here.
std::optional<int> choose_steps(Prober& prober, const std::vector<int64_t>& hints, std::vector<int64_t>& steps) {
  for (size_t i = 0; i < hints.size(); ++i) {
    steps[i] = 0;
    for (int64_t step : {1, -1}) {
      std::vector<int64_t> point = hints;
      point[i] += step;
      if (prober.at(point)) {
        steps[i] = step;
        break;
      }
    }
    if (steps[i] == 0) return static_cast<int>(i);
  }
  return std::nullopt;
}

ProbeResult unfitted(const Prober& prober, std::string failure, std::vector<int> culprits) {
  ProbeResult result;
  result.trace_failed = true;
  result.failure = std::move(failure);
  result.culprits = std::move(culprits);
  result.failures = prober.failures();
  return result;
}

// The fit of the traces at the grid's points (every point traced before).
transform::FitResult fit_at(Prober& prober, const transform::ProbeGrid& grid) {
  std::vector<const ir::Graph*> graphs;
  for (const std::vector<int64_t>& point : grid.points()) graphs.push_back(prober.at(point)->graph.get());
  return transform::fit_symbols(graphs, grid);
}

std::vector<int> all_symbols(size_t count) {
  std::vector<int> all(count);
  std::iota(all.begin(), all.end(), 0);
  return all;
}

std::vector<int> moved_symbols(const std::vector<int64_t>& point, const std::vector<int64_t>& hints) {
  std::vector<int> symbols;
  for (size_t i = 0; i < hints.size(); ++i)
    if (point[i] != hints[i]) symbols.push_back(static_cast<int>(i));
  return symbols;
}

}  // namespace

ProbeResult probe(const detail::CallArguments& arguments, const SymbolAssignment& symbols,
                  const std::vector<std::vector<int64_t>>& failed,
                  detail::FunctionRef<ProbeTrace(const std::vector<Shape>&)> trace_at) {
  Prober prober(arguments, symbols, failed, trace_at);
  const std::vector<int64_t>& hints = symbols.hints;
  prober.at(hints);
  transform::ProbeGrid grid{hints, std::vector<int64_t>(hints.size(), 1), {}};
  if (std::optional<int> culprit = choose_steps(prober, hints, grid.steps))
    return unfitted(prober, prober.failure(), {*culprit});
  for (const std::vector<int64_t>& point : grid.points())
    if (!prober.at(point)) return unfitted(prober, prober.failure(), moved_symbols(point, hints));
  // Two check points where the function traces and the grid's fit holds,
  // nearest first. A check point where the fit does not hold bounds the
  // range like a failure (past the end of a table a slice clamps, a C++
  // branch on a size takes another way). The numbers follow no polynomial
  // when two traced check points disagree and none agrees; with fewer, the
  // call is too near an edge to check a fit.
  transform::FitResult fit = fit_at(prober, grid);
  int disagreements = 0;
  for (size_t k = 0; fit.graph && grid.checks.size() < 2; ++k) {
    std::vector<int64_t> offsets = transform::check_offsets(k, hints.size());
    if (offsets.empty()) {
      if (disagreements >= 2 && grid.checks.empty())
        return ProbeResult{.failure = fit.failure, .culprits = fit.culprits};
      ProbeResult result = unfitted(prober,
                                    "too few sizes near " + point_text(hints) + " hold a fit to check it" +
                                        (fit.failure.empty() ? "" : " (" + fit.failure + ")") +
                                        (prober.failure().empty() ? "" : " (" + prober.failure() + ")"),
                                    all_symbols(hints.size()));
      result.no_room = true;
      return result;
    }
    std::vector<int64_t> point = moved(hints, offsets);
    if (!prober.at(point)) continue;
    grid.checks.push_back(point);
    transform::FitResult checked = fit_at(prober, grid);
    if (checked.graph) {
      fit = std::move(checked);
      continue;
    }
    grid.checks.pop_back();
    prober.exclude(point);
    disagreements += 1;
    fit.failure = std::move(checked.failure);
    fit.culprits = std::move(checked.culprits);
  }
  ProbeResult result;
  if (!fit.graph) {
    result.failure = std::move(fit.failure);
    result.culprits = std::move(fit.culprits);
    return result;
  }
  std::vector<ProbeTrace> traces;
  for (const std::vector<int64_t>& point : grid.points()) traces.push_back(*prober.at(point));
  result.reads = dynamic_reads(traces);
  prober.bisect_edges([&](const std::vector<int64_t>& point) {
    if (!prober.at(point)) return false;
    transform::ProbeGrid with_point = grid;
    with_point.checks.push_back(point);
    return fit_at(prober, with_point).graph != nullptr;
  });
  result.graph = std::move(fit.graph);
  result.ranges = prober.ranges();
  result.failures = prober.failures();
  return result;
}

}  // namespace kiln::cache
