// The persistent cache's directory, its files and their checks (see the
// header). The directory is opened once, its owner and mode checked on the
// open descriptor, and every file is then reached through that descriptor by
// its bare name (openat, renameat, unlinkat): renaming or replacing the
// directory's path afterwards cannot redirect a read or a write.
#include "cache/persistent_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>

#include "cache/build_id.h"  // generated: cmake/build_id.cmake
#include "cache/persistent_entry.h"
#include "core/byte_stream.h"
#include "ops/common/graph_text.h"
#include "telemetry/telemetry.h"

namespace kiln::cache {

namespace {

constexpr std::string_view entry_extension = ".kiln";
constexpr std::string_view hits_extension = ".hits";
constexpr std::string_view temporary_prefix = ".tmp-";
// A temporary file this old belongs to a writer that died.
constexpr double abandoned_seconds = 3600;

/// Reading failed for a reason that says nothing about the file's content
/// (too many open files, no memory): the entry is left alone.
class ReadFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void log_line(const std::string& text) { telemetry::log(telemetry::log_cache, "persistent cache: " + text); }

uint64_t parse_bytes(const char* text) {
  char* end = nullptr;
  double value = std::strtod(text, &end);
  double scale = 1;
  std::string suffix = end ? end : "";
  if (suffix == "K" || suffix == "k") scale = 0x1p10;
  if (suffix == "M" || suffix == "m") scale = 0x1p20;
  if (suffix == "G" || suffix == "g") scale = 0x1p30;
  bool known = suffix.empty() || scale > 1;
  if (end == text || !known || !std::isfinite(value) || value < 0 || value * scale >= 0x1p63) {
    telemetry::warn(std::string("KILN_CACHE_MAX_BYTES='") + text +
                    "' is not a size (a number of bytes, optionally with K, M or G); using 1G");
    return uint64_t{1} << 30;
  }
  return static_cast<uint64_t>(value * scale);
}

std::string temporary_name() {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}();
  return std::string(temporary_prefix) + std::to_string(::getpid()) + "-" + std::to_string(salt) + "-" +
         std::to_string(counter.fetch_add(1));
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

std::string mode_text(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// An entry this process may run: written by this build, for this target, under its name.
void check_header(const EntryHeader& header, const std::string& key, const runtime::Backend& backend) {
  if (header.build != build_id())
    throw EntryProblem("written by kiln build " + header.build + ", this is " + build_id());
  if (header.target != backend.target())
    throw EntryProblem("compiled for '" + header.target + "', this machine is '" + backend.target() + "'");
  if (header.key != key) throw EntryProblem("it holds key " + header.key);
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

PersistentCache::~PersistentCache() {
  if (directory_fd_ >= 0) ::close(directory_fd_);
}

std::string PersistentCache::open_directory() {
  const std::string& directory = options_.directory;
  if (options_.create) {
    std::error_code error;
    std::filesystem::path path(directory);
    if (path.has_parent_path() && !std::filesystem::exists(path.parent_path(), error))
      std::filesystem::create_directories(path.parent_path(), error);
    if (::mkdir(directory.c_str(), 0700) != 0 && errno != EEXIST)
      return std::string("it cannot be created: ") + std::strerror(errno);
  }
  int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    int error = errno;
    struct stat link {};
    bool symbolic = ::lstat(directory.c_str(), &link) == 0 && S_ISLNK(link.st_mode);
    if (error == ELOOP || symbolic) return "it is a symbolic link";
    if (error == ENOTDIR) return "it is not a directory";
    return std::string("it cannot be opened: ") + std::strerror(error);
  }
  struct stat status {};
  std::string problem;
  if (::fstat(fd, &status) != 0) {
    problem = std::string("it cannot be read: ") + std::strerror(errno);
  } else if (status.st_uid != ::geteuid()) {
    problem = "it belongs to user id " + std::to_string(status.st_uid) + ", not to this user (" +
              std::to_string(::geteuid()) + ")";
  } else if (status.st_mode & (S_IWGRP | S_IWOTH)) {
    problem = std::string("it is writable by ") + ((status.st_mode & S_IWOTH) ? "others" : "its group") + " (mode " +
              mode_text(status.st_mode) + ")";
  }
  if (!problem.empty()) {
    ::close(fd);
    return problem;
  }
  directory_fd_ = fd;
  return {};
}

bool PersistentCache::usable() {
  std::call_once(checked_, [this] {
    if (!options_.enabled) return;
    std::string problem = open_directory();
    if (problem.empty()) return;
    telemetry::warn("the persistent compilation cache '" + options_.directory + "' is not used: " + problem +
                    ". Executables are compiled as if it were empty. Fix: make it a directory of your own with "
                    "mode 0700 (chmod 700), point KILN_CACHE_DIR at one, or set KILN_CACHE=off");
  });
  return directory_fd_ >= 0;
}

std::string PersistentCache::path_of(const std::string& name) const { return options_.directory + "/" + name; }

// The whole file, never through a symbolic link and never blocking on a pipe
// someone put there; empty when there is no such file.
std::string PersistentCache::read_file(const std::string& name) const {
  int fd = ::openat(directory_fd_, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP) throw EntryProblem("it is a symbolic link");
    if (errno == ENOENT) return {};
    throw ReadFailure(std::string("it cannot be opened: ") + std::strerror(errno));
  }
  struct stat status {};
  if (::fstat(fd, &status) != 0 || !S_ISREG(status.st_mode)) {
    ::close(fd);
    throw EntryProblem("it is not a regular file");
  }
  std::string bytes;
  try {
    bytes.resize(static_cast<size_t>(status.st_size));
  } catch (const std::bad_alloc&) {
    ::close(fd);
    throw ReadFailure("it is too large to read into memory");
  }
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

bool PersistentCache::exists(const std::string& name) const {
  struct stat status {};
  return ::fstatat(directory_fd_, name.c_str(), &status, AT_SYMLINK_NOFOLLOW) == 0;
}

void PersistentCache::discard(const std::string& key, const std::string& reason) {
  remove(key);
  log_line("discarded " + key + std::string(entry_extension) + ": " + reason + "; compiling again");
}

std::optional<PersistentCache::Loaded> PersistentCache::load(const std::shared_ptr<const ir::Graph>& graph,
                                                             const std::string& key, const runtime::Backend& backend) {
  if (!usable()) return std::nullopt;
  std::string name = key + std::string(entry_extension);
  try {
    std::string bytes = read_file(name);
    if (bytes.empty() && !exists(name)) {
      log_line("miss " + key + " '" + graph->name + "'");
      return std::nullopt;
    }
    DecodedEntry entry = decode_entry(bytes);
    check_header(entry.header, key, backend);
    Loaded loaded;
    try {
      loaded.executable = backend.load(graph, entry.executable);
    } catch (const runtime::SavedExecutableMismatch& mismatch) {
      throw EntryProblem(std::string("its code does not fit the graph: ") + mismatch.what());
    }
    if (!loaded.executable) throw EntryProblem("the backend cannot load it");
    loaded.compile_seconds = entry.header.compile_seconds;
    // A byte per hit: its size counts them, its time is the entry's last use.
    int fd = ::openat(directory_fd_, (key + std::string(hits_extension)).c_str(),
                      O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
      [[maybe_unused]] ssize_t wrote = ::write(fd, "+", 1);
      ::close(fd);
    }
    log_line("hit " + key + " '" + graph->name + "' (compiling took " +
             std::to_string(entry.header.compile_seconds * 1e3) + " ms)");
    return loaded;
  } catch (const EntryProblem& problem) {
    discard(key, problem.what());
  } catch (const std::exception& failure) {
    // Nothing says the entry is bad (a full descriptor table, a linker
    // failing in this process): it stays for others.
    log_line("could not load " + name + ": " + failure.what() + "; compiling instead");
  }
  return std::nullopt;
}

void PersistentCache::store(const ir::Graph& graph, const std::string& key, const runtime::Backend& backend,
                            const runtime::Executable& executable, double compile_seconds) {
  if (!usable()) return;
  try {
    std::string saved = backend.save(executable);
    if (saved.empty()) return;
    EntryHeader header{build_id(), backend.target(), key,
                       graph.name, compile_seconds,  static_cast<int64_t>(now_seconds())};
    std::string bytes = encode_entry(header, saved);
    std::string temporary = temporary_name();
    int fd = ::openat(directory_fd_, temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      log_line("cannot write " + path_of(temporary) + ": " + std::strerror(errno));
      return;
    }
    bool written = write_all(fd, bytes);
    written = ::close(fd) == 0 && written;
    // renameat replaces atomically: a reader sees the old file or the new
    // one, never part of either; two writers of one key write equivalent code.
    std::string name = key + std::string(entry_extension);
    if (!written || ::renameat(directory_fd_, temporary.c_str(), directory_fd_, name.c_str()) != 0) {
      int error = errno;
      ::unlinkat(directory_fd_, temporary.c_str(), 0);
      log_line("cannot write " + name + ": " + std::strerror(error));
      return;
    }
    int hits = ::openat(directory_fd_, (key + std::string(hits_extension)).c_str(),
                        O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (hits >= 0) ::close(hits);
    log_line("wrote " + key + " '" + graph.name + "' (" + std::to_string(bytes.size()) + " bytes)");
    evict(options_.max_bytes);
  } catch (const std::exception& failure) {
    log_line("could not save " + key + ": " + failure.what());
  }
}

std::vector<std::string> PersistentCache::names() const {
  std::vector<std::string> found;
  int fd = ::dup(directory_fd_);
  if (fd < 0) return found;
  DIR* listing = ::fdopendir(fd);
  if (!listing) {
    ::close(fd);
    return found;
  }
  ::rewinddir(listing);
  while (dirent* item = ::readdir(listing)) found.emplace_back(item->d_name);
  ::closedir(listing);
  return found;
}

// With nanoseconds: entries written within one second still have an order.
PersistentCache::FileStatus PersistentCache::status_of(const std::string& name) const {
  struct stat status {};
  if (::fstatat(directory_fd_, name.c_str(), &status, AT_SYMLINK_NOFOLLOW) != 0) return {};
  return {static_cast<uint64_t>(status.st_size),
          static_cast<double>(status.st_mtim.tv_sec) + 1e-9 * static_cast<double>(status.st_mtim.tv_nsec)};
}

std::vector<EntryInfo> PersistentCache::entries(bool read, const runtime::Backend* check) {
  std::vector<EntryInfo> found;
  if (!usable()) return found;
  for (const std::string& name : names()) {
    if (name.size() <= entry_extension.size() || !name.ends_with(entry_extension)) continue;
    EntryInfo info;
    info.key = name.substr(0, name.size() - entry_extension.size());
    info.path = path_of(name);
    FileStatus entry = status_of(name), hits = status_of(info.key + std::string(hits_extension));
    info.bytes = entry.bytes;
    info.hits = static_cast<int64_t>(hits.bytes);
    info.last_used = std::max(entry.modified, hits.modified);
    if (!read) {
      found.push_back(std::move(info));
      continue;
    }
    try {
      DecodedEntry decoded = decode_entry(read_file(name));
      info.function = decoded.header.function;
      info.compile_seconds = decoded.header.compile_seconds;
      info.created = decoded.header.created;
      if (check) check_header(decoded.header, info.key, *check);
    } catch (const std::exception& problem) {
      info.problem = problem.what();
    }
    found.push_back(std::move(info));
  }
  std::sort(found.begin(), found.end(), [](const EntryInfo& a, const EntryInfo& b) { return a.key < b.key; });
  return found;
}

void PersistentCache::remove(const std::string& key) {
  if (!usable()) return;
  ::unlinkat(directory_fd_, (key + std::string(entry_extension)).c_str(), 0);
  ::unlinkat(directory_fd_, (key + std::string(hits_extension)).c_str(), 0);
}

size_t PersistentCache::clear() {
  size_t removed = 0;
  if (!usable()) return removed;
  for (const std::string& name : names()) {
    bool entry = name.ends_with(entry_extension);
    if (entry || name.ends_with(hits_extension) || name.starts_with(temporary_prefix))
      if (::unlinkat(directory_fd_, name.c_str(), 0) == 0 && entry) ++removed;
  }
  return removed;
}

void PersistentCache::evict(uint64_t max_bytes) {
  if (!usable()) return;
  std::vector<EntryInfo> all = entries(/*read=*/false);
  uint64_t total = 0;
  double now = now_seconds();
  for (const std::string& name : names()) {
    if (!name.starts_with(temporary_prefix)) continue;
    FileStatus temporary = status_of(name);
    if (now - temporary.modified > abandoned_seconds && ::unlinkat(directory_fd_, name.c_str(), 0) == 0) continue;
    total += temporary.bytes;
  }
  for (const EntryInfo& info : all) total += info.bytes + static_cast<uint64_t>(info.hits);
  if (total <= max_bytes) return;
  std::stable_sort(all.begin(), all.end(),
                   [](const EntryInfo& a, const EntryInfo& b) { return a.last_used < b.last_used; });
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
