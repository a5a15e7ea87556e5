// Bundles of cache entries (see the header). The format:
//   "KILNBUNDLE\n", u32 format, u64 entry count, per entry its key and its
//   entry file's bytes, then the XXH3-128 of everything before it.
#include "cache/cache_bundle.h"

#include <xxhash.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "cache/backend_choice.h"
#include "cache/persistent_entry.h"
#include "core/byte_stream.h"
#include "core/error_format.h"

namespace kiln::cache {

namespace {

constexpr std::string_view magic = "KILNBUNDLE\n";
constexpr uint32_t format = 1;
constexpr size_t checksum_bytes = 16;

std::string checksum(std::string_view bytes) {
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, XXH3_128bits(bytes.data(), bytes.size()));
  return std::string(reinterpret_cast<const char*>(canonical.digest), checksum_bytes);
}

// Keys name files: 32 hexadecimal digits and nothing else, so a bundle cannot
// write outside the cache directory.
bool well_formed_key(std::string_view key) {
  return key.size() == 32 && key.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

[[noreturn]] void fail(const char* operation, const std::string& message, const std::string& hint, Location where) {
  throw Error(detail::format_error(operation, message, where, hint));
}

std::string read_whole(const std::string& file, Location where) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail("cache import", "cannot open the bundle '" + file + "'", "check the path", where);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void write_whole(const std::string& file, const std::string& bytes, Location where) {
  std::string temporary = file + ".partial";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) fail("cache export", "cannot write '" + temporary + "'", "check the directory and the free space", where);
  }
  if (std::rename(temporary.c_str(), file.c_str()) != 0)
    fail("cache export", "cannot rename '" + temporary + "' to '" + file + "'", "check the directory", where);
}

// Whether the cache holds a sound entry under `key` (never replaced by an import).
bool sound_already(PersistentCache& cache, const std::string& key, const runtime::Backend& backend) {
  try {
    return cache.check_entry(cache.entry_bytes(key), key, backend).empty();
  } catch (const std::exception&) {
    return false;  // unreadable or no regular file: the import's entry replaces it
  }
}

}  // namespace

BundleReport export_bundle(PersistentCache& cache, const std::string& file, const std::string& function,
                           const runtime::Backend& backend, Location where) {
  if (!cache.usable())
    fail("cache export", "the persistent cache '" + cache.options().directory + "' is not usable",
         "the warning above says why; KILN_CACHE=off turns it off", where);
  BundleReport report;
  std::string body;
  for (const EntryInfo& info : cache.entries(/*read=*/true)) {
    if (!function.empty() && info.function != function) continue;
    std::string bytes;
    try {
      bytes = cache.entry_bytes(info.key);
    } catch (const std::exception& problem) {
      report.problems.push_back(info.key + ": " + problem.what());
      ++report.refused;
      continue;
    }
    if (std::string problem = cache.check_entry(bytes, info.key, backend); !problem.empty()) {
      report.problems.push_back(info.key + ": " + problem);
      ++report.refused;
      continue;
    }
    std::string record;
    detail::ByteWriter out(record);
    out.add_string(info.key);
    out.add_string(bytes);
    body += record;
    ++report.entries;
  }
  std::string bytes;
  detail::ByteWriter out(bytes);
  bytes += magic;
  out.add(format);
  out.add(static_cast<uint64_t>(report.entries));
  bytes += body;
  bytes += checksum(bytes);
  write_whole(file, bytes, where);
  return report;
}

BundleReport import_bundle(PersistentCache& cache, const std::string& file, const runtime::Backend& backend,
                           Location where, const Progress& progress) {
  if (!cache.usable())
    fail("cache import", "the persistent cache '" + cache.options().directory + "' is not usable",
         "the warning above says why; KILN_CACHE=off turns it off", where);
  std::string bytes = read_whole(file, where);
  const std::string hint = "export the bundle again; a bundle is written by `kiln cache export`";
  if (!bytes.starts_with(magic)) fail("cache import", "'" + file + "' is not a kiln cache bundle", hint, where);
  if (bytes.size() < magic.size() + sizeof(uint32_t) + sizeof(uint64_t) + checksum_bytes)
    fail("cache import", "'" + file + "' is cut short", hint, where);
  std::string_view content(bytes.data(), bytes.size() - checksum_bytes);
  if (checksum(content) != std::string_view(bytes).substr(content.size()))
    fail("cache import", "'" + file + "' is corrupt: its checksum does not match", hint, where);
  BundleReport report;
  try {
    detail::ByteReader in(content.substr(magic.size()));
    if (auto version = in.read<uint32_t>(); version != format)
      fail("cache import",
           "'" + file + "' is bundle format " + std::to_string(version) + ", this kiln reads format " +
               std::to_string(format),
           hint, where);
    report.entries = in.read<uint64_t>();
    for (size_t k = 0; k < report.entries; ++k) {
      if (progress) progress(k, report.entries);
      std::string key(in.read_string());
      std::string entry(in.read_string());
      std::string problem = well_formed_key(key) ? cache.check_entry(entry, key, backend) : "not a cache key";
      if (!problem.empty()) {
        report.problems.push_back(key + ": " + problem);
        ++report.refused;
      } else if (sound_already(cache, key, backend)) {
        ++report.kept;
      } else if (std::string failure = cache.write_entry(key, entry); !failure.empty()) {
        report.problems.push_back(key + ": " + failure);
        ++report.refused;
      } else {
        ++report.imported;
      }
    }
    if (progress) progress(report.entries, report.entries);
    if (in.left() != 0) fail("cache import", "'" + file + "' has bytes after its last entry", hint, where);
  } catch (const detail::TruncatedBytes&) {
    fail("cache import", "'" + file + "' announces more entries than it holds", hint, where);
  }
  return report;
}

BundleReport export_entries(const std::string& file, const std::string& function, Location where) {
  return export_bundle(*persistent_cache(), file, function, default_backend(), where);
}

BundleReport import_entries(const std::string& file, Location where) {
  return import_bundle(*persistent_cache(), file, default_backend(), where);
}

}  // namespace kiln::cache
