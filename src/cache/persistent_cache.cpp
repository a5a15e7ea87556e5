// The persistent cache's entries: keys, loads, stores, listing and eviction
// (see the header; the directory's files are reached through
// cache/cache_directory.h).
#include "cache/persistent_cache.h"

#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>

#include "cache/build_id.h"  // generated: cmake/build_id.cmake
#include "cache/persistent_entry.h"
#include "core/byte_stream.h"
#include "ops/common/graph_text.h"
#include "telemetry/telemetry.h"

namespace kiln::cache {

namespace {

constexpr std::string_view entry_extension = ".kiln";
constexpr std::string_view hits_extension = ".hits";
// A temporary file this old belongs to a writer that died.
constexpr double abandoned_seconds = 3600;

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
  if (const char* key = std::getenv("KILN_CACHE_KEY_FILE"); key && *key) options.key_file = key;
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
  // Source lines and names are not part of the code: an edit above a jitted
  // function, or a rename, keeps its entries.
  out.add_string(ops::graph_text(graph, /*sources=*/false));
  XXH128_hash_t hash = XXH3_128bits(bytes.data(), bytes.size());
  char text[33];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(hash.high64),
                static_cast<unsigned long long>(hash.low64));
  return text;
}

PersistentCache::PersistentCache(PersistentOptions options) : options_(std::move(options)) {}

PersistentCache::~PersistentCache() = default;

std::string PersistentCache::open() {
  if (!options_.key_file.empty()) {
    std::string problem;
    key_ = read_signing_key(options_.key_file, problem);
    if (!key_) return "its signing key KILN_CACHE_KEY_FILE=" + options_.key_file + " is refused: " + problem;
  }
  return directory_.open(options_.directory, options_.create, /*shared=*/key_.has_value());
}

bool PersistentCache::usable() {
  std::call_once(checked_, [this] {
    if (!options_.enabled) return;
    std::string problem = open();
    if (problem.empty()) return;
    key_.reset();
    telemetry::warn("the persistent compilation cache '" + options_.directory + "' is not used: " + problem +
                    ". Executables are compiled as if it were empty. Fix: make it a directory of your own with "
                    "mode 0700 (chmod 700), or sign its entries (KILN_CACHE_KEY_FILE), point KILN_CACHE_DIR at "
                    "another, or set KILN_CACHE=off");
  });
  return directory_.is_open();
}

void PersistentCache::discard(const std::string& key, const std::string& reason) {
  remove(key);
  log_line("discarded " + key + std::string(entry_extension) + ": " + reason + "; compiling again");
}

std::string PersistentCache::check_entry(std::string_view bytes, const std::string& key,
                                         const runtime::Backend& backend) const {
  try {
    DecodedEntry entry = decode_entry(bytes);
    check_signature(entry, key_ ? &*key_ : nullptr);
    check_header(entry.header, key, backend);
    return {};
  } catch (const EntryProblem& problem) {
    return problem.what();
  }
}

std::optional<PersistentCache::Loaded> PersistentCache::load(const std::shared_ptr<const ir::Graph>& graph,
                                                             const std::string& key, const runtime::Backend& backend) {
  if (!usable()) return std::nullopt;
  std::string name = key + std::string(entry_extension);
  try {
    std::string bytes = directory_.read(name);
    if (bytes.empty() && !directory_.exists(name)) {
      log_line("miss " + key + " '" + graph->name + "'");
      return std::nullopt;
    }
    // The signature is checked before anything of the entry is used: an
    // entry that does not verify is never linked, let alone run.
    DecodedEntry entry = decode_entry(bytes);
    check_signature(entry, key_ ? &*key_ : nullptr);
    check_header(entry.header, key, backend);
    Loaded loaded;
    try {
      loaded.executable = backend.load(graph, entry.executable);
    } catch (const runtime::SavedExecutableMismatch& mismatch) {
      throw EntryProblem(std::string("its code does not fit the graph: ") + mismatch.what());
    }
    if (!loaded.executable) throw EntryProblem("the backend cannot load it");
    loaded.compile_seconds = entry.header.compile_seconds;
    directory_.append_byte(key + std::string(hits_extension));
    log_line("hit " + key + " '" + graph->name + "' (compiling took " +
             std::to_string(entry.header.compile_seconds * 1e3) + " ms)");
    return loaded;
  } catch (const EntryProblem& problem) {
    discard(key, problem.what());
  } catch (const FileProblem& problem) {
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
    std::string bytes = encode_entry(header, saved, key_ ? &*key_ : nullptr);
    if (std::string problem = write_entry(key, bytes); !problem.empty()) {
      log_line(problem);
      return;
    }
    log_line("wrote " + key + " '" + graph.name + "' (" + std::to_string(bytes.size()) + " bytes" +
             (key_ ? ", signed" : "") + ")");
    evict(options_.max_bytes);
  } catch (const std::exception& failure) {
    log_line("could not save " + key + ": " + failure.what());
  }
}

