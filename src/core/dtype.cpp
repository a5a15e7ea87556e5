// DType names and sizes, shapes as text, and C++ scalars.
#include "kiln/dtype.h"

#include <cmath>
#include <cstring>
#include <sstream>

namespace kiln {

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::bool_: return "bool";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::f32: return "f32";
    case DType::f64: return "f64";
  }
  return "?";
}

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::bool_: return 1;
    case DType::i32:
    case DType::f32: return 4;
    case DType::i64:
    case DType::f64: return 8;
  }
  return 0;
}

bool is_floating(DType dtype) { return dtype == DType::f32 || dtype == DType::f64; }
bool is_integer(DType dtype) { return dtype == DType::i32 || dtype == DType::i64; }
// Every integer dtype so far is signed.
bool is_unsigned(DType) { return false; }

std::ostream& operator<<(std::ostream& out, DType dtype) { return out << dtype_name(dtype); }

std::string shape_string(const Shape& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) text += ",";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

int64_t shape_size(const Shape& shape) {
  int64_t size = 1;
  for (int64_t extent : shape) size *= extent;
  return size;
}

bool Scalar::operator==(const Scalar& other) const {
  if (kind_ != other.kind_) return false;
  if (kind_ != Kind::floating) return integer_ == other.integer_;
  return std::memcmp(&floating_, &other.floating_, sizeof(double)) == 0 ||
         (std::isnan(floating_) && std::isnan(other.floating_));
}

std::string Scalar::to_string() const {
  switch (kind_) {
    case Kind::boolean: return integer_ ? "true" : "false";
    case Kind::integer: return std::to_string(integer_);
    case Kind::floating: break;
  }
  std::ostringstream out;
  out.precision(9);
  out << floating_;
  std::string text = out.str();
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";  // keep floats recognizable
  return text;
}

std::ostream& operator<<(std::ostream& out, const Scalar& value) { return out << value.to_string(); }

}  // namespace kiln
