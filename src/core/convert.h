// Element conversion with defined behaviour for every pair of dtypes:
// floating to integer truncates, NaN becomes 0 and out-of-range saturates.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace kiln::detail {

template <class To, class From>
To convert_element(From value) {
  if constexpr (std::is_same_v<To, bool>) {
    return value != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    if (std::isnan(value)) return 0;
    constexpr double lo = static_cast<double>(std::numeric_limits<To>::min());
    // 2^31 or 2^63: the first value past the top of To.
    constexpr double past_hi = -lo;
    if (static_cast<double>(value) <= lo) return std::numeric_limits<To>::min();
    if (static_cast<double>(value) >= past_hi) return std::numeric_limits<To>::max();
    return static_cast<To>(value);
  } else {
    return static_cast<To>(value);
  }
}

/// NaN test for an element of any dtype (integers and bool are never NaN).
template <class T>
bool is_nan_element(T value) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(value);
  else return false;
}

}  // namespace kiln::detail
