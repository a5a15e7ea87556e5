// .npy files (format versions 1.0-3.0): a magic string, a Python-literal
// header with dtype/order/shape, then the raw data. Reading parses the header
// strictly and checks sizes against the file before allocating, so a damaged
// or hostile file is a kiln::Error, never undefined behaviour.
#include <algorithm>
#include <bit>
#include <cctype>
#include <cstring>
#include <limits>
#include <optional>

#include "core/array_impl.h"
#include "core/error_format.h"
#include "io/files.h"
#include "kiln/io.h"

static_assert(std::endian::native == std::endian::little, "kiln's file formats assume a little-endian host");

namespace kiln {

namespace {
const char magic[] = "\x93NUMPY";
constexpr size_t magic_size = sizeof(magic) - 1;
// NumPy itself refuses headers over 10 kB by default; this is generous.
constexpr uint32_t max_header_bytes = 1u << 20;

std::string descr_of(DType dtype) { return io::dtype_names(dtype).npy; }

std::optional<DType> dtype_of_descr(const std::string& descr) {
  if (descr == "?" || descr == "|?") return DType::bool_;
  // Little-endian, native ('=', on the little-endian machines kiln runs on)
  // or without byte order ('|', or no mark at all).
  auto without_order = [](const std::string& code) {
    return !code.empty() && (code[0] == '<' || code[0] == '|' || code[0] == '=') ? code.substr(1) : code;
  };
  for (int k = 0; k < dtype_count; ++k)
    if (without_order(descr) == without_order(descr_of(static_cast<DType>(k)))) return static_cast<DType>(k);
  return std::nullopt;
}

std::string quoted(const std::string& text) { return "'" + text + "'"; }

struct Header {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

/// Parses the header dict, e.g. {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }.
/// Exactly the three keys NumPy writes are accepted, each once.
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& path, Location where)
      : text_(text), path_(path), where_(where) {}

  Header parse() {
    Header header;
    bool seen_descr = false, seen_order = false, seen_shape = false;
    expect('{');
    while (!accept('}')) {
      std::string key = string();
      expect(':');
      if (key == "descr" && !seen_descr) {
        seen_descr = true;
        if (accept('[')) fail("holds a structured dtype, which kiln does not read");
        header.descr = string();
      } else if (key == "fortran_order" && !seen_order) {
        seen_order = true;
        header.fortran_order = boolean();
      } else if (key == "shape" && !seen_shape) {
        seen_shape = true;
        header.shape = tuple();
      } else {
        fail("has an unexpected or repeated key " + quoted(key));
      }
      if (!accept(',')) {
        expect('}');
        break;
      }
    }
    skip_space();
    if (position_ != text_.size()) fail("has text after the header dict");
    if (!seen_descr || !seen_order || !seen_shape) fail("lacks one of 'descr', 'fortran_order', 'shape'");
    return header;
  }

