// What a miss does (see the header).
#include "cache/miss_policy.h"

#include <algorithm>

#include "cache/explain.h"
#include "core/array_impl.h"
#include "core/error_format.h"

namespace kiln::cache {

namespace {

// Appending rather than "s" + to_string(...): GCC 12 warns (-Wrestrict) on
// the inlined copy of the latter, wrongly.
std::string symbol_name(int symbol) { return std::string("s").append(std::to_string(symbol)); }

int64_t size_of(const detail::CallArguments& arguments, LeafDim dim) {
  return detail::impl(arguments.arrays[static_cast<size_t>(dim.leaf)])->type.shape[static_cast<size_t>(dim.dim)];
}

std::string append(const std::string& text, const std::string& more) {
  return text.empty() ? more : text + "; " + more;
}

// "s0 (arg 0 dimension 0), s1 (arg 1 dimension 1)"
std::string symbol_names(const std::vector<int>& which, const SymbolAssignment& symbols,
                         const detail::SignatureDescription& description) {
  std::string text;
  for (size_t k = 0; k < which.size(); ++k)
    text += (k ? ", " : "") + symbol_name(which[k]) + " (" +
            dim_name(description, symbols.first_dim_of_symbol[static_cast<size_t>(which[k])]) + ")";
  return text;
}

// " in 2..130" where a symbol's fit holds for some sizes only.
std::string ranges_text(const std::vector<SizeRange>& ranges) {
  std::string text;
  for (size_t i = 0; i < ranges.size(); ++i)
    if (ranges[i].bounded() || ranges[i].min > 2)
      text += std::string(text.empty() ? "" : ",") + " " + symbol_name(static_cast<int>(i)) + " in " + ranges[i].text();
  return text.empty() ? text : " (for" + text + ")";
}

}  // namespace

std::string ordinal(int64_t n) {
  const char* suffix = (n % 100 >= 11 && n % 100 <= 13) ? "th"
                       : n % 10 == 1                    ? "st"
                       : n % 10 == 2                    ? "nd"
                       : n % 10 == 3                    ? "rd"
                                                        : "th";
  return std::to_string(n) + suffix;
}

Explanation explain_miss(const FunctionEntries& entries, const std::string& signature,
                         const detail::SignatureDescription& description, const ir::Graph& traced, uint64_t key) {
  Explanation result;
  if (entries.size() == 0) return result;  // a first compile has nothing to explain
  std::vector<Difference> best;
  for (const auto& entry : entries.entries()) {
    bool same = entry->signature == signature;
    std::vector<Difference> differences =
        same ? diff_graphs(*entry->traced, traced) : diff_signatures(entry->description, description);
    bool better = !result.closest || differences.size() < best.size() ||
                  (differences.size() == best.size() && same && !result.same_signature);
    if (better) {
      best = std::move(differences);
      result.closest = entry;
      result.same_signature = same;
    }
  }
  if (best.empty()) {
    result.text = "no difference from a cached call was found";
    result.hint = "nothing about the call changed; the executable was not in this function's cache";
  } else {
    for (size_t i = 0; i < best.size() && i < 8; ++i) result.text += (i ? "; " : "") + best[i].text;
    if (best.size() > 8) result.text += "; and " + std::to_string(best.size() - 8) + " more";
    result.hint = best.front().hint;
  }
  if (entries.was_evicted(signature, key)) {
    result.text = "this call's entry was evicted (least recently used; the limit is " +
                  std::to_string(cache_limits().per_function) + " entries per function); " + result.text;
    result.hint = "raise the limit with kiln::set_cache_limits if this function needs more entries";
  }
  return result;
}

Lifting lift_churning_literals(const Entry* closest, const ir::Graph& traced, uint64_t structure,
                               std::vector<bool> sites) {
  Lifting result{std::move(sites), false};
  // Only the same structure with other numbers says which numbers churn.
  if (!closest || closest->traced->structure_hash() != structure || !closest->traced->structurally_equal(traced))
    return result;
  result.sites.resize(traced.literal_values().size(), false);
  for (size_t k : changed_literals(*closest->traced, traced)) {
    result.lifting |= !result.sites[k];
    result.sites[k] = true;
  }
  return result;
}

DynamicPlan plan_dynamic(const JitOptions& options, const detail::CallArguments& arguments,
                         const detail::SignatureDescription& description, const Entry* closest, int64_t compile_number,
                         const std::set<LeafDim>& dynamic, const std::map<LeafDim, std::string>& specialized,
                         const DimBounds& bounds) {
  DynamicPlan plan{dynamic, {}, {}};
  std::set<LeafDim> explained;
  bool automatic = options.automatic_dynamic ||
                   (options.on_storm == OnStorm::Generalize && compile_number > options.recompile_limit);
  if (automatic && closest) {
    for (LeafDim dim : size_only_changes(closest->description, description)) {
      if (auto guarded = specialized.find(dim); guarded != specialized.end()) {
        plan.explanation = append(
            plan.explanation, dim_name(description, dim) + " stays static (guarded on its size): " + guarded->second);
        continue;
      }
      if (!plan.dynamic.insert(dim).second) continue;
      int64_t size = size_of(arguments, dim);
      explained.insert(dim);
      plan.explanation = append(
          plan.explanation,
          dim_name(description, dim) +
              (size < 2 ? " is " + std::to_string(size) +
                              " here: it becomes dynamic for sizes >= 2, while sizes 0 and 1 compile on their own "
                              "(broadcasting treats them differently)"
                        : " becomes dynamic (automatic dynamic: its size changed)"));
    }
  }
  plan.symbols = assign_symbols(arguments, plan.dynamic, bounds);
  for (const StaticHere& here : plan.symbols.static_here)
    if (!explained.count(here.dim))
      plan.explanation =
          append(plan.explanation, dim_name(description, here.dim) + " is dynamic but " +
                                       std::to_string(size_of(arguments, here.dim)) + " here: " + here.why);
  return plan;
}

ProbeConclusion conclude_probe(const ProbeResult& probed, const DimBounds& marked, const std::string& function,
                               const detail::CallArguments& arguments, const detail::SignatureDescription& description,
                               const SymbolAssignment& symbols, bool explained_before) {
  ProbeConclusion conclusion;
  std::string lines;
  for (const Location& line : probed.reads) lines += (lines.empty() ? "" : ", ") + detail::location_string(line);
  std::string separator = explained_before ? "; " : "";
  if (probed.graph) {
    std::vector<int> all(symbols.hints.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
    conclusion.explanation = separator + "compiled for every size of " + symbol_names(all, symbols, description) +
                             ranges_text(probed.ranges) + ": arguments " +
                             symbolic_arguments(arguments, symbols, description);
    if (!lines.empty())
      conclusion.explanation +=
          " (" + lines + " read" + (probed.reads.size() == 1 ? "s" : "") +
          " a dynamic size in C++; every number computed from it follows the symbols, so each call computes it "
          "from its own sizes)";
    conclusion.hint = "later sizes of these dimensions reuse this executable";
    return conclusion;
  }
  std::string culprits = symbol_names(probed.culprits, symbols, description);
  for (int symbol : probed.culprits)
    for (size_t leaf = 0; leaf < symbols.symbol_of.size(); ++leaf)
      for (size_t d = 0; d < symbols.symbol_of[leaf].size(); ++d)
        if (symbols.symbol_of[leaf][d] == symbol)
          conclusion.drop.push_back({static_cast<int>(leaf), static_cast<int>(d)});
  bool marked_culprit =
      std::any_of(conclusion.drop.begin(), conclusion.drop.end(), [&](LeafDim dim) { return marked.count(dim) > 0; });
  if (probed.trace_failed && marked_culprit && !probed.no_room) {
    // Marked dimensions that cannot be unified with the rest of the function are the user's error.
    conclusion.error = "'" + function + "': the dynamic dimensions " + culprits +
                       " cannot be unified with the rest of the function: with arguments " +
                       symbolic_arguments(arguments, symbols, description) + ", " + probed.failure;
    conclusion.hint =
        "a dimension that must equal a dynamic one is dynamic too: mark it in dynamic_dims (equal sizes share one "
        "symbol), bound it to where the function is valid ({leaf, dim, min, max}), or leave these dimensions static";
    return conclusion;
  }
  conclusion.reason = probed.failure + (lines.empty() ? "" : " (" + lines + " reads the size in C++)");
  if (probed.trace_failed) {
    // No size near this one could be traced: this size compiles on its own,
    // and a later size fits again where the function is valid.
    conclusion.explanation =
        separator + culprits + " compiled for this size only (later sizes fit again): " + conclusion.reason;
    conclusion.hint = "bound the dimension to the sizes the function is valid for (dynamic_dims {leaf, dim, min, max})";
    return conclusion;
  }
  // The traces differ in their operations (a C++ read shaped the trace): the
  // dimensions to blame are guarded on their size, now and later.
  conclusion.guard = true;
  conclusion.explanation =
      separator + culprits + " compiled for this size only, and guarded on it: " + conclusion.reason;
  conclusion.hint =
      "compute sizes with kiln operations (sum, mean, reshape with -1) instead of C++ arithmetic on shape(), or pad "
      "to a few sizes with kiln::pad_to_bucket";
  return conclusion;
}

StormVerdict judge_storm(const JitOptions& options, const std::string& function, int64_t compile_number,
                         bool same_signature, bool lifting, bool symbolic, bool storm_reported,
                         const std::string& explanation, const std::string& hint) {
  StormVerdict verdict;
  bool over_limit = compile_number > options.recompile_limit;
  // The same signature compiling again is a storm unless lifting just cured it.
  bool same_signature_again = same_signature && !lifting;
  verdict.storm = same_signature_again || over_limit;
  if (!verdict.storm) return verdict;
  verdict.generalize_literals = options.on_storm == OnStorm::Generalize && !symbolic;
  verdict.text = "recompilation storm in '" + function + "': " + ordinal(compile_number) + " compile" +
                 (over_limit ? " (recompile_limit is " + std::to_string(options.recompile_limit) + ")" : "") +
                 (same_signature_again ? " with the same argument signature as a cached entry" : "") + ": " +
                 explanation + "\n  hint: " + hint;
  verdict.report = !storm_reported || options.on_storm != OnStorm::Warn;
  return verdict;
}

}  // namespace kiln::cache
