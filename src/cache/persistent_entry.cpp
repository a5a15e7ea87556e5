// The entry format (see the header):
//   "KILNCACHE\n", u32 format, u64 body length, 16-byte XXH3-128 of the body, body
// where the body holds the header's fields and the saved executable.
#include "cache/persistent_entry.h"

#include <xxhash.h>

#include <cstring>

#include "core/byte_stream.h"

namespace kiln::cache {

namespace {

constexpr std::string_view magic = "KILNCACHE\n";
constexpr uint32_t format = 1;
constexpr size_t checksum_bytes = 16;
constexpr size_t prefix_bytes = magic.size() + sizeof(uint32_t) + sizeof(uint64_t) + checksum_bytes;

std::string checksum(std::string_view body) {
  XXH128_hash_t hash = XXH3_128bits(body.data(), body.size());
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, hash);
  return std::string(reinterpret_cast<const char*>(canonical.digest), checksum_bytes);
}

}  // namespace

std::string encode_entry(const EntryHeader& header, std::string_view executable) {
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
  std::string_view body = bytes.substr(prefix_bytes);
  if (body.size() != length)
    throw EntryProblem("the body is " + std::to_string(body.size()) + " bytes, its header says " +
                       std::to_string(length) + " (cut short or appended to)");
  if (checksum(body) != bytes.substr(prefix_bytes - checksum_bytes, checksum_bytes))
    throw EntryProblem("the checksum does not match: the file is corrupt");
  try {
    detail::ByteReader in(body);
    DecodedEntry entry;
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

}  // namespace kiln::cache
