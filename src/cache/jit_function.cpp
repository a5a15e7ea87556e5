// The steps of a jitted call (see the header for the parts and the locking).
#include "cache/jit_function.h"

#include <algorithm>
#include <chrono>

#include "cache/backend_choice.h"
#include "cache/compile_trace.h"
#include "cache/global_stats.h"
#include "cache/graph_cache.h"
#include "cache/rank_agreement.h"
#include "cache/tiered_compile.h"
#include "core/array_impl.h"
#include "core/dispatch_queue.h"
#include "core/error_format.h"
#include "ir/symbolic.h"
#include "telemetry/telemetry.h"
#include "trace/trace.h"

namespace kiln::detail {

using cache::Entry;

namespace {
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

bool any_pending(const std::vector<Array>& arrays) {
  return std::any_of(arrays.begin(), arrays.end(), [](const Array& array) {
    return detail::impl(array)->buffer && detail::impl(array)->buffer->pending();
  });
}

// Queued work holds handles of its own (detail::queued_handle), one per
// distinct array, so that it still sees an array passed twice as shared. A
// donated argument's handle takes its storage, which the run may then
// overwrite, unless the function returns it as it is (a run at once leaves
// such an argument as it was).
void hold_for_queue(std::vector<Array>& held, std::vector<Array>& implicit, const std::vector<char>& donated,
                    const std::vector<int>& passed_inputs) {
  // The originals stay referenced until every handle is made: a freed one's
  // address could come back as another array's.
  std::vector<std::pair<Array, Array>> handles;  // original, handle
  auto handle_of = [&](const Array& array, bool take) {
    for (const auto& [original, handle] : handles)
      if (detail::impl(original) == detail::impl(array)) return handle;
    handles.emplace_back(array, detail::queued_handle(array, take));
    return handles.back().second;
  };
  // Donated arguments first: their handles take the storage, and other
  // positions holding the same array share those handles.
  std::vector<Array> arguments(held.size());
  for (size_t k = 0; k < donated.size() && k < held.size(); ++k) {
    bool returned = std::find(passed_inputs.begin(), passed_inputs.end(), static_cast<int>(k)) != passed_inputs.end();
    if (donated[k] && !returned) arguments[k] = handle_of(held[k], true);
  }
  for (size_t k = 0; k < held.size(); ++k)
    if (!arguments[k].defined()) arguments[k] = handle_of(held[k], false);
  std::vector<Array> implicit_handles;
  implicit_handles.reserve(implicit.size());
  for (const Array& array : implicit) implicit_handles.push_back(handle_of(array, false));
  held = std::move(arguments);
  implicit = std::move(implicit_handles);
}

// Below this many elements computed in all, a call costs less than handing
// it to the dispatch thread (the threshold at which eager operations compile).
constexpr int64_t queued_elements = int64_t{1} << 14;

int64_t elements_computed(const ir::Graph& graph) {
  int64_t elements = 0;
  for (const ir::Node& node : graph.nodes) {
    if (node.op != ir::Primitive::input) elements += node.type.size();
    for (const auto& body : node.bodies) elements += elements_computed(*body);
  }
  return elements;
}

bool worth_queueing(const ir::Graph& graph) {
  // A loop's work is its trip count times its body's, unknown here: queued.
  bool loops =
      std::any_of(graph.nodes.begin(), graph.nodes.end(), [](const ir::Node& node) { return !node.bodies.empty(); });
  return loops || ir::is_symbolic(graph) || cache::has_collectives(graph) ||
         elements_computed(graph) >= queued_elements;
}

// Arrays the function made from host data are no state it reads: a function
// whose captures are all such constants is cached by signature like a
// captureless one (its constants are in the graph's key).
bool only_constants_captured(const ir::Graph& graph) {
  for (ir::ValueId capture : graph.captures)
    if (graph.nodes[static_cast<size_t>(capture)].attrs.ints[1] != ir::constant_input) return false;
  return true;
}
}  // namespace

/// Settles a miss's pending entry if the miss ends without an executable (an
/// error, a storm), so that calls waiting for it look again.
class JitFunction::PendingGuard {
 public:
  PendingGuard(JitFunction& function, std::shared_ptr<Entry> pending)
      : function_(function), pending_(std::move(pending)) {}
  ~PendingGuard() {
    if (!pending_) return;
    std::lock_guard lock(function_.mutex_);
    function_.entries_.settle(pending_);
    function_.settled_.notify_all();
  }
  void release() { pending_ = nullptr; }

