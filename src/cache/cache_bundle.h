// Bundles: the entries of a warm persistent cache in one self-checking file,
// to ship to another machine of the same kind (baked into a container image,
// carried between CI runs). Importing validates each entry as a load would —
// format, checksum, signature, kiln build, target and CPU features — and
// never replaces a sound entry, nor writes a bad one.
#pragma once

#include <string>

#include "cache/persistent_cache.h"
#include "kiln/cache.h"

namespace kiln::cache {

/// Writes the sound entries of `cache` (those of `function` alone, when not
/// empty) to `file`; throws kiln::Error when it cannot.
BundleReport export_bundle(PersistentCache& cache, const std::string& file, const std::string& function,
                           const runtime::Backend& backend, Location where);
/// Adds the sound entries of the bundle `file` to `cache`; throws
/// kiln::Error when the file is no intact bundle.
BundleReport import_bundle(PersistentCache& cache, const std::string& file, const runtime::Backend& backend,
                           Location where, const Progress& progress = {});

}  // namespace kiln::cache