 private:
  [[noreturn]] void fail(const std::string& message) const {
    detail::raise("load_npy", quoted(path_) + " " + message + " (header byte " + std::to_string(position_) + ")",
                  where_, "the file is damaged or not a .npy file");
  }
  void skip_space() {
    while (position_ < text_.size() && (text_[position_] == ' ' || text_[position_] == '\n' ||
                                        text_[position_] == '\t' || text_[position_] == '\r'))
      ++position_;
  }
  bool accept(char c) {
    skip_space();
    if (position_ < text_.size() && text_[position_] == c) {
      ++position_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!accept(c)) fail(std::string("is malformed: expected '") + c + "'");
  }
  bool accept_word(std::string_view word) {
    skip_space();
    if (text_.compare(position_, word.size(), word) != 0) return false;
    position_ += word.size();
    return true;
  }
  std::string string() {
    skip_space();
    if (position_ >= text_.size() || (text_[position_] != '\'' && text_[position_] != '"'))
      fail("is malformed: expected a quoted string");
    char quote = text_[position_++];
    size_t end = text_.find(quote, position_);
    if (end == std::string::npos) fail("is malformed: unterminated string");
    std::string value = text_.substr(position_, end - position_);
    position_ = end + 1;
    return value;
  }
  bool boolean() {
    if (accept_word("True")) return true;
    if (accept_word("False")) return false;
    fail("is malformed: expected True or False");
  }
  Shape tuple() {
    Shape shape;
    expect('(');
    while (!accept(')')) {
      skip_space();
      if (position_ >= text_.size() || !std::isdigit(static_cast<unsigned char>(text_[position_])))
        fail("has a shape entry that is not a non-negative integer");
      uint64_t value = 0;
      while (position_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[position_]))) {
        value = value * 10 + static_cast<uint64_t>(text_[position_++] - '0');
        if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
          fail("has a shape entry that is too large");
      }
      if (position_ < text_.size() && text_[position_] == 'L') ++position_;  // Python 2 longs
      shape.push_back(static_cast<int64_t>(value));
      if (!accept(',')) {
        expect(')');
        break;
      }
    }
    return shape;
  }

  const std::string& text_;
  const std::string& path_;
  Location where_;
  size_t position_ = 0;
};

/// Reorders column-major (Fortran) data into kiln's row-major layout.
void fortran_to_row_major(const unsigned char* from, unsigned char* to, const Shape& shape, size_t element) {
  size_t rank = shape.size();
  int64_t count = shape_size(shape);
  if (count == 0) return;
  std::vector<int64_t> strides(rank), index(rank, 0);  // Fortran strides, in elements
  int64_t stride = 1;
  for (size_t axis = 0; axis < rank; ++axis) {
    strides[axis] = stride;
    stride *= shape[axis];
  }
  int64_t source = 0;
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(to + static_cast<size_t>(i) * element, from + static_cast<size_t>(source) * element, element);
    // Row-major increment of the multi-index, keeping the Fortran offset in step.
    for (size_t axis = rank; axis-- > 0;) {
      if (++index[axis] < shape[axis]) {
        source += strides[axis];
        break;
      }
      source -= strides[axis] * (shape[axis] - 1);
      index[axis] = 0;
    }
  }
}
}  // namespace

void save_npy(const std::string& path, const Array& array, Location where) {
  const detail::ArrayImpl& impl = detail::impl_of(array, "save_npy", where);
  if (impl.trace)
    detail::raise<ConcretizationError>("save_npy",
                                       "cannot save traced array " + impl.type.to_string() + " while tracing", where,
                                       "return the array from the traced function and save it outside");
  std::string shape = "(";
  for (size_t i = 0; i < impl.type.shape.size(); ++i) shape += std::to_string(impl.type.shape[i]) + ", ";
  if (impl.type.shape.size() > 1) shape.resize(shape.size() - 2);
  else if (impl.type.shape.size() == 1) shape.resize(shape.size() - 1);
  shape += ")";
  std::string header =
      "{'descr': '" + descr_of(impl.type.dtype) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces so the data starts on a 64-byte boundary; end with a newline.
  size_t total = magic_size + 2 + 2 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  // Version 1.0 has a 2-byte header length; 32 dimensions never come near it.
  const char prefix[4] = {1, 0, static_cast<char>(header.size() & 0xff), static_cast<char>(header.size() >> 8)};
  io::write_file_atomically(path,
                            {std::string_view(magic, magic_size), std::string_view(prefix, 4), header,
                             std::string_view(static_cast<const char*>(impl.buffer->data()), impl.buffer->bytes())},
                            "save_npy", where);
}

