// The structured trace's file (see the header).
#include "cache/compile_trace.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <vector>

#include "core/error_format.h"
#include "kiln/telemetry.h"
#include "ops/common/graph_dot.h"
#include "ops/common/graph_text.h"
#include "telemetry/telemetry.h"

namespace kiln::cache {

namespace trace_detail {
std::atomic<bool> running{false};
}

namespace {

// The MPI rank the launcher gave this process, if any (kiln's own world may
// not be initialized yet when the trace starts).
int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK"})
    if (const char* text = std::getenv(name); text && *text) return std::atoi(text);
  return -1;
}

std::string program_name() {
  std::ifstream command_line("/proc/self/cmdline", std::ios::binary);
  std::string text;
  std::getline(command_line, text, '\0');
  return text;
}

}  // namespace

// Never destroyed: the compile thread may report while the process exits.
class TraceFile {
 public:
  static TraceFile& instance() {
    static TraceFile& file = *new TraceFile;
    return file;
  }

  void start(const std::string& directory) {
    std::lock_guard lock(mutex_);
    if (file_) return;
    std::error_code error;
    std::filesystem::create_directories(directory, error);
    int rank = launcher_rank();
    std::string name = "kiln-trace-" + std::to_string(::getpid()) +
                       (rank >= 0 ? "-rank" + std::to_string(rank) : std::string()) + ".jsonl";
    std::string path = (std::filesystem::path(directory) / name).string();
    file_ = std::fopen(path.c_str(), "a");
    if (!file_)
      detail::raise("start_trace", "cannot open '" + path + "' for the trace: " + std::strerror(errno), Location(),
                    "name a directory this process may create and write (KILN_TRACE=DIR)");
    path_ = path;
    start_ = std::chrono::steady_clock::now();
    graphs_.clear();
    generation_.fetch_add(1);
    write_locked(
        "process",
        {{"pid", ::getpid()},
         {"rank", rank},
         {"program", program_name()},
         {"started", std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count()}});
    if (!exit_hook_) {
      exit_hook_ = true;
      std::atexit([] { TraceFile::instance().stop(); });
    }
    trace_detail::running.store(true);
  }

  void stop() {
    std::lock_guard lock(mutex_);
    if (!file_) return;
    trace_detail::running.store(false);
    for (const std::weak_ptr<TracedCalls>& weak : enrolled_)
      if (auto calls = weak.lock()) write_counts_locked(*calls);
    enrolled_.clear();
    std::fclose(file_);
    file_ = nullptr;
    path_.clear();
  }

  std::string path() {
    std::lock_guard lock(mutex_);
    return path_;
  }

  void write(std::string_view kind, nlohmann::json fields) {
    std::lock_guard lock(mutex_);
    if (file_) write_locked(kind, std::move(fields));
  }

  uint64_t generation() const { return generation_.load(std::memory_order_relaxed); }

  void enroll(TracedCalls& calls, uint64_t generation) {
    std::lock_guard lock(mutex_);
    if (calls.generation_.load() == generation) return;  // another thread enrolled it
    calls.hits_.store(0);
    calls.traces_.store(0);
    calls.trace_nanoseconds_.store(0);
    calls.generation_.store(generation);
    std::erase_if(enrolled_, [](const auto& weak) { return weak.expired(); });
    enrolled_.push_back(calls.weak_from_this());
  }

  void flush(TracedCalls& calls) {
    std::lock_guard lock(mutex_);
    if (file_ && calls.generation_.load() == generation()) write_counts_locked(calls);
    calls.generation_.store(0);
  }

  /// True the first time `key` is seen in this trace.
  bool first_sight(uint64_t key) {
    std::lock_guard lock(mutex_);
    return file_ && graphs_.insert(key).second;
  }

 private:
  TraceFile() = default;

  void write_locked(std::string_view kind, nlohmann::json fields) {
    fields["t"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    fields["kind"] = kind;
    // Replaced, not thrown: a name or a line in another encoding must not
    // lose the record.
    std::string line = fields.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), file_);
    std::fflush(file_);
  }

  void write_counts_locked(const TracedCalls& calls) {
    write_locked("calls", {{"function", calls.function_},
                           {"where", calls.where_},
                           {"hits", calls.hits_.load()},
                           {"traces", calls.traces_.load()},
                           {"trace_seconds", static_cast<double>(calls.trace_nanoseconds_.load()) * 1e-9}});
  }

  std::mutex mutex_;
  std::FILE* file_ = nullptr;
  std::string path_;
  std::chrono::steady_clock::time_point start_;
  std::atomic<uint64_t> generation_{0};
  std::set<uint64_t> graphs_;
  std::vector<std::weak_ptr<TracedCalls>> enrolled_;
  bool exit_hook_ = false;
};

