// The per-function cache (see the header). Lookups and bookkeeping happen
// under the function's mutex; tracing, compiling and running do not.
#include "cache/jit_function.h"

#include <algorithm>
#include <atomic>
#include <chrono>

#include "backend/llvm/kernel_cache.h"
#include "cache/explain.h"
#include "cache/graph_cache.h"
#include "cache/rank_agreement.h"
#include "core/error_format.h"
#include "telemetry/telemetry.h"
#include "trace/trace.h"

namespace kiln {

namespace {
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Process-wide totals; atomics keep the hit path free of a shared lock.
struct GlobalStats {
  std::atomic<int64_t> calls{0}, hits{0}, misses{0}, traces{0}, compiles{0}, persistent_hits{0};
  std::atomic<double> compile_seconds{0}, trace_seconds{0}, load_seconds{0}, saved_compile_seconds{0};
};

struct GlobalState {
  std::mutex mutex;
  GlobalStats stats;
  CacheLimits limits;
};

GlobalState& global() {
  static GlobalState state;
  return state;
}

void add_global(const CacheStats& delta) {
  GlobalStats& g = global().stats;
  constexpr auto relaxed = std::memory_order_relaxed;
  if (delta.calls) g.calls.fetch_add(delta.calls, relaxed);
  if (delta.hits) g.hits.fetch_add(delta.hits, relaxed);
  if (delta.misses) g.misses.fetch_add(delta.misses, relaxed);
  if (delta.traces) g.traces.fetch_add(delta.traces, relaxed);
  if (delta.compiles) g.compiles.fetch_add(delta.compiles, relaxed);
  if (delta.persistent_hits) g.persistent_hits.fetch_add(delta.persistent_hits, relaxed);
  if (delta.compile_seconds != 0) g.compile_seconds.fetch_add(delta.compile_seconds, relaxed);
  if (delta.trace_seconds != 0) g.trace_seconds.fetch_add(delta.trace_seconds, relaxed);
  if (delta.load_seconds != 0) g.load_seconds.fetch_add(delta.load_seconds, relaxed);
  if (delta.saved_compile_seconds != 0) g.saved_compile_seconds.fetch_add(delta.saved_compile_seconds, relaxed);
}

std::string ordinal(int64_t n) {
  const char* suffix = (n % 100 >= 11 && n % 100 <= 13) ? "th"
                       : n % 10 == 1                    ? "st"
                       : n % 10 == 2                    ? "nd"
                       : n % 10 == 3                    ? "rd"
                                                        : "th";
  return std::to_string(n) + suffix;
}

constexpr size_t evicted_memory = 4096;
}  // namespace

void set_cache_limits(CacheLimits limits) {
  {
    std::lock_guard lock(global().mutex);
    global().limits = limits;
  }
  cache::set_graph_cache_limit(limits.graphs);
  llvm_backend::set_kernel_cache_limit(limits.kernels);
}

CacheLimits cache_limits() {
  std::lock_guard lock(global().mutex);
  return global().limits;
}

CacheStats global_cache_stats() {
  const GlobalStats& g = global().stats;
  return CacheStats{g.calls.load(),           g.hits.load(),
                    g.misses.load(),          g.traces.load(),
                    g.compiles.load(),        g.persistent_hits.load(),
                    g.compile_seconds.load(), g.trace_seconds.load(),
                    g.load_seconds.load(),    g.saved_compile_seconds.load()};
}

void clear_graph_cache() {
  cache::set_graph_cache_limit(0);
  cache::set_graph_cache_limit(cache_limits().graphs);
}

namespace detail {

JitFunction::JitFunction(JitOptions options, bool stateful, Location where)
    : options_(std::move(options)), stateful_(stateful), where_(where) {
  name_ = options_.name.empty() ? location_string(where) : options_.name;
  for (auto [leaf, dim] : options_.dynamic_dims) dynamic_.insert({leaf, dim});
  // Options kiln does not implement yet are refused rather than ignored.
  if (options_.device != "cpu")
    raise("jit", "'" + name_ + "' asks for device '" + options_.device + "'; only \"cpu\" is available", where,
          "leave JitOptions::device at its default");
}

bool JitFunction::signature_mode() const {
  return options_.captures == Captures::Constant || (options_.captures == Captures::Auto && !stateful_);
}

JitFunction::Traced JitFunction::run_trace(FunctionRef<TraceOutcome(TraceSession&)> trace,
                                           const std::vector<Shape>* shapes,
                                           std::vector<std::pair<Shape, Location>>* reads) {
  auto start = Clock::now();
  TraceSession session(name_, where_);
  if (shapes) session.trace_at_shapes(*shapes);
  TraceOutcome outcome = trace(session);
  Traced traced{session.finish(outcome.outputs), session.captured(), std::move(outcome.skeleton)};
  if (reads) *reads = session.shape_reads();
  double seconds = seconds_since(start);
  {
    std::lock_guard lock(mutex_);
    stats_.traces += 1;
    stats_.trace_seconds += seconds;
  }
  add_global(CacheStats{.traces = 1, .trace_seconds = seconds});
  if (telemetry::wanted(telemetry::EventKind::trace))
    telemetry::emit(
        {telemetry::EventKind::trace, name_, telemetry::digest(traced.graph.structure_hash()), seconds, ""});
  return traced;
}

void JitFunction::report_signature_hit(const Entry& entry) const {
  add_global(CacheStats{.hits = 1});
  if (telemetry::wanted(telemetry::EventKind::cache_hit))
    telemetry::emit({telemetry::EventKind::cache_hit, name_, telemetry::digest(entry.executable_key), 0, "signature"});
}

std::vector<Array> JitFunction::run(const Entry& entry, const CallArguments& arguments,
                                    const std::vector<Array>* captures, const std::vector<Array>* lifted,
                                    bool signature_hit) const {
  const std::vector<Array>& bound_captures = captures ? *captures : entry.captures;
  const std::vector<Array>& bound_lifted = lifted ? *lifted : entry.lifted_inputs;
  bool timed = telemetry::wanted(telemetry::EventKind::execute);
  auto start = timed ? Clock::now() : Clock::time_point{};
  std::vector<Array> outputs;
  if (bound_lifted.empty()) {
    outputs = entry.executable->run(arguments.arrays, bound_captures, arguments.donated);
  } else {
    std::vector<Array> implicit = bound_captures;
    implicit.insert(implicit.end(), bound_lifted.begin(), bound_lifted.end());
    outputs = entry.executable->run(arguments.arrays, implicit, arguments.donated);
  }
  if (signature_hit) report_signature_hit(entry);
  if (timed)
    telemetry::emit(
        {telemetry::EventKind::execute, name_, telemetry::digest(entry.executable_key), seconds_since(start), ""});
  return outputs;
}

CallResult JitFunction::call(CallArguments& arguments, FunctionRef<TraceOutcome(TraceSession&)> trace,
                             FunctionRef<SignatureDescription()> describe) {
  add_global(CacheStats{.calls = 1});
  if (signature_mode()) {
    std::shared_ptr<Entry> entry;
    bool verify = false;
    {
      std::lock_guard lock(mutex_);
      stats_.calls += 1;
      auto found = by_signature_.find(arguments.signature);
      if (found != by_signature_.end()) entry = found->second;
      else if (!dynamic_.empty()) entry = find_symbolic(arguments);
      if (entry) {
        stats_.hits += 1;
        touch(entry);
        entry->hits += 1;
        verify = options_.captures == Captures::Constant && options_.verify_every > 0 &&
                 entry->hits % options_.verify_every == 0;
      }
    }
    if (entry && !verify) {
      try {
        return {run(*entry, arguments, nullptr, nullptr, true), entry->skeleton};
      } catch (const runtime::SizesDoNotFit&) {
        // A symbolic entry whose shape rules fail at these sizes: this call
        // is traced afresh below, a miss like any other.
        std::lock_guard lock(mutex_);
        stats_.hits -= 1;
        entry = nullptr;
      }
    }
    if (entry) {
      report_signature_hit(*entry);
      Traced fresh = run_trace(trace);
      verify_frozen(*entry, fresh);
      Admitted updated = admit(arguments, std::move(fresh), trace, describe);
      return {run(*updated.entry, arguments, nullptr, &updated.lifted_inputs), updated.entry->skeleton};
    }
  } else {
    std::lock_guard lock(mutex_);
    stats_.calls += 1;
  }

  auto start = Clock::now();
  Traced traced = run_trace(trace);
  double trace_seconds = seconds_since(start);
  std::vector<Array> captures = traced.captures;
  // A re-traced call binds what this trace captured and the numbers it saw,
  // not what the entry froze.
  Admitted admitted = admit(arguments, std::move(traced), trace, describe);
  CallResult result{run(*admitted.entry, arguments, &captures, &admitted.lifted_inputs), admitted.entry->skeleton};
  if (!signature_mode()) note_call_time(seconds_since(start), trace_seconds);
  return result;
}

std::shared_ptr<Entry> JitFunction::find_by_graph(uint64_t key, const ir::Graph& graph) const {
  auto [begin, end] = by_graph_.equal_range(key);
  for (auto it = begin; it != end; ++it)
    if (it->second->lifted.graph->structurally_equal(graph) && it->second->lifted.graph->same_literals(graph))
      return it->second;
  return nullptr;
}

void JitFunction::touch(const std::shared_ptr<Entry>& entry) {
  if (!entries_.empty() && entries_.front() == entry) return;  // the steady state of a hot loop
  auto position = std::find(entries_.begin(), entries_.end(), entry);
  if (position != entries_.end()) entries_.splice(entries_.begin(), entries_, position);
}

void JitFunction::insert(const std::shared_ptr<Entry>& entry, bool by_signature) {
  entries_.push_front(entry);
  by_graph_.emplace(entry->executable_key, entry);
  if (entry->symbolic) by_symbolic_[entry->signature] = entry;
  else if (by_signature) by_signature_[entry->signature] = entry;
  size_t limit = std::max<size_t>(1, cache_limits().per_function);
  while (entries_.size() > limit) {
    std::shared_ptr<Entry> oldest = entries_.back();
    entries_.pop_back();
    std::erase_if(by_signature_, [&](const auto& item) { return item.second == oldest; });
    std::erase_if(by_symbolic_, [&](const auto& item) { return item.second == oldest; });
    for (auto it = by_graph_.begin(); it != by_graph_.end();)
      it = it->second == oldest ? by_graph_.erase(it) : std::next(it);
    for (std::string remembered : {oldest->signature, std::to_string(oldest->executable_key)}) {
      if (evicted_.insert(remembered).second) evicted_order_.push_back(remembered);
    }
    while (evicted_order_.size() > evicted_memory) {
      evicted_.erase(evicted_order_.front());
      evicted_order_.pop_front();
    }
  }
}

std::string JitFunction::explain(const CallArguments& arguments, const SignatureDescription& description,
                                 const ir::Graph& graph, std::string& hint, bool& same_signature,
                                 const Entry*& closest) const {
  std::vector<cache::Difference> best;
  closest = nullptr;
  for (const auto& entry : entries_) {
    std::vector<cache::Difference> differences = entry->signature == arguments.signature
                                                     ? cache::diff_graphs(*entry->traced, graph)
                                                     : cache::diff_signatures(entry->description, description);
    // Prefer fewer differences, then an entry with this very signature.
    bool better = !closest || differences.size() < best.size() ||
                  (differences.size() == best.size() && entry->signature == arguments.signature &&
                   closest->signature != arguments.signature);
    if (better) {
      best = std::move(differences);
      closest = entry.get();
    }
  }
  same_signature = closest && closest->signature == arguments.signature;
  if (best.empty()) {
    hint = "nothing about the call changed; the executable was not in this function's cache";
    return "no difference from a cached call was found";
  }
  std::string text;
  for (size_t i = 0; i < best.size() && i < 8; ++i) text += (i ? "; " : "") + best[i].text;
  if (best.size() > 8) text += "; and " + std::to_string(best.size() - 8) + " more";
  hint = best.front().hint;
  return text;
}

void JitFunction::Candidate::lift(const std::vector<bool>& sites) {
  bool any = std::any_of(sites.begin(), sites.end(), [](bool b) { return b; });
  lifted = any ? transform::lift_literals(*traced, sites) : transform::LiftedGraph{traced, {}, {}};
  // The traced graph's structure hash is already known; a lifted graph needs its own.
  key = lifted.graph == traced ? cache::graph_key(*traced, structure) : cache::graph_key(*lifted.graph);
}

namespace {
// Arrays the function made from host data are no state it reads: a function
// whose captures are all such constants is cached by signature like a
// captureless one (its constants are in the graph's key).
bool only_constants_captured(const ir::Graph& graph) {
  for (ir::ValueId capture : graph.captures)
    if (graph.nodes[static_cast<size_t>(capture)].attrs.ints[1] != ir::constant_input) return false;
  return true;
}
}  // namespace

JitFunction::Admitted JitFunction::admit(CallArguments& arguments, Traced traced,
                                         FunctionRef<TraceOutcome(TraceSession&)> trace,
                                         FunctionRef<SignatureDescription()> describe) {
  bool by_signature = signature_mode() &&
                      (only_constants_captured(detail::ir_of(traced.graph)) || options_.captures == Captures::Constant);
  Candidate candidate{detail::shared_ir(traced.graph), detail::ir_of(traced.graph).structure_hash(), {}, 0};

  std::unique_lock lock(mutex_);
  // A re-traced call hits a symbolic entry when its trace is that entry's graph at this call's sizes.
  if (std::shared_ptr<Entry> symbolic = dynamic_.empty() ? nullptr : find_symbolic(arguments)) {
    lock.unlock();
    bool same = false;
    try {
      ir::Graph expected =
          ir::instantiate(*symbolic->traced, ir::bind_symbols(*symbolic->traced, arguments.arrays, traced.captures));
      same = expected.structurally_equal(detail::ir_of(traced.graph)) &&
             expected.same_literals(detail::ir_of(traced.graph));
    } catch (const Error&) {
    }
    lock.lock();
    if (same) {
      stats_.hits += 1;
      add_global(CacheStats{.hits = 1});
      touch(symbolic);
      auto view = std::make_shared<Entry>(*symbolic);
      view->skeleton = traced.skeleton;
      return {view, {}};
    }
  }
  candidate.lift(lifted_sites_[candidate.structure]);
  if (std::shared_ptr<Entry> known = lookup_graph(arguments, traced, candidate, by_signature, describe)) {
    lock.unlock();
    if (telemetry::wanted(telemetry::EventKind::cache_hit))
      telemetry::emit({telemetry::EventKind::cache_hit, name_, telemetry::digest(candidate.key), 0, "graph"});
    return {known, transform::lifted_inputs(candidate.lifted)};
  }
  Miss miss = explain_miss(arguments, candidate, describe);
  cache::SymbolAssignment symbols = plan_dynamic(arguments, miss);
  if (!symbols.empty()) generalize(lock, arguments, symbols, trace, candidate, miss);
  if (miss.symbolic_signature.empty()) lift_churning_literals(candidate, miss);
  check_storm(candidate, miss);
  if (!miss.explanation.empty()) last_explanation_ = miss.explanation + "\n  hint: " + miss.hint;
  lock.unlock();

  report_miss(candidate, miss);
  return compile_and_insert(arguments, std::move(traced), std::move(candidate), std::move(miss), by_signature);
}

std::shared_ptr<Entry> JitFunction::lookup_graph(const CallArguments& arguments, const Traced& traced,
                                                 const Candidate& candidate, bool by_signature,
                                                 FunctionRef<SignatureDescription()> describe) {
  std::shared_ptr<Entry> known = find_by_graph(candidate.key, *candidate.lifted.graph);
  if (!known) return nullptr;
  stats_.hits += 1;
  add_global(CacheStats{.hits = 1});
  touch(known);
  if (by_signature && !by_signature_.count(arguments.signature)) {
    // Another signature (e.g. an unused static value) traced to this graph.
    auto alias = std::make_shared<Entry>(*known);
    alias->signature = arguments.signature;
    alias->description = describe();
    alias->captures = traced.captures;
    alias->skeleton = traced.skeleton;
    by_signature_[alias->signature] = alias;
    return alias;
  }
  // Same executable; this trace's result (static outputs) is the one to rebuild.
  auto view = std::make_shared<Entry>(*known);
  view->skeleton = traced.skeleton;
  return view;
}

JitFunction::Miss JitFunction::explain_miss(const CallArguments& arguments, const Candidate& candidate,
                                            FunctionRef<SignatureDescription()> describe) {
  stats_.misses += 1;
  add_global(CacheStats{.misses = 1});
  Miss miss;
  miss.description = describe();
  miss.compile_number = stats_.misses;
  if (entries_.empty()) return miss;  // a first compile has nothing to explain
  miss.explanation =
      explain(arguments, miss.description, *candidate.traced, miss.hint, miss.same_signature, miss.closest);
  if (evicted_.count(arguments.signature) || evicted_.count(std::to_string(candidate.key))) {
    miss.explanation = "this call's entry was evicted (least recently used; the limit is " +
                       std::to_string(cache_limits().per_function) + " entries per function); " + miss.explanation;
    miss.hint = "raise the limit with kiln::set_cache_limits if this function needs more entries";
  }
  return miss;
}

void JitFunction::lift_churning_literals(Candidate& candidate, Miss& miss) {
  const ir::Graph& graph = *candidate.traced;
  // Only the same structure with other numbers says which numbers churn.
  if (!miss.closest || miss.closest->traced->structure_hash() != candidate.structure ||
      !miss.closest->traced->structurally_equal(graph))
    return;
  std::vector<size_t> changed = cache::changed_literals(*miss.closest->traced, graph);
  std::vector<bool>& sites = lifted_sites_[candidate.structure];
  sites.resize(graph.literal_values().size(), false);
  for (size_t k : changed) {
    miss.lifting |= !sites[k];
    sites[k] = true;
  }
  if (!miss.lifting) return;
  candidate.lift(sites);
  miss.explanation += " — lifted to a runtime input: further values will not compile";
}

void JitFunction::check_storm(Candidate& candidate, Miss& miss) {
  bool over_limit = miss.compile_number > options_.recompile_limit;
  // The same signature compiling again is a storm unless lifting just cured it.
  bool same_signature_again = miss.same_signature && !miss.lifting;
  miss.storm = same_signature_again || over_limit;
  if (!miss.storm) return;
  if (options_.on_storm == OnStorm::Generalize && miss.symbolic_signature.empty()) {
    std::vector<bool>& sites = lifted_sites_[candidate.structure];
    sites.assign(candidate.traced->literal_values().size(), true);
    candidate.lift(sites);
  }
  miss.storm_text = "recompilation storm in '" + name_ + "': " + ordinal(miss.compile_number) + " compile" +
                    (over_limit ? " (recompile_limit is " + std::to_string(options_.recompile_limit) + ")" : "") +
                    (same_signature_again ? " with the same argument signature as a cached entry" : "") + ": " +
                    miss.explanation + "\n  hint: " + miss.hint;
  miss.report_storm = !storm_reported_;
  if (miss.report_storm && options_.on_storm == OnStorm::Warn) storm_reported_ = true;
}

void JitFunction::report_miss(const Candidate& candidate, const Miss& miss) const {
  if (!miss.explanation.empty())
    telemetry::log(telemetry::log_recompiles, "'" + name_ + "' compiles again (" + ordinal(miss.compile_number) +
                                                  " compile): " + miss.explanation + "\n  hint: " + miss.hint);
  if (!miss.storm) return;
  if (telemetry::wanted(telemetry::EventKind::storm))
    telemetry::emit({telemetry::EventKind::storm, name_, telemetry::digest(candidate.key), 0, miss.storm_text});
  if (options_.on_storm == OnStorm::Error)
    throw StormError(format_error("jit", miss.storm_text, where_, "fix the cause above, or raise recompile_limit"));
  if (miss.report_storm) telemetry::log(telemetry::log_storms, miss.storm_text);
}

JitFunction::Admitted JitFunction::compile_and_insert(const CallArguments& arguments, Traced traced,
                                                      Candidate candidate, Miss miss, bool by_signature) {
  cache::GraphLookup lookup = cache::get_or_compile(candidate.lifted.graph, candidate.key);
  // Before its first run here: a graph with collectives must be the same on every rank.
  cache::check_ranks_agree(name_, *candidate.traced, where_);
  auto entry = std::make_shared<Entry>();
  entry->symbolic = !miss.symbolic_signature.empty();
  entry->signature = entry->symbolic ? miss.symbolic_signature : arguments.signature;
  entry->description = std::move(miss.description);
  entry->traced = candidate.traced;
  entry->lifted = std::move(candidate.lifted);
  entry->lifted_inputs = transform::lifted_inputs(entry->lifted);
  entry->executable_key = lookup.key;
  entry->executable = lookup.executable;
  entry->captures = std::move(traced.captures);
  entry->skeleton = std::move(traced.skeleton);

  {
    std::lock_guard lock(mutex_);
    if (lookup.compiled) {
      stats_.compiles += 1;
      stats_.compile_seconds += lookup.compile_seconds;
    }
    if (lookup.loaded) {
      stats_.persistent_hits += 1;
      stats_.load_seconds += lookup.load_seconds;
      stats_.saved_compile_seconds += lookup.saved_compile_seconds;
    }
    // A concurrent miss may have admitted the same graph meanwhile; keep one entry.
    if (std::shared_ptr<Entry> raced = find_by_graph(entry->executable_key, *entry->lifted.graph)) {
      if (entry->symbolic && raced->symbolic) by_symbolic_[entry->signature] = raced;
      else if (by_signature && !entry->symbolic) by_signature_[arguments.signature] = raced;
    } else {
      insert(entry, by_signature);
    }
  }
  if (lookup.loaded) {
    add_global(CacheStats{.persistent_hits = 1,
                          .load_seconds = lookup.load_seconds,
                          .saved_compile_seconds = lookup.saved_compile_seconds});
    if (telemetry::wanted(telemetry::EventKind::persistent_hit))
      telemetry::emit({telemetry::EventKind::persistent_hit, name_, telemetry::digest(lookup.key), lookup.load_seconds,
                       "loaded from the persistent cache"});
  }
  if (!lookup.compiled) return {entry, entry->lifted_inputs};

  add_global(CacheStats{.compiles = 1, .compile_seconds = lookup.compile_seconds});
  std::string reason = miss.explanation.empty() ? "first call" : miss.explanation;
  telemetry::log(telemetry::log_compiles, "compiled '" + name_ + "' (" + std::to_string(entry->traced->nodes.size()) +
                                              " nodes, key " + telemetry::digest(lookup.key) + ") in " +
                                              std::to_string(lookup.compile_seconds * 1e3) + " ms: " + reason);
  if (telemetry::wanted(telemetry::EventKind::compile))
    telemetry::emit(
        {telemetry::EventKind::compile, name_, telemetry::digest(lookup.key), lookup.compile_seconds, reason});
  return {entry, entry->lifted_inputs};
}

void JitFunction::verify_frozen(const Entry& entry, const Traced& fresh) {
  std::vector<cache::Difference> differences = cache::diff_graphs(*entry.traced, detail::ir_of(fresh.graph));
  const ir::Graph& graph = detail::ir_of(fresh.graph);
  for (size_t k = 0; k < entry.captures.size() && k < fresh.captures.size(); ++k)
    if (detail::impl(entry.captures[k]) != detail::impl(fresh.captures[k]))
      differences.push_back({"the array captured at " +
                                 location_string(graph.nodes[static_cast<size_t>(graph.captures[k])].where) +
                                 " is no longer the one frozen at trace time",
                             ""});
  if (differences.empty()) return;
  std::string text = "stale capture in '" + name_ + "' (Captures::Constant): ";
  for (size_t i = 0; i < differences.size(); ++i) text += (i ? "; " : "") + differences[i].text;
  text += "\n  hint: calls between verifications used the frozen values; use Captures::Auto to re-trace every call";
  {
    std::lock_guard lock(mutex_);
    last_explanation_ = text;
  }
  telemetry::log(telemetry::log_storms | telemetry::log_recompiles, text);
  if (telemetry::wanted(telemetry::EventKind::storm))
    telemetry::emit({telemetry::EventKind::storm, name_, telemetry::digest(entry.executable_key), 0, text});
  std::lock_guard lock(mutex_);
  // The fresh trace replaces the stale entry for this signature.
  by_signature_.erase(entry.signature);
}

namespace {
std::atomic<double> retrace_share_to_report{0.25};
}  // namespace

void set_retrace_report_share(double share) { retrace_share_to_report.store(share); }

void JitFunction::note_call_time(double call_seconds, double trace_seconds) {
  constexpr int64_t calls_before_judging = 20;
  double noticeable_share = retrace_share_to_report.load(std::memory_order_relaxed);
  std::string text;
  {
    std::lock_guard lock(mutex_);
    if (retrace_cost_reported_) return;
    timed_calls_ += 1;
    timed_call_seconds_ += call_seconds;
    timed_trace_seconds_ += trace_seconds;
    if (timed_calls_ < calls_before_judging) return;
    double share = timed_trace_seconds_ / timed_call_seconds_;
    if (share < noticeable_share) return;
    retrace_cost_reported_ = true;
    char numbers[160];
    std::snprintf(numbers, sizeof numbers, "%.0f%% of its call time (%.1f us of %.1f us per call)", share * 100,
                  timed_trace_seconds_ / static_cast<double>(timed_calls_) * 1e6,
                  timed_call_seconds_ / static_cast<double>(timed_calls_) * 1e6);
    text = "'" + name_ + "' is re-traced on every call because it captures state; tracing takes " + numbers +
           ". Pass the captured arrays as arguments to make it captureless, or use "
           "JitOptions{.captures = kiln::Captures::Constant} if the captures never change";
  }
  telemetry::log(telemetry::log_recompiles | telemetry::log_cache, text);
}

Graph JitFunction::lower(CallArguments& arguments, FunctionRef<TraceOutcome(TraceSession&)> trace) {
  // With marked dynamic dimensions, the graph a call compiles: in symbols.
  if (!options_.dynamic_dims.empty()) {
    cache::check_dynamic_dims(options_.dynamic_dims, arguments, name_, where_);
    std::set<cache::DynamicDim> marked;
    for (auto [leaf, dim] : options_.dynamic_dims) marked.insert({leaf, dim});
    cache::SymbolAssignment symbols = cache::assign_symbols(arguments, marked);
    if (!symbols.empty())
      if (Probe probed = probe(arguments, symbols, trace); probed.graph) return detail::wrap(probed.graph);
  }
  TraceSession session(name_, where_);
  TraceOutcome outcome = trace(session);
  return session.finish(outcome.outputs);
}

CacheStats JitFunction::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

size_t JitFunction::cache_size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

std::string JitFunction::last_miss_explanation() const {
  std::lock_guard lock(mutex_);
  return last_explanation_;
}

// ---- JitCore: the handle the public template holds ------------------------------

JitCore::JitCore(JitOptions options, bool stateful, Location where)
    : function_(std::make_unique<JitFunction>(std::move(options), stateful, where)) {}
JitCore::~JitCore() = default;
CallResult JitCore::call(CallArguments& arguments, FunctionRef<TraceOutcome(TraceSession&)> trace,
                         FunctionRef<SignatureDescription()> describe) {
  return function_->call(arguments, trace, describe);
}
Graph JitCore::lower(CallArguments& arguments, FunctionRef<TraceOutcome(TraceSession&)> trace) {
  return function_->lower(arguments, trace);
}
CacheStats JitCore::stats() const { return function_->stats(); }
size_t JitCore::cache_size() const { return function_->cache_size(); }
std::string JitCore::last_miss_explanation() const { return function_->last_miss_explanation(); }
const std::string& JitCore::name() const { return function_->name(); }

}  // namespace detail
}  // namespace kiln