 private:
  JitFunction& function_;
  std::shared_ptr<Entry> pending_;
};

JitFunction::JitFunction(JitOptions options, bool stateful, Location where)
    : options_(std::move(options)),
      stateful_(stateful),
      where_(where),
      name_(options_.name.empty() ? location_string(where) : options_.name),
      bounds_(cache::bounds_of(options_.dynamic_dims)),
      compile_mode_(cache::resolve_compile_mode(options_.compile_mode)),
      device_backend_(cache::device_backend(options_.device, name_, where)),
      traced_calls_(std::make_shared<cache::TracedCalls>(name_, location_string(where))) {
  cache::start_trace_from_environment();
  for (const DynamicDim& marked : options_.dynamic_dims) dynamic_.insert({marked.leaf, marked.dim});
}

JitFunction::~JitFunction() {
  if (cache::tracing()) traced_calls_->flush();
}

bool JitFunction::signature_mode() const {
  return options_.captures == Captures::Constant || (options_.captures == Captures::Auto && !stateful_);
}

CallResult JitFunction::call(CallArguments& arguments, Trace trace, Describe describe, Replay* replay) {
  cache::count_global_call();
  if (signature_mode()) {
    std::shared_ptr<Entry> entry;
    bool verify = false;
    {
      std::unique_lock lock(mutex_);
      stats_.calls += 1;
      entry = find_by_signature(lock, arguments);
      if (entry) {
        stats_.hits += 1;
        entries_.touch(entry);
        entry->hits += 1;
        verify = options_.captures == Captures::Constant && options_.verify_every > 0 &&
                 entry->hits % options_.verify_every == 0;
      }
    }
    if (entry && !verify) {
      try {
        return {run(*entry, arguments, entry->captures, entry->lifted_inputs, "signature"), entry->skeleton};
      } catch (const runtime::SizesDoNotFit&) {
        // A symbolic entry whose shape rules fail at these sizes: this call
        // is traced afresh below, a miss like any other.
        std::lock_guard lock(mutex_);
        stats_.hits -= 1;
        entry = nullptr;
      }
    }
    if (entry) {
      // A verification: this call re-traces and binds what the trace captured.
      report_hit(entry->executable_key, "signature");
      Traced fresh = run_trace(trace);
      verify_frozen(*entry, fresh);
      std::vector<Array> captures = fresh.captures;
      Admitted updated = admit(arguments, std::move(fresh), trace, describe);
      return {run(*updated.entry, arguments, captures, updated.lifted_inputs), updated.skeleton};
    }
  } else {
    std::lock_guard lock(mutex_);
    stats_.calls += 1;
  }

  auto start = Clock::now();
  Traced traced = run_trace(trace);
  double trace_seconds = seconds_since(start);
  // A re-traced call binds what this trace captured and the numbers it saw,
  // not what the entry froze.
  std::vector<Array> captures = traced.captures;
  Admitted admitted = admit(arguments, std::move(traced), trace, describe);
  CallResult result{run(*admitted.entry, arguments, captures, admitted.lifted_inputs), admitted.skeleton};
  if (!signature_mode()) note_call_time(seconds_since(start), trace_seconds);
  if (replay) {
    const ir::Graph& graph = *admitted.entry->traced;
    replay->constant.clear();
    for (ir::ValueId capture : graph.captures)
      replay->constant.push_back(graph.nodes[static_cast<size_t>(capture)].attrs.ints[1] == ir::constant_input);
    replay->entry = admitted.entry;
    replay->captures = std::move(captures);
    replay->lifted = admitted.lifted_inputs;
    replay->skeleton = admitted.skeleton;
  }
  return result;
}

CallResult JitFunction::replay(const Replay& replay, CallArguments& arguments, const std::vector<Array>& captures) {
  cache::count_global_call();
  const auto& entry = *static_cast<const Entry*>(replay.entry.get());
  {
    std::lock_guard lock(mutex_);
    stats_.calls += 1;
    stats_.hits += 1;
  }
  return {run(entry, arguments, captures, replay.lifted, "guard"), replay.skeleton};
}

std::shared_ptr<Entry> JitFunction::find_by_signature(std::unique_lock<std::mutex>& lock,
                                                      const CallArguments& arguments) {
  for (;;) {
    std::shared_ptr<Entry> entry = entries_.by_signature(arguments.signature);
    if (!entry && !dynamic_.empty()) entry = find_symbolic(arguments);
    if (!entry || !entry->pending()) return entry;
    settled_.wait(lock, [&] { return entry->settled; });
  }
}

std::shared_ptr<Entry> JitFunction::find_symbolic(const CallArguments& arguments) const {
  cache::SymbolAssignment symbols = cache::assign_symbols(arguments, dynamic_, bounds_);
  if (symbols.empty()) return nullptr;
  return entries_.by_symbolic_signature(cache::symbolic_signature(arguments, symbols), symbols.hints);
}

JitFunction::Traced JitFunction::run_trace(Trace trace, const std::vector<Shape>* shapes,
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
  cache::add_global(CacheStats{.traces = 1, .trace_seconds = seconds});
  if (cache::tracing()) traced_calls_->traced(seconds);
  if (telemetry::wanted(telemetry::EventKind::trace))
    telemetry::emit(
        {telemetry::EventKind::trace, name_, telemetry::digest(traced.graph.structure_hash()), seconds, ""});
  return traced;
}

void JitFunction::Candidate::lift(const std::vector<bool>& sites) {
  bool any = std::any_of(sites.begin(), sites.end(), [](bool b) { return b; });
  lifted = any ? transform::lift_literals(*traced, sites) : transform::LiftedGraph{traced, {}, {}};
  // The traced graph's structure hash is already known; a lifted graph needs its own.
  key = lifted.graph == traced ? cache::graph_key(*traced, structure) : cache::graph_key(*lifted.graph);
}

bool JitFunction::serves(const Entry& symbolic, const CallArguments& arguments, const Traced& traced) {
  try {
    ir::Graph expected =
        ir::instantiate(*symbolic.traced, ir::bind_symbols(*symbolic.traced, arguments.arrays, traced.captures));
    return expected.structurally_equal(detail::ir_of(traced.graph)) &&
           expected.same_literals(detail::ir_of(traced.graph));
  } catch (const Error&) {
    return false;  // the symbols do not bind at these sizes
  }
}

// Three steps, each holding the lock from start to end or not at all: the
// entry is found (after waiting for a pending one), checked against the
// trace without the lock, and the hit recorded.
std::shared_ptr<Entry> JitFunction::symbolic_serving(const CallArguments& arguments, const Traced& traced) {
  std::shared_ptr<Entry> symbolic;
  {
    std::unique_lock lock(mutex_);
    if (dynamic_.empty()) return nullptr;
    for (symbolic = find_symbolic(arguments); symbolic && symbolic->pending(); symbolic = find_symbolic(arguments))
      settled_.wait(lock, [&] { return symbolic->settled; });
  }
  if (!symbolic || !serves(*symbolic, arguments, traced)) return nullptr;
  std::lock_guard lock(mutex_);
  stats_.hits += 1;
  entries_.touch(symbolic);
  return symbolic;
}

JitFunction::Admitted JitFunction::admit(CallArguments& arguments, Traced traced, Trace trace, Describe describe) {
  bool by_signature = signature_mode() &&
                      (only_constants_captured(detail::ir_of(traced.graph)) || options_.captures == Captures::Constant);
  Candidate candidate{detail::shared_ir(traced.graph), detail::ir_of(traced.graph).structure_hash(), {}, 0};
  if (std::shared_ptr<Entry> symbolic = symbolic_serving(arguments, traced)) {
    report_hit(symbolic->executable_key, "symbolic");
    return {symbolic, traced.skeleton, {}};
  }
  std::unique_lock lock(mutex_);
  for (;;) {
    candidate.lift(lifted_sites_[candidate.structure]);
    std::shared_ptr<Entry> known = entries_.by_graph(candidate.key, *candidate.lifted.graph);
    if (known && known->pending()) {
      settled_.wait(lock, [&] { return known->settled; });
      continue;
    }
    if (known) {
      stats_.hits += 1;
      entries_.touch(known);
      if (by_signature && !entries_.by_signature(arguments.signature)) {
        // Another signature (e.g. an unused static value) traced to this graph.
        auto alias = std::make_shared<Entry>(*known);
        alias->signature = arguments.signature;
        alias->description = describe();
        alias->captures = traced.captures;
        alias->skeleton = traced.skeleton;
        entries_.alias(alias->signature, alias, false);
      }
      lock.unlock();
      report_hit(candidate.key, "graph");
      return {known, traced.skeleton, transform::lifted_inputs(candidate.lifted)};
    }
    break;
  }
  Miss miss = decide_miss(arguments, candidate, describe, by_signature);
  lock.unlock();
  PendingGuard guard(*this, miss.pending);
  if (!miss.symbols.empty()) generalize(arguments, trace, candidate, miss);
  {
    std::lock_guard relock(mutex_);
    finish_decision(candidate, miss);
  }
  report_miss(candidate, miss);
  guard.release();  // compile settles the pending entry, whatever happens there
  return compile(arguments, std::move(traced), std::move(candidate), std::move(miss), by_signature);
}

JitFunction::Miss JitFunction::decide_miss(const CallArguments& arguments, const Candidate& candidate,
                                           Describe describe, bool by_signature) {
  stats_.misses += 1;
  cache::add_global(CacheStats{.misses = 1});
  Miss miss;
  miss.description = describe();
  miss.compile_number = stats_.misses;
  miss.explained =
      cache::explain_miss(entries_, arguments.signature, miss.description, *candidate.traced, candidate.key);
  miss.explanation = miss.explained.text;
  miss.hint = miss.explained.hint;
  if (!marks_checked_) {
    cache::check_dynamic_dims(options_.dynamic_dims, arguments, name_, where_);
    marks_checked_ = true;
  }
  cache::DynamicPlan plan = cache::plan_dynamic(options_, arguments, miss.description, miss.explained.closest.get(),
                                                miss.compile_number, dynamic_, specialized_, bounds_);
  dynamic_ = std::move(plan.dynamic);
  if (!plan.explanation.empty()) {
    miss.explanation += (miss.explanation.empty() ? "" : "; ") + plan.explanation;
    if (cache::tracing())
      cache::trace_record("dynamic", {{"function", name_},
                                      {"compile_number", miss.compile_number},
                                      {"decision", plan.explanation},
                                      {"lines", cache::source_lines(plan.explanation)}});
  }
  miss.symbols = std::move(plan.symbols);
  if (!miss.symbols.empty() && entries_.has_symbolic_signature(cache::symbolic_signature(arguments, miss.symbols)))
    miss.explanation += std::string(miss.explanation.empty() ? "" : "; ") +
                        "these sizes are outside those the symbolic entry was fitted and checked for: fitting again "
                        "around them";

  // Concurrent calls this compile will serve find the pending entry and wait.
  miss.pending = std::make_shared<Entry>();
  miss.pending->description = miss.description;
  miss.pending->traced = candidate.traced;
  if (!miss.symbols.empty()) {
    miss.pending->symbolic = true;
    miss.pending->signature = cache::symbolic_signature(arguments, miss.symbols);
  } else {
    miss.pending->signature = arguments.signature;
    miss.pending->lifted = candidate.lifted;
    miss.pending->executable_key = candidate.key;
  }
  report_evicted(entries_.insert(miss.pending, by_signature));
  return miss;
}

void JitFunction::finish_decision(Candidate& candidate, Miss& miss) {
  bool lifting = false;
  if (!miss.symbolic) {
    cache::Lifting lifted = cache::lift_churning_literals(miss.explained.closest.get(), *candidate.traced,
                                                          candidate.structure, lifted_sites_[candidate.structure]);
    lifting = lifted.lifting;
    if (lifting) {
      lifted_sites_[candidate.structure] = lifted.sites;
      candidate.lift(lifted.sites);
      miss.explanation += " — lifted to a runtime input: further values will not compile";
    }
  }
  miss.storm = cache::judge_storm(options_, name_, miss.compile_number, miss.explained.same_signature, lifting,
                                  miss.symbolic, storm_reported_, miss.explanation, miss.hint);
  if (miss.storm.generalize_literals) {
    std::vector<bool>& sites = lifted_sites_[candidate.structure];
    sites.assign(candidate.traced->literal_values().size(), true);
    candidate.lift(sites);
  }
  if (miss.storm.report && options_.on_storm == OnStorm::Warn) storm_reported_ = true;
  if (!miss.explanation.empty()) last_explanation_ = miss.explanation + "\n  hint: " + miss.hint;
}

JitFunction::Admitted JitFunction::compile(const CallArguments& arguments, Traced traced, Candidate candidate,
                                           Miss miss, bool by_signature) {
  PendingGuard guard(*this, miss.pending);
  auto starting = [&] {
    if (telemetry::wanted(telemetry::EventKind::compile_started))
      telemetry::emit({telemetry::EventKind::compile_started, name_, telemetry::digest(candidate.key), 0,
                       compile_mode_ == CompileMode::Background ? "background" : "sync", "optimized"});
  };
  cache::GraphLookup lookup =
      cache::get_or_compile(candidate.lifted.graph, candidate.key, compile_mode_, starting, device_backend_);
  // Before its first run here: a graph with collectives must be the same on every rank.
  cache::check_ranks_agree(name_, *candidate.traced, where_);
  auto entry = std::make_shared<Entry>();
  entry->symbolic = miss.symbolic;
  entry->ranges = std::move(miss.ranges);
  entry->signature = miss.symbolic ? miss.signature : arguments.signature;
  entry->description = std::move(miss.description);
  entry->traced = candidate.traced;
  entry->lifted = std::move(candidate.lifted);
  entry->lifted_inputs = transform::lifted_inputs(entry->lifted);
  entry->executable_key = lookup.key;
  entry->executable = lookup.executable;
  entry->queued = worth_queueing(*entry->lifted.graph);
  entry->captures = std::move(traced.captures);
  entry->skeleton = traced.skeleton;
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
    entries_.settle(miss.pending);
    // Another miss may have made an entry for this graph meanwhile (a symbolic
    // graph equal to a known one): keep one entry. A refit of a symbolic
    // graph on other sizes (the two sides of a gap) keeps its own ranges.
    std::shared_ptr<Entry> raced = entries_.by_graph(entry->executable_key, *entry->lifted.graph);
    bool other_ranges = raced && entry->symbolic && raced->symbolic && raced->ranges != entry->ranges;
    if (!raced || other_ranges) report_evicted(entries_.insert(entry, by_signature));
    else if (entry->symbolic == raced->symbolic && (entry->symbolic || by_signature))
      entries_.alias(entry->signature, raced, entry->symbolic);
    settled_.notify_all();
  }
  guard.release();
  report_compile(lookup, *entry, miss);
  if (lookup.tiered) await_optimized(lookup, *entry);
  return {entry, std::move(traced.skeleton), entry->lifted_inputs};
}

