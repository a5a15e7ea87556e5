// What a miss does (DESIGN §3.4-3.7): the explanation of what changed
// against the closest entry, the literal sites to lift, the dimensions that
// become dynamic, what a probe's outcome means, and whether this compile is a
// storm. Each is a function of its arguments alone: JitFunction takes a
// snapshot of its state under its lock and applies the decision; nothing
// here locks, traces or compiles.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cache/dynamic_dims.h"
#include "cache/dynamic_probe.h"
#include "cache/function_entries.h"

namespace kiln::cache {

struct Explanation {
  std::string text, hint;  // empty for a first compile
  std::shared_ptr<const Entry> closest;
  bool same_signature = false;  // the closest entry has this call's signature
};

/// Names what changed against the closest entry (the fewest differences,
/// this very signature preferred). `key` is the candidate graph's, for a
/// call whose entry was evicted.
Explanation explain_miss(const FunctionEntries& entries, const std::string& signature,
                         const detail::SignatureDescription& description, const ir::Graph& traced, uint64_t key);

/// The literal sites of a trace that differ from the closest entry of the
/// same structure join `sites` (lifted to runtime inputs, so their next
/// value compiles nothing). `lifting`: a site was added.
struct Lifting {
  std::vector<bool> sites;
  bool lifting = false;
};
Lifting lift_churning_literals(const Entry* closest, const ir::Graph& traced, uint64_t structure,
                               std::vector<bool> sites);

/// The dynamic dimensions of this compile: the function's, plus those whose
/// size alone changed from the closest entry (automatic dynamic, or a storm
/// under OnStorm::Generalize), less those guarded on their size for good.
struct DynamicPlan {
  std::set<LeafDim> dynamic;
  SymbolAssignment symbols;  // of this call under `dynamic`
  std::string explanation;   // to append: what became dynamic, what stays static
};
DynamicPlan plan_dynamic(const JitOptions& options, const detail::CallArguments& arguments,
                         const detail::SignatureDescription& description, const Entry* closest, int64_t compile_number,
                         const std::set<LeafDim>& dynamic, const std::map<LeafDim, std::string>& specialized,
                         const DimBounds& bounds);

/// What a probe's outcome means: the fitted graph serves the sizes it was
/// checked for; or no size near this call's could be traced for the symbols
/// to blame, which then compile for this size only and stay dynamic (a later
/// size fits again); or the traces differ in their operations (C++ read the
/// size), and the symbols to blame are guarded on their size for good; or a
/// marked dimension cannot be unified with the function (the user's error:
/// `error` holds the message). The other symbols are probed again.
struct ProbeConclusion {
  std::string explanation;    // to append
  std::string hint;           // replaces the miss's hint when it has none, or when a symbol is dropped
  std::vector<LeafDim> drop;  // out of this compile's symbols
  bool guard = false;         // and guarded on their size from now on
  std::string reason;         // why, for later explanations
  std::string error;          // non-empty: raise it
};
ProbeConclusion conclude_probe(const ProbeResult& probed, const DimBounds& marked, const std::string& function,
                               const detail::CallArguments& arguments, const detail::SignatureDescription& description,
                               const SymbolAssignment& symbols, bool explained_before);

/// Whether this compile is a storm (DESIGN §3.6), and its message.
struct StormVerdict {
  bool storm = false;
  bool report = false;               // first storm of the function, or every one unless OnStorm::Warn
  bool generalize_literals = false;  // OnStorm::Generalize: lift every literal
  std::string text;
};
StormVerdict judge_storm(const JitOptions& options, const std::string& function, int64_t compile_number,
                         bool same_signature, bool lifting, bool symbolic, bool storm_reported,
                         const std::string& explanation, const std::string& hint);

/// "2nd", "11th", "23rd".
std::string ordinal(int64_t n);

}  // namespace kiln::cache
