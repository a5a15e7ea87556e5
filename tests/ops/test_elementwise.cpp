// Elementwise operations against NumPy: every public unary and binary
// function, where, clip, astype and the operators over random broadcasting
// shapes and all dtypes; the JAX promotion lattice with weak C++ numbers;
// error messages; and eager/traced agreement.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <functional>
#include <limits>
#include <sstream>
#include <variant>

#include "backend/interp/interpreter.h"
#include "ops/common/promotion.h"
#include "support/errors.h"
#include "support/numpy_oracle.h"

namespace kiln {
namespace {

using testing::all_close;
using testing::all_dtypes;
using testing::expect_error;
using testing::native_rtol;
using testing::numpy_dtype;
using testing::NumpyOracle;
using testing::RandomArrays;

constexpr double nan = std::numeric_limits<double>::quiet_NaN();
constexpr double inf = std::numeric_limits<double>::infinity();

/// A copy of `x` marked weakly typed, as an array born from a C++ number is.
Array weak(const Array& x) { return ops::convert_to(x, x.dtype(), true, Location::current()); }

Array make(const std::vector<double>& values, const Shape& shape, DType dtype) {
  switch (dtype) {
    case DType::bool_: {
      std::vector<bool> v;
      for (double x : values) v.push_back(x != 0);
      return array(v, shape);
    }
    case DType::i32: {
      std::vector<int32_t> v;
      for (double x : values) v.push_back(static_cast<int32_t>(x));
      return array(v, shape);
    }
    case DType::i64: {
      std::vector<int64_t> v;
      for (double x : values) v.push_back(static_cast<int64_t>(x));
      return array(v, shape);
    }
    case DType::f32: {
      std::vector<float> v;
      for (double x : values) v.push_back(static_cast<float>(x));
      return array(v, shape);
    }
    case DType::f64: break;
  }
  return array(values, shape);
}

/// Random values in [lo, hi): integers are floored; with `ties`, floats are
/// multiples of 0.5 so comparisons meet equal values and rounding meets halves.
Array random_array(RandomArrays& random, const Shape& shape, DType dtype, double lo, double hi, bool ties = false) {
  std::uniform_real_distribution<double> real(lo, hi);
  std::vector<double> values(static_cast<size_t>(shape_size(shape)));
  for (double& v : values) {
    v = real(random.engine());
    if (dtype == DType::bool_) v = random.engine()() & 1;
    else if (!is_floating(dtype)) v = std::floor(v);
    else if (ties) v = std::round(v * 2) / 2;
  }
  return make(values, shape, dtype);
}

/// A Python literal of `value` at NumPy dtype `dtype`.
std::string python_number(const Scalar& value, DType dtype) {
  std::ostringstream text;
  text.precision(17);
  if (value.kind() == Scalar::Kind::floating) text << value.as_double();
  else text << value.as_int();
  std::string literal = text.str();
  if (dtype == DType::bool_) literal = value.as_double() != 0 ? "True" : "False";
  return numpy_dtype(dtype) + "(" + literal + ")";
}

double tolerance(DType dtype) { return dtype == DType::f32 ? 1e-6 : dtype == DType::f64 ? 1e-14 : 0; }

void expect_same(const Array& actual, const Array& expected, const std::string& context) {
  EXPECT_EQ(actual.dtype(), expected.dtype()) << context;
  EXPECT_EQ(actual.weak_type(), expected.weak_type()) << context;
  EXPECT_TRUE(all_close(actual, expected, 0, 0, context));
}

// ---- The promotion lattice -------------------------------------------------------

// JAX's lattice restricted to kiln's dtypes; int* and float* are the weak
// classes of C++ numbers (and of arrays computed only from them).
enum Class { B, IW, I32, I64, FW, F32, F64 };
// Written out by hand from JAX's documented table rather than computed, so it
// checks the library's algorithm instead of repeating it.
// clang-format off
constexpr Class join_table[7][7] = {
    /*         B    IW   I32  I64  FW   F32  F64 */
    /* B   */ {B,   IW,  I32, I64, FW,  F32, F64},
    /* IW  */ {IW,  IW,  I32, I64, FW,  F32, F64},
    /* I32 */ {I32, I32, I32, I64, FW,  F32, F64},
    /* I64 */ {I64, I64, I64, I64, FW,  F32, F64},
    /* FW  */ {FW,  FW,  FW,  FW,  FW,  F32, F64},
    /* F32 */ {F32, F32, F32, F32, F32, F32, F64},
    /* F64 */ {F64, F64, F64, F64, F64, F64, F64},
};
// clang-format on

struct Type {
  DType dtype;
  bool weak;
};

Class class_of(DType dtype, bool weak) {
  switch (dtype) {
    case DType::bool_: return B;
    case DType::i32: return weak ? IW : I32;
    case DType::i64: return weak ? IW : I64;
    case DType::f32: return weak ? FW : F32;
    case DType::f64: return weak ? FW : F64;
  }
  return F64;
}
Class class_of(const Scalar& number) {
  switch (number.kind()) {
    case Scalar::Kind::boolean: return B;
    case Scalar::Kind::integer: return IW;
    case Scalar::Kind::floating: break;
  }
  return FW;
}
Class class_of(const Operand& o) {
  return o.is_number() ? class_of(o.number()) : class_of(o.array().dtype(), o.array().weak_type());
}

Type resolve(Class c) {
  constexpr Type types[] = {{bool_, false}, {i32, true},  {i32, false}, {i64, false},
                            {f32, true},    {f32, false}, {f64, false}};
  return types[c];
}

// ---- Tables of operations ----------------------------------------------------------

enum class Result { same, floating, boolean };

struct UnaryCase {
  const char* name;
  std::function<Array(const Array&)> kiln;
  const char* numpy;  // in terms of x, evaluated in float64 for floating results
  Result result;
  double lo, hi;
  bool accepts_bool = true;
  bool ties = false;
};

const std::vector<UnaryCase>& unary_cases() {
  static const std::vector<UnaryCase> cases = {
      {"neg", [](const Array& x) { return neg(x); }, "np.negative(x)", Result::same, -3, 3, false},
      {"abs", [](const Array& x) { return abs(x); }, "np.abs(x)", Result::same, -3, 3, false},
      {"sign", [](const Array& x) { return sign(x); }, "np.sign(x)", Result::same, -3, 3, false, true},
      {"square", [](const Array& x) { return square(x); }, "np.square(x)", Result::same, -3, 3, false},
      {"relu", [](const Array& x) { return relu(x); }, "np.maximum(x, 0)", Result::same, -3, 3, true, true},
      {"exp", [](const Array& x) { return exp(x); }, "np.exp(x)", Result::floating, -5, 5},
      {"log", [](const Array& x) { return log(x); }, "np.log(x)", Result::floating, 0.01, 5},
      {"log1p", [](const Array& x) { return log1p(x); }, "np.log1p(x)", Result::floating, -0.99, 5},
      {"expm1", [](const Array& x) { return expm1(x); }, "np.expm1(x)", Result::floating, -5, 5},
      {"sqrt", [](const Array& x) { return sqrt(x); }, "np.sqrt(x)", Result::floating, 0, 5},
      {"rsqrt", [](const Array& x) { return rsqrt(x); }, "1 / np.sqrt(x)", Result::floating, 0.01, 5},
      {"tanh", [](const Array& x) { return tanh(x); }, "np.tanh(x)", Result::floating, -5, 5},
      {"sigmoid", [](const Array& x) { return sigmoid(x); }, "1 / (1 + np.exp(-x))", Result::floating, -8, 8},
      {"erf", [](const Array& x) { return erf(x); }, "np.vectorize(__import__('math').erf, otypes=[np.float64])(x)",
       Result::floating, -3, 3},
      {"sin", [](const Array& x) { return sin(x); }, "np.sin(x)", Result::floating, -7, 7},
      {"cos", [](const Array& x) { return cos(x); }, "np.cos(x)", Result::floating, -7, 7},
      // Integers and bool are already whole: floor/ceil/round return them unchanged
      // (NumPy returns floats; the expected value is cast back).
      {"floor", [](const Array& x) { return floor(x); }, "np.floor(x)", Result::same, -3, 3, true, true},
      {"ceil", [](const Array& x) { return ceil(x); }, "np.ceil(x)", Result::same, -3, 3, true, true},
      {"round", [](const Array& x) { return round(x); }, "np.round(x)", Result::same, -3, 3, true, true},
      {"logical_not", [](const Array& x) { return logical_not(x); }, "np.logical_not(x)", Result::boolean, -2, 2, true,
       true},
      {"isnan", [](const Array& x) { return isnan(x); }, "np.isnan(x)", Result::boolean, -3, 3},
      {"stop_gradient", [](const Array& x) { return stop_gradient(x); }, "x", Result::same, -3, 3},
      // Composites.
      {"tan", [](const Array& x) { return tan(x); }, "np.tan(x)", Result::floating, -1.4, 1.4},
      {"sinh", [](const Array& x) { return sinh(x); }, "np.sinh(x)", Result::floating, -5, 5},
      {"cosh", [](const Array& x) { return cosh(x); }, "np.cosh(x)", Result::floating, -5, 5},
      {"reciprocal", [](const Array& x) { return reciprocal(x); }, "1 / x", Result::floating, 0.1, 3},
      {"degrees", [](const Array& x) { return degrees(x); }, "np.degrees(x)", Result::floating, -7, 7},
      {"radians", [](const Array& x) { return radians(x); }, "np.radians(x)", Result::floating, -400, 400},
      {"isinf", [](const Array& x) { return isinf(x); }, "np.isinf(x)", Result::boolean, -3, 3},
      {"isfinite", [](const Array& x) { return isfinite(x); }, "np.isfinite(x)", Result::boolean, -3, 3},
  };
  return cases;
}

DType unary_result(const UnaryCase& c, DType input) {
  if (c.result == Result::boolean) return bool_;
  if (c.result == Result::floating && !is_floating(input)) return f32;
  if (std::string(c.name) == "relu" && input == bool_) return i32;  // max(bool, 0) promotes to int*
  return input;
}

/// The NumPy expression for case `c` on input `a` of `input` dtype.
std::string unary_expression(const UnaryCase& c, DType input) {
  DType result = unary_result(c, input);
  // Floating results are computed in float64 and rounded once: a sharper
  // reference than NumPy's own float32 kernels.
  std::string x = is_floating(result) ? "a.astype(np.float64)" : "a";
  // NumPy rounds integers through float64, which is lossy past 2^53; kiln
  // returns them unchanged.
  std::string name = c.name;
  if (input == i64 && (name == "floor" || name == "ceil" || name == "round")) return "a";
  return "(lambda x: " + std::string(c.numpy) + ")(" + x + ").astype(" + numpy_dtype(result) + ")";
}

enum class Kind { arithmetic, divide, compare, logical };

struct BinaryCase {
  const char* name;
  std::function<Array(Operand, Operand)> kiln;
  std::function<Array(Operand, Operand)> op;  // the operator spelling, if any
  const char* numpy;
  Kind kind;
  bool accepts_bool = true;
};

const std::vector<BinaryCase>& binary_cases() {
  using O = Operand;
  static const std::vector<BinaryCase> cases = {
      {"add", [](O a, O b) { return add(a, b); }, [](O a, O b) { return a + b; }, "np.add", Kind::arithmetic},
      {"sub", [](O a, O b) { return sub(a, b); }, [](O a, O b) { return a - b; }, "np.subtract", Kind::arithmetic,
       false},
      {"mul", [](O a, O b) { return mul(a, b); }, [](O a, O b) { return a * b; }, "np.multiply", Kind::arithmetic},
      {"div", [](O a, O b) { return div(a, b); }, [](O a, O b) { return a / b; }, "np.true_divide", Kind::divide},
      {"pow", [](O a, O b) { return pow(a, b); }, nullptr, "np.power", Kind::arithmetic, false},
      {"maximum", [](O a, O b) { return maximum(a, b); }, nullptr, "np.maximum", Kind::arithmetic},
      {"minimum", [](O a, O b) { return minimum(a, b); }, nullptr, "np.minimum", Kind::arithmetic},
      {"equal", [](O a, O b) { return equal(a, b); }, [](O a, O b) { return a == b; }, "np.equal", Kind::compare},
      {"not_equal", [](O a, O b) { return not_equal(a, b); }, [](O a, O b) { return a != b; }, "np.not_equal",
       Kind::compare},
      {"less", [](O a, O b) { return less(a, b); }, [](O a, O b) { return a < b; }, "np.less", Kind::compare},
      {"less_equal", [](O a, O b) { return less_equal(a, b); }, [](O a, O b) { return a <= b; }, "np.less_equal",
       Kind::compare},
      {"greater", [](O a, O b) { return greater(a, b); }, [](O a, O b) { return a > b; }, "np.greater", Kind::compare},
      {"greater_equal", [](O a, O b) { return greater_equal(a, b); }, [](O a, O b) { return a >= b; },
       "np.greater_equal", Kind::compare},
      // & and | are bitwise, as NumPy's (test_bitwise_and_division.cpp).
      {"logical_and", [](O a, O b) { return logical_and(a, b); }, nullptr, "np.logical_and", Kind::logical},
      {"logical_or", [](O a, O b) { return logical_or(a, b); }, nullptr, "np.logical_or", Kind::logical},
  };
  return cases;
}

/// (dtype the operands are computed in, result type) for case `c`.
std::pair<DType, Type> binary_types(const BinaryCase& c, Class a, Class b) {
  Type joined = resolve(join_table[a][b]);
  switch (c.kind) {
    case Kind::arithmetic: return {joined.dtype, joined};
    case Kind::divide: {
      Type t = is_floating(joined.dtype) ? joined : Type{f32, joined.weak};
      return {t.dtype, t};
    }
    case Kind::compare: return {joined.dtype, {bool_, false}};
    case Kind::logical: break;
  }
  return {bool_, {bool_, false}};
}

bool defined_for(const BinaryCase& c, Class a, Class b) { return c.accepts_bool || join_table[a][b] != B; }

/// NumPy text for an operand: an array input name or a number at `compute`.
std::string numpy_operand(const Operand& o, const std::string& name, DType compute) {
  return o.is_number() ? python_number(o.number(), compute) : name + ".astype(" + numpy_dtype(compute) + ")";
}

// ---- Unary ---------------------------------------------------------------------------

TEST(Elementwise, UnaryMatchesNumpyOnRandomShapesAndDtypes) {
  RandomArrays random(11);
  NumpyOracle oracle;
  struct Pending {
    int id;
    Array actual;
    std::string context;
  };
  std::vector<Pending> pending;
  for (const UnaryCase& c : unary_cases()) {
    for (DType dtype : all_dtypes) {
      if (dtype == bool_ && !c.accepts_bool) continue;
      for (int trial = 0; trial < 3; ++trial) {
        Array x = random_array(random, random.shape(0, 4), dtype, c.lo, c.hi, c.ties);
        if (trial == 2) x = weak(x);
        Array y = c.kiln(x);
        std::string context = std::string(c.name) + "(" + std::string(dtype_name(dtype)) + shape_string(x.shape()) +
                              (x.weak_type() ? "~" : "") + ")";
        EXPECT_EQ(y.dtype(), unary_result(c, dtype)) << context;
        // Results keep the operand's weak flag, except those that are bool by
        // definition; relu(bool) is max(bool, 0), which is int* by promotion.
        bool weak_result =
            std::string(c.name) == "relu" && dtype == bool_ ? true : x.weak_type() && c.result != Result::boolean;
        EXPECT_EQ(y.weak_type(), weak_result) << context;
        pending.push_back({oracle.add(unary_expression(c, dtype), {x}), y, context});
      }
    }
  }
  oracle.run();
  for (const Pending& p : pending) {
    auto expected = oracle.result(p.id);
    ASSERT_TRUE(expected) << p.context << ": " << oracle.error(p.id);
    EXPECT_TRUE(all_close(p.actual, *expected, testing::default_rtol(p.actual.dtype()), tolerance(p.actual.dtype()),
                          p.context));
  }
}

TEST(Elementwise, UnarySpecialValues) {
  const std::vector<double> specials = {0.0, -0.0, inf,  -inf,  nan,    1,   -1,   0.5, -0.5,
                                        1.5, 2.5,  -2.5, 1e-30, -1e-30, 100, -100, 1e30};
  NumpyOracle oracle;
  std::vector<std::tuple<int, Array, std::string>> pending;
  for (DType dtype : {f32, f64}) {
    Array x = make(specials, {static_cast<int64_t>(specials.size())}, dtype);
    for (const UnaryCase& c : unary_cases()) {
      pending.emplace_back(oracle.add(unary_expression(c, dtype), {x}), c.kiln(x),
                           std::string(c.name) + " on special " + std::string(dtype_name(dtype)));
    }
  }
  // Integer extremes: negation and abs wrap, as in NumPy.
  for (DType dtype : {i32, i64}) {
    Array x = dtype == i32
                  ? array<int32_t>({std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(), 0, -1})
                  : array<int64_t>({std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), 0, -1});
    for (const UnaryCase& c : unary_cases())
      if (c.result != Result::floating)
        pending.emplace_back(oracle.add(unary_expression(c, dtype), {x}), c.kiln(x),
                             std::string(c.name) + " on extreme " + std::string(dtype_name(dtype)));
  }
  oracle.run();
  for (const auto& [id, actual, context] : pending) {
    auto expected = oracle.result(id);
    ASSERT_TRUE(expected) << context << ": " << oracle.error(id);
    EXPECT_TRUE(
        all_close(actual, *expected, testing::default_rtol(actual.dtype()), tolerance(actual.dtype()), context));
  }
  // Rounding is half to even, and signs of zero survive where IEEE keeps them.
  EXPECT_EQ(round(array({0.5, 1.5, 2.5, -0.5, -1.5})).to_vector<double>(), (std::vector<double>{0, 2, 2, -0.0, -2}));
  EXPECT_TRUE(std::signbit(neg(scalar(0.0)).item<double>()));
  EXPECT_TRUE(std::isnan(sign(scalar(nan)).item<double>()));
}

TEST(Elementwise, Astype) {
  RandomArrays random(12);
  NumpyOracle oracle;
  std::vector<std::tuple<int, Array, std::string>> pending;
  for (DType from : all_dtypes) {
    for (DType to : all_dtypes) {
      Array x = random_array(random, random.shape(0, 3), from, -3, 3);
      Array y = astype(weak(x), to);
      EXPECT_EQ(y.dtype(), to);
      EXPECT_FALSE(y.weak_type()) << "astype gives a strongly typed array";
      pending.emplace_back(oracle.add("a.astype(" + numpy_dtype(to) + ")", {x}), y,
                           std::string(dtype_name(from)) + "->" + std::string(dtype_name(to)));
    }
  }
  oracle.run();
  for (const auto& [id, actual, context] : pending) {
    auto expected = oracle.result(id);
    ASSERT_TRUE(expected) << context << ": " << oracle.error(id);
    EXPECT_TRUE(all_close(actual, *expected, 0, 0, context));
  }
  // Float to integer truncates toward zero, NaN becomes 0, and out-of-range
  // values saturate (NumPy leaves these undefined, so they are spelled out).
  Array special = array({nan, inf, -inf, 3e9, -3e9, 2.9, -2.9, 1e19, -1e19});
  EXPECT_EQ(astype(special, i32).to_vector<int32_t>(),
            (std::vector<int32_t>{0, INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, 2, -2, INT32_MAX, INT32_MIN}));
  EXPECT_EQ(astype(special, i64).to_vector<int64_t>(),
            (std::vector<int64_t>{0, INT64_MAX, INT64_MIN, 3000000000, -3000000000, 2, -2, INT64_MAX, INT64_MIN}));
  EXPECT_EQ(astype(special, bool_).to_vector<bool>(), (std::vector<bool>(9, true)));
  EXPECT_TRUE(std::isinf(astype(array({1e300}), f32).item<float>()));
}

// ---- Binary --------------------------------------------------------------------------

/// Operands for `c`: exponents of integer powers are kept non-negative (NumPy
/// rejects negative integer powers; that case is tested separately).
Array binary_operand(RandomArrays& random, const BinaryCase& c, const Shape& shape, DType dtype, bool exponent) {
  bool small_exponent = std::string(c.name) == "pow" && exponent;
  return random_array(random, shape, dtype, small_exponent ? 0 : -3, small_exponent ? 4 : 3, true);
}

TEST(Elementwise, BinaryMatchesNumpyOverDtypePairsAndBroadcasting) {
  RandomArrays random(21);
  NumpyOracle oracle;
  struct Pending {
    int id;
    Array actual;
    std::string context;
  };
  std::vector<Pending> pending;
  for (const BinaryCase& c : binary_cases()) {
    for (DType da : all_dtypes) {
      for (DType db : all_dtypes) {
        for (int trial = 0; trial < 2; ++trial) {
          Shape sa = random.shape(0, 4), sb = random.broadcastable(sa);
          if (trial == 1) std::swap(sa, sb);
          Array a = binary_operand(random, c, sa, da, false);
          Array b = binary_operand(random, c, sb, db, true);
          // Weak arrays of the default dtypes (i32, f32), as C++ numbers make them.
          if (trial == 1 && (da == i32 || da == f32) && random.integer(0, 1)) a = weak(a);
          Class ca = class_of(da, a.weak_type()), cb = class_of(db, b.weak_type());
          if (!defined_for(c, ca, cb)) continue;
          auto [compute, result] = binary_types(c, ca, cb);
          std::string context = std::string(c.name) + "(" + std::string(dtype_name(da)) + shape_string(sa) +
                                (a.weak_type() ? "~" : "") + ", " + std::string(dtype_name(db)) + shape_string(sb) +
                                ")";
          Array y = c.kiln(a, b);
          EXPECT_EQ(y.dtype(), result.dtype) << context;
          EXPECT_EQ(y.weak_type(), result.weak) << context;
          if (c.op) expect_same(c.op(a, b), y, context + " via operator");
          std::string expression = std::string(c.numpy) + "(" + numpy_operand(a, "a", compute) + ", " +
                                   numpy_operand(b, "b", compute) + ").astype(" + numpy_dtype(result.dtype) + ")";
          pending.push_back({oracle.add(expression, {a, b}), y, context});
        }
      }
    }
  }
  oracle.run();
  for (const Pending& p : pending) {
    auto expected = oracle.result(p.id);
    ASSERT_TRUE(expected) << p.context << ": " << oracle.error(p.id);
    EXPECT_TRUE(all_close(p.actual, *expected, testing::default_rtol(p.actual.dtype()), tolerance(p.actual.dtype()),
                          p.context));
  }
}

TEST(Elementwise, BinaryWithCppNumbersOnEitherSide) {
  RandomArrays random(22);
  NumpyOracle oracle;
  using CppNumber = std::variant<int, int64_t, double, float, bool>;
  const std::vector<CppNumber> numbers = {2, -1, 0, 1.5, -0.25, true, false, int64_t{3}, 2.0f};
  std::vector<std::tuple<int, Array, std::string>> pending;
  for (const BinaryCase& c : binary_cases()) {
    for (DType dtype : all_dtypes) {
      for (const CppNumber& cpp_number : numbers) {
        Scalar number = std::visit([](auto v) { return Scalar(v); }, cpp_number);
        for (bool number_first : {false, true}) {
          bool exponent_is_array = std::string(c.name) == "pow" && number_first;
          Array x = binary_operand(random, c, random.shape(0, 3), dtype, exponent_is_array);
          Operand n = std::visit([](auto v) { return Operand(v); }, cpp_number), o(x);
          Operand first = number_first ? n : o, second = number_first ? o : n;
          Class ca = class_of(first), cb = class_of(second);
          if (!defined_for(c, ca, cb)) continue;
          auto [compute, result] = binary_types(c, ca, cb);
          if (std::string(c.name) == "pow" && !number_first && !is_floating(compute) && number.as_double() < 0)
            continue;
          std::string context = std::string(c.name) + (number_first ? "(number " : "(") + number.to_string() +
                                (number_first ? ", " : " with ") + std::string(dtype_name(dtype)) + ")";
          Array y = c.kiln(first, second);
          EXPECT_EQ(y.dtype(), result.dtype) << context;
          EXPECT_EQ(y.weak_type(), result.weak) << context;
          if (c.op) expect_same(c.op(first, second), y, context + " via operator");
          std::string expression = std::string(c.numpy) + "(" + numpy_operand(first, "a", compute) + ", " +
                                   numpy_operand(second, "a", compute) + ").astype(" + numpy_dtype(result.dtype) + ")";
          pending.emplace_back(oracle.add(expression, {x}), y, context);
        }
      }
    }
  }
  oracle.run();
  for (const auto& [id, actual, context] : pending) {
    auto expected = oracle.result(id);
    ASSERT_TRUE(expected) << context << ": " << oracle.error(id);
    EXPECT_TRUE(
        all_close(actual, *expected, testing::default_rtol(actual.dtype()), tolerance(actual.dtype()), context));
  }
}

TEST(Elementwise, BinarySpecialValues) {
  const std::vector<double> specials = {0.0, -0.0, inf, -inf, nan, 1, -1, 0.5, -2, 3};
  auto n = static_cast<int64_t>(specials.size());
  NumpyOracle oracle;
  std::vector<std::tuple<int, Array, std::string>> pending;
  for (DType dtype : {f32, f64}) {
    // Every ordered pair: a column against a row.
    Array a = make(specials, {n, 1}, dtype), b = make(specials, {1, n}, dtype);
    for (const BinaryCase& c : binary_cases()) {
      auto [compute, result] = binary_types(c, class_of(dtype, false), class_of(dtype, false));
      std::string expression = std::string(c.numpy) + "(a.astype(" + numpy_dtype(compute) + "), b.astype(" +
                               numpy_dtype(compute) + ")).astype(" + numpy_dtype(result.dtype) + ")";
      pending.emplace_back(oracle.add(expression, {a, b}), c.kiln(a, b),
                           std::string(c.name) + " specials " + std::string(dtype_name(dtype)));
    }
  }
  // Integer arithmetic wraps like NumPy's; integer powers use exact squaring.
  Array big = array<int32_t>({INT32_MAX, INT32_MIN, 46341, -7, 3}), other = array<int32_t>({1, 2, 46341, 3, 21});
  for (const char* name : {"add", "sub", "mul", "pow"})
    for (const BinaryCase& c : binary_cases())
      if (std::string(c.name) == name)
        pending.emplace_back(oracle.add(std::string(c.numpy) + "(a, b)", {big, other}), c.kiln(big, other),
                             std::string(name) + " wraps");
  Array big64 = array<int64_t>({INT64_MAX, INT64_MIN, 3037000500, 5}), other64 = array<int64_t>({1, 2, 3037000500, 40});
  for (const BinaryCase& c : binary_cases())
    if (c.kind == Kind::arithmetic && std::string(c.name) != "maximum" && std::string(c.name) != "minimum")
      pending.emplace_back(oracle.add(std::string(c.numpy) + "(a, b)", {big64, other64}), c.kiln(big64, other64),
                           std::string(c.name) + " wraps i64");
  oracle.run();
  for (const auto& [id, actual, context] : pending) {
    auto expected = oracle.result(id);
    ASSERT_TRUE(expected) << context << ": " << oracle.error(id);
    EXPECT_TRUE(
        all_close(actual, *expected, testing::default_rtol(actual.dtype()), tolerance(actual.dtype()), context));
  }
  // Negative integer exponents (NumPy raises): the truncated exact result.
  EXPECT_EQ(pow(array<int32_t>({2, 1, -1, -1, 0, 5}), array<int32_t>({-1, -5, -3, -2, -1, 0})).to_vector<int32_t>(),
            (std::vector<int32_t>{0, 1, -1, 1, 0, 1}));
  // Bool arithmetic that is defined: + is or, * is and, max/min are or/and.
  Array t = array({true, true, false, false}), f = array({true, false, true, false});
  EXPECT_EQ((t + f).to_vector<bool>(), (std::vector<bool>{true, true, true, false}));
  EXPECT_EQ((t * f).to_vector<bool>(), (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ((t + f).dtype(), bool_);
  EXPECT_EQ(div(t, f).dtype(), f32);
}

// ---- where, clip, operators ------------------------------------------------------------

TEST(Elementwise, WhereAndClip) {
  RandomArrays random(31);
  NumpyOracle oracle;
  std::vector<std::tuple<int, Array, std::string>> pending;
  for (DType dx : all_dtypes) {
    for (DType dy : all_dtypes) {
      Shape shape = random.shape(0, 4);
      Shape sc = random.broadcastable(shape), sx = random.broadcastable(shape), sy = shape;
      DType cond_dtype = random.integer(0, 1) ? bool_ : f32;  // non-bool conditions test for nonzero
      Array c = random_array(random, sc, cond_dtype, -1, 1, true), x = random_array(random, sx, dx, -3, 3),
            y = random_array(random, sy, dy, -3, 3);
      Type t = resolve(join_table[class_of(dx, false)][class_of(dy, false)]);
      std::string context = "where(" + std::string(dtype_name(dx)) + ", " + std::string(dtype_name(dy)) + ")";
      Array r = kiln::where(c, x, y);
      EXPECT_EQ(r.dtype(), t.dtype) << context;
      EXPECT_FALSE(r.weak_type()) << context;
      std::string T = numpy_dtype(t.dtype);
      pending.emplace_back(oracle.add("np.where(a.astype(bool), b.astype(" + T + "), c.astype(" + T + "))", {c, x, y}),
                           r, context);
      // Numbers as branches adopt the array's dtype.
      Array rn = kiln::where(c, 1.5, y);
      Type tn = resolve(join_table[FW][class_of(dy, false)]);
      EXPECT_EQ(rn.dtype(), tn.dtype) << context;
      std::string Tn = numpy_dtype(tn.dtype);
      pending.emplace_back(oracle.add("np.where(a.astype(bool), " + Tn + "(1.5), b.astype(" + Tn + "))", {c, y}), rn,
                           context + " with 1.5");
      if (dx == bool_) continue;
      Array lo = random_array(random, random.broadcastable(sx), dy, -2, 0),
            hi = random_array(random, random.broadcastable(sx), dy, 0, 2);
      Array clipped = clip(x, lo, hi);
      EXPECT_EQ(clipped.dtype(), t.dtype) << "clip " << context;
      pending.emplace_back(
          oracle.add("np.minimum(np.maximum(a.astype(" + T + "), b.astype(" + T + ")), c.astype(" + T + "))",
                     {x, lo, hi}),
          clipped, "clip " + context);
      Array clipped_numbers = clip(x, -1, 1.5);
      Type tc = resolve(join_table[class_of(dx, false)][FW]);
      EXPECT_EQ(clipped_numbers.dtype(), tc.dtype) << "clip numbers " << context;
      std::string Tc = numpy_dtype(tc.dtype);
      pending.emplace_back(oracle.add("np.clip(a.astype(" + Tc + "), -1, 1.5).astype(" + Tc + ")", {x}),
                           clipped_numbers, "clip numbers " + context);
    }
  }
  oracle.run();
  for (const auto& [id, actual, context] : pending) {
    auto expected = oracle.result(id);
    ASSERT_TRUE(expected) << context << ": " << oracle.error(id);
    EXPECT_TRUE(all_close(actual, *expected, 0, 0, context));
  }
  EXPECT_TRUE(kiln::where(true, 1, 2.5).weak_type());
  EXPECT_EQ(kiln::where(array({true, false}), 1, 2).to_vector<int32_t>(), (std::vector<int32_t>{1, 2}));
  EXPECT_TRUE(std::isnan(clip(scalar(nan), 0.0, 1.0).item<double>()));
}

TEST(Elementwise, UnaryOperators) {
  Array x = array({1.5f, -2.0f, 0.0f}), b = array({true, false});
  expect_same(-x, neg(x), "-x");
  expect_same(!b, logical_not(b), "!b");
  expect_same(!x, logical_not(x), "!x");
  expect_same(-Operand(2), weak(scalar(-2)), "-2");
  expect_same(-Operand(2.5), weak(scalar(-2.5f)), "-2.5");
  expect_same(!Operand(true), scalar(false), "!true");
  EXPECT_EQ((-weak(x)).weak_type(), true);
}

// ---- Promotion and weak types -------------------------------------------------------------

TEST(Elementwise, PromotionLatticeIsJaxs) {
  const std::vector<Type> classes = {{bool_, false}, {i32, true},  {i32, false}, {i64, false}, {f32, true},
                                     {f32, false},   {f64, false}, {i64, true},  {f64, true}};
  for (Type ta : classes) {
    for (Type tb : classes) {
      Array a = ones({2}, ta.dtype), b = ones({2}, tb.dtype);
      if (ta.weak) a = weak(a);
      if (tb.weak) b = weak(b);
      Type expected = resolve(join_table[class_of(ta.dtype, ta.weak)][class_of(tb.dtype, tb.weak)]);
      // kiln's extension for weak i64/f64 (which JAX has only under x64): a
      // weak result takes the widest weak operand of its kind.
      Class joined = join_table[class_of(ta.dtype, ta.weak)][class_of(tb.dtype, tb.weak)];
      for (Type t : {ta, tb})
        if (t.weak && class_of(t.dtype, true) == joined && dtype_size(t.dtype) > dtype_size(expected.dtype))
          expected.dtype = t.dtype;
      std::string context = std::string(dtype_name(ta.dtype)) + (ta.weak ? "~" : "") + " and " +
                            std::string(dtype_name(tb.dtype)) + (tb.weak ? "~" : "");
      for (const Array& r : {add(a, b), mul(a, b), maximum(a, b), minimum(a, b), kiln::where(true, a, b)}) {
        EXPECT_EQ(r.dtype(), expected.dtype) << context;
        EXPECT_EQ(r.weak_type(), expected.weak) << context;
      }
      EXPECT_EQ(equal(a, b).dtype(), bool_);
      EXPECT_FALSE(less(a, b).weak_type());
      EXPECT_FALSE(logical_or(a, b).weak_type());
      Array q = div(a, b);
      EXPECT_EQ(q.dtype(), is_floating(expected.dtype) ? expected.dtype : f32) << context;
      EXPECT_EQ(q.weak_type(), expected.weak) << context;
    }
  }
}

TEST(Elementwise, WeakCppNumbersFollowTheArray) {
  Array xb = array({true}), xi = array<int32_t>({1}), xl = array<int64_t>({1}), xf = array({1.0f}), xd = array({1.0});
  struct Row {
    Array result;
    DType dtype;
    bool weak;
    const char* what;
  };
  const std::vector<Row> rows = {
      {xf * 2.0, f32, false, "f32 * 2.0"},
      {2.0 * xf, f32, false, "2.0 * f32"},
      {xi + 1.5, f32, true, "i32 + 1.5"},
      {xi + 1, i32, false, "i32 + 1"},
      {xb + 1, i32, true, "bool + 1"},
      {xb + 1.5, f32, true, "bool + 1.5"},
      {xb + true, bool_, false, "bool + true"},
      {xi + true, i32, false, "i32 + true"},
      {xi + xl, i64, false, "i32 + i64"},
      {xl + xf, f32, false, "i64 + f32"},
      {xl + 1, i64, false, "i64 + 1"},
      {xl * 2.5, f32, true, "i64 * 2.5"},
      {xd + 1.5f, f64, false, "f64 + 1.5f"},
      {xf + xd, f64, false, "f32 + f64"},
      {xb + xi, i32, false, "bool + i32"},
      {xi / 2, f32, false, "i32 / 2"},
      {xi / xi, f32, false, "i32 / i32"},
      {xl / xl, f32, false, "i64 / i64"},
      {xd / 2, f64, false, "f64 / 2"},
      {add(1, 2), i32, true, "1 + 2"},
      {add(1, 2.5), f32, true, "1 + 2.5"},
      {add(true, false), bool_, false, "true + false"},
      {add(true, 2), i32, true, "true + 2"},
      {add(int64_t{1}, short{2}), i32, true, "int64 + short"},
      {xi * 2.0f, f32, true, "i32 * 2.0f"},
      {xf + 'a', f32, false, "f32 + char"},
      {exp(weak(xi)), f32, true, "exp(i32~)"},
      {exp(xi), f32, false, "exp(i32)"},
      {exp(xb), f32, false, "exp(bool)"},
      {astype(weak(xf), f32), f32, false, "astype(f32~)"},
      {isnan(weak(xf)), bool_, false, "isnan(f32~)"},
      {floor(weak(xi)), i32, true, "floor(i32~)"},
      {relu(xi), i32, false, "relu(i32)"},
      {relu(xf), f32, false, "relu(f32)"},
      {square(weak(xf)), f32, true, "square(f32~)"},
      {stop_gradient(weak(xd)), f64, true, "stop_gradient(f64~)"},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(row.result.dtype(), row.dtype) << row.what;
    EXPECT_EQ(row.result.weak_type(), row.weak) << row.what;
  }
  // The number is rounded to the array's dtype before the operation.
  EXPECT_EQ((xi + 1.7).item<float>(), 1.0f + 1.7f);
  EXPECT_EQ((xf + 0.1).item<float>(), 1.0f + 0.1f);
  EXPECT_EQ((xd + 0.1).item<double>(), 1.0 + 0.1);
  EXPECT_EQ((xl + int64_t{5}).item<int64_t>(), 6);
}

// ---- Errors ------------------------------------------------------------------------------

TEST(Elementwise, Errors) {
  Array a = zeros({2, 3}), b = zeros({4}), t = array({true, false});
  expect_error(__LINE__, [&] { add(a, b); }, {"[add]", "[2,3]", "[4]", "do not broadcast"});
  expect_error(__LINE__, [&] { (void)(a * b); }, {"[mul]", "[2,3]", "[4]"});
  expect_error(__LINE__, [&] { (void)(a == b); }, {"[equal]", "[2,3]", "[4]"});
  expect_error(__LINE__, [&] { maximum(b, a); }, {"[maximum]", "[4]", "[2,3]"});
  expect_error(__LINE__, [&] { logical_and(a, b); }, {"[logical_and]", "[2,3]"});
  expect_error(__LINE__, [&] { kiln::where(t, a, b); }, {"[where]", "do not broadcast"});
  expect_error(__LINE__, [&] { clip(a, b, 1); }, {"do not broadcast", "[2,3]", "[4]"});
  expect_error(__LINE__, [&] { sub(t, t); }, {"[sub]", "bool[2]", "astype"});
  expect_error(__LINE__, [&] { (void)(t - true); }, {"[sub]", "bool[2]", "true"});
  expect_error(__LINE__, [&] { pow(t, t); }, {"[pow]", "bool[2]"});
  expect_error(__LINE__, [&] { neg(t); }, {"[neg]", "bool[2]"});
  expect_error(__LINE__, [&] { (void)(-t); }, {"[neg]", "bool[2]"});
  expect_error(__LINE__, [&] { abs(t); }, {"[abs]", "bool[2]"});
  expect_error(__LINE__, [&] { sign(t); }, {"[sign]", "bool[2]"});
  expect_error(__LINE__, [&] { add(Array(), a); }, {"[add]", "empty"});
  expect_error(__LINE__, [&] { exp(Array()); }, {"[exp]", "empty"});
}

// ---- Tracing -------------------------------------------------------------------------------

Array traced_unary(const UnaryCase& c, const Array& x) {
  Graph graph = make_graph(
      "f", [&](const Array& t) { return c.kiln(t); }, x);
  return detail::interpret(graph, {x}, {}).at(0);
}

TEST(Elementwise, TracedMatchesEager) {
  RandomArrays random(41);
  for (const UnaryCase& c : unary_cases()) {
    for (DType dtype : all_dtypes) {
      if (dtype == bool_ && !c.accepts_bool) continue;
      Array x = random_array(random, random.shape(0, 3), dtype, c.lo, c.hi, c.ties);
      Array eager = c.kiln(x), traced = traced_unary(c, x);
      std::string context = std::string(c.name) + " traced " + std::string(dtype_name(dtype));
      EXPECT_EQ(traced.dtype(), eager.dtype()) << context;
      EXPECT_TRUE(all_close(traced, eager, native_rtol(eager.dtype()), 0, context));
    }
  }
  for (const BinaryCase& c : binary_cases()) {
    for (DType da : all_dtypes) {
      for (DType db : {i32, f32, bool_}) {
        if (!defined_for(c, class_of(da, false), class_of(db, false))) continue;
        Shape sa = random.shape(0, 3);
        Array a = binary_operand(random, c, sa, da, false),
              b = binary_operand(random, c, random.broadcastable(sa), db, true);
        std::string context =
            std::string(c.name) + " traced " + std::string(dtype_name(da)) + "," + std::string(dtype_name(db));
        Graph graph = make_graph(
            "f", [&](const Array& p, const Array& q) { return c.kiln(p, q); }, a, b);
        Array traced = detail::interpret(graph, {a, b}, {}).at(0), eager = c.kiln(a, b);
        EXPECT_EQ(traced.dtype(), eager.dtype()) << context;
        EXPECT_TRUE(all_close(traced, eager, native_rtol(eager.dtype()), 0, context));
        // C++ numbers inside the trace become literals with the same promotion.
        Graph with_number = make_graph(
            "g", [&](const Array& p) { return c.kiln(p, 2); }, a);
        Array traced_number = detail::interpret(with_number, {a}, {}).at(0), eager_number = c.kiln(a, 2);
        EXPECT_EQ(traced_number.dtype(), eager_number.dtype()) << context;
        EXPECT_TRUE(all_close(traced_number, eager_number, native_rtol(eager_number.dtype()), 0, context + " with 2"));
      }
    }
  }
  Array c = array({true, false, true}), x = array({1.0f, 2.0f, 3.0f});
  Graph graph = make_graph(
      "w", [](const Array& p, const Array& q) { return clip(kiln::where(p, q, -q), -2, 2.5); }, c, x);
  EXPECT_TRUE(all_close(detail::interpret(graph, {c, x}, {}).at(0), clip(kiln::where(c, x, -x), -2, 2.5), 0, 0));
  Graph cast = make_graph(
      "a", [](const Array& p) { return astype(p, i64) + stop_gradient(p); }, x);
  EXPECT_TRUE(all_close(detail::interpret(cast, {x}, {}).at(0), astype(x, i64) + stop_gradient(x), 0, 0));
}

// An Operand refers to a named array and holds a temporary one: copies,
// moves and assignments (a vector growing, a conditional) must keep each
// held array with the Operand that holds it, and named ones by reference.
TEST(Elementwise, OperandsHoldTemporariesAndReferToNamedArrays) {
  Array x = array({1.0f, 2.0f});
  std::vector<Operand> operands;
  operands.push_back(Operand(x + 1.0f));  // held: the temporary dies with the statement
  operands.push_back(Operand(x));         // refers to x
  operands.push_back(Operand(3.0f));
  for (int i = 0; i < 30; ++i) operands.push_back(operands[static_cast<size_t>(i % 3)]);  // copies, regrowth moves
  auto expect_kinds = [&](const std::vector<Operand>& list) {
    for (size_t i = 0; i < list.size(); ++i) {
      const Operand& o = list[i];
      switch (i % 3) {
        case 0: EXPECT_EQ(o.array().to_vector<float>(), (std::vector<float>{2, 3})) << i; break;
        case 1: EXPECT_EQ(&o.array(), &x) << i; break;
        default: EXPECT_TRUE(o.is_number()) << i;
      }
    }
  };
  expect_kinds(operands);
  std::vector<Operand> moved = std::move(operands);
  expect_kinds(moved);
  Operand assigned = moved[1];
  assigned = moved[0];  // a referring Operand becomes a holding one
  moved[0] = Operand(x * 10.0f);
  EXPECT_EQ(assigned.array().to_vector<float>(), (std::vector<float>{2, 3}));
  assigned = std::move(moved[0]);
  EXPECT_EQ(assigned.array().to_vector<float>(), (std::vector<float>{10, 20}));
  assigned = moved[1];
  EXPECT_EQ(&assigned.array(), &x);
  EXPECT_EQ((assigned * moved[3]).to_vector<float>(), (std::vector<float>{2, 6}));
}

}  // namespace
}  // namespace kiln
