// What a jitted function tells its user: hits, misses, compiles and storms
// as log lines and telemetry events, its statistics and last explanation,
// the graph it lowers to, stale frozen captures and the cost of re-tracing;
// and JitCore, the handle the public template holds.
#include <cstdio>

#include "cache/backend_choice.h"
#include "cache/compile_trace.h"
#include "cache/explain.h"
#include "cache/global_stats.h"
#include "cache/graph_cache.h"
#include "cache/jit_function.h"
#include "cache/tiered_compile.h"
#include "core/array_impl.h"
#include "core/error_format.h"
#include "telemetry/telemetry.h"
#include "trace/trace.h"

namespace kiln::detail {

namespace {
std::string milliseconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f ms", seconds * 1e3);
  return text;
}
}  // namespace

void JitFunction::report_miss(const Candidate& candidate, const Miss& miss) const {
  if (!miss.explanation.empty())
    telemetry::log(telemetry::log_recompiles, "'" + name_ + "' compiles again (" + cache::ordinal(miss.compile_number) +
                                                  " compile): " + miss.explanation + "\n  hint: " + miss.hint);
  if (!miss.storm.storm) return;
  if (cache::tracing())
    cache::trace_record("storm", {{"function", name_},
                                  {"key", telemetry::digest(candidate.key)},
                                  {"compile_number", miss.compile_number},
                                  {"text", miss.storm.text},
                                  {"lines", cache::source_lines(miss.storm.text)}});
  if (telemetry::wanted(telemetry::EventKind::storm))
    telemetry::emit({telemetry::EventKind::storm, name_, telemetry::digest(candidate.key), 0, miss.storm.text});
  if (options_.on_storm == OnStorm::Error)
    throw StormError(format_error("jit", miss.storm.text, where_, "fix the cause above, or raise recompile_limit"));
  if (miss.storm.report) telemetry::log(telemetry::log_storms, miss.storm.text);
}

void JitFunction::report_hit(uint64_t key, const char* how) const {
  cache::count_global_hit();
  if (cache::tracing()) traced_calls_->hit();
  if (telemetry::wanted(telemetry::EventKind::cache_hit))
    telemetry::emit({telemetry::EventKind::cache_hit, name_, telemetry::digest(key), 0, how});
}

std::string JitFunction::compile_reason(const cache::GraphLookup& lookup, const Miss& miss) const {
  std::string reason = miss.explanation.empty() ? "first call" : miss.explanation;
  // The same graph on another device is another executable: said as such,
  // or a function moved to the GPU would seem to recompile for nothing.
  if (!lookup.held_for_device.empty())
    reason += "; for device '" + options_.device + "' (the graph cache holds this graph compiled for device '" +
              lookup.held_for_device + "': each device compiles its own code)";
  return reason;
}

void JitFunction::report_compile(const cache::GraphLookup& lookup, const cache::Entry& entry, const Miss& miss) const {
  if (cache::tracing()) trace_compile(lookup, entry, miss);
  if (lookup.loaded) {
    cache::add_global(CacheStats{.persistent_hits = 1,
                                 .load_seconds = lookup.load_seconds,
                                 .saved_compile_seconds = lookup.saved_compile_seconds});
    if (telemetry::wanted(telemetry::EventKind::persistent_hit))
      telemetry::emit({telemetry::EventKind::persistent_hit, name_, telemetry::digest(lookup.key), lookup.load_seconds,
                       "loaded from the persistent cache"});
  }
  if (!lookup.compiled) return;
  cache::add_global(CacheStats{.compiles = 1, .compile_seconds = lookup.compile_seconds});
  std::string reason = compile_reason(lookup, miss);
  std::string what = "'" + name_ + "' (" + std::to_string(entry.traced->nodes.size()) + " nodes, key " +
                     telemetry::digest(lookup.key) + ")";
  const char* tier = lookup.tiered ? "op by op" : "optimized";
  if (lookup.tiered)
    telemetry::log(telemetry::log_compiles,
                   "compiling " + what + " in the background; calls run it op by op until it is ready: " + reason);
  else
    telemetry::log(telemetry::log_compiles, "compiled " + what + " in " + milliseconds(lookup.compile_seconds) + ": " +
                                                reason + "\n  " + lookup.phases.describe());
  if (telemetry::wanted(telemetry::EventKind::compile))
    telemetry::emit(
        {telemetry::EventKind::compile, name_, telemetry::digest(lookup.key), lookup.compile_seconds, reason, tier});
  if (!lookup.tiered && telemetry::wanted(telemetry::EventKind::compile_ready))
    telemetry::emit(
        {telemetry::EventKind::compile_ready, name_, telemetry::digest(lookup.key), lookup.compile_seconds, "", tier});
}

