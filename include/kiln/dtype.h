// Element types, shapes and C++ scalars: the vocabulary every other header uses.
#pragma once

#include <complex>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "kiln/half.h"

namespace kiln {

/// Element type of an Array. Promotion between them follows JAX's lattice
/// (README, "Dtypes"); C++ numbers mixed with arrays are weakly typed
/// (`x_f32 * 2.0` stays f32, `x_u8 + 1` stays u8). The numbering is stable:
/// persistent cache keys hold it, so new dtypes go at the end. c64 and c128
/// are complex numbers of two f32 or two f64 (`std::complex<float>`,
/// `std::complex<double>`), real part first.
enum class DType : uint8_t { bool_, i32, i64, f32, f64, i8, i16, u8, u16, u32, u64, f16, bf16, c64, c128 };
inline constexpr int dtype_count = static_cast<int>(DType::c128) + 1;

inline constexpr DType bool_ = DType::bool_;
inline constexpr DType i8 = DType::i8;
inline constexpr DType i16 = DType::i16;
inline constexpr DType i32 = DType::i32;
inline constexpr DType i64 = DType::i64;
inline constexpr DType u8 = DType::u8;
inline constexpr DType u16 = DType::u16;
inline constexpr DType u32 = DType::u32;
inline constexpr DType u64 = DType::u64;
inline constexpr DType f16 = DType::f16;
inline constexpr DType bf16 = DType::bf16;
inline constexpr DType f32 = DType::f32;
inline constexpr DType f64 = DType::f64;
inline constexpr DType c64 = DType::c64;
inline constexpr DType c128 = DType::c128;

/// Dimensions of an array, outermost first. Every extent is >= 0.
using Shape = std::vector<int64_t>;

std::string_view dtype_name(DType dtype);
size_t dtype_size(DType dtype);
bool is_floating(DType dtype);  // f16, bf16, f32, f64
bool is_integer(DType dtype);   // signed and unsigned (not bool)
/// u8, u16, u32, u64: right shifts fill with zeros, division never overflows.
bool is_unsigned(DType dtype);
/// f16 and bf16: stored in 16 bits, computed in f32.
bool is_half(DType dtype);
/// c64 and c128.
bool is_complex(DType dtype);
/// Parses a name dtype_name gives ("u8", "bf16", ...); nullopt otherwise.
std::optional<DType> dtype_from_name(std::string_view name);
std::ostream& operator<<(std::ostream& out, DType dtype);

/// "[2,3]" — the notation used in every error message and in printed IR.
std::string shape_string(const Shape& shape);
int64_t shape_size(const Shape& shape);

/// The C++ types that map onto a DType.
template <class T>
concept Element = std::is_same_v<T, bool> || std::is_same_v<T, int8_t> || std::is_same_v<T, int16_t> ||
    std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t> || std::is_same_v<T, uint8_t> ||
    std::is_same_v<T, uint16_t> || std::is_same_v<T, uint32_t> || std::is_same_v<T, uint64_t> ||
    std::is_same_v<T, float16> || std::is_same_v<T, bfloat16> || std::is_same_v<T, float> ||
    std::is_same_v<T, double> || std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;

/// std::complex<float> and std::complex<double>.
template <class T>
concept ComplexNumber = std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;

/// Any C++ number that may be mixed with arrays.
template <class T>
concept Number = std::is_arithmetic_v<std::remove_cvref_t<T>> || HalfFloat<std::remove_cvref_t<T>> ||
    ComplexNumber<std::remove_cvref_t<T>>;

template <Element T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, bool>) return DType::bool_;
  else if constexpr (std::is_same_v<T, int8_t>) return DType::i8;
  else if constexpr (std::is_same_v<T, int16_t>) return DType::i16;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::i32;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::i64;
  else if constexpr (std::is_same_v<T, uint8_t>) return DType::u8;
  else if constexpr (std::is_same_v<T, uint16_t>) return DType::u16;
  else if constexpr (std::is_same_v<T, uint32_t>) return DType::u32;
  else if constexpr (std::is_same_v<T, uint64_t>) return DType::u64;
  else if constexpr (std::is_same_v<T, float16>) return DType::f16;
  else if constexpr (std::is_same_v<T, bfloat16>) return DType::bf16;
  else if constexpr (std::is_same_v<T, float>) return DType::f32;
  else if constexpr (std::is_same_v<T, std::complex<float>>) return DType::c64;
  else if constexpr (std::is_same_v<T, std::complex<double>>) return DType::c128;
  else return DType::f64;
}

/// A C++ number kept with its kind: bool, integer, floating or complex.
/// Numbers are weakly typed until they meet an array (a complex number with
/// an f32 array gives c64, with an f64 array c128).
class Scalar {
 public:
  enum class Kind : uint8_t { boolean, integer, floating, complex };

  constexpr Scalar() = default;
  template <Number T>
  constexpr Scalar(T value) {  // NOLINT: implicit on purpose, numbers are scalars
    if constexpr (std::is_same_v<std::remove_cvref_t<T>, bool>) {
      kind_ = Kind::boolean;
      integer_ = value ? 1 : 0;
      floating_ = integer_;
    } else if constexpr (std::is_integral_v<std::remove_cvref_t<T>>) {
      kind_ = Kind::integer;
      integer_ = static_cast<int64_t>(value);
      floating_ = static_cast<double>(value);
    } else if constexpr (ComplexNumber<std::remove_cvref_t<T>>) {
      kind_ = Kind::complex;
      floating_ = static_cast<double>(value.real());
      imaginary_ = static_cast<double>(value.imag());
      integer_ = 0;
    } else {
      kind_ = Kind::floating;
      floating_ = static_cast<double>(value);
      integer_ = 0;
    }
  }

  constexpr Kind kind() const { return kind_; }
  /// The value as a double; the real part of a complex number.
  constexpr double as_double() const { return floating_; }
  constexpr int64_t as_int() const {
    return kind_ == Kind::floating || kind_ == Kind::complex ? static_cast<int64_t>(floating_) : integer_;
  }
  /// The value as a complex number (the imaginary part is 0 unless the kind is complex).
  constexpr std::complex<double> as_complex() const { return {floating_, imaginary_}; }
  /// Exact comparison: same kind and same bits of value.
  bool operator==(const Scalar& other) const;
  std::string to_string() const;

 private:
  Kind kind_ = Kind::integer;
  int64_t integer_ = 0;
  double floating_ = 0;
  double imaginary_ = 0;
};

std::ostream& operator<<(std::ostream& out, const Scalar& value);

}  // namespace kiln
