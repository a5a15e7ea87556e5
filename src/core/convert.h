// Element conversion with defined behaviour for every pair of dtypes:
// floating to integer truncates, NaN becomes 0 and out-of-range saturates;
// integer to narrower integer wraps (NumPy's astype); anything to f16/bf16
// rounds to nearest even; a real value becomes a complex one with a zero
// imaginary part, and a complex value converts its real part (NumPy's astype
// and JAX's, which drop the imaginary part).
#pragma once

#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kiln/dtype.h"
#include "kiln/half.h"

namespace kiln::detail {

/// float, double, float16 and bfloat16: the element types with NaN and infinities.
template <class T>
inline constexpr bool is_floating_element = std::is_floating_point_v<T> || HalfFloat<T>;

/// std::complex<float> and std::complex<double>: the elements of c64 and c128.
template <class T>
inline constexpr bool is_complex_element = ComplexNumber<T>;

/// The type an element computes in: float for the 16-bit floats, itself otherwise.
template <class T>
using compute_type = std::conditional_t<HalfFloat<T>, float, T>;

template <class To, class From>
To convert_element(From value) {
  if constexpr (std::is_same_v<To, From>) {
    return value;
  } else if constexpr (is_complex_element<From> && is_complex_element<To>) {
    using Part = typename To::value_type;
    return To(static_cast<Part>(value.real()), static_cast<Part>(value.imag()));
  } else if constexpr (is_complex_element<From>) {
    if constexpr (std::is_same_v<To, bool>) return value != From(0);
    else return convert_element<To>(value.real());
  } else if constexpr (is_complex_element<To>) {
    return To(convert_element<typename To::value_type>(value), 0);
  } else if constexpr (HalfFloat<From>) {
    return convert_element<To>(static_cast<float>(value));
  } else if constexpr (std::is_same_v<To, bool>) {
    return value != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    if (std::isnan(value)) return 0;
    constexpr double lo = static_cast<double>(std::numeric_limits<To>::min());
    // 2^bits: the first value past the top of To.
    const double past_hi = std::ldexp(1.0, std::numeric_limits<To>::digits);
    if (static_cast<double>(value) <= lo) return std::numeric_limits<To>::min();
    if (static_cast<double>(value) >= past_hi) return std::numeric_limits<To>::max();
    return static_cast<To>(value);
  } else {
    return static_cast<To>(value);
  }
}

/// NaN test for an element of any dtype (integers and bool are never NaN).
template <class T>
[[gnu::always_inline]] inline bool is_nan_element(T value) {
  if constexpr (is_floating_element<T>) return std::isnan(static_cast<compute_type<T>>(value));
  else if constexpr (is_complex_element<T>) return std::isnan(value.real()) || std::isnan(value.imag());
  else return false;
}

}  // namespace kiln::detail