void JitFunction::await_optimized(const cache::GraphLookup& lookup, const cache::Entry& entry) const {
  std::string what = "'" + name_ + "' (" + std::to_string(entry.traced->nodes.size()) + " nodes, key " +
                     telemetry::digest(lookup.key) + ")";
  lookup.tiered->when_done([tally = background_, what, name = name_, key = lookup.key](const cache::TierOutcome& done) {
    tally->compile_nanoseconds.fetch_add(static_cast<int64_t>(done.seconds * 1e9), std::memory_order_relaxed);
    cache::add_global(CacheStats{.compile_seconds = done.seconds});
    if (done.ready) {
      telemetry::log(telemetry::log_compiles, "compiled " + what + " in the background in " +
                                                  milliseconds(done.seconds) + "; later calls run it\n  " +
                                                  done.phases.describe());
    } else {
      // Once per function: it stays on its first tier, correct and slower.
      telemetry::warn("the optimized compile of " + what + " failed; its calls keep running op by op: " + done.error);
    }
    if (cache::tracing())
      cache::trace_record("compile_ready", {{"function", name},
                                            {"key", telemetry::digest(key)},
                                            {"seconds", done.seconds},
                                            {"phases", cache::phases_json(done.phases)},
                                            {"error", done.error},
                                            {"tier", done.ready ? "optimized" : "op by op"}});
    if (telemetry::wanted(telemetry::EventKind::compile_ready))
      telemetry::emit({telemetry::EventKind::compile_ready, name, telemetry::digest(key), done.seconds, done.error,
                       done.ready ? "optimized" : "op by op"});
  });
}

void JitFunction::trace_compile(const cache::GraphLookup& lookup, const cache::Entry& entry, const Miss& miss) const {
  if (lookup.loaded)
    cache::trace_record("persistent_hit", {{"function", name_},
                                           {"key", telemetry::digest(lookup.key)},
                                           {"load_seconds", lookup.load_seconds},
                                           {"saved_compile_seconds", lookup.saved_compile_seconds}});
  std::string reason = compile_reason(lookup, miss);
  if (!lookup.compiled && !lookup.loaded) {
    // Another function compiled this very graph: the miss costs a trace, not a compile.
    cache::trace_record("shared_graph", {{"function", name_},
                                         {"where", location_string(where_)},
                                         {"key", telemetry::digest(lookup.key)},
                                         {"compile_number", miss.compile_number},
                                         {"reason", reason},
                                         {"lines", cache::source_lines(miss.explanation)}});
    return;
  }
  cache::trace_graph(lookup.key, name_, entry.lifted.graph,
                     device_backend_ ? *device_backend_ : cache::default_backend());
  if (!lookup.compiled) return;
  cache::trace_record("compile", {{"function", name_},
                                  {"where", location_string(where_)},
                                  {"key", telemetry::digest(lookup.key)},
                                  {"compile_number", miss.compile_number},
                                  {"reason", reason},
                                  {"hint", miss.explanation.empty() ? "" : miss.hint},
                                  {"lines", cache::source_lines(miss.explanation)},
                                  {"nodes", entry.traced->nodes.size()},
                                  {"symbolic", entry.symbolic},
                                  {"mode", lookup.tiered ? "background" : "sync"}});
  if (!lookup.tiered)
    cache::trace_record("compile_ready", {{"function", name_},
                                          {"key", telemetry::digest(lookup.key)},
                                          {"seconds", lookup.compile_seconds},
                                          {"phases", cache::phases_json(lookup.phases)},
                                          {"error", ""},
                                          {"tier", "optimized"}});
}

