// The entry format (see the header):
//   "KILNCACHE\n", u32 format, u64 body length, 16-byte XXH3-128 of the body, body,
//   u8 tag length (0 or 32), tag
// where the body holds the header's fields and the saved executable, and the
// tag is the HMAC-SHA256 of everything before the tag length.
#include "cache/persistent_entry.h"

#include <xxhash.h>

#include <cstring>

#include "cache/entry_signing.h"
#include "core/byte_stream.h"

namespace kiln::cache {

namespace {

constexpr std::string_view magic = "KILNCACHE\n";
constexpr uint32_t format = 2;
constexpr size_t checksum_bytes = 16;
constexpr size_t prefix_bytes = magic.size() + sizeof(uint32_t) + sizeof(uint64_t) + checksum_bytes;

std::string checksum(std::string_view body) {
  XXH128_hash_t hash = XXH3_128bits(body.data(), body.size());
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, hash);
  return std::string(reinterpret_cast<const char*>(canonical.digest), checksum_bytes);
}

}  // namespace

std::string encode_entry(const EntryHeader& header, std::string_view executable, const SigningKey* key) {
  std::string body;
  detail::ByteWriter out(body);
  out.add_string(header.build);
  out.add_string(header.target);
  out.add_string(header.key);
  out.add_string(header.function);
  out.add(header.compile_seconds);
  out.add(header.created);
  out.add_string(executable);
  std::string bytes;
  detail::ByteWriter file(bytes);
  bytes += magic;
  file.add(format);
  file.add(static_cast<uint64_t>(body.size()));
  bytes += checksum(body);
  bytes += body;
  std::string tag = key ? sign(*key, bytes) : std::string();
  bytes.push_back(static_cast<char>(tag.size()));
  bytes += tag;
  return bytes;
}

DecodedEntry decode_entry(std::string_view bytes) {
  if (bytes.empty()) throw EntryProblem("the file is empty");
  if (bytes.size() < magic.size() || bytes.substr(0, magic.size()) != magic)
    throw EntryProblem("the file is not a kiln cache entry");
  if (bytes.size() < prefix_bytes) throw EntryProblem("the file is cut short in its header");
  detail::ByteReader prefix(bytes.substr(magic.size()));
  auto version = prefix.read<uint32_t>();
  if (version != format)
    throw EntryProblem("entry format " + std::to_string(version) + ", this kiln reads format " +
                       std::to_string(format));
  auto length = prefix.read<uint64_t>();
  std::string_view rest = bytes.substr(prefix_bytes);
  if (rest.size() <= length)
    throw EntryProblem("the body is " + std::to_string(rest.size()) + " bytes, its header says " +
                       std::to_string(length) + " and a tag follows (cut short)");
  std::string_view body = rest.substr(0, length);
  auto tag_length = static_cast<uint8_t>(rest[length]);
  std::string_view tag = rest.substr(length + 1);
  if ((tag_length != 0 && tag_length != tag_bytes) || tag.size() != tag_length)
    throw EntryProblem("its tag is " + std::to_string(tag.size()) + " bytes, its header says " +
                       std::to_string(tag_length) + " (cut short or appended to)");
  if (checksum(body) != bytes.substr(prefix_bytes - checksum_bytes, checksum_bytes))
    throw EntryProblem("the checksum does not match: the file is corrupt");
  try {
    detail::ByteReader in(body);
    DecodedEntry entry;
    entry.signed_bytes = bytes.substr(0, prefix_bytes + length);
    entry.tag = tag;
    entry.header.build = in.read_string();
    entry.header.target = in.read_string();
    entry.header.key = in.read_string();
    entry.header.function = in.read_string();
    entry.header.compile_seconds = in.read<double>();
    entry.header.created = in.read<int64_t>();
    entry.executable = in.read_string();
    if (in.left() != 0) throw EntryProblem("bytes follow the entry");
    return entry;
  } catch (const detail::TruncatedBytes&) {
    throw EntryProblem("a field runs past the end of the entry");
  }
}

void check_signature(const DecodedEntry& entry, const SigningKey* key) {
  if (!key) return;
  if (entry.tag.empty())
    throw EntryProblem("it is unsigned, and this cache loads only entries signed with its key (KILN_CACHE_KEY_FILE " +
                       key->file + ")");
  if (!verifies(*key, entry.signed_bytes, entry.tag))
    throw EntryProblem("its signature does not verify under this cache's key (KILN_CACHE_KEY_FILE " + key->file +
                       "): it was signed with another key, or altered");
}

}  // namespace kiln::cache