std::string PersistentCache::entry_bytes(const std::string& key) const {
  return directory_.is_open() ? directory_.read(key + std::string(entry_extension)) : std::string();
}

std::string PersistentCache::write_entry(const std::string& key, const std::string& bytes) {
  if (!usable()) return "the cache directory is not usable";
  if (std::string problem = directory_.write(key + std::string(entry_extension), bytes); !problem.empty())
    return problem;
  directory_.truncate(key + std::string(hits_extension));
  return {};
}

std::vector<EntryInfo> PersistentCache::entries(bool read, const runtime::Backend* check, const Progress& progress) {
  std::vector<EntryInfo> found;
  if (!usable()) return found;
  std::vector<std::string> names = directory_.names();
  std::erase_if(names, [](const std::string& name) {
    return name.size() <= entry_extension.size() || !name.ends_with(entry_extension);
  });
  for (const std::string& name : names) {
    if (progress) progress(found.size(), names.size());
    EntryInfo info;
    info.key = name.substr(0, name.size() - entry_extension.size());
    info.path = directory_.path_of(name);
    CacheDirectory::Status entry = directory_.status(name),
                           hits = directory_.status(info.key + std::string(hits_extension));
    info.bytes = entry.bytes;
    info.hits = static_cast<int64_t>(hits.bytes);
    info.last_used = std::max(entry.modified, hits.modified);
    if (read) {
      try {
        std::string bytes = directory_.read(name);
        DecodedEntry decoded = decode_entry(bytes);
        info.function = decoded.header.function;
        info.compile_seconds = decoded.header.compile_seconds;
        info.created = decoded.header.created;
        info.signature = decoded.tag.empty() ? "unsigned" : "signed";
        check_signature(decoded, key_ ? &*key_ : nullptr);
        if (check) check_header(decoded.header, info.key, *check);
      } catch (const std::exception& problem) {
        info.problem = problem.what();
      }
    }
    found.push_back(std::move(info));
  }
  if (progress) progress(found.size(), names.size());
  std::sort(found.begin(), found.end(), [](const EntryInfo& a, const EntryInfo& b) { return a.key < b.key; });
  return found;
}

void PersistentCache::remove(const std::string& key) {
  if (!usable()) return;
  directory_.remove(key + std::string(entry_extension));
  directory_.remove(key + std::string(hits_extension));
}

size_t PersistentCache::clear() {
  size_t removed = 0;
  if (!usable()) return removed;
  for (const std::string& name : directory_.names()) {
    bool entry = name.ends_with(entry_extension);
    if (entry || name.ends_with(hits_extension) || CacheDirectory::is_temporary(name))
      if (directory_.remove(name) && entry) ++removed;
  }
  return removed;
}

void PersistentCache::evict(uint64_t max_bytes) {
  if (!usable()) return;
  std::vector<EntryInfo> all = entries(/*read=*/false);
  uint64_t total = 0;
  double now = now_seconds();
  for (const std::string& name : directory_.names()) {
    if (!CacheDirectory::is_temporary(name)) continue;
    CacheDirectory::Status temporary = directory_.status(name);
    if (now - temporary.modified > abandoned_seconds && directory_.remove(name)) continue;
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
