// The per-function cache of a jitted object: signature entries over the
// process-wide graph cache, literal lifting, miss explanations, storm
// detection, statistics. See DESIGN §3 for the semantics.
#pragma once

#include <deque>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cache/dynamic_dims.h"
#include "kiln/jit.h"
#include "runtime/executable.h"
#include "transform/literal_lifting.h"

namespace kiln::detail {

/// The share of call time spent re-tracing above which a stateful function
/// is reported once (default 0.25). Tests lower it to make the report certain.
void set_retrace_report_share(double share);

struct Entry {
  std::string signature;
  SignatureDescription description;
  std::shared_ptr<const ir::Graph> traced;  // as traced: literal values and source lines
  transform::LiftedGraph lifted;            // what was compiled
  std::vector<Array> lifted_inputs;         // the lifted literals' values at trace time
  uint64_t executable_key = 0;
  std::shared_ptr<const runtime::Executable> executable;
  std::vector<Array> captures;  // as traced; bound on signature hits (Constant freezes them)
  std::shared_ptr<const void> skeleton;
  int64_t hits = 0;
  bool symbolic = false;  // `signature` holds symbols: the entry serves every size of them
};

class JitFunction {
 public:
  JitFunction(JitOptions options, bool stateful, Location where);

  CallResult call(CallArguments& arguments, FunctionRef<TraceOutcome(TraceSession&)> trace,
                  FunctionRef<SignatureDescription()> describe);
  Graph lower(CallArguments& arguments, FunctionRef<TraceOutcome(TraceSession&)> trace);

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
  /// With `shapes`: traced at those argument shapes, its C++ shape reads kept in `reads`.
  Traced run_trace(FunctionRef<TraceOutcome(TraceSession&)> trace, const std::vector<Shape>* shapes = nullptr,
                   std::vector<std::pair<Shape, Location>>* reads = nullptr);
  struct Admitted {
    std::shared_ptr<Entry> entry;
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
  /// What a miss found out before compiling: the explanation and the storm verdict.
  struct Miss {
    SignatureDescription description;
    std::string explanation, hint;
    int64_t compile_number = 0;
    bool same_signature = false;     // the closest entry has this call's signature
    bool lifting = false;            // this miss lifted literal sites not lifted before
    std::string symbolic_signature;  // set when the candidate is symbolic
    const Entry* closest = nullptr;  // valid only under mutex_
    bool storm = false;
    bool report_storm = false;  // first storm of this function (or every one, unless OnStorm::Warn)
    std::string storm_text;
  };
  /// Finds or compiles the executable for a fresh trace and records the entry.
  Admitted admit(CallArguments& arguments, Traced traced, FunctionRef<TraceOutcome(TraceSession&)> trace,
                 FunctionRef<SignatureDescription()> describe);

  // Dynamic dimensions (cache/dynamic_dims.h):
  /// The symbols of this call under the function's dynamic dimensions. Under mutex_.
  cache::SymbolAssignment symbols_for(const CallArguments& arguments) const;
  /// The symbolic entry serving this call, if any. Under mutex_.
  std::shared_ptr<Entry> find_symbolic(const CallArguments& arguments) const;
  struct Probe {
    std::shared_ptr<const ir::Graph> graph;  // the fitted symbolic graph; null when the fit failed
    std::string failure;
    bool trace_failed = false;  // a trace at other sizes raised (not a fit failure)
    std::vector<int> culprits;
    std::vector<Location> reads;  // lines that read a dynamic size in C++
  };
  /// Traces at the probe sizes and fits the symbols. Outside mutex_.
  Probe probe(const CallArguments& arguments, const cache::SymbolAssignment& symbols,
              FunctionRef<TraceOutcome(TraceSession&)> trace);
  /// Decides the dimensions this miss compiles dynamic (marked ones, and
  /// automatic ones: sizes that alone changed from the closest entry). Under mutex_.
  cache::SymbolAssignment plan_dynamic(const CallArguments& arguments, Miss& miss);
  /// Probes and, when the fit holds, makes the candidate symbolic; else
  /// specializes the dimensions to blame. Takes and gives back `lock`.
  void generalize(std::unique_lock<std::mutex>& lock, const CallArguments& arguments,
                  const cache::SymbolAssignment& symbols, FunctionRef<TraceOutcome(TraceSession&)> trace,
                  Candidate& candidate, Miss& miss);
  /// With `signature_hit`, the call is reported as a hit once the executable
  /// accepted it (a symbolic one may refuse: runtime::SizesDoNotFit).
  std::vector<Array> run(const Entry& entry, const CallArguments& arguments, const std::vector<Array>* captures,
                         const std::vector<Array>* lifted, bool signature_hit = false) const;
  void report_signature_hit(const Entry& entry) const;
  void verify_frozen(const Entry& entry, const Traced& fresh);
  void note_call_time(double call_seconds, double trace_seconds);

