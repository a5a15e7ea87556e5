// The persistent cache's directory, its files and their checks (see the header).
#include "cache/persistent_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>

#include "cache/build_id.h"  // generated: cmake/build_id.cmake
#include "cache/persistent_entry.h"
#include "core/byte_stream.h"
#include "ops/graph_text.h"
#include "telemetry/telemetry.h"

namespace kiln::cache {

namespace {

constexpr const char* entry_extension = ".kiln";
constexpr const char* hits_extension = ".hits";
constexpr const char* temporary_prefix = ".tmp-";

int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void log_line(const std::string& text) { telemetry::log(telemetry::log_cache, "persistent cache: " + text); }

uint64_t parse_bytes(const char* text) {
  char* end = nullptr;
  double value = std::strtod(text, &end);
  uint64_t scale = 1;
  if (end && (*end == 'K' || *end == 'k')) scale = uint64_t{1} << 10;
  if (end && (*end == 'M' || *end == 'm')) scale = uint64_t{1} << 20;
  if (end && (*end == 'G' || *end == 'g')) scale = uint64_t{1} << 30;
  if (end == text || value < 0) {
    telemetry::warn(std::string("KILN_CACHE_MAX_BYTES='") + text + "' is not a size; using 1G");
    return uint64_t{1} << 30;
  }
  return static_cast<uint64_t>(value * static_cast<double>(scale));
}

// Reads a whole regular file, never through a symbolic link and never
// blocking on a pipe someone put there.
std::string read_entry_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP) throw EntryProblem("it is a symbolic link");
    if (errno == ENOENT) return {};
    throw EntryProblem(std::string("it cannot be opened: ") + std::strerror(errno));
  }
  struct stat status {};
  if (::fstat(fd, &status) != 0 || !S_ISREG(status.st_mode)) {
    ::close(fd);
    throw EntryProblem("it is not a regular file");
  }
  std::string bytes(static_cast<size_t>(status.st_size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t got = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    done += static_cast<size_t>(got);
  }
  ::close(fd);
  bytes.resize(done);
  return bytes;
}

bool write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t wrote = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return false;
    done += static_cast<size_t>(wrote);
  }
  return true;
}

std::string temporary_name() {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}();
  return std::string(temporary_prefix) + std::to_string(::getpid()) + "-" + std::to_string(salt) + "-" +
         std::to_string(counter.fetch_add(1));
}

// Why the directory must not be used, or empty. Creates it (0700) when missing.
std::string directory_problem(const std::string& directory) {
  std::error_code error;
  std::filesystem::path path(directory);
  if (path.has_parent_path() && !std::filesystem::exists(path.parent_path(), error))
    std::filesystem::create_directories(path.parent_path(), error);
  if (::mkdir(directory.c_str(), 0700) != 0 && errno != EEXIST)
    return std::string("it cannot be created: ") + std::strerror(errno);
  struct stat status {};
  if (::lstat(directory.c_str(), &status) != 0) return std::string("it cannot be read: ") + std::strerror(errno);
  if (S_ISLNK(status.st_mode)) return "it is a symbolic link";
  if (!S_ISDIR(status.st_mode)) return "it is not a directory";
  if (status.st_uid != ::geteuid())
    return "it belongs to user id " + std::to_string(status.st_uid) + ", not to this user (" +
           std::to_string(::geteuid()) + ")";
  if (status.st_mode & (S_IWGRP | S_IWOTH)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", status.st_mode & 07777);
    return std::string("it is writable by ") + ((status.st_mode & S_IWOTH) ? "others" : "its group") + " (mode " +
           mode + ")";
  }
  return {};
}

// With nanoseconds: entries written within one second still have an order.
double modified_seconds(const std::string& path) {
  struct stat status {};
  if (::lstat(path.c_str(), &status) != 0) return 0;
  return static_cast<double>(status.st_mtim.tv_sec) + 1e-9 * static_cast<double>(status.st_mtim.tv_nsec);
}

uint64_t size_of(const std::string& path) {
  struct stat status {};
  return ::lstat(path.c_str(), &status) == 0 ? static_cast<uint64_t>(status.st_size) : 0;
}

std::mutex process_cache_mutex;
std::shared_ptr<PersistentCache> process_cache;

}  // namespace

const char* build_id() { return KILN_BUILD_ID; }

