// Observability: every trace, compile, cache hit, execution and storm is an
// event that subscribers receive and KILN_LOG prints.
//
// KILN_LOG=compiles,recompiles,storms,cache,all,none (default: storms).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace kiln::telemetry {

// A compile is one `compile` event (with its explanation) at the miss. Its
// optimized code is `compile_started` and then `compile_ready` (with the
// seconds it took, or the error that left the function on its first tier);
// in background mode the calls in between run the graph op by op.
enum class EventKind { trace, compile, cache_hit, persistent_hit, execute, storm, compile_started, compile_ready };

struct Event {
  EventKind kind;
  std::string function;  // the jitted function's name
  std::string key;       // digest of the cache key, 16 hex digits
  double seconds = 0;    // duration of the traced/compiled/executed step
  std::string reason;    // for compiles and storms: why (the miss explanation); a failed compile_ready: the error
  // Compile events: the tier that serves calls once the event happened,
  // "op by op" (the first tier) or "optimized".
  std::string tier;
};

std::string_view kind_name(EventKind kind);

/// Receives every event until the returned handle is destroyed. Callbacks
/// may run on any thread that calls a jitted function, and compile_ready on
/// kiln's background compile thread.
class Subscription {
 public:
  Subscription() = default;
  explicit Subscription(std::shared_ptr<void> token) : token_(std::move(token)) {}
  void reset() { token_.reset(); }

 private:
  std::shared_ptr<void> token_;
};

[[nodiscard]] Subscription subscribe(std::function<void(const Event&)> callback);

/// Rewrites every KILN_LOG line and warning before it is printed: a front end
/// in another language names things its way ("kiln::where" is "kn.where" in
/// Python). Null restores the text as written.
void set_log_rewriter(std::function<std::string(const std::string&)> rewrite);

/// The structured trace: one JSON record per line for every trace, compile
/// (with its phase times), hit count, persistent hit, explanation, storm,
/// dynamic-dimension decision and eviction, and each graph's IR once by key,
/// appended to DIR/kiln-trace-PID[-rankR].jsonl. `kiln report DIR` turns the
/// files of one run (several processes merge) into one HTML page.
/// KILN_TRACE=DIR starts it at the first jitted function. Throws kiln::Error
/// when the file cannot be opened.
void start_trace(const std::string& directory);
/// Writes each function's final counts and closes the file (also at exit).
void stop_trace();
/// The file the running trace appends to; empty when none runs.
std::string trace_file();

/// The execution timeline: Chrome trace-event JSON (Perfetto, chrome://tracing)
/// with, per thread, each kernel and BLAS call of each executable (its name
/// and size), compiles on their thread and MPI collectives.
/// KILN_PROFILE=FILE starts it when kiln loads; the file is written at
/// stop_profile() or at exit.
void start_profile(const std::string& file);
void stop_profile();

}  // namespace kiln::telemetry
