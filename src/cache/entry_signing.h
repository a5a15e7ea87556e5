// Signed entries. A cache directory that others can write to (a team's
// share, a mounted volume, an imported bundle) holds native code that kiln
// links and runs: whoever writes an entry could run code in every process
// that loads it. With KILN_CACHE_KEY_FILE naming a secret of at least 32
// bytes, private to the user, every entry written carries an HMAC-SHA256 of
// its contents under that key (OpenSSL's libcrypto), and only entries whose
// tag verifies are loaded.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kiln::cache {

/// The bytes of an HMAC-SHA256 tag.
inline constexpr size_t tag_bytes = 32;

struct SigningKey {
  std::string secret;
  std::string file;  // where it came from, for messages
};

/// Reads the key file: it must be a regular file of this user's, readable
/// and writable by no one else, holding at least 32 bytes. Returns the key,
/// or sets `problem` to why it is refused.
std::optional<SigningKey> read_signing_key(const std::string& file, std::string& problem);

/// HMAC-SHA256 of `bytes` under `key`.
std::string sign(const SigningKey& key, std::string_view bytes);
/// Whether `tag` is the tag of `bytes` under `key` (compared in constant time).
bool verifies(const SigningKey& key, std::string_view bytes, std::string_view tag);

}  // namespace kiln::cache
