// The persistent compilation cache from C++: ship a warm cache as one file.
//
//   kiln::cache::export_entries("warm.kilnbundle");          // on a machine that ran the program
//   kiln::cache::import_entries("warm.kilnbundle");          // on a fresh one of the same kind
//
// The same as `kiln cache export FILE [--function NAME]` and `kiln cache
// import FILE`. Both use the process's cache directory (KILN_CACHE_DIR) and
// its signing key (KILN_CACHE_KEY_FILE).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "kiln/array.h"

namespace kiln::cache {

struct BundleReport {
  size_t entries = 0;                 // exported, or found in the bundle
  size_t imported = 0;                // written into the cache
  size_t kept = 0;                    // already in the cache, sound: left as they were
  size_t refused = 0;                 // not sound for this process (another build or target, unsigned, forged, corrupt)
  std::vector<std::string> problems;  // "KEY: why", for each refused entry
};

/// Writes the cache's sound entries (only those of the jitted function
/// `function`, when given) to `file`. Throws kiln::Error when it cannot.
BundleReport export_entries(const std::string& file, const std::string& function = "",
                            Location where = Location::current());
/// Adds the sound entries of a bundle to the cache. Throws kiln::Error when
/// `file` is not an intact bundle.
BundleReport import_entries(const std::string& file, Location where = Location::current());

}  // namespace kiln::cache
