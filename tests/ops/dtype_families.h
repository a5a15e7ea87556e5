// Shared by the dtype family suites: random data over the whole range of the
// dtypes i8, i16, u8, u16, u32, u64, f16 and bf16, exact comparisons, and a
// batch of checks that runs each function eagerly, traced through the
// interpreter and jitted on the default backend, and compares it with NumPy
// (f16: NumPy's float16; bf16: the same expression in f32, rounded by torch).
#pragma once

#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "support/numpy_oracle.h"

namespace kiln::testing {

inline const std::vector<DType> new_integers = {DType::i8, DType::i16, DType::u8, DType::u16, DType::u32, DType::u64};
inline const std::vector<DType> halves = {DType::f16, DType::bf16};
inline const std::vector<DType> new_dtypes = {DType::i8,  DType::i16, DType::u8,  DType::u16,
                                              DType::u32, DType::u64, DType::f16, DType::bf16};

/// What random data holds.
enum class Values {
  mixed,  // integers: small values, extremes (u64 above 2^63, i8 -128) and random bits; floats: specials too
  small,  // integers in [-6, 6] ([0, 12] unsigned); floats multiples of 0.25 in [-4, 4]
  finite  // floats in [-4, 4] without specials; integers as mixed
};

class DtypeData {
 public:
  explicit DtypeData(uint64_t seed) : engine_(seed) {}
  Array operator()(const Shape& shape, DType dtype, Values values = Values::mixed);
  /// Floats in [lo, hi] (integers floored), any dtype.
  Array range(const Shape& shape, DType dtype, double lo, double hi);
  std::mt19937_64& engine() { return engine_; }
  int64_t integer(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(engine_); }

 private:
  std::mt19937_64 engine_;
};

/// Same dtype, shape and elements: integers compared in 64 bits (no rounding
/// through double), floats bit for bit except that every NaN equals every NaN.
::testing::AssertionResult same_values(const Array& actual, const Array& expected, const std::string& context);
/// Elements within rtol * |expected| + atol (the dtype's smallest normal when 0); NaN equals NaN.
::testing::AssertionResult close_values(const Array& actual, const Array& expected, double rtol,
                                        const std::string& context, double atol = 0);

/// One function of arrays checked four ways.
struct DtypeCheck {
  std::string name;
  std::function<Array(const std::vector<Array>&)> fn;
  /// NumPy over a, b, c, ...; bf16 inputs arrive as float32 arrays.
  std::string numpy;
  std::vector<Array> inputs;
  /// Against NumPy: 0 is exact.
  double rtol = 0;
  /// Interpreter against eager for floats: exact when false (no transcendental).
  bool transcendental = false;
};

/// Runs every check eagerly, traced through the interpreter (the same
/// dtype, weak type and values; transcendentals within native_rtol) and
/// jitted (exactly equal to eager), and compares with the oracle.
class DtypeBatch {
 public:
  void add(DtypeCheck check);
  void run();

 private:
  struct Pending {
    DtypeCheck check;
    Array eager;
    int id;
  };
  NumpyOracle oracle_;
  std::vector<Pending> pending_;
};

/// The NumPy expression that rounds float64 `x` to the nearest bf16 (ties
/// to even, overflow to infinity), as float32.
std::string numpy_round_to_bf16(const std::string& x);

}  // namespace kiln::testing
