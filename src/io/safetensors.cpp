// safetensors files (kiln::save / kiln::load): an 8-byte little-endian header
// length, a JSON header mapping each name to {"dtype", "shape",
// "data_offsets": [begin, end]} (plus an optional "__metadata__" map of
// strings), then the tensor bytes, row-major and little-endian. Reading
// checks every size and offset against the file before allocating, so a
// damaged or hostile file is a kiln::Error, never undefined behaviour.
#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/array_impl.h"
#include "core/error_format.h"
#include "io/files.h"
#include "kiln/io.h"

static_assert(std::endian::native == std::endian::little, "kiln's file formats assume a little-endian host");

namespace kiln {

namespace {
using Json = nlohmann::json;

constexpr const char* metadata_key = "__metadata__";
// The reference implementation's limit: a larger header is damaged or hostile.
constexpr uint64_t max_header_bytes = 100'000'000;

const char* dtype_code(DType dtype) { return io::dtype_names(dtype).safetensors; }

std::optional<DType> dtype_of_code(const std::string& code) {
  if (code.empty()) return std::nullopt;
  for (int k = 0; k < dtype_count; ++k)
    if (code == dtype_code(static_cast<DType>(k))) return static_cast<DType>(k);
  return std::nullopt;
}

std::string quoted(const std::string& text) { return "'" + text + "'"; }

/// A JSON value for an error message. Containers are summarized, never
/// printed: dumping is recursive, and a hostile header can nest arbitrarily deep.
std::string preview(const Json& value) {
  if (value.is_array() || value.is_object())
    return std::string(value.is_array() ? "a list" : "an object") + " of " + std::to_string(value.size()) + " items";
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  return text.size() > 80 ? text.substr(0, 77) + "..." : text;
}

/// A list of unsigned integers (checked by the caller) as "[a, b]".
std::string number_list(const Json& list) {
  std::string text = "[";
  for (const Json& item : list) text += (text.size() > 1 ? ", " : "") + item.dump();
  return text + "]";
}

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin = 0, end = 0;
};

/// Reads one tensor's description, checking types, ranges and that the byte
/// range holds exactly the shape's elements.
class HeaderReader {
 public:
  HeaderReader(const std::string& path, uint64_t data_size, Location where)
      : path_(path), data_size_(data_size), where_(where) {}

  [[noreturn]] void fail(const std::string& message, std::string_view hint = {}) const {
    detail::raise("load", quoted(path_) + ": " + message, where_,
                  hint.empty() ? "the file is damaged or not a safetensors file" : hint);
  }

  const Json& field(const Json& info, const std::string& name, const char* key) const {
    auto found = info.find(key);
    if (found == info.end()) fail("tensor " + quoted(name) + " has no \"" + key + "\"");
    return *found;
  }

  uint64_t unsigned_number(const Json& value, const std::string& what) const {
    // Non-negative JSON integers parse as unsigned; negative, fractional or
    // out-of-range values do not.
    if (!value.is_number_unsigned()) fail(what + " must be a non-negative integer, got " + preview(value));
    uint64_t number = value.get<uint64_t>();
    if (number > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail(what + " is too large: " + preview(value));
    return number;
  }

  Entry entry(const std::string& name, const Json& info) const {
    if (!info.is_object()) fail("tensor " + quoted(name) + " is described by " + preview(info) + ", not an object");
    Entry entry;
    entry.name = name;
    const Json& code = field(info, name, "dtype");
    if (!code.is_string()) fail("tensor " + quoted(name) + " has dtype " + preview(code) + ", not a string");
    auto dtype = dtype_of_code(code.get<std::string>());
    if (!dtype)
      fail("tensor " + quoted(name) + " has dtype " + preview(code) + ", which kiln does not read",
           "kiln reads BOOL, I8, I16, I32, I64, U8, U16, U32, U64, F16, BF16, F32 and F64 tensors; convert the "
           "others before saving");
    entry.dtype = *dtype;

    const Json& shape = field(info, name, "shape");
    if (!shape.is_array()) fail("tensor " + quoted(name) + " has shape " + preview(shape) + ", not a list");
    for (const Json& extent : shape)
      entry.shape.push_back(static_cast<int64_t>(unsigned_number(extent, "tensor " + quoted(name) + "'s shape entry")));
    uint64_t elements = 1;
    for (int64_t extent : entry.shape)
      if (__builtin_mul_overflow(elements, static_cast<uint64_t>(extent), &elements))
        fail("tensor " + quoted(name) + "'s shape " + number_list(shape) + " has more elements than can exist");
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(elements, static_cast<uint64_t>(dtype_size(entry.dtype)), &bytes))
      fail("tensor " + quoted(name) + "'s shape " + number_list(shape) + " has more bytes than can exist");

    const Json& offsets = field(info, name, "data_offsets");
    if (!offsets.is_array() || offsets.size() != 2)
      fail("tensor " + quoted(name) + " has data_offsets " + preview(offsets) + ", not [begin, end]");
    entry.begin = unsigned_number(offsets[0], "tensor " + quoted(name) + "'s data offset");
    entry.end = unsigned_number(offsets[1], "tensor " + quoted(name) + "'s data offset");
    if (entry.begin > entry.end || entry.end > data_size_)
      fail("tensor " + quoted(name) + " has data_offsets " + number_list(offsets) + " outside the " +
           std::to_string(data_size_) + " bytes of data");
    if (entry.end - entry.begin != bytes)
      fail("tensor " + quoted(name) + " is " + dtype_code(entry.dtype) + shape_string(entry.shape) + ", which needs " +
           std::to_string(bytes) + " bytes, but its data_offsets " + number_list(offsets) + " span " +
           std::to_string(entry.end - entry.begin));
    return entry;
  }

