// Bitwise operations, shifts, floor division, remainder, divmod, copysign and
// nextafter against NumPy: every dtype pair each accepts, random
// broadcasting shapes (0-d and zero-size included), and edge values mixed
// in (0, +-1, the integer extremes so MIN // -1 and division by 0 occur,
// shift counts negative and past the width, signed zeros, infinities, NaN,
// subnormals). All of these are exact: results must equal NumPy's bit for
// bit, signs of zero included. Then weak C++ numbers, the operators, and
// errors.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/interp/interpreter.h"
#include "support/errors.h"
#include "support/numpy_oracle.h"

namespace kiln {
namespace {

using testing::all_close;
using testing::all_dtypes;
using testing::expect_error;
using testing::numpy_dtype;
using testing::NumpyOracle;
using testing::RandomArrays;

enum class Accepts { integer_or_bool, integer, numeric, floating };

struct Case {
  const char* name;
  std::function<Array(Operand, Operand)> kiln;
  std::function<Array(Operand, Operand)> op;  // the operator spelling, if any
  const char* numpy;
  Accepts accepts;
  bool counts = false;  // the second operand is a shift count
};

const std::vector<Case>& cases() {
  using O = Operand;
  static const std::vector<Case> list = {
      {"bitwise_and", [](O a, O b) { return bitwise_and(a, b); }, [](O a, O b) { return a & b; }, "np.bitwise_and",
       Accepts::integer_or_bool},
      {"bitwise_or", [](O a, O b) { return bitwise_or(a, b); }, [](O a, O b) { return a | b; }, "np.bitwise_or",
       Accepts::integer_or_bool},
      {"bitwise_xor", [](O a, O b) { return bitwise_xor(a, b); }, [](O a, O b) { return a ^ b; }, "np.bitwise_xor",
       Accepts::integer_or_bool},
      {"left_shift", [](O a, O b) { return left_shift(a, b); }, [](O a, O b) { return a << b; }, "np.left_shift",
       Accepts::integer, true},
      {"right_shift", [](O a, O b) { return right_shift(a, b); }, [](O a, O b) { return a >> b; }, "np.right_shift",
       Accepts::integer, true},
      {"floor_divide", [](O a, O b) { return floor_divide(a, b); }, nullptr, "np.floor_divide", Accepts::numeric},
      {"remainder", [](O a, O b) { return remainder(a, b); }, nullptr, "np.remainder", Accepts::numeric},
      {"divmod quotient", [](O a, O b) { return divmod(a, b).first; }, nullptr, "(lambda a, b: np.divmod(a, b)[0])",
       Accepts::numeric},
      {"divmod remainder", [](O a, O b) { return divmod(a, b).second; }, nullptr, "(lambda a, b: np.divmod(a, b)[1])",
       Accepts::numeric},
      {"copysign", [](O a, O b) { return copysign(a, b); }, nullptr, "np.copysign", Accepts::floating},
      {"nextafter", [](O a, O b) { return nextafter(a, b); }, nullptr, "np.nextafter", Accepts::floating},
  };
  return list;
}

// Between strongly typed arrays, JAX's lattice restricted to kiln's dtypes
// is a chain: bool < i32 < i64 < f32 < f64.
DType joined(DType a, DType b) { return std::max(a, b); }

/// The result dtype, or nothing where the case refuses the operands.
std::optional<DType> result_dtype(const Case& c, DType a, DType b) {
  DType type = joined(a, b);
  switch (c.accepts) {
    case Accepts::integer_or_bool:
      if (is_floating(type)) return std::nullopt;
      break;
    case Accepts::integer:
      if (!is_integer(type)) return std::nullopt;
      break;
    case Accepts::numeric:
      if (type == DType::bool_) return std::nullopt;
      break;
    case Accepts::floating:
      if (!is_floating(type)) return DType::f32;
      break;
  }
  return type;
}

/// Random values of `dtype` with a third of them edge values.
Array draw(RandomArrays& random, const Shape& shape, DType dtype, bool counts) {
  auto n = static_cast<size_t>(shape_size(shape));
  std::mt19937_64& engine = random.engine();
  auto edge = [&] { return engine() % 3 == 0; };
  switch (dtype) {
    case DType::bool_: {
      std::vector<bool> v(n);
      for (size_t i = 0; i < n; ++i) v[i] = engine() & 1;
      return array(v, shape);
    }
    case DType::i32:
    case DType::i64: {
      const int64_t lowest = dtype == DType::i32 ? std::numeric_limits<int32_t>::min() : INT64_MIN;
      const int64_t highest = dtype == DType::i32 ? std::numeric_limits<int32_t>::max() : INT64_MAX;
      const std::vector<int64_t> edges = {0, 1, -1, 2, -2, 31, 32, 33, 63, 64, 65, lowest, highest};
      std::vector<int64_t> v(n);
      for (int64_t& x : v)
        x = edge() ? edges[engine() % edges.size()] : counts ? random.integer(-5, 70) : random.integer(-50, 50);
      if (dtype == DType::i64) return array(v, shape);
      return array(std::vector<int32_t>(v.begin(), v.end()), shape);
    }
    case DType::f32:
    case DType::f64: {
      const double inf = std::numeric_limits<double>::infinity();
      const double tiny = dtype == DType::f32 ? 1e-40 : 5e-324;
      const double huge = dtype == DType::f32 ? 3e38 : 1.7e308;
      const std::vector<double> edges = {0.0, -0.0, 1, -1, 0.5, -2.5, 3, -7, inf, -inf, std::nan(""), tiny, -huge};
      std::uniform_real_distribution<double> real(-10, 10);
      std::vector<double> v(n);
      for (double& x : v) x = edge() ? edges[engine() % edges.size()] : real(engine);
      if (dtype == DType::f64) return array(v, shape);
      return array(std::vector<float>(v.begin(), v.end()), shape);
    }
  }
  return {};
}

/// all_close with no tolerance, and the same sign bit on every zero.
::testing::AssertionResult bit_equal(const Array& actual, const Array& expected, const std::string& context) {
  ::testing::AssertionResult close = all_close(actual, expected, 0, 0, context);
  if (!close || !is_floating(actual.dtype())) return close;
  std::vector<double> got = astype(actual, DType::f64).to_vector<double>();
  std::vector<double> want = astype(expected, DType::f64).to_vector<double>();
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] == 0 && want[i] == 0 && std::signbit(got[i]) != std::signbit(want[i]))
      return ::testing::AssertionFailure()
             << context << ": element " << i << " is " << got[i] << ", NumPy's " << want[i];
  return ::testing::AssertionSuccess();
}