Array load_npy(const std::string& path, Location where) {
  io::InputFile file(path, "load_npy", where);
  unsigned char prefix[magic_size + 2];
  file.read(0, prefix, sizeof(prefix), "magic string");
  if (std::memcmp(prefix, magic, magic_size) != 0)
    detail::raise("load_npy", quoted(path) + " is not a .npy file (bad magic string)", where,
                  "load_npy reads files written by numpy.save");
  int major = prefix[magic_size];
  uint64_t length_offset = sizeof(prefix), length = 0, header_offset = 0;
  if (major == 1) {
    unsigned char bytes[2];
    file.read(length_offset, bytes, 2, "header length");
    length = bytes[0] | (bytes[1] << 8);
    header_offset = length_offset + 2;
  } else if (major == 2 || major == 3) {
    unsigned char bytes[4];
    file.read(length_offset, bytes, 4, "header length");
    length = bytes[0] | (bytes[1] << 8) | (bytes[2] << 16) | (static_cast<uint64_t>(bytes[3]) << 24);
    header_offset = length_offset + 4;
  } else {
    detail::raise("load_npy", quoted(path) + " has unsupported .npy format version " + std::to_string(major), where,
                  "kiln reads versions 1.0 to 3.0");
  }
  if (length > max_header_bytes)
    detail::raise("load_npy", quoted(path) + " declares an implausible " + std::to_string(length) + "-byte header",
                  where, "the file is damaged or not a .npy file");
  std::string text(length, '\0');
  file.read(header_offset, text.data(), length, "header");
  Header header = HeaderParser(text, path, where).parse();

  // Big-endian files (NumPy writes them for '>f8' arrays) are read and swapped.
  bool big_endian = !header.descr.empty() && header.descr[0] == '>';
  auto dtype = dtype_of_descr(big_endian ? "<" + header.descr.substr(1) : header.descr);
  if (!dtype)
    detail::raise(
        "load_npy", quoted(path) + " holds dtype " + quoted(header.descr) + ", which kiln does not read", where,
        "kiln reads bool, int8 to int64, uint8 to uint64, float16, float32, float64, complex64, complex128 and "
        "bfloat16 ('|V2') "
        "arrays; convert the array to one of them before saving");
  uint64_t elements = 1, bytes = 0;
  for (int64_t extent : header.shape)
    if (__builtin_mul_overflow(elements, static_cast<uint64_t>(extent), &elements))
      detail::raise("load_npy", quoted(path) + " declares an impossible shape " + shape_string(header.shape), where,
                    "the file is damaged");
  uint64_t data_offset = header_offset + length;
  if (__builtin_mul_overflow(elements, static_cast<uint64_t>(dtype_size(*dtype)), &bytes) ||
      bytes > file.size() - std::min(file.size(), data_offset))
    detail::raise("load_npy",
                  quoted(path) + " is truncated: " + std::string(dtype_name(*dtype)) + shape_string(header.shape) +
                      " needs " + std::to_string(bytes) + " data bytes, the file has " +
                      std::to_string(file.size() - std::min(file.size(), data_offset)),
                  where, "the file is damaged or was not completely written; write it again");

  Array result = detail::allocate(detail::AbstractValue{*dtype, false, header.shape});
  detail::Buffer& buffer = *detail::impl(result)->buffer;
  if (header.fortran_order && header.shape.size() > 1) {
    std::vector<unsigned char> column_major(buffer.bytes());
    file.read(data_offset, column_major.data(), column_major.size(), "data");
    fortran_to_row_major(column_major.data(), static_cast<unsigned char*>(buffer.data()), header.shape,
                         dtype_size(*dtype));
  } else {
    file.read(data_offset, buffer.data(), buffer.bytes(), "data");
  }
  if (big_endian) {
    auto* data = static_cast<unsigned char*>(buffer.data());
    size_t element = dtype_size(*dtype);
    for (size_t at = 0; at + element <= buffer.bytes(); at += element) std::reverse(data + at, data + at + element);
  }
  if (*dtype == DType::bool_) {
    auto* data = static_cast<unsigned char*>(buffer.data());
    for (size_t i = 0; i < buffer.bytes(); ++i) data[i] = data[i] != 0;  // keep bool storage canonical
  }
  return result;
}

}  // namespace kiln
