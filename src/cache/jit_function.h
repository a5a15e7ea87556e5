// The per-function cache of a jitted object (DESIGN §3), in parts a reader
// can hold one at a time:
//   cache/function_entries.h  the entries and their lookup
//   cache/miss_policy.h       what a miss does: explain, lift, generalize, storm
//   cache/dynamic_probe.h     traces at other sizes, fitted to symbols
//   this file                 the steps of a call, in order, and their locking
//                             (jit_function.cpp; a dynamic compile's: jit_generalize.cpp;
//                             what it reports: jit_reports.cpp)
//
// Locking, stated once: `mutex_` guards every member below it. Tracing,
// probing, compiling and running happen with it released; each step of a
// call either holds it from start to end or does not take it at all. A miss
// registers a pending entry before it compiles; a concurrent call that the
// pending entry will serve (the same signature, graph or symbolic signature)
// waits on `settled_` for it and then looks again, so N threads compile what
// one thread would.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cache/compile_trace.h"
#include "cache/function_entries.h"
#include "cache/graph_cache.h"
#include "cache/miss_policy.h"
#include "kiln/jit.h"

namespace kiln::detail {

class JitFunction {
 public:
  using Trace = FunctionRef<TraceOutcome(TraceSession&)>;
  using Describe = FunctionRef<SignatureDescription()>;

  JitFunction(JitOptions options, bool stateful, Location where);
  ~JitFunction();
  JitFunction(const JitFunction&) = delete;
  JitFunction& operator=(const JitFunction&) = delete;

  CallResult call(CallArguments& arguments, Trace trace, Describe describe, Replay* replay = nullptr);
  CallResult replay(const Replay& replay, CallArguments& arguments, const std::vector<Array>& captures);
  Graph lower(CallArguments& arguments, Trace trace);

  CacheStats stats() const;
  size_t cache_size() const;
  std::string last_miss_explanation() const;
  const std::string& name() const { return name_; }

 private:
  struct Traced {
    Graph graph;
    std::vector<Array> captures;
    std::shared_ptr<const void> skeleton;
  };
  /// The entry a call runs, with what this call binds.
  struct Admitted {
    std::shared_ptr<const cache::Entry> entry;
    std::shared_ptr<const void> skeleton;
    std::vector<Array> lifted_inputs;  // this trace's values of the lifted literals
  };
  /// A fresh trace and the graph it compiles to once its lifted literal sites are runtime inputs.
  struct Candidate {
    std::shared_ptr<const ir::Graph> traced;
    uint64_t structure = 0;  // the traced graph's structure hash
    transform::LiftedGraph lifted;
    uint64_t key = 0;  // of `lifted` in the graph cache
    void lift(const std::vector<bool>& sites);
  };
  /// What one miss decided, and the pending entry that concurrent calls it will serve wait for.
  struct Miss {
    SignatureDescription description;
    cache::Explanation explained;
    std::string explanation, hint;  // grow as the miss is decided
    int64_t compile_number = 0;
    cache::SymbolAssignment symbols;       // to probe; empty for a static compile
    bool symbolic = false;                 // the candidate is the fitted symbolic graph
    std::string signature;                 // of the entry to make (symbolic or not)
    std::vector<cache::SizeRange> ranges;  // the symbolic graph's, per symbol
    std::shared_ptr<cache::Entry> pending;
    cache::StormVerdict storm;
  };
  class PendingGuard;