struct Pending {
  int id;
  Array actual;
  std::string context;
};

TEST(ElementwiseBitwiseAndDivision, MatchNumpyOverDtypePairsAndBroadcasting) {
  RandomArrays random(31);
  NumpyOracle oracle;
  std::vector<Pending> pending;
  for (const Case& c : cases()) {
    for (DType da : all_dtypes) {
      for (DType db : all_dtypes) {
        std::optional<DType> result = result_dtype(c, da, db);
        if (!result) continue;
        // Computed in NumPy at kiln's result dtype (copysign of integers is
        // float64 in NumPy, f32 in kiln).
        DType compute = c.accepts == Accepts::floating ? *result : joined(da, db);
        for (int trial = 0; trial < 3; ++trial) {
          Shape sa = random.shape(0, 3), sb = random.broadcastable(sa);
          if (trial == 1) std::swap(sa, sb);
          Array a = draw(random, sa, da, false), b = draw(random, sb, db, c.counts);
          std::string context = std::string(c.name) + "(" + std::string(dtype_name(da)) + shape_string(sa) + ", " +
                                std::string(dtype_name(db)) + shape_string(sb) + ")";
          Array y = c.kiln(a, b);
          EXPECT_EQ(y.dtype(), *result) << context;
          EXPECT_FALSE(y.weak_type()) << context;
          if (c.op) {
            Array via_operator = c.op(a, b);
            EXPECT_EQ(via_operator.dtype(), y.dtype()) << context;
            EXPECT_TRUE(bit_equal(via_operator, y, context + " via operator"));
          }
          std::string expression = std::string(c.numpy) + "(a.astype(" + numpy_dtype(compute) + "), b.astype(" +
                                   numpy_dtype(compute) + ")).astype(" + numpy_dtype(*result) + ")";
          pending.push_back({oracle.add(expression, {a, b}), y, context});
        }
      }
    }
  }
  oracle.run();
  for (const Pending& p : pending) EXPECT_TRUE(bit_equal(p.actual, oracle.expected(p.id), p.context));
}

