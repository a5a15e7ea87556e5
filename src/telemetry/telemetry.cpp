// Subscribers and KILN_LOG.
#include "telemetry/telemetry.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <sstream>
#include <vector>

namespace kiln::telemetry {

namespace {
struct Subscriber {
  std::function<void(const Event&)> callback;
};

struct Registry {
  std::mutex mutex;
  std::vector<std::weak_ptr<Subscriber>> subscribers;
  std::atomic<size_t> count{0};
};

// Never destroyed: kiln's compile thread may report while the process exits.
Registry& registry() {
  static Registry& instance = *new Registry;
  return instance;
}

unsigned parse_log(const char* text) {
  if (!text) return log_storms;
  unsigned mask = 0;
  std::stringstream list(text);
  for (std::string item; std::getline(list, item, ',');) {
    if (item == "compiles") mask |= log_compiles;
    else if (item == "recompiles") mask |= log_recompiles;
    else if (item == "storms") mask |= log_storms;
    else if (item == "cache") mask |= log_cache;
    else if (item == "all") mask |= log_compiles | log_recompiles | log_storms | log_cache;
    else if (item == "none") mask = 0;
    else
      std::fprintf(stderr, "kiln: KILN_LOG: unknown category '%s' (known: compiles,recompiles,storms,cache,all,none)\n",
                   item.c_str());
  }
  return mask;
}

LogCategory category_of(EventKind kind) {
  switch (kind) {
    case EventKind::compile:
    case EventKind::compile_started:
    case EventKind::compile_ready: return log_compiles;
    case EventKind::storm: return log_storms;
    default: return log_cache;
  }
}
}  // namespace

std::string_view kind_name(EventKind kind) {
  switch (kind) {
    case EventKind::trace: return "trace";
    case EventKind::compile: return "compile";
    case EventKind::cache_hit: return "cache_hit";
    case EventKind::persistent_hit: return "persistent_hit";
    case EventKind::execute: return "execute";
    case EventKind::storm: return "storm";
    case EventKind::compile_started: return "compile_started";
    case EventKind::compile_ready: return "compile_ready";
  }
  return "?";
}

namespace {
std::atomic<unsigned>& log_mask_storage() {
  static std::atomic<unsigned> mask{parse_log(std::getenv("KILN_LOG"))};
  return mask;
}
}  // namespace

unsigned log_mask() { return log_mask_storage().load(std::memory_order_relaxed); }
void set_log_mask(unsigned mask) { log_mask_storage().store(mask); }

bool wanted(EventKind kind) {
  return registry().count.load(std::memory_order_relaxed) > 0 || (log_mask() & category_of(kind));
}

void emit(const Event& event) {
  Registry& r = registry();
  if (r.count.load(std::memory_order_relaxed) > 0) {
    std::vector<std::shared_ptr<Subscriber>> live;
    {
      std::lock_guard lock(r.mutex);
      for (auto& weak : r.subscribers)
        if (auto subscriber = weak.lock()) live.push_back(std::move(subscriber));
    }
    for (auto& subscriber : live) subscriber->callback(event);
  }
  // Storm and compile events carry their own log lines (written where the
  // explanation is made), so only the one-line cache events print here.
  LogCategory category = category_of(event.kind);
  if (category == log_cache && (log_mask() & log_cache)) {
    char line[256];
    std::snprintf(line, sizeof line, "%s '%s' key %s %.3f ms", std::string(kind_name(event.kind)).c_str(),
                  event.function.c_str(), event.key.c_str(), event.seconds * 1e3);
    log(log_cache, line);
  }
}

namespace {
std::mutex print_mutex;                                   // one line at a time, whoever prints
std::function<std::string(const std::string&)> rewriter;  // guarded by print_mutex

void print(const char* prefix, const std::string& text) {
  std::lock_guard lock(print_mutex);
  std::fprintf(stderr, "%s%s\n", prefix, (rewriter ? rewriter(text) : text).c_str());
}
}  // namespace

void set_log_rewriter(std::function<std::string(const std::string&)> rewrite) {
  std::lock_guard lock(print_mutex);
  rewriter = std::move(rewrite);
}

void log(unsigned categories, const std::string& text) {
  if (!(log_mask() & categories)) return;
  print("kiln: ", text);
}

void warn(const std::string& text) { print("kiln: warning: ", text); }

std::string digest(uint64_t hash) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

Subscription subscribe(std::function<void(const Event&)> callback) {
  Registry& r = registry();
  auto subscriber = std::shared_ptr<Subscriber>(new Subscriber{std::move(callback)}, [](Subscriber* s) {
    Registry& reg = registry();
    reg.count.fetch_sub(1);
    delete s;
  });
  {
    std::lock_guard lock(r.mutex);
    std::erase_if(r.subscribers, [](const auto& weak) { return weak.expired(); });
    r.subscribers.push_back(subscriber);
  }
  r.count.fetch_add(1);
  return Subscription(std::shared_ptr<void>(subscriber));
}

}  // namespace kiln::telemetry