  // Steps of admit; under mutex_ unless noted:
  /// A hit by graph, so that re-traced calls and other signatures tracing to
  /// a cached graph share its executable; null on a miss.
  std::shared_ptr<Entry> lookup_graph(const CallArguments& arguments, const Traced& traced, const Candidate& candidate,
                                      bool by_signature, FunctionRef<SignatureDescription()> describe);
  /// Names what changed against the closest entry: every compile of a known function is explained.
  Miss explain_miss(const CallArguments& arguments, const Candidate& candidate,
                    FunctionRef<SignatureDescription()> describe);
  /// Makes literals that differ from the closest entry runtime inputs, so their next value compiles nothing.
  void lift_churning_literals(Candidate& candidate, Miss& miss);
  /// Decides whether this compile is a storm, and generalizes the graph if the options ask to.
  void check_storm(Candidate& candidate, Miss& miss);
  /// Outside mutex_: logs the explanation and the storm, or throws StormError.
  void report_miss(const Candidate& candidate, const Miss& miss) const;
  /// Outside mutex_ (it locks for the bookkeeping only): compiles, or finds in
  /// the graph cache, the candidate's executable and records its entry.
  Admitted compile_and_insert(const CallArguments& arguments, Traced traced, Candidate candidate, Miss miss,
                              bool by_signature);

  // Under mutex_:
  std::shared_ptr<Entry> find_by_graph(uint64_t key, const ir::Graph& graph) const;
  void insert(const std::shared_ptr<Entry>& entry, bool by_signature);
  /// Marks an entry most recently used.
  void touch(const std::shared_ptr<Entry>& entry);
  std::string explain(const CallArguments& arguments, const SignatureDescription& description, const ir::Graph& graph,
                      std::string& hint, bool& same_signature, const Entry*& closest) const;

  bool signature_mode() const;

  JitOptions options_;
  bool stateful_;
  Location where_;
  std::string name_;

  mutable std::mutex mutex_;
  std::list<std::shared_ptr<Entry>> entries_;  // most recently used first
  std::unordered_map<std::string, std::shared_ptr<Entry>> by_signature_;
  std::unordered_map<std::string, std::shared_ptr<Entry>> by_symbolic_;  // symbolic signature -> entry
  std::set<cache::DynamicDim> dynamic_;                                  // marked and automatic
  std::map<cache::DynamicDim, std::string> specialized_;                 // out of dynamic_ for good, and why
  bool marks_checked_ = false;
  std::unordered_multimap<uint64_t, std::shared_ptr<Entry>> by_graph_;
  std::map<uint64_t, std::vector<bool>> lifted_sites_;  // traced structure -> lifted literal ordinals
  std::unordered_set<std::string> evicted_;             // signatures and graph keys that were evicted
  std::deque<std::string> evicted_order_;
  CacheStats stats_;
  std::string last_explanation_;
  bool storm_reported_ = false;
  bool retrace_cost_reported_ = false;
  int64_t timed_calls_ = 0;
  double timed_call_seconds_ = 0;
  double timed_trace_seconds_ = 0;
};

}  // namespace kiln::detail