// Every pair of edge values meets, for each dtype.
TEST(ElementwiseBitwiseAndDivision, EveryPairOfEdgeValuesMatchesNumpy) {
  NumpyOracle oracle;
  std::vector<Pending> pending;
  const double inf = std::numeric_limits<double>::infinity();
  for (DType dtype : all_dtypes) {
    std::vector<Array> values;
    if (dtype == DType::bool_) values = {array({false, true})};
    else if (dtype == DType::i32)
      values = {array<int32_t>({0, 1, -1, 2, -3, 7, -7, 31, 32, -32, INT32_MIN, INT32_MAX})};
    else if (dtype == DType::i64)
      values = {array<int64_t>({0, 1, -1, 2, -3, 7, -7, 63, 64, -64, INT64_MIN, INT64_MAX})};
    else
      values = {astype(
          array({0.0, -0.0, 1.0, -1.0, 0.5, -1.5, 3.0, -7.0, inf, -inf, std::nan(""), 1e-45, 5e-324, 1e300}), dtype)};
    Array column = reshape(values[0], {-1, 1}), row = reshape(values[0], {1, -1});
    for (const Case& c : cases()) {
      std::optional<DType> result = result_dtype(c, dtype, dtype);
      if (!result) continue;
      std::string cast = ".astype(" + numpy_dtype(*result) + ")";
      pending.push_back({oracle.add(std::string(c.numpy) + "(a" + cast + ", b" + cast + ")" + cast, {column, row}),
                         c.kiln(column, row),
                         std::string(c.name) + " of edge values " + std::string(dtype_name(dtype))});
    }
  }
  oracle.run();
  for (const Pending& p : pending) EXPECT_TRUE(bit_equal(p.actual, oracle.expected(p.id), p.context));
}

TEST(ElementwiseBitwiseAndDivision, NotAndInvertMatchNumpy) {
  RandomArrays random(32);
  NumpyOracle oracle;
  std::vector<Pending> pending;
  for (DType dtype : {DType::bool_, DType::i32, DType::i64}) {
    for (int trial = 0; trial < 3; ++trial) {
      Array x = draw(random, random.shape(0, 3), dtype, false);
      std::string context = "bitwise_not(" + std::string(dtype_name(dtype)) + shape_string(x.shape()) + ")";
      Array y = bitwise_not(x);
      EXPECT_EQ(y.dtype(), dtype) << context;
      EXPECT_TRUE(bit_equal(~x, y, context + " via operator"));
      pending.push_back({oracle.add("np.invert(a)", {x}), y, context});
    }
  }
  oracle.run();
  for (const Pending& p : pending) EXPECT_TRUE(bit_equal(p.actual, oracle.expected(p.id), p.context));
  // NumPy's invert of bool is logical not.
  EXPECT_EQ((~array({true, false})).to_vector<bool>(), (std::vector<bool>{false, true}));
}

