// Probing a function at other sizes of its symbols (see the header).
#include "cache/dynamic_probe.h"

#include <algorithm>

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

}  // namespace

ProbeResult probe(const detail::CallArguments& arguments, const SymbolAssignment& symbols,
                  detail::FunctionRef<ProbeTrace(const std::vector<Shape>&)> trace_at) {
  ProbeResult result;
  std::vector<std::vector<int64_t>> points = transform::probe_points(symbols.hints);
  std::vector<ProbeTrace> traces;
  for (size_t p = 0; p < points.size(); ++p) {
    try {
      traces.push_back(trace_at(shapes_at(arguments, symbols, points[p])));
    } catch (const Error& error) {
      if (p == 0) throw;  // at the call's own sizes: the user's error, as without dynamic dimensions
      result.trace_failed = true;
      for (size_t i = 0; i < points[p].size(); ++i)
        if (points[p][i] != symbols.hints[i]) result.culprits.push_back(static_cast<int>(i));
      result.failure = "at " + point_text(points[p]) + " the trace fails: " + error.what();
      return result;
    }
  }
  result.reads = dynamic_reads(traces);
  std::vector<const ir::Graph*> graphs;
  for (const ProbeTrace& traced : traces) graphs.push_back(traced.graph.get());
  transform::FitResult fit = transform::fit_symbols(graphs, symbols.hints);
  result.graph = std::move(fit.graph);
  result.failure = std::move(fit.failure);
  result.culprits = std::move(fit.culprits);
  return result;
}

}  // namespace kiln::cache