PersistentOptions PersistentOptions::from_environment() {
  PersistentOptions options;
  if (const char* setting = std::getenv("KILN_CACHE")) {
    std::string value = setting;
    options.enabled = !(value == "off" || value == "0" || value == "false" || value == "no");
  }
  if (const char* directory = std::getenv("KILN_CACHE_DIR"); directory && *directory) {
    options.directory = directory;
  } else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    options.directory = std::string(xdg) + "/kiln";
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    options.directory = std::string(home) + "/.cache/kiln";
  } else {
    options.enabled = false;
  }
  if (const char* bound = std::getenv("KILN_CACHE_MAX_BYTES"); bound && *bound) options.max_bytes = parse_bytes(bound);
  return options;
}

std::string persistent_key(const ir::Graph& graph, const runtime::Backend& backend) {
  std::string bytes;
  detail::ByteWriter out(bytes);
  out.add_string(build_id());
  out.add_string(backend.name());
  out.add_string(backend.target());
  out.add(graph.structure_hash());
  out.add(graph.literal_hash());
  out.add_string(ops::graph_text(graph));
  XXH128_hash_t hash = XXH3_128bits(bytes.data(), bytes.size());
  char text[33];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(hash.high64),
                static_cast<unsigned long long>(hash.low64));
  return text;
}

PersistentCache::PersistentCache(PersistentOptions options) : options_(std::move(options)) {}

bool PersistentCache::usable() {
  std::call_once(checked_, [this] {
    if (!options_.enabled) return;
    std::string problem = directory_problem(options_.directory);
    if (problem.empty()) {
      usable_ = true;
      return;
    }
    telemetry::warn("the persistent compilation cache '" + options_.directory + "' is not used: " + problem +
                    ". Executables are compiled as if it were empty. Fix: make it a directory of your own with "
                    "mode 0700 (chmod 700), point KILN_CACHE_DIR at one, or set KILN_CACHE=off");
  });
  return usable_;
}

std::string PersistentCache::path_of(const std::string& key, const char* extension) const {
  return options_.directory + "/" + key + extension;
}

void PersistentCache::discard(const std::string& key, const std::string& reason) {
  ::unlink(path_of(key, entry_extension).c_str());
  ::unlink(path_of(key, hits_extension).c_str());
  log_line("discarded " + key + entry_extension + ": " + reason + "; compiling again");
}

std::optional<PersistentCache::Loaded> PersistentCache::load(const std::shared_ptr<const ir::Graph>& graph,
                                                             const std::string& key, const runtime::Backend& backend) {
  if (!usable()) return std::nullopt;
  std::string path = path_of(key, entry_extension);
  try {
    std::string bytes = read_entry_file(path);
    if (bytes.empty() && ::access(path.c_str(), F_OK) != 0) {
      log_line("miss " + key + " '" + graph->name + "'");
      return std::nullopt;
    }
    DecodedEntry entry = decode_entry(bytes);
    if (entry.header.build != build_id())
      throw EntryProblem("written by kiln build " + entry.header.build + ", this is " + build_id());
    if (entry.header.target != backend.target())
      throw EntryProblem("compiled for '" + entry.header.target + "', this machine is '" + backend.target() + "'");
    if (entry.header.key != key) throw EntryProblem("it holds key " + entry.header.key);
    Loaded loaded;
    try {
      loaded.executable = backend.load(graph, entry.executable);
    } catch (const std::exception& error) {
      throw EntryProblem(std::string("its code does not fit the graph: ") + error.what());
    }
    if (!loaded.executable) throw EntryProblem("the backend cannot load it");
    loaded.compile_seconds = entry.header.compile_seconds;
    // A byte per hit: its size counts them, its time is the entry's last use.
    int fd = ::open(path_of(key, hits_extension).c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
      [[maybe_unused]] ssize_t wrote = ::write(fd, "+", 1);
      ::close(fd);
    }
    log_line("hit " + key + " '" + graph->name + "' (compiling took " +
             std::to_string(entry.header.compile_seconds * 1e3) + " ms)");
    return loaded;
  } catch (const EntryProblem& problem) {
    discard(key, problem.what());
    return std::nullopt;
  }
}