std::vector<Array> JitFunction::run(const Entry& entry, const CallArguments& arguments,
                                    const std::vector<Array>& captures, const std::vector<Array>& lifted,
                                    const char* hit) const {
  if (entry.executable->interim()) {
    calls_before_optimized_.fetch_add(1, std::memory_order_relaxed);
    cache::add_global(CacheStats{.calls_before_optimized = 1});
  }
  if (detail::dispatch_async() &&
      (entry.queued || any_pending(arguments.arrays) || any_pending(captures) || any_pending(lifted))) {
    if (std::optional<std::vector<Array>> queued = run_queued(entry, arguments, captures, lifted)) {
      if (hit) report_hit(entry.executable_key, hit);
      return std::move(*queued);
    }
  }
  bool timed = telemetry::wanted(telemetry::EventKind::execute);
  auto start = timed ? Clock::now() : Clock::time_point{};
  std::vector<Array> outputs;
  if (lifted.empty()) {
    outputs = entry.executable->run(arguments.arrays, captures, arguments.donated);
  } else {
    std::vector<Array> implicit = captures;
    implicit.insert(implicit.end(), lifted.begin(), lifted.end());
    outputs = entry.executable->run(arguments.arrays, implicit, arguments.donated);
  }
  if (hit) report_hit(entry.executable_key, hit);
  if (timed)
    telemetry::emit(
        {telemetry::EventKind::execute, name_, telemetry::digest(entry.executable_key), seconds_since(start), ""});
  return outputs;
}