void JitFunction::report_evicted(const std::vector<std::shared_ptr<cache::Entry>>& evicted) const {
  if (!cache::tracing()) return;
  for (const auto& entry : evicted) {
    std::string signature;
    for (const SignatureToken& token : entry->description)
      if (token.kind == SignatureToken::Kind::array) signature += (signature.empty() ? "" : ", ") + token.text;
    cache::trace_record("evict", {{"function", name_},
                                  {"key", telemetry::digest(entry->executable_key)},
                                  {"arguments", signature},
                                  {"limit", cache_limits().per_function}});
  }
}

void JitFunction::verify_frozen(const cache::Entry& entry, const Traced& fresh) {
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
    // The fresh trace replaces the stale entry for this signature.
    entries_.forget_signature(entry.signature);
  }
  telemetry::log(telemetry::log_storms | telemetry::log_recompiles, text);
  if (cache::tracing())
    cache::trace_record("storm", {{"function", name_},
                                  {"key", telemetry::digest(entry.executable_key)},
                                  {"text", text},
                                  {"lines", cache::source_lines(text)}});
  if (telemetry::wanted(telemetry::EventKind::storm))
    telemetry::emit({telemetry::EventKind::storm, name_, telemetry::digest(entry.executable_key), 0, text});
}

void JitFunction::note_call_time(double call_seconds, double trace_seconds) {
  constexpr int64_t calls_before_judging = 20;
  constexpr double noticeable_share = 0.25;
  std::string text;
  {
    std::lock_guard lock(mutex_);
    if (retrace_.reported) return;
    retrace_.calls += 1;
    retrace_.call_seconds += call_seconds;
    retrace_.trace_seconds += trace_seconds;
    if (retrace_.calls < calls_before_judging) return;
    double share = retrace_.trace_seconds / retrace_.call_seconds;
    if (share < noticeable_share) return;
    retrace_.reported = true;
    char numbers[160];
    std::snprintf(numbers, sizeof numbers, "%.0f%% of its call time (%.1f us of %.1f us per call)", share * 100,
                  retrace_.trace_seconds / static_cast<double>(retrace_.calls) * 1e6,
                  retrace_.call_seconds / static_cast<double>(retrace_.calls) * 1e6);
    text = "'" + name_ + "' is re-traced on every call because it captures state; tracing takes " + numbers +
           ". Pass the captured arrays as arguments to make it captureless, or use "
           "JitOptions{.captures = kiln::Captures::Constant} if the captures never change";
  }
  telemetry::log(telemetry::log_recompiles | telemetry::log_cache, text);
}

Graph JitFunction::lower(CallArguments& arguments, Trace trace) {
  // With marked dynamic dimensions, the graph a call compiles: in symbols.
  if (!options_.dynamic_dims.empty()) {
    cache::check_dynamic_dims(options_.dynamic_dims, arguments, name_, where_);
    std::set<cache::LeafDim> marked;
    for (const DynamicDim& dim : options_.dynamic_dims) marked.insert({dim.leaf, dim.dim});
    cache::SymbolAssignment symbols = cache::assign_symbols(arguments, marked, bounds_);
    if (!symbols.empty())
      if (cache::ProbeResult probed = probe(arguments, symbols, trace); probed.graph) return detail::wrap(probed.graph);
  }
  TraceSession session(name_, where_);
  TraceOutcome outcome = trace(session);
  return session.finish(outcome.outputs);
}

CacheStats JitFunction::stats() const {
  CacheStats stats;
  {
    std::lock_guard lock(mutex_);
    stats = stats_;
  }
  stats.compile_seconds += static_cast<double>(background_->compile_nanoseconds.load()) * 1e-9;
  stats.calls_before_optimized = calls_before_optimized_.load();
  return stats;
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
                         FunctionRef<SignatureDescription()> describe, Replay* replay) {
  return function_->call(arguments, trace, describe, replay);
}
CallResult JitCore::replay(const Replay& replay, CallArguments& arguments, const std::vector<Array>& captures) {
  return function_->replay(replay, arguments, captures);
}
Graph JitCore::lower(CallArguments& arguments, FunctionRef<TraceOutcome(TraceSession&)> trace) {
  return function_->lower(arguments, trace);
}
CacheStats JitCore::stats() const { return function_->stats(); }
size_t JitCore::cache_size() const { return function_->cache_size(); }
std::string JitCore::last_miss_explanation() const { return function_->last_miss_explanation(); }
const std::string& JitCore::name() const { return function_->name(); }

}  // namespace kiln::detail