void PersistentCache::store(const ir::Graph& graph, const std::string& key, const runtime::Backend& backend,
                            const runtime::Executable& executable, double compile_seconds) {
  if (!usable()) return;
  std::string saved = backend.save(executable);
  if (saved.empty()) return;
  EntryHeader header{build_id(), backend.target(), key, graph.name, compile_seconds, now_seconds()};
  std::string bytes = encode_entry(header, saved);
  std::string temporary = options_.directory + "/" + temporary_name();
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    log_line("cannot write " + temporary + ": " + std::strerror(errno));
    return;
  }
  bool written = write_all(fd, bytes);
  written = ::close(fd) == 0 && written;
  // rename() replaces atomically: a reader sees the old file or the new one,
  // never part of either; two writers of one key write the same bytes.
  if (!written || ::rename(temporary.c_str(), path_of(key, entry_extension).c_str()) != 0) {
    ::unlink(temporary.c_str());
    log_line("cannot write " + key + entry_extension + ": " + std::strerror(errno));
    return;
  }
  log_line("wrote " + key + " '" + graph.name + "' (" + std::to_string(bytes.size()) + " bytes)");
  evict(options_.max_bytes);
}

std::vector<EntryInfo> PersistentCache::entries(bool read, const runtime::Backend* check) {
  std::vector<EntryInfo> found;
  if (!usable()) return found;
  std::error_code error;
  for (const auto& item : std::filesystem::directory_iterator(options_.directory, error)) {
    std::string name = item.path().filename().string();
    if (name.size() <= std::strlen(entry_extension) || !name.ends_with(entry_extension)) continue;
    EntryInfo info;
    info.key = name.substr(0, name.size() - std::strlen(entry_extension));
    info.path = item.path().string();
    info.bytes = size_of(info.path);
    std::string hits = path_of(info.key, hits_extension);
    info.hits = static_cast<int64_t>(size_of(hits));
    info.last_used = std::max(modified_seconds(info.path), modified_seconds(hits));
    if (!read) {
      found.push_back(std::move(info));
      continue;
    }
    try {
      DecodedEntry entry = decode_entry(read_entry_file(info.path));
      info.function = entry.header.function;
      info.compile_seconds = entry.header.compile_seconds;
      info.created = entry.header.created;
      if (check && entry.header.build != build_id())
        throw EntryProblem("written by kiln build " + entry.header.build + ", this is " + build_id());
      if (check && entry.header.target != check->target())
        throw EntryProblem("compiled for '" + entry.header.target + "', this machine is '" + check->target() + "'");
      if (check && entry.header.key != info.key) throw EntryProblem("it holds key " + entry.header.key);
    } catch (const EntryProblem& problem) {
      info.problem = problem.what();
    }
    found.push_back(std::move(info));
  }
  std::sort(found.begin(), found.end(), [](const EntryInfo& a, const EntryInfo& b) { return a.key < b.key; });
  return found;
}

void PersistentCache::remove(const std::string& key) {
  ::unlink(path_of(key, entry_extension).c_str());
  ::unlink(path_of(key, hits_extension).c_str());
}

size_t PersistentCache::clear() {
  size_t removed = 0;
  if (!usable()) return removed;
  std::error_code error;
  std::vector<std::string> names;
  for (const auto& item : std::filesystem::directory_iterator(options_.directory, error))
    names.push_back(item.path().filename().string());
  for (const std::string& name : names) {
    bool entry = name.ends_with(entry_extension);
    if (entry || name.ends_with(hits_extension) || name.starts_with(temporary_prefix)) {
      if (::unlink((options_.directory + "/" + name).c_str()) == 0 && entry) ++removed;
    }
  }
  return removed;
}

void PersistentCache::evict(uint64_t max_bytes) {
  std::vector<EntryInfo> all = entries(/*read=*/false);
  uint64_t total = 0;
  for (const EntryInfo& info : all) total += info.bytes + static_cast<uint64_t>(info.hits);
  if (total <= max_bytes) return;
  std::sort(all.begin(), all.end(), [](const EntryInfo& a, const EntryInfo& b) { return a.last_used < b.last_used; });
  for (const EntryInfo& info : all) {
    if (total <= max_bytes) break;
    remove(info.key);
    total -= std::min(total, info.bytes + static_cast<uint64_t>(info.hits));
    log_line("evicted " + info.key + " (" + std::to_string(info.bytes) + " bytes, least recently used; bound " +
             std::to_string(max_bytes) + " bytes)");
  }
}

std::shared_ptr<PersistentCache> persistent_cache() {
  std::lock_guard lock(process_cache_mutex);
  if (!process_cache) process_cache = std::make_shared<PersistentCache>(PersistentOptions::from_environment());
  return process_cache;
}

void reset_persistent_cache(std::optional<PersistentOptions> options) {
  std::lock_guard lock(process_cache_mutex);
  process_cache =
      std::make_shared<PersistentCache>(options ? std::move(*options) : PersistentOptions::from_environment());
}

}  // namespace kiln::cache
