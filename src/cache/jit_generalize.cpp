// The steps of a dynamic compile: probing the function at other sizes and
// turning what the probe found into a symbolic candidate, or into the
// symbols this call compiles without (see jit_function.h for the locking).
#include <set>

#include "cache/jit_function.h"
#include "core/error_format.h"

namespace kiln::detail {

cache::ProbeResult JitFunction::probe(const CallArguments& arguments, const cache::SymbolAssignment& symbols,
                                      Trace trace) {
  auto trace_at = [&](const std::vector<Shape>& shapes) {
    cache::ProbeTrace probe;
    probe.graph = detail::shared_ir(run_trace(trace, &shapes, &probe.reads).graph);
    return probe;
  };
  std::string signature = cache::symbolic_signature(arguments, symbols);
  std::vector<std::vector<int64_t>> failed;
  {
    std::lock_guard lock(mutex_);
    failed = failed_sizes_[signature];
  }
  cache::ProbeResult probed = cache::probe(arguments, symbols, failed, trace_at);
  std::lock_guard lock(mutex_);
  std::vector<std::vector<int64_t>>& known = failed_sizes_[signature];
  known.insert(known.end(), probed.failures.begin(), probed.failures.end());
  return probed;
}

void JitFunction::generalize(const CallArguments& arguments, Trace trace, Candidate& candidate, Miss& miss) {
  cache::SymbolAssignment symbols = miss.symbols;
  std::set<cache::LeafDim> dropped;  // symbols no more for this call
  while (!symbols.empty()) {
    cache::ProbeResult probed = probe(arguments, symbols, trace);
    cache::ProbeConclusion conclusion =
        cache::conclude_probe(probed, bounds_, name_, arguments, miss.description, symbols, !miss.explanation.empty());
    if (!conclusion.error.empty()) raise("jit", conclusion.error, where_, conclusion.hint);
    miss.explanation += conclusion.explanation;
    if (probed.graph) {
      if (miss.hint.empty()) miss.hint = conclusion.hint;
      candidate = Candidate{probed.graph, probed.graph->structure_hash(), {}, 0};
      candidate.lift({});
      miss.symbolic = true;
      miss.signature = cache::symbolic_signature(arguments, symbols);
      miss.ranges = std::move(probed.ranges);
      return;
    }
    miss.hint = conclusion.hint;
    dropped.insert(conclusion.drop.begin(), conclusion.drop.end());
    std::lock_guard lock(mutex_);
    for (cache::LeafDim dim : conclusion.drop)
      if (conclusion.guard) {
        specialized_[dim] = conclusion.reason;
        dynamic_.erase(dim);
      }
    // Symbols not to blame stay dynamic: probe again without the dropped ones.
    std::set<cache::LeafDim> rest = dynamic_;
    for (cache::LeafDim dim : dropped) rest.erase(dim);
    cache::SymbolAssignment fewer = cache::assign_symbols(arguments, rest, bounds_);
    symbols = fewer.hints.size() < symbols.hints.size() ? std::move(fewer) : cache::SymbolAssignment{};
  }
}

}  // namespace kiln::detail
