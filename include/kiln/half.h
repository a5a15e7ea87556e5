// The two 16-bit floating types, as C++ element types: IEEE binary16 (f16)
// and bfloat16 (bf16, the top half of an f32). They store 16 bits and convert
// to and from float; arithmetic on them happens in float (the usual C++
// conversions do it), and storing a result rounds to nearest, ties to even.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

namespace kiln {

namespace detail {
/// Rounds to nearest, ties to even, straight from double (no double rounding through float).
uint16_t float16_bits_of(double value);
uint16_t bfloat16_bits_of(double value);
uint16_t bfloat16_bits_of(float value);
float float16_value(uint16_t bits);
inline float bfloat16_value(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  __builtin_memcpy(&value, &wide, sizeof value);
  return value;
}
}  // namespace detail

/// IEEE 754 binary16: 5 exponent bits, 10 fraction bits; largest finite 65504.
class float16 {
 public:
  constexpr float16() = default;
  template <class T>
  requires std::is_arithmetic_v<T> float16(T value)  // NOLINT: implicit like float's own conversions
      : bits_(detail::float16_bits_of(static_cast<double>(value))) {}
  operator float() const { return detail::float16_value(bits_); }  // NOLINT: exact, so implicit
  static constexpr float16 from_bits(uint16_t bits) {
    float16 value;
    value.bits_ = bits;
    return value;
  }
  constexpr uint16_t bits() const { return bits_; }

 private:
  uint16_t bits_ = 0;
};

/// bfloat16: f32's 8 exponent bits, 7 fraction bits; f32's range at 3 significant digits.
class bfloat16 {
 public:
  constexpr bfloat16() = default;
  template <class T>
  requires std::is_arithmetic_v<T> bfloat16(T value)  // NOLINT: implicit like float's own conversions
      : bits_(std::is_same_v<T, float> ? detail::bfloat16_bits_of(static_cast<float>(value))
                                       : detail::bfloat16_bits_of(static_cast<double>(value))) {}
  operator float() const { return detail::bfloat16_value(bits_); }  // NOLINT: exact, so implicit
  static constexpr bfloat16 from_bits(uint16_t bits) {
    bfloat16 value;
    value.bits_ = bits;
    return value;
  }
  constexpr uint16_t bits() const { return bits_; }

 private:
  uint16_t bits_ = 0;
};

static_assert(sizeof(float16) == 2 && sizeof(bfloat16) == 2);

/// float16 or bfloat16.
template <class T>
concept HalfFloat = std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;

namespace detail {
template <class T>
decltype(auto) widen_half(T value) {
  if constexpr (HalfFloat<T>) return static_cast<float>(value);
  else return value;
}
template <class A, class B>
concept HalfOperands = (HalfFloat<A> || HalfFloat<B>)&&(HalfFloat<A> ||
                                                        std::is_arithmetic_v<A>)&&(HalfFloat<B> ||
                                                                                   std::is_arithmetic_v<B>);
}  // namespace detail

// Arithmetic and comparisons happen in float (or wider, with a double operand).
#define KILN_HALF_OPERATOR(op)        \
  template <class A, class B>         \
  requires detail::HalfOperands<A, B> \
  auto operator op(A a, B b) { return detail::widen_half(a) op detail::widen_half(b); }
KILN_HALF_OPERATOR(+)
KILN_HALF_OPERATOR(-)
KILN_HALF_OPERATOR(*)
KILN_HALF_OPERATOR(/)
KILN_HALF_OPERATOR(==)
KILN_HALF_OPERATOR(!=)
KILN_HALF_OPERATOR(<)
KILN_HALF_OPERATOR(<=)
KILN_HALF_OPERATOR(>)
KILN_HALF_OPERATOR(>=)
#undef KILN_HALF_OPERATOR
template <HalfFloat T>
float operator-(T value) {
  return -static_cast<float>(value);
}

}  // namespace kiln

namespace kiln::detail {
// What std::numeric_limits says of a 16-bit float type, from its bit patterns.
template <class T, int Digits, uint16_t Min, uint16_t Max, uint16_t Epsilon, uint16_t Infinity, uint16_t NaN>
struct HalfLimits {
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_exact = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr int digits = Digits;
  static constexpr T min() { return T::from_bits(Min); }
  static constexpr T lowest() { return T::from_bits(Max | 0x8000); }
  static constexpr T max() { return T::from_bits(Max); }
  static constexpr T epsilon() { return T::from_bits(Epsilon); }
  static constexpr T infinity() { return T::from_bits(Infinity); }
  static constexpr T quiet_NaN() { return T::from_bits(NaN); }
  static constexpr T denorm_min() { return T::from_bits(0x0001); }
};
}  // namespace kiln::detail

namespace std {
template <>
class numeric_limits<kiln::float16>
    : public kiln::detail::HalfLimits<kiln::float16, 11, 0x0400, 0x7BFF, 0x1400, 0x7C00, 0x7E00> {};
template <>
class numeric_limits<kiln::bfloat16>
    : public kiln::detail::HalfLimits<kiln::bfloat16, 8, 0x0080, 0x7F7F, 0x3C00, 0x7F80, 0x7FC0> {};
}  // namespace std
