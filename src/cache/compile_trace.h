// The structured trace (kiln::telemetry::start_trace, KILN_TRACE=DIR): one
// JSON record per line, per process, of everything the cache decided, for
// `kiln report` to turn into a page. Records are written as they happen
// (and flushed: a crashed run keeps its history), except cache hits, which
// are counted per function and written when the function goes or the trace
// stops: a hit costs one relaxed load and one relaxed add more.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/compile_profile.h"
#include "runtime/executable.h"

namespace kiln::cache {

namespace trace_detail {
extern std::atomic<bool> running;
}
/// Whether a trace is being written.
inline bool tracing() { return trace_detail::running.load(std::memory_order_relaxed); }
/// Starts the trace KILN_TRACE names, once per process (jitted functions call it when made).
void start_trace_from_environment();

/// Appends {"t": seconds since the trace began, "kind": kind, ...fields}.
void trace_record(std::string_view kind, nlohmann::json fields);

/// A jitted function's hits, counted while a trace runs.
class TracedCalls : public std::enable_shared_from_this<TracedCalls> {
 public:
  TracedCalls(std::string function, std::string where) : function_(std::move(function)), where_(std::move(where)) {}
  void hit();
  /// A trace of the function (stateful functions trace every call).
  void traced(double seconds);
  /// Writes the counts of this trace (the function is going) and forgets them.
  void flush();

 private:
  friend class TraceFile;
  void enroll();
  const std::string function_, where_;
  std::atomic<int64_t> hits_{0}, traces_{0}, trace_nanoseconds_{0};
  std::atomic<uint64_t> generation_{0};  // the trace these counts belong to
};

/// The source lines ("step.py:3", "train.cpp:41") an explanation names, in order.
std::vector<std::string> source_lines(std::string_view text);
/// The phase times of a compile as a JSON object {"simplify": seconds, ...}.
nlohmann::json phases_json(const runtime::CompilePhases& phases);
/// The graph's record (IR text with source lines, DOT picture with the
/// backend's fused kernels), once per key per trace.
void trace_graph(uint64_t key, const std::string& function, const std::shared_ptr<const ir::Graph>& graph,
                 const runtime::Backend& backend);

}  // namespace kiln::cache