TEST(ElementwiseBitwiseAndDivision, WeakNumbersKeepTheArrayDtype) {
  Array x = array<int64_t>({-9, -1, 0, 5, INT64_MIN});
  for (const Array& y : {x & 6, 6 & x, x | 1, x ^ -1, x << 62, 1 << x, x >> 2, floor_divide(x, 4), remainder(x, -4)})
    EXPECT_EQ(y.dtype(), DType::i64);
  EXPECT_EQ((x >> 2).to_vector<int64_t>(), (std::vector<int64_t>{-3, -1, 0, 1, INT64_MIN / 4}));
  const int64_t bit_62 = int64_t{1} << 62;  // -9 and -1 end in binary 11, 5 in 01
  EXPECT_EQ((x << 62).to_vector<int64_t>(),
            (std::vector<int64_t>{INT64_MIN + bit_62, INT64_MIN + bit_62, 0, bit_62, 0}));
  EXPECT_EQ(floor_divide(x, 4).to_vector<int64_t>(), (std::vector<int64_t>{-3, -1, 0, 1, INT64_MIN / 4}));
  EXPECT_EQ(remainder(x, -4).to_vector<int64_t>(), (std::vector<int64_t>{-1, -1, 0, -3, 0}));
  Array f = array({-7.5f, 7.5f});
  EXPECT_EQ(floor_divide(f, 2).dtype(), DType::f32);
  EXPECT_EQ(floor_divide(f, 2).to_vector<float>(), (std::vector<float>{-4, 3}));
  EXPECT_EQ(remainder(f, 2).to_vector<float>(), (std::vector<float>{0.5f, 1.5f}));
  EXPECT_EQ(copysign(f, -0.0).to_vector<float>(), (std::vector<float>{-7.5f, -7.5f}));
  EXPECT_EQ(nextafter(array({1.0f}), 2).item<float>(), std::nextafter(1.0f, 2.0f));
  EXPECT_EQ(copysign(array<int32_t>({3}), -1).dtype(), DType::f32);
  EXPECT_TRUE(array_equal(bitwise_and(array({true, true}), array({true, false})), array({true, false})).item<bool>());
}

// Traced through the interpreter, the results are the eager ones exactly.
TEST(ElementwiseBitwiseAndDivision, TracedEqualsEager) {
  RandomArrays random(33);
  for (const Case& c : cases()) {
    for (DType dtype : all_dtypes) {
      if (!result_dtype(c, dtype, dtype)) continue;
      Array a = draw(random, {4, 9}, dtype, false), b = draw(random, {9}, dtype, c.counts);
      Array eager = c.kiln(a, b);
      Graph graph = make_graph(
          "bitwise_and_division", [&](const Array& x, const Array& y) { return c.kiln(x, y); }, a, b);
      Array traced = detail::interpret(graph, {a, b}, {}).at(0);
      EXPECT_TRUE(bit_equal(traced, eager, std::string(c.name) + " " + std::string(dtype_name(dtype))));
    }
  }
}

TEST(ElementwiseBitwiseAndDivision, Errors) {
  Array f = zeros({2}), i = zeros({2}, DType::i32), t = array({true, false});
  expect_error(__LINE__, [&] { bitwise_and(f, i); }, {"[bitwise_and]", "f32[2]", "i32[2]", "astype"});
  expect_error(__LINE__, [&] { (void)(i | 1.5); }, {"[bitwise_or]", "i32[2]", "the number 1.5", "astype"});
  expect_error(__LINE__, [&] { (void)(f ^ f); }, {"[bitwise_xor]", "f32[2]", "integer or bool"});
  expect_error(__LINE__, [&] { bitwise_not(f); }, {"[bitwise_not]", "f32[2]", "astype"});
  expect_error(__LINE__, [&] { (void)(~f); }, {"[bitwise_not]", "f32[2]"});
  expect_error(__LINE__, [&] { left_shift(t, t); }, {"[left_shift]", "bool[2]", "integer operands", "astype"});
  expect_error(__LINE__, [&] { (void)(f >> i); }, {"[right_shift]", "f32[2]", "astype"});
  expect_error(__LINE__, [&] { floor_divide(t, t); }, {"[floor_divide]", "bool[2]", "astype"});
  expect_error(__LINE__, [&] { remainder(t, true); }, {"[remainder]", "bool[2]"});
  expect_error(__LINE__, [&] { bitwise_and(zeros({2, 3}, DType::i32), i); }, {"[bitwise_and]", "do not broadcast"});
  expect_error(__LINE__, [&] { copysign(zeros({3}), f); }, {"[copysign]", "[3]", "[2]", "do not broadcast"});
}

}  // namespace
}  // namespace kiln
