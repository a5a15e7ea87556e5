// The persistent compilation cache: executables saved to a directory that
// later processes load instead of compiling (DESIGN §3.8). One file per
// executable, named by a digest of everything its code depends on; written
// atomically (a private temporary file, then a rename), checked on load
// (format, checksum, kiln build, target and CPU features, key, the code's fit
// to the graph), discarded and recompiled when anything is off. Many
// processes may share a directory. The directory must be the user's own and
// writable by no one else, or it is not used at all.
//
// KILN_CACHE=off disables it; KILN_CACHE_DIR (default $XDG_CACHE_HOME/kiln,
// else ~/.cache/kiln) places it; KILN_CACHE_MAX_BYTES bounds it (default
// 1 GiB; K, M and G suffixes), least recently used entries going first;
// KILN_CACHE_KEY_FILE signs every entry written and loads only entries
// signed with that key (cache/entry_signing.h), and then the directory may
// be shared with others.
//
// The key of an entry holds what its code depends on and nothing else: not
// the source lines of the graph's nodes, not its file paths, not the
// function's name, so code added above a jitted function, or a rename,
// finds the entries compiled before.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cache/cache_directory.h"
#include "cache/entry_signing.h"
#include "runtime/executable.h"

namespace kiln::cache {

struct PersistentOptions {
  bool enabled = true;
  std::string directory;
  uint64_t max_bytes = uint64_t{1} << 30;
  bool create = true;    // make the directory (0700) when it is missing
  std::string key_file;  // KILN_CACHE_KEY_FILE: sign entries, load only signed ones
  /// From KILN_CACHE, KILN_CACHE_DIR, KILN_CACHE_MAX_BYTES and KILN_CACHE_KEY_FILE.
  static PersistentOptions from_environment();
};

/// One file of the directory, as `kiln cache ls` and `verify` show it.
struct EntryInfo {
  std::string key;
  std::string path;
  uint64_t bytes = 0;
  double last_used = 0;  // seconds since the epoch: the last hit, else the write
  int64_t hits = 0;
  std::string function;
  double compile_seconds = 0;
  int64_t created = 0;
  std::string signature;  // "signed" or "unsigned"
  std::string problem;    // why this process would discard it; empty when sound
};

/// Everything the code of `graph` compiled by `backend` depends on, as 32
/// hex digits: the graph (structure, every literal's exact value, dtypes and
/// shapes of its inputs; not its source lines or names), kiln's build, and
/// the backend's target.
std::string persistent_key(const ir::Graph& graph, const runtime::Backend& backend);
/// The build of kiln this process runs: its version and a digest of its sources.
const char* build_id();

/// Called with (entries done, entries in all) by long walks over a cache.
using Progress = std::function<void(size_t done, size_t total)>;

class PersistentCache {
 public:
  explicit PersistentCache(PersistentOptions options);
  ~PersistentCache();
  PersistentCache(const PersistentCache&) = delete;
  PersistentCache& operator=(const PersistentCache&) = delete;
  const PersistentOptions& options() const { return options_; }
  /// Whether entries are read and written: enabled, the signing key (if one
  /// is named) accepted, and the directory exists (created 0700 if missing),
  /// is a directory and no symbolic link, and — unless entries are signed —
  /// belongs to this user and is writable by no one else. Checked once, on
  /// the descriptor every later access goes through; a refusal warns once.
  bool usable();
  /// Whether entries are signed and only signed ones load.
  bool signing() const { return key_.has_value(); }

  struct Loaded {
    std::shared_ptr<const runtime::Executable> executable;
    double compile_seconds = 0;  // what compiling it took when it was saved
  };
  /// The executable saved under `key`, linked; nothing when there is none,
  /// when it was bad (removed, with a KILN_LOG=cache line saying why) or
  /// when it could not be read or linked here (kept for others). Never throws.
  std::optional<Loaded> load(const std::shared_ptr<const ir::Graph>& graph, const std::string& key,
                             const runtime::Backend& backend);
  /// Saves a freshly compiled executable under `key`, then evicts down to
  /// the bound. A failure is logged, never thrown.
  void store(const ir::Graph& graph, const std::string& key, const runtime::Backend& backend,
             const runtime::Executable& executable, double compile_seconds);

  /// Why the bytes of an entry may not be loaded under `key` by this
  /// process (format, checksum, signature, build, target); empty when they may.
  std::string check_entry(std::string_view bytes, const std::string& key, const runtime::Backend& backend) const;
  /// The bytes of the entry saved under `key` (empty when there is none).
  std::string entry_bytes(const std::string& key) const;
  /// Writes entry bytes under `key` as they are; returns why not, or nothing.
  std::string write_entry(const std::string& key, const std::string& bytes);

  /// Every entry: with `read`, its header read too (a malformed file's
  /// problem reported); with `check`, also checked against this build and
  /// that backend's target, as a load would. `progress` hears of each entry read.
  std::vector<EntryInfo> entries(bool read, const runtime::Backend* check = nullptr, const Progress& progress = {});
  /// Removes one entry and its hit count.
  void remove(const std::string& key);
  /// Removes every entry and leftover temporary file; returns the entries removed.
  size_t clear();
  /// Removes least recently used entries (and temporary files abandoned by
  /// writers that died) until the directory holds at most `max_bytes`.
  void evict(uint64_t max_bytes);

 private:
  std::string open();
  void discard(const std::string& key, const std::string& reason);

  PersistentOptions options_;
  std::once_flag checked_;
  std::optional<SigningKey> key_;
  CacheDirectory directory_;
};

/// The process's persistent cache.
std::shared_ptr<PersistentCache> persistent_cache();
/// Replaces it (tests and tools): with `options`, or from the environment again.
void reset_persistent_cache(std::optional<PersistentOptions> options = std::nullopt);

}  // namespace kiln::cache
