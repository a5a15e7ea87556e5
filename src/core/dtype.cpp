// DType names and sizes, shapes as text, and C++ scalars.
#include "kiln/dtype.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

namespace kiln {

namespace detail {

namespace {
// Rounds |value| to a binary format with `fraction_bits` and exponents down to
// `min_exponent` (of its smallest normal), ties to even, as its bit pattern
// without the sign; overflow gives the infinity pattern. Scaling by powers of
// two is exact in double, so nearbyint's ties-to-even does the rounding.
uint16_t narrow_magnitude_bits(double magnitude, int fraction_bits, int exponent_bits) {
  const int bias = (1 << (exponent_bits - 1)) - 1;
  const uint32_t infinity = ((1u << exponent_bits) - 1) << fraction_bits;
  if (std::isnan(magnitude)) return static_cast<uint16_t>(infinity | (1u << (fraction_bits - 1)));
  if (magnitude < std::ldexp(1.0, 1 - bias)) {  // subnormal, or rounds up to the smallest normal
    return static_cast<uint16_t>(std::nearbyint(std::ldexp(magnitude, bias - 1 + fraction_bits)));
  }
  int exponent = std::ilogb(magnitude);
  double fraction = std::nearbyint(std::ldexp(magnitude, fraction_bits - exponent));  // in [2^f, 2^(f+1)]
  if (fraction == std::ldexp(1.0, fraction_bits + 1)) {
    fraction /= 2;
    ++exponent;
  }
  if (exponent > bias) return static_cast<uint16_t>(infinity);
  auto field = static_cast<uint32_t>(exponent + bias) << fraction_bits;
  return static_cast<uint16_t>(field | (static_cast<uint32_t>(fraction) - (1u << fraction_bits)));
}

uint16_t sign_bit(double value) { return std::signbit(value) ? 0x8000 : 0; }
}  // namespace

uint16_t float16_bits_of(double value) { return sign_bit(value) | narrow_magnitude_bits(std::fabs(value), 10, 5); }
uint16_t bfloat16_bits_of(double value) { return sign_bit(value) | narrow_magnitude_bits(std::fabs(value), 7, 8); }
uint16_t bfloat16_bits_of(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if (std::isnan(value)) return static_cast<uint16_t>((bits >> 16) | 0x40);  // stays a quiet NaN
  return static_cast<uint16_t>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
}

float float16_value(uint16_t bits) {
  uint32_t exponent = (bits >> 10) & 0x1F, fraction = bits & 0x3FF;
  float magnitude;
  if (exponent == 0x1F) magnitude = fraction ? std::numeric_limits<float>::quiet_NaN() : HUGE_VALF;
  else if (exponent == 0) magnitude = std::ldexp(static_cast<float>(fraction), -24);
  else magnitude = std::ldexp(static_cast<float>(fraction | 0x400), static_cast<int>(exponent) - 25);
  return bits & 0x8000 ? -magnitude : magnitude;
}

}  // namespace detail

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::bool_: return "bool";
    case DType::i8: return "i8";
    case DType::i16: return "i16";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::u8: return "u8";
    case DType::u16: return "u16";
    case DType::u32: return "u32";
    case DType::u64: return "u64";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::c64: return "c64";
    case DType::c128: return "c128";
  }
  return "?";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (int k = 0; k < dtype_count; ++k)
    if (dtype_name(static_cast<DType>(k)) == name) return static_cast<DType>(k);
  return std::nullopt;
}

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::bool_:
    case DType::i8:
    case DType::u8: return 1;
    case DType::i16:
    case DType::u16:
    case DType::f16:
    case DType::bf16: return 2;
    case DType::i32:
    case DType::u32:
    case DType::f32: return 4;
    case DType::i64:
    case DType::u64:
    case DType::f64:
    case DType::c64: return 8;
    case DType::c128: return 16;
  }
  return 0;
}

bool is_floating(DType dtype) {
  return dtype == DType::f32 || dtype == DType::f64 || dtype == DType::f16 || dtype == DType::bf16;
}
bool is_unsigned(DType dtype) {
  return dtype == DType::u8 || dtype == DType::u16 || dtype == DType::u32 || dtype == DType::u64;
}
bool is_integer(DType dtype) {
  return dtype == DType::i8 || dtype == DType::i16 || dtype == DType::i32 || dtype == DType::i64 || is_unsigned(dtype);
}
bool is_half(DType dtype) { return dtype == DType::f16 || dtype == DType::bf16; }
bool is_complex(DType dtype) { return dtype == DType::c64 || dtype == DType::c128; }

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
  if (kind_ != Kind::floating && kind_ != Kind::complex) return integer_ == other.integer_;
  auto same = [](double a, double b) {
    return std::memcmp(&a, &b, sizeof(double)) == 0 || (std::isnan(a) && std::isnan(b));
  };
  return same(floating_, other.floating_) && same(imaginary_, other.imaginary_);
}

std::string Scalar::to_string() const {
  switch (kind_) {
    case Kind::boolean: return integer_ ? "true" : "false";
    case Kind::integer: return std::to_string(integer_);
    case Kind::floating: break;
    case Kind::complex: {
      // Python's spelling: (1+2j), 2j for a zero real part.
      std::string imaginary = Scalar(imaginary_).to_string();
      if (floating_ == 0 && !std::signbit(floating_)) return imaginary + "j";
      bool negative = imaginary.front() == '-';
      return "(" + Scalar(floating_).to_string() + (negative ? "" : "+") + imaginary + "j)";
    }
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
