// Spans recorded per thread and written as Chrome trace-event JSON (see the
// header).
#include "telemetry/timeline.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "core/dispatch_queue.h"
#include "core/error_format.h"
#include "kiln/telemetry.h"

namespace kiln::telemetry::timeline {

namespace detail {
std::atomic<bool> recording{false};
}  // namespace detail

namespace {

int64_t now_nanoseconds() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Entry {
  int64_t nanoseconds = 0;
  bool begins = true;  // a span's start ("B"), else its end ("E")
  uint8_t count = 0;   // of `numbers`
  const char* category = nullptr;
  const char* text_key = nullptr;
  std::array<Number, most_numbers> numbers{};
  std::string name, text;
};

// 0 while no profile records. Each start takes the next number, so that a
// span begun before a stop never ends inside the profile started after it.
std::atomic<uint64_t> active_session{0};

}  // namespace

class ThreadBuffer {
 public:
  std::mutex mutex;  // its thread's appends against the writer; uncontended while recording
  uint64_t session = 0;
  std::vector<Entry> entries;  // of `session`, in the thread's time order
  std::vector<size_t> open;    // the begun spans not yet ended, innermost last
  std::string name;
  int number = 0;  // the trace's tid
};

namespace {

struct Registry {
  std::mutex mutex;
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  int threads = 0;
  uint64_t sessions = 0;
  std::FILE* file = nullptr;  // open while a profile records: a path that cannot be written fails at the start
  std::string path;
  int64_t origin = 0;  // the profile's time zero
  bool exit_hook = false;
};

// Never destroyed: pool workers and the compile thread may record while the
// process exits.
Registry& registry() {
  static Registry& instance = *new Registry;
  return instance;
}

// The calling thread's buffer. The registry holds it beside this thread's
// `owner`, so that once the thread has ended (only the registry holds it) it
// is dropped as soon as nothing in it awaits writing.
thread_local ThreadBuffer* mine = nullptr;
thread_local std::shared_ptr<ThreadBuffer> owner;

// Called with the registry's mutex held.
void drop_ended_threads(Registry& threads) {
  uint64_t session = active_session.load(std::memory_order_acquire);
  std::erase_if(threads.buffers, [&](const std::shared_ptr<ThreadBuffer>& buffer) {
    if (buffer.use_count() > 1) return false;
    std::lock_guard lock(buffer->mutex);
    return session == 0 || buffer->session != session;
  });
}

ThreadBuffer& this_thread_buffer() {
  if (mine) return *mine;
  auto buffer = std::make_shared<ThreadBuffer>();
  Registry& threads = registry();
  {
    std::lock_guard lock(threads.mutex);
    buffer->number = ++threads.threads;
    buffer->name = ::syscall(SYS_gettid) == ::getpid() ? "main" : "thread " + std::to_string(buffer->number);
    drop_ended_threads(threads);
    threads.buffers.push_back(buffer);
  }
  owner = buffer;
  mine = buffer.get();
  return *mine;
}

// What the writer takes of one thread's buffer.
struct ThreadEntries {
  int number = 0;
  std::string name;
  std::vector<Entry> entries;
  size_t open = 0;  // spans still running when the profile stopped
};

nlohmann::json event(const char* phase, int pid, int tid) { return {{"ph", phase}, {"pid", pid}, {"tid", tid}}; }

// The whole file, one event a line; false when it could not be written.
bool write_events(std::FILE* file, std::vector<ThreadEntries>& threads, int64_t origin, int64_t stopped) {
  std::sort(threads.begin(), threads.end(), [](const auto& a, const auto& b) { return a.number < b.number; });
  int pid = ::getpid();
  auto microseconds = [&](int64_t nanoseconds) { return static_cast<double>(nanoseconds - origin) * 1e-3; };
  bool ok = std::fputs("{\"traceEvents\":[\n", file) >= 0;
  bool first = true;
  auto put = [&](const nlohmann::json& line) {
    // Names come from users' functions: bytes that are not UTF-8 are replaced, never fatal.
    std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    ok = std::fputs(first ? "" : ",\n", file) >= 0 && ok;
    ok = std::fwrite(text.data(), 1, text.size(), file) == text.size() && ok;
    first = false;
  };
  nlohmann::json process = event("M", pid, 0);
  process["name"] = "process_name";
  process["args"] = {{"name", "kiln"}};
  put(process);
  for (ThreadEntries& thread : threads) {
    nlohmann::json name = event("M", pid, thread.number);
    name["name"] = "thread_name";
    name["args"] = {{"name", thread.name}};
    put(name);
    // Perfetto orders threads by this index: the order they first recorded, the main thread's first.
    name["name"] = "thread_sort_index";
    name["args"] = {{"sort_index", thread.number}};
    put(name);
  }
  for (ThreadEntries& thread : threads) {
    int64_t last = stopped;
    for (const Entry& entry : thread.entries) {
      nlohmann::json line = event(entry.begins ? "B" : "E", pid, thread.number);
      line["ts"] = microseconds(entry.nanoseconds);
      last = std::max(last, entry.nanoseconds);
      if (entry.begins) {
        line["name"] = entry.name;
        line["cat"] = entry.category;
        nlohmann::json args = nlohmann::json::object();
        for (size_t n = 0; n < entry.count; ++n) args[entry.numbers[n].key] = entry.numbers[n].value;
        if (entry.text_key) args[entry.text_key] = entry.text;
        line["args"] = std::move(args);
      }
      put(line);
    }
    // Spans running at the stop end there, marked, so every thread's spans still nest.
    for (size_t open = 0; open < thread.open; ++open) {
      nlohmann::json line = event("E", pid, thread.number);
      line["ts"] = microseconds(last);
      line["args"] = {{"unfinished", true}};
      put(line);
    }
  }
  ok = std::fputs("\n],\"displayTimeUnit\":\"ms\"}\n", file) >= 0 && ok;
  return ok;
}

void stop_at_exit() {
  // Not telemetry::warn: its rewriter may be destroyed by now.
  try {
    stop_profile();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "kiln: KILN_PROFILE: %s\n", error.what());
  }
}

// KILN_PROFILE=FILE records from the moment kiln loads.
[[maybe_unused]] const bool started_from_environment = [] {
  const char* file = std::getenv("KILN_PROFILE");
  if (!file || !*file) return false;
  try {
    start_profile(file);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "kiln: KILN_PROFILE: %s\n", error.what());
    return false;
  }
  return true;
}();

}  // namespace

