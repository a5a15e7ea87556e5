// Dynamic dimensions in the per-function cache: the symbolic entries that
// serve every size, automatic dynamic, probing and fitting, and the
// explanations of each (DESIGN §3.7).
#include <algorithm>

#include "cache/jit_function.h"
#include "core/error_format.h"
#include "transform/symbolic_fit.h"

namespace kiln::detail {

namespace {
std::string symbol_name(int symbol) { return "s" + std::to_string(symbol); }
}  // namespace

cache::SymbolAssignment JitFunction::symbols_for(const CallArguments& arguments) const {
  return cache::assign_symbols(arguments, dynamic_);
}

std::shared_ptr<Entry> JitFunction::find_symbolic(const CallArguments& arguments) const {
  cache::SymbolAssignment symbols = symbols_for(arguments);
  if (symbols.empty()) return nullptr;
  auto found = by_symbolic_.find(cache::symbolic_signature(arguments, symbols));
  return found == by_symbolic_.end() ? nullptr : found->second;
}

JitFunction::Probe JitFunction::probe(const CallArguments& arguments, const cache::SymbolAssignment& symbols,
                                      FunctionRef<TraceOutcome(TraceSession&)> trace) {
  Probe result;
  std::vector<std::vector<int64_t>> points = transform::probe_points(symbols.hints);
  std::vector<Traced> traces;
  std::vector<std::vector<std::pair<Shape, Location>>> reads(points.size());
  for (size_t p = 0; p < points.size(); ++p) {
    std::vector<Shape> shapes = cache::shapes_at(arguments, symbols, points[p]);
    try {
      traces.push_back(run_trace(trace, &shapes, &reads[p]));
    } catch (const Error& error) {
      if (p == 0) throw;  // at the call's own sizes: the user's error, as without dynamic dimensions
      result.trace_failed = true;
      std::string at;
      for (size_t i = 0; i < points[p].size(); ++i) {
        if (points[p][i] != symbols.hints[i]) result.culprits.push_back(static_cast<int>(i));
        at += (i ? ", " : "") + symbol_name(static_cast<int>(i)) + " = " + std::to_string(points[p][i]);
      }
      result.failure = "at " + at + " the trace fails: " + error.what();
      return result;
    }
  }
  // The lines whose shape reads saw other sizes at other points read a dynamic size.
  for (size_t k = 0; k < reads[0].size(); ++k) {
    bool dynamic = false;
    for (size_t p = 1; p < points.size(); ++p)
      dynamic = dynamic || k >= reads[p].size() || reads[p][k].first != reads[0][k].first;
    Location line = reads[0][k].second;
    bool known = std::any_of(result.reads.begin(), result.reads.end(), [&](const Location& seen) {
      return seen.line() == line.line() && std::string_view(seen.file_name()) == line.file_name();
    });
    if (dynamic && !known) result.reads.push_back(line);
  }
  std::vector<const ir::Graph*> graphs;
  for (const Traced& traced : traces) graphs.push_back(&detail::ir_of(traced.graph));
  transform::FitResult fit = transform::fit_symbols(graphs, symbols.hints);
  result.graph = std::move(fit.graph);
  result.failure = std::move(fit.failure);
  result.culprits = std::move(fit.culprits);
  return result;
}

cache::SymbolAssignment JitFunction::plan_dynamic(const CallArguments& arguments, Miss& miss) {
  if (!marks_checked_) {
    cache::check_dynamic_dims(options_.dynamic_dims, arguments, name_, where_);
    marks_checked_ = true;
  }
  // Automatic dynamic: the sizes that alone changed from the closest entry
  // (OnStorm::Generalize does the same once a storm is declared).
  bool automatic = options_.automatic_dynamic ||
                   (options_.on_storm == OnStorm::Generalize && miss.compile_number > options_.recompile_limit);
  if (automatic && miss.closest) {
    for (cache::DynamicDim dim : cache::size_only_changes(miss.closest->description, miss.description)) {
      if (specialized_.count(dim)) {
        miss.explanation +=
            "; " + cache::dim_name(miss.description, dim) + " stays static (guarded on its size): " + specialized_[dim];
        continue;
      }
      if (!dynamic_.insert(dim).second) continue;
      const Shape& shape = detail::impl(arguments.arrays[static_cast<size_t>(dim.leaf)])->type.shape;
      int64_t size = shape[static_cast<size_t>(dim.dim)];
      miss.explanation += "; " + cache::dim_name(miss.description, dim) +
                          (size < 2 ? " is " + std::to_string(size) +
                                          " here: it becomes dynamic for sizes >= 2, while sizes 0 and 1 compile "
                                          "on their own (broadcasting treats them differently)"
                                    : " becomes dynamic (automatic dynamic: its size changed)");
    }
  }
  cache::SymbolAssignment symbols = symbols_for(arguments);
  for (cache::DynamicDim dim : symbols.specialized_by_size)
    if (miss.explanation.find(cache::dim_name(miss.description, dim) + " is") == std::string::npos)
      miss.explanation +=
          std::string(miss.explanation.empty() ? "" : "; ") + cache::dim_name(miss.description, dim) +
          " is dynamic but " +
          std::to_string(
              detail::impl(arguments.arrays[static_cast<size_t>(dim.leaf)])->type.shape[static_cast<size_t>(dim.dim)]) +
          " here: sizes 0 and 1 are specialized (broadcasting treats them differently)";
  return symbols;
}

void JitFunction::generalize(std::unique_lock<std::mutex>& lock, const CallArguments& arguments,
                             const cache::SymbolAssignment& symbols, FunctionRef<TraceOutcome(TraceSession&)> trace,
                             Candidate& candidate, Miss& miss) {
  std::string signature = cache::symbolic_signature(arguments, symbols);
  lock.unlock();
  Probe probed = probe(arguments, symbols, trace);
  lock.lock();
  auto names = [&](const std::vector<int>& which) {
    std::string text;
    for (size_t k = 0; k < which.size(); ++k)
      text += (k ? ", " : "") + symbol_name(which[k]) + " (" +
              cache::dim_name(miss.description, symbols.first_dim_of_symbol[static_cast<size_t>(which[k])]) + ")";
    return text;
  };
  std::string lines;
  for (const Location& line : probed.reads) lines += (lines.empty() ? "" : ", ") + location_string(line);
  std::string separator = miss.explanation.empty() ? "" : "; ";
  if (probed.graph) {
    std::vector<int> all(symbols.hints.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
    std::string text =
        "compiled for every size of " + names(all) + ": arguments " + cache::symbolic_arguments(arguments, symbols);
    if (!lines.empty())
      text += " (" + lines + " read" + (probed.reads.size() == 1 ? "s" : "") +
              " a dynamic size in C++; every number computed from it follows the symbols, so each call computes it "
              "from its own sizes)";
    miss.explanation += separator + text;
    if (miss.hint.empty()) miss.hint = "later sizes of these dimensions reuse this executable";
    candidate = Candidate{probed.graph, probed.graph->structure_hash(), {}, 0};
    candidate.lift({});
    miss.symbolic_signature = signature;
    return;
  }
  // Marked dimensions that cannot be unified with the rest of the function are the user's error.
  bool marked_culprit = false;
  for (int symbol : probed.culprits) {
    cache::DynamicDim dim = symbols.first_dim_of_symbol[static_cast<size_t>(symbol)];
    for (auto [leaf, d] : options_.dynamic_dims) marked_culprit = marked_culprit || (leaf == dim.leaf && d == dim.dim);
  }
  if (probed.trace_failed && marked_culprit) {
    lock.unlock();
    raise("jit",
          "'" + name_ + "': the dynamic dimensions " + names(probed.culprits) +
              " cannot be unified with the rest of the function: with arguments " +
              cache::symbolic_arguments(arguments, symbols) + ", " + probed.failure,
          where_,
          "a dimension that must equal a dynamic one is dynamic too: mark it in dynamic_dims (equal sizes share "
          "one symbol), or leave these dimensions static");
  }
  // Otherwise the dimensions to blame are guarded on their size: compiled
  // static, now and later (a C++ read shaped the trace, or a rule holds at
  // some sizes only).
  std::string reason = probed.failure + (lines.empty() ? "" : " (" + lines + " reads the size in C++)");
  for (int symbol : probed.culprits)
    for (size_t leaf = 0; leaf < symbols.symbol_of.size(); ++leaf)
      for (size_t d = 0; d < symbols.symbol_of[leaf].size(); ++d)
        if (symbols.symbol_of[leaf][d] == symbol) {
          cache::DynamicDim guarded{static_cast<int>(leaf), static_cast<int>(d)};
          specialized_[guarded] = reason;
          dynamic_.erase(guarded);
        }
  miss.explanation += separator + names(probed.culprits) + " compiled for this size only, and guarded on it: " + reason;
  miss.hint =
      "compute sizes with kiln operations (sum, mean, reshape with -1) instead of C++ arithmetic on shape(), or "
      "pad to a few sizes with kiln::pad_to_bucket";
  // Symbols not to blame stay dynamic: try again without the guarded ones.
  cache::SymbolAssignment rest = symbols_for(arguments);
  if (!rest.empty() && rest.hints.size() < symbols.hints.size())
    generalize(lock, arguments, rest, trace, candidate, miss);
}

}  // namespace kiln::detail