  void metadata(const Json& value) const {
    if (!value.is_object()) fail("\"__metadata__\" must be an object of strings, got " + preview(value));
    for (const auto& [key, text] : value.items())
      if (!text.is_string()) fail("\"__metadata__\" entry " + quoted(key) + " is " + preview(text) + ", not a string");
  }

  /// The format requires the tensors to tile the data exactly: no gaps, no
  /// overlaps, nothing after the last one.
  void check_tiling(std::vector<Entry>& entries) const {
    std::sort(entries.begin(), entries.end(),
              [](const Entry& a, const Entry& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
    uint64_t next = 0;
    for (const Entry& entry : entries) {
      if (entry.begin != next)
        fail("tensor " + quoted(entry.name) + " starts at data byte " + std::to_string(entry.begin) +
             (entry.begin < next ? " inside the previous tensor" : " after a gap") + " (expected " +
             std::to_string(next) + ")");
      next = entry.end;
    }
    if (next != data_size_) fail("the data has " + std::to_string(data_size_ - next) + " bytes after the last tensor");
  }

 private:
  const std::string& path_;
  uint64_t data_size_;
  Location where_;
};
}  // namespace

void save(const std::string& path, const std::map<std::string, Array>& arrays, Location where) {
  std::vector<std::pair<const std::string*, const detail::ArrayImpl*>> entries;
  for (const auto& [name, array] : arrays) {
    if (name.empty() || name == metadata_key)
      detail::raise("save", name.empty() ? "a tensor name is empty" : "the tensor name \"" + name + "\" is reserved",
                    where, "choose another name");
    const detail::ArrayImpl& impl = detail::impl_of(array, "save", where);
    if (impl.trace)
      detail::raise<ConcretizationError>(
          "save", "cannot save traced array " + quoted(name) + " " + impl.type.to_string() + " while tracing", where,
          "return the array from the traced function and save it outside");
    if (!*dtype_code(impl.type.dtype))
      detail::raise("save",
                    "the safetensors format has no dtype for " + quoted(name) + " " + impl.type.to_string() +
                        " (it names complex64, C64, only)",
                    where,
                    "save astype(x, kiln::c64), or real(x) and imag(x) as two f64 tensors, or use kiln::save_npy "
                    "(.npy holds c128 as '<c16')");
    entries.emplace_back(&name, &impl);
  }
  // Widest elements first, then by name (the map's order), so every tensor
  // starts aligned to its element size, as the reference writer arranges.
  std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    return dtype_size(a.second->type.dtype) > dtype_size(b.second->type.dtype);
  });

  Json header = Json::object();
  uint64_t offset = 0;
  for (const auto& [name, impl] : entries) {
    uint64_t bytes = impl->buffer->bytes();
    header[*name] = {{"dtype", dtype_code(impl->type.dtype)},
                     {"shape", impl->type.shape},
                     {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text;
  try {
    text = header.dump(-1, ' ', false, Json::error_handler_t::strict);
  } catch (const Json::exception&) {
    detail::raise("save", "a tensor name is not valid UTF-8", where, "safetensors names are UTF-8 strings");
  }
  // Spaces pad the header so the data starts 8-byte aligned.
  text.append((8 - text.size() % 8) % 8, ' ');
  char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<char>((static_cast<uint64_t>(text.size()) >> (8 * i)) & 0xff);

  std::vector<std::string_view> chunks = {std::string_view(length, 8), text};
  for (const auto& [name, impl] : entries)
    chunks.emplace_back(static_cast<const char*>(impl->buffer->data()), impl->buffer->bytes());
  io::write_file_atomically(path, chunks, "save", where);
}

std::map<std::string, Array> load(const std::string& path, Location where) {
  io::InputFile file(path, "load", where);
  unsigned char prefix[8];
  file.read(0, prefix, 8, "header length");
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | prefix[i];
  if (header_size > max_header_bytes || header_size > file.size() - 8)
    detail::raise("load",
                  quoted(path) + " declares a " + std::to_string(header_size) + "-byte header but the file has " +
                      std::to_string(file.size()) + " bytes",
                  where, "the file is damaged or not a safetensors file");
  std::string text(header_size, '\0');
  file.read(8, text.data(), header_size, "header");

  Json header;
  try {
    header = Json::parse(text);
  } catch (const Json::exception& error) {
    detail::raise("load", quoted(path) + " has a header that is not valid JSON: " + error.what(), where,
                  "the file is damaged or not a safetensors file");
  }
  uint64_t data_start = 8 + header_size;
  HeaderReader reader(path, file.size() - data_start, where);
  if (!header.is_object()) reader.fail("the header is " + std::string(header.type_name()) + ", not a JSON object");

  std::vector<Entry> entries;
  for (const auto& [name, info] : header.items()) {
    if (name == metadata_key) reader.metadata(info);
    else entries.push_back(reader.entry(name, info));
  }
  reader.check_tiling(entries);

  std::map<std::string, Array> arrays;
  for (const Entry& entry : entries) {
    Array array = detail::allocate(detail::AbstractValue{entry.dtype, false, entry.shape});
    detail::Buffer& buffer = *detail::impl(array)->buffer;
    file.read(data_start + entry.begin, buffer.data(), buffer.bytes(), "data");
    if (entry.dtype == DType::bool_) {
      // Any nonzero byte is true; kiln's bool storage must hold exactly 0 or 1.
      auto* bytes = static_cast<unsigned char*>(buffer.data());
      for (size_t i = 0; i < buffer.bytes(); ++i) bytes[i] = bytes[i] != 0;
    }
    arrays.emplace(entry.name, std::move(array));
  }
  return arrays;
}

}  // namespace kiln