void Span::begin(const char* category, std::string_view name, std::initializer_list<Number> numbers,
                 const char* text_key, std::string_view text) {
  uint64_t session = active_session.load(std::memory_order_acquire);
  if (session == 0 || buffer_) return;
  ThreadBuffer& buffer = this_thread_buffer();
  Entry entry;
  entry.category = category;
  entry.name = name;
  for (const Number& number : numbers) {
    if (entry.count == most_numbers) break;
    entry.numbers[entry.count++] = number;
  }
  if (text_key) {
    entry.text_key = text_key;
    entry.text = text;
  }
  entry.nanoseconds = now_nanoseconds();
  std::lock_guard lock(buffer.mutex);
  if (buffer.session != session) {
    buffer.entries.clear();
    buffer.open.clear();
    buffer.session = session;
  }
  buffer.entries.push_back(std::move(entry));
  try {
    buffer.open.push_back(buffer.entries.size() - 1);
  } catch (...) {
    buffer.entries.pop_back();
    throw;
  }
  buffer_ = &buffer;
  session_ = session;
}

void Span::end() noexcept {
  ThreadBuffer& buffer = *std::exchange(buffer_, nullptr);
  Entry entry;
  entry.begins = false;
  entry.nanoseconds = now_nanoseconds();
  std::lock_guard lock(buffer.mutex);
  if (buffer.session != session_) return;  // the profile stopped since the span began
  try {
    buffer.entries.push_back(std::move(entry));
  } catch (...) {
    return;  // out of memory: the writer ends the span at the stop instead
  }
  buffer.open.pop_back();
}

void name_this_thread(std::string name) {
  ThreadBuffer& buffer = this_thread_buffer();
  std::lock_guard lock(buffer.mutex);
  buffer.name = std::move(name);
}

std::string innermost_span_name() {
  if (!mine) return {};
  std::lock_guard lock(mine->mutex);
  if (mine->open.empty() || mine->session != active_session.load(std::memory_order_acquire)) return {};
  return mine->entries[mine->open.back()].name;
}

}  // namespace kiln::telemetry::timeline

namespace kiln::telemetry {

using timeline::active_session;
using timeline::registry;

void start_profile(const std::string& file) {
  timeline::Registry& threads = registry();
  std::lock_guard lock(threads.mutex);
  if (threads.file)
    detail::raise("start_profile", "a profile already records to '" + threads.path + "'", Location(),
                  "call stop_profile() before starting another");
  std::FILE* opened = std::fopen(file.c_str(), "w");
  if (!opened)
    detail::raise("start_profile", "cannot open '" + file + "' for the profile: " + std::strerror(errno), Location(),
                  "name a file in an existing directory that this process may write (KILN_PROFILE=FILE)");
  threads.file = opened;
  threads.path = file;
  threads.origin = timeline::now_nanoseconds();
  if (!threads.exit_hook) {
    threads.exit_hook = true;
    std::atexit(timeline::stop_at_exit);
  }
  active_session.store(++threads.sessions, std::memory_order_release);
  timeline::detail::recording.store(true, std::memory_order_relaxed);
}

void stop_profile() {
  // Work queued before the stop belongs to the profile: it runs first.
  kiln::detail::wait_for_queued_work();
  timeline::Registry& threads = registry();
  std::lock_guard lock(threads.mutex);
  if (!threads.file) return;
  timeline::detail::recording.store(false, std::memory_order_relaxed);
  uint64_t session = active_session.exchange(0, std::memory_order_acq_rel);
  int64_t stopped = timeline::now_nanoseconds();
  std::vector<timeline::ThreadEntries> taken;
  for (const auto& buffer : threads.buffers) {
    std::lock_guard buffer_lock(buffer->mutex);
    if (buffer->session != session) continue;
    taken.push_back({buffer->number, buffer->name, std::move(buffer->entries), buffer->open.size()});
    buffer->entries = {};
    buffer->open.clear();
    buffer->session = 0;
  }
  timeline::drop_ended_threads(threads);
  std::FILE* file = std::exchange(threads.file, nullptr);
  std::string path = std::exchange(threads.path, {});
  bool written = timeline::write_events(file, taken, threads.origin, stopped);
  int error = errno;
  if (std::fclose(file) != 0 && written) {
    written = false;
    error = errno;
  }
  if (!written)
    detail::raise("stop_profile", "could not write the profile to '" + path + "': " + std::strerror(error), Location(),
                  "make room on its file system, or start the profile with another file");
}

}  // namespace kiln::telemetry
