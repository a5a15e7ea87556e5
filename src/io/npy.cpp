// .npy files (format versions 1.0-3.0): a magic string, a Python-literal
// header with dtype/order/shape, then the raw row-major data.
#include <cstring>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>

#include "core/array_impl.h"
#include "core/error_format.h"
#include "kiln/io.h"

namespace kiln {

namespace {
const char magic[] = "\x93NUMPY";

std::string descr_of(DType dtype) {
  switch (dtype) {
    case DType::bool_: return "|b1";
    case DType::i32: return "<i4";
    case DType::i64: return "<i8";
    case DType::f32: return "<f4";
    case DType::f64: return "<f8";
  }
  return "";
}

std::optional<DType> dtype_of_descr(const std::string& descr) {
  if (descr == "|b1" || descr == "<b1" || descr == "b1" || descr == "?" || descr == "|?") return DType::bool_;
  if (descr == "<i4") return DType::i32;
  if (descr == "<i8") return DType::i64;
  if (descr == "<f4") return DType::f32;
  if (descr == "<f8") return DType::f64;
  return std::nullopt;
}

const Array& concrete(const Array& array, const char* operation, Location where) {
  const detail::ArrayImpl& impl = detail::impl_of(array, operation, where);
  if (impl.trace)
    detail::raise<ConcretizationError>(operation, "cannot save traced array " + impl.type.to_string(), where,
                                       "save the result of the function, outside the trace");
  return array;
}
}  // namespace

void save_npy(const std::string& path, const Array& array, Location where) {
  const detail::ArrayImpl& impl = *concrete(array, "save_npy", where).impl();
  std::string shape = "(";
  for (size_t i = 0; i < impl.type.shape.size(); ++i) shape += std::to_string(impl.type.shape[i]) + ", ";
  if (impl.type.shape.size() > 1) shape.resize(shape.size() - 2);
  else if (impl.type.shape.size() == 1) shape.resize(shape.size() - 1);
  shape += ")";
  std::string header =
      "{'descr': '" + descr_of(impl.type.dtype) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces so the data starts on a 64-byte boundary; end with a newline.
  size_t total = sizeof(magic) - 1 + 2 + 2 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) detail::raise("save_npy", "cannot open '" + path + "' for writing", where);
  out.write(magic, sizeof(magic) - 1);
  const char version[2] = {1, 0};
  out.write(version, 2);
  uint16_t length = static_cast<uint16_t>(header.size());
  const char length_bytes[2] = {static_cast<char>(length & 0xff), static_cast<char>(length >> 8)};
  out.write(length_bytes, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(static_cast<const char*>(impl.buffer->data()), static_cast<std::streamsize>(impl.buffer->bytes()));
  if (!out) detail::raise("save_npy", "failed writing '" + path + "'", where);
}

Array load_npy(const std::string& path, Location where) {
  std::ifstream in(path, std::ios::binary);
  if (!in) detail::raise("load_npy", "cannot open '" + path + "'", where, "check the path");
  char prefix[8];
  in.read(prefix, 8);
  if (!in || std::memcmp(prefix, magic, 6) != 0)
    detail::raise("load_npy", "'" + path + "' is not a .npy file (bad magic)", where);
  int major = static_cast<unsigned char>(prefix[6]);
  uint32_t length = 0;
  // prefix[6] is the major version; the header length follows the 2 version bytes.
  in.seekg(8);
  if (major == 1) {
    unsigned char bytes[2];
    in.read(reinterpret_cast<char*>(bytes), 2);
    length = bytes[0] | (bytes[1] << 8);
  } else if (major == 2 || major == 3) {
    unsigned char bytes[4];
    in.read(reinterpret_cast<char*>(bytes), 4);
    length = bytes[0] | (bytes[1] << 8) | (bytes[2] << 16) | (static_cast<uint32_t>(bytes[3]) << 24);
  } else {
    detail::raise("load_npy", "'" + path + "' has unsupported .npy version " + std::to_string(major), where);
  }
  if (length > (1u << 20)) detail::raise("load_npy", "'" + path + "' has an implausible header", where);
  std::string header(length, '\0');
  in.read(header.data(), length);
  if (!in) detail::raise("load_npy", "'" + path + "' is truncated in its header", where);

  std::smatch match;
  if (!std::regex_search(header, match, std::regex("'descr':\\s*'([^']*)'")))
    detail::raise("load_npy", "'" + path + "' header has no descr", where);
  auto dtype = dtype_of_descr(match[1]);
  if (!dtype)
    detail::raise("load_npy", "'" + path + "' holds dtype '" + std::string(match[1]) + "', which kiln does not read",
                  where, "save little-endian bool, int32, int64, float32 or float64 arrays");
  if (std::regex_search(header, match, std::regex("'fortran_order':\\s*True")))
    detail::raise("load_npy", "'" + path + "' is in Fortran order", where, "save with np.ascontiguousarray first");
  if (!std::regex_search(header, match, std::regex("'shape':\\s*\\(([^)]*)\\)")))
    detail::raise("load_npy", "'" + path + "' header has no shape", where);
  Shape shape;
  std::string dims = match[1];
  const std::regex digits("\\d+");
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), digits); it != std::sregex_iterator(); ++it)
    shape.push_back(std::stoll(it->str()));

  Array result = detail::allocate(detail::AbstractValue{*dtype, false, shape});
  auto& buffer = *result.impl()->buffer;
  in.read(static_cast<char*>(buffer.data()), static_cast<std::streamsize>(buffer.bytes()));
  if (!in) detail::raise("load_npy", "'" + path + "' is truncated: expected " + std::to_string(buffer.bytes()) + " data bytes", where);
  if (*dtype == DType::bool_) {
    auto* bytes = static_cast<unsigned char*>(buffer.data());
    for (size_t i = 0; i < buffer.bytes(); ++i) bytes[i] = bytes[i] != 0;  // keep bool storage canonical
  }
  return result;
}

}  // namespace kiln