std::optional<std::vector<Array>> JitFunction::run_queued(const Entry& entry, const CallArguments& arguments,
                                                          const std::vector<Array>& captures,
                                                          const std::vector<Array>& lifted) const {
  std::vector<Array> held = arguments.arrays;
  std::vector<Array> implicit = captures;
  implicit.insert(implicit.end(), lifted.begin(), lifted.end());
  if (!detail::copy_outside_storage_for_queue(held) || !detail::copy_outside_storage_for_queue(implicit))
    return std::nullopt;
  std::optional<runtime::OutputPlan> plan = entry.executable->plan_outputs(held, implicit);
  if (!plan) return std::nullopt;
  std::vector<Array> outputs;
  std::vector<std::optional<detail::PendingResult>> pending;
  for (size_t i = 0; i < plan->types.size(); ++i) {
    int passed = plan->passed_inputs[i];
    if (passed >= 0) {
      size_t k = static_cast<size_t>(passed);
      outputs.push_back(k < held.size() ? held[k] : implicit[k - held.size()]);
      pending.emplace_back();
    } else {
      outputs.push_back(detail::pending_array(std::move(plan->types[i])));
      pending.push_back(detail::pending_result(outputs.back()));
    }
  }
  hold_for_queue(held, implicit, arguments.donated, plan->passed_inputs);
  bool timed = telemetry::wanted(telemetry::EventKind::execute);
  detail::enqueue([executable = entry.executable, held = std::move(held), implicit = std::move(implicit),
                   donated = arguments.donated, pending = std::move(pending), timed, name = name_,
                   key = entry.executable_key]() mutable {
    size_t fulfilled = 0;
    try {
      auto start = timed ? Clock::now() : Clock::time_point{};
      // An input whose work failed fails this call with the same error.
      for (const std::vector<Array>* inputs : {&held, &implicit})
        for (const Array& input : *inputs) detail::impl(input)->buffer->wait();
      std::vector<Array> results = executable->run(held, implicit, donated);
      // The arguments go first: a donated one's storage is then the result's alone.
      held.clear();
      implicit.clear();
      for (; fulfilled < pending.size(); ++fulfilled)
        if (pending[fulfilled]) detail::fulfil(*pending[fulfilled], std::move(results[fulfilled]));
      if (timed)
        telemetry::emit({telemetry::EventKind::execute, name, telemetry::digest(key), seconds_since(start), ""});
    } catch (...) {
      for (; fulfilled < pending.size(); ++fulfilled)
        if (pending[fulfilled]) pending[fulfilled]->buffer->fail(std::current_exception());
      detail::note_queued_error(std::current_exception());
    }
  });
  return outputs;
}

}  // namespace kiln::detail