// Counts from an earlier trace (or none) are reset and enrolled in this one
// the first time the function is heard of in it.
void TracedCalls::enroll() {
  TraceFile& file = TraceFile::instance();
  uint64_t generation = file.generation();
  if (generation_.load(std::memory_order_relaxed) != generation) file.enroll(*this, generation);
}

void TracedCalls::hit() {
  enroll();
  hits_.fetch_add(1, std::memory_order_relaxed);
}

void TracedCalls::traced(double seconds) {
  enroll();
  traces_.fetch_add(1, std::memory_order_relaxed);
  trace_nanoseconds_.fetch_add(static_cast<int64_t>(seconds * 1e9), std::memory_order_relaxed);
}

void TracedCalls::flush() { TraceFile::instance().flush(*this); }

void start_trace_from_environment() {
  static std::once_flag started;
  std::call_once(started, [] {
    const char* directory = std::getenv("KILN_TRACE");
    if (!directory || !*directory) return;
    try {
      TraceFile::instance().start(directory);
    } catch (const std::exception& error) {
      std::fprintf(stderr, "kiln: KILN_TRACE: %s\n", error.what());
    }
  });
}

void trace_record(std::string_view kind, nlohmann::json fields) {
  TraceFile::instance().write(kind, std::move(fields));
}

std::vector<std::string> source_lines(std::string_view text) {
  // A file name with an extension, a colon and digits: what location_string writes.
  auto name_character = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("_./-", c); };
  std::vector<std::string> lines;
  for (size_t colon = text.find(':'); colon != std::string_view::npos; colon = text.find(':', colon + 1)) {
    size_t begin = colon, end = colon + 1;
    while (begin > 0 && name_character(text[begin - 1])) --begin;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    std::string_view file = text.substr(begin, colon - begin);
    if (end == colon + 1 || file.find('.') == std::string_view::npos || file.back() == '.') continue;
    std::string line(text.substr(begin, end - begin));
    if (std::find(lines.begin(), lines.end(), line) == lines.end()) lines.push_back(line);
  }
  return lines;
}

nlohmann::json phases_json(const runtime::CompilePhases& phases) {
  nlohmann::json json = nlohmann::json::object();
  for (size_t p = 0; p < phases.seconds.size(); ++p)
    json[runtime::compile_phase_name(static_cast<runtime::CompilePhase>(p))] = phases.seconds[p];
  json["modules"] = phases.modules;
  json["kernels_compiled"] = phases.kernels_compiled;
  json["kernels_reused"] = phases.kernels_reused;
  return json;
}

void trace_graph(uint64_t key, const std::string& function, const std::shared_ptr<const ir::Graph>& graph,
                 const runtime::Backend& backend) {
  if (!TraceFile::instance().first_sight(key)) return;
  nlohmann::json record = {{"function", function},
                           {"key", telemetry::digest(key)},
                           {"nodes", graph->nodes.size()},
                           {"ir", ops::graph_text(*graph)}};
  try {
    runtime::FusedView view = backend.fused_view(graph);
    record["dot"] = ops::graph_dot(*view.graph, {.groups = view.groups});
    int64_t kernels = 0;
    for (int32_t group : view.groups) kernels = std::max<int64_t>(kernels, group + 1);
    record["kernels"] = kernels;
  } catch (const std::exception& error) {
    // A graph the backend cannot plan here still has its IR in the record.
    record["dot_error"] = error.what();
  }
  trace_record("graph", std::move(record));
}

}  // namespace kiln::cache

namespace kiln::telemetry {

void start_trace(const std::string& directory) { cache::TraceFile::instance().start(directory); }
void stop_trace() { cache::TraceFile::instance().stop(); }
std::string trace_file() { return cache::TraceFile::instance().path(); }

}  // namespace kiln::telemetry