  // Steps of a call. "Locked": holds mutex_ throughout; "unlocked": never holds it.
  /// Locked. The ready entry for this signature (or its symbols), waiting out pending ones.
  std::shared_ptr<cache::Entry> find_by_signature(std::unique_lock<std::mutex>& lock, const CallArguments& arguments);
  /// Unlocked (locks for the counters). With `shapes`: traced at those argument shapes.
  Traced run_trace(Trace trace, const std::vector<Shape>* shapes = nullptr,
                   std::vector<std::pair<Shape, Location>>* reads = nullptr);
  /// Finds, waits for, or compiles the executable for a fresh trace.
  Admitted admit(CallArguments& arguments, Traced traced, Trace trace, Describe describe);
  /// Unlocked. Whether a symbolic entry's graph at this call's sizes is this trace.
  static bool serves(const cache::Entry& symbolic, const CallArguments& arguments, const Traced& traced);
  /// Locks for its own steps. The symbolic entry a re-traced call hits: its
  /// graph at this call's sizes is the trace.
  std::shared_ptr<cache::Entry> symbolic_serving(const CallArguments& arguments, const Traced& traced);
  /// Locked. Explains the miss, plans its dynamic dimensions, and registers its pending entry.
  Miss decide_miss(const CallArguments& arguments, const Candidate& candidate, Describe describe, bool by_signature);
  /// Unlocked (locks to apply each probe's conclusion). Probes until the
  /// candidate is symbolic or no dynamic dimension is left.
  void generalize(const CallArguments& arguments, Trace trace, Candidate& candidate, Miss& miss);
  /// Locked. Lifts churning literals of a static candidate and judges the storm.
  void finish_decision(Candidate& candidate, Miss& miss);
  /// Unlocked: logs the explanation and the storm, or throws StormError.
  void report_miss(const Candidate& candidate, const Miss& miss) const;
  void report_compile(const cache::GraphLookup& lookup, const cache::Entry& entry, const Miss& miss) const;
  /// Why this call compiled, in the words logs and traces give.
  std::string compile_reason(const cache::GraphLookup& lookup, const Miss& miss) const;
  /// Writes a compile (or a persistent hit) and its graph to the structured trace.
  void trace_compile(const cache::GraphLookup& lookup, const cache::Entry& entry, const Miss& miss) const;
  /// Writes the entries a new one pushed out to the structured trace.
  void report_evicted(const std::vector<std::shared_ptr<cache::Entry>>& evicted) const;
  /// Reports a background compile's end, and counts its time, when it comes.
  void await_optimized(const cache::GraphLookup& lookup, const cache::Entry& entry) const;
  /// Unlocked (locks for the bookkeeping): compiles, or finds in the graph
  /// cache, the candidate's executable and settles the pending entry.
  Admitted compile(const CallArguments& arguments, Traced traced, Candidate candidate, Miss miss, bool by_signature);

  /// Runs an entry's executable. `hit`: the call is reported as a hit of
  /// that kind once the executable accepted it (a symbolic one may refuse:
  /// runtime::SizesDoNotFit).
  std::vector<Array> run(const cache::Entry& entry, const CallArguments& arguments, const std::vector<Array>& captures,
                         const std::vector<Array>& lifted, const char* hit = nullptr) const;
  /// run's work queued for the dispatch thread, returning pending outputs;
  /// nothing when it runs at once instead (a large borrowed NumPy input, an
  /// executable that cannot tell its outputs in advance).
  std::optional<std::vector<Array>> run_queued(const cache::Entry& entry, const CallArguments& arguments,
                                               const std::vector<Array>& captures,
                                               const std::vector<Array>& lifted) const;
  void report_hit(uint64_t key, const char* how) const;
  void verify_frozen(const cache::Entry& entry, const Traced& fresh);
  void note_call_time(double call_seconds, double trace_seconds);
  bool signature_mode() const;
  /// Locked. The symbolic entry serving this call's sizes, if any.
  std::shared_ptr<cache::Entry> find_symbolic(const CallArguments& arguments) const;
  /// Unlocked (locks for the failed sizes it reads and adds).
  cache::ProbeResult probe(const CallArguments& arguments, const cache::SymbolAssignment& symbols, Trace trace);

  const JitOptions options_;
  const bool stateful_;
  const Location where_;
  const std::string name_;
  const cache::DimBounds bounds_;   // of the marked dimensions
  const CompileMode compile_mode_;  // Background or Sync
  // JitOptions::device's backend; null: the default backend (device "cpu").
  const runtime::Backend* device_backend_;
  // What background compiles report after this call returned: they may end
  // after the function is gone, so they share these rather than hold it.
  struct BackgroundTally {
    std::atomic<int64_t> compile_nanoseconds{0};
  };
  std::shared_ptr<BackgroundTally> background_ = std::make_shared<BackgroundTally>();
  mutable std::atomic<int64_t> calls_before_optimized_{0};
  // Hits and traces while a structured trace runs (cache/compile_trace.h).
  const std::shared_ptr<cache::TracedCalls> traced_calls_;

  mutable std::mutex mutex_;
  std::condition_variable settled_;  // a pending entry settled
  cache::FunctionEntries entries_;
  std::set<cache::LeafDim> dynamic_;                   // marked and automatic
  std::map<cache::LeafDim, std::string> specialized_;  // out of dynamic_ for good, and why
  bool marks_checked_ = false;
  std::map<uint64_t, std::vector<bool>> lifted_sites_;  // traced structure -> lifted literal ordinals
  // Symbolic signature -> sizes where a probe's trace failed: they bound later fits.
  std::map<std::string, std::vector<std::vector<int64_t>>> failed_sizes_;
  CacheStats stats_;
  std::string last_explanation_;
  bool storm_reported_ = false;
  // What re-tracing a stateful function costs, reported once when it dominates.
  struct RetraceCost {
    int64_t calls = 0;
    double call_seconds = 0, trace_seconds = 0;
    bool reported = false;
  } retrace_;
};

}  // namespace kiln::detail
