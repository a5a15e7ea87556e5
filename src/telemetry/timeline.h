// The execution timeline (kiln::telemetry::start_profile): spans of kernels,
// pool parts, BLAS calls, compile phases and collectives, per thread,
// written as Chrome trace-event JSON when the profile stops or the process
// exits.
//
// A span sits on the hot path of every kernel, so while no profile records
// it costs one relaxed load: call sites ask recording() before they build a
// name. While one records, each thread appends to a buffer of its own; the
// registry of buffers is locked only when a thread first records and when
// the file is written.
#pragma once

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace kiln::telemetry::timeline {

namespace detail {
extern std::atomic<bool> recording;
}  // namespace detail

/// Whether a profile records now.
inline bool recording() { return detail::recording.load(std::memory_order_relaxed); }

/// A number shown with a span, such as {"elements", 1048576}. The key is a
/// string literal: it is kept as a pointer until the file is written.
struct Number {
  const char* key = nullptr;
  int64_t value = 0;
};
inline constexpr size_t most_numbers = 4;

class ThreadBuffer;

/// One span on the calling thread, from begin() to the span's destruction,
/// so that an exception unwinding through it ends it too and a thread's
/// spans always nest. A span never begun costs nothing to destroy.
class Span {
 public:
  Span() = default;
  ~Span() {
    if (buffer_) end();
  }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

  /// Starts the span when a profile records. `category` is a string literal;
  /// `name` and `text` (shown under `text_key`, a literal) are copied. At
  /// most `most_numbers` numbers are kept.
  void begin(const char* category, std::string_view name, std::initializer_list<Number> numbers = {},
             const char* text_key = nullptr, std::string_view text = {});

 private:
  void end() noexcept;

  ThreadBuffer* buffer_ = nullptr;
  uint64_t session_ = 0;
};

/// Names the calling thread in the timeline ("kiln pool 1"). A thread never
/// named is "main" when it is the process's first thread, else "thread N".
void name_this_thread(std::string name);

/// The name of the calling thread's innermost open span (empty when none):
/// the thread pool labels the parts it hands out with their kernel's name.
std::string innermost_span_name();

}  // namespace kiln::telemetry::timeline
