// One file of the persistent cache: a header saying which build of kiln
// wrote it, for which target and under which key, a checksum over all of it,
// the saved executable (runtime::Backend::save), and, when the writer had a
// signing key, an HMAC-SHA256 tag over everything before it. Any file that
// is not exactly such an entry — empty, cut short, one bit flipped, another
// format, garbage — fails to decode with the reason, and is never run; with
// a key, neither is an entry whose tag does not verify.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace kiln::cache {

struct EntryHeader {
  std::string build;     // KILN_BUILD_ID of the writer
  std::string target;    // runtime::Backend::target() of the writer
  std::string key;       // persistent_key(), also the file's name
  std::string function;  // the jitted function's name, for `kiln cache ls`
  double compile_seconds = 0;
  int64_t created = 0;  // seconds since the epoch
};

struct DecodedEntry {
  EntryHeader header;
  std::string executable;
  std::string_view signed_bytes;  // what the tag covers (a view of the decoded bytes)
  std::string_view tag;           // empty when the writer had no key
};

/// Why a file is not an entry this process may load.
class EntryProblem : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct SigningKey;

/// The entry's bytes, signed under `key` when there is one.
std::string encode_entry(const EntryHeader& header, std::string_view executable, const SigningKey* key);
/// Throws EntryProblem when `bytes` are not a well-formed entry. The result views `bytes`.
DecodedEntry decode_entry(std::string_view bytes);
/// Throws EntryProblem unless the entry's tag verifies under `key` (none: nothing to check).
void check_signature(const DecodedEntry& entry, const SigningKey* key);

}  // namespace kiln::cache
