// Every operation family on the dtypes i8, i16, u8, u16, u32, u64, f16 and
// bf16: elementwise arithmetic, comparisons, bits and shifts (wraparound,
// u64 above 2^63, i8 -128, logical unsigned shifts), weak C++ numbers, astype
// between every pair (rounding ties from f64), run eagerly, traced through
// the interpreter and jitted, against NumPy (bf16: f32 rounded by torch).
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <limits>

#include "dtype_families.h"
#include "support/errors.h"

namespace kiln::testing {
namespace {

using Args = std::vector<Array>;

std::string name_of(DType dtype) { return std::string(dtype_name(dtype)); }

int bits_of(DType dtype) { return static_cast<int>(dtype_size(dtype)) * 8; }

// ---- Elementwise on integers ---------------------------------------------------

TEST(DtypeFamilies, IntegerBinaryOperationsWrapLikeNumpy) {
  DtypeData data(1);
  DtypeBatch batch;
  for (DType dtype : new_integers) {
    Array a = data({3, 5}, dtype), b = data({5}, dtype), column = data({3, 1}, dtype);
    Array small = data({3, 5}, dtype, Values::small);
    Array cond = data({3, 5}, DType::bool_);
    Array exponent = data.range({5}, dtype, 0, 6);
    // Shift counts from -2 (signed) to past the width: every bit shifted out.
    Array count = data.range({3, 5}, dtype, is_unsigned(dtype) ? 0 : -2, bits_of(dtype) + 3);
    auto add = [&](const std::string& name, std::function<Array(const Args&)> fn, const std::string& numpy,
                   Args inputs) {
      batch.add({name, std::move(fn), numpy, std::move(inputs)});
    };
    add("add", [](const Args& v) { return v[0] + v[1]; }, "a + b", {a, b});
    add("sub", [](const Args& v) { return v[0] - v[1]; }, "a - b", {a, column});
    add("mul", [](const Args& v) { return v[0] * v[1]; }, "a * b", {a, b});
    add("maximum", [](const Args& v) { return maximum(v[0], v[1]); }, "np.maximum(a, b)", {a, b});
    add("minimum", [](const Args& v) { return minimum(v[0], v[1]); }, "np.minimum(a, b)", {a, column});
    add("equal", [](const Args& v) { return equal(v[0], v[1]); }, "a == b", {a, small});
    add("not_equal", [](const Args& v) { return not_equal(v[0], v[1]); }, "a != b", {a, small});
    add("less", [](const Args& v) { return less(v[0], v[1]); }, "a < b", {a, b});
    add("less_equal", [](const Args& v) { return less_equal(v[0], v[1]); }, "a <= b", {a, small});
    add("greater", [](const Args& v) { return greater(v[0], v[1]); }, "a > b", {a, column});
    add("greater_equal", [](const Args& v) { return greater_equal(v[0], v[1]); }, "a >= b", {a, small});
    add("where", [](const Args& v) { return where(v[0], v[1], v[2]); }, "np.where(a, b, c)", {cond, a, b});
    add("floor_divide", [](const Args& v) { return floor_divide(v[0], v[1]); }, "np.floor_divide(a, b)", {a, small});
    add("remainder", [](const Args& v) { return remainder(v[0], v[1]); }, "np.remainder(a, b)", {a, small});
    add("pow", [](const Args& v) { return pow(v[0], v[1]); }, "np.power(a, b)", {a, exponent});
    add("bitwise_and", [](const Args& v) { return bitwise_and(v[0], v[1]); }, "a & b", {a, b});
    add("bitwise_or", [](const Args& v) { return bitwise_or(v[0], v[1]); }, "a | b", {a, column});
    add("bitwise_xor", [](const Args& v) { return bitwise_xor(v[0], v[1]); }, "a ^ b", {a, b});
    add("left_shift", [](const Args& v) { return left_shift(v[0], v[1]); }, "np.left_shift(a, b)", {a, count});
    add("right_shift", [](const Args& v) { return right_shift(v[0], v[1]); }, "np.right_shift(a, b)", {a, count});
    add("clip", [](const Args& v) { return clip(v[0], v[1], v[2]); }, "np.minimum(np.maximum(a, b), c)",
        {a, small, column});
  }
  batch.run();
}

TEST(DtypeFamilies, IntegerUnaryOperationsWrapLikeNumpy) {
  DtypeData data(2);
  DtypeBatch batch;
  for (DType dtype : new_integers) {
    Array a = data({4, 6}, dtype);
    auto add = [&](const std::string& name, std::function<Array(const Args&)> fn, const std::string& numpy) {
      batch.add({name, std::move(fn), numpy, {a}});
    };
    add(
        "neg", [](const Args& v) { return neg(v[0]); }, "-a");
    add(
        "abs", [](const Args& v) { return abs(v[0]); }, "np.abs(a)");
    add(
        "sign", [](const Args& v) { return sign(v[0]); }, "np.sign(a)");
    add(
        "square", [](const Args& v) { return square(v[0]); }, "a * a");
    add(
        "bitwise_not", [](const Args& v) { return bitwise_not(v[0]); }, "~a");
    add(
        "relu", [](const Args& v) { return relu(v[0]); }, "np.maximum(a, 0).astype(a.dtype)");
    add(
        "isnan", [](const Args& v) { return isnan(v[0]); }, "np.isnan(a)");
  }
  batch.run();
}

TEST(DtypeFamilies, IntegerExtremesHandPicked) {
  // i8 -128: its negation, absolute value and floor division by -1 wrap to -128.
  Array m = array<int8_t>({-128, 127, -1, 0});
  EXPECT_TRUE(same_values(neg(m), array<int8_t>({-128, -127, 1, 0}), "neg i8"));
  EXPECT_TRUE(same_values(abs(m), array<int8_t>({-128, 127, 1, 0}), "abs i8"));
  EXPECT_TRUE(same_values(m + int8_t{1}, array<int8_t>({-127, -128, 0, 1}), "i8 + 1 wraps"));
  // u64 above 2^63 compares, divides and shifts as unsigned.
  const uint64_t top = uint64_t{1} << 63, max = std::numeric_limits<uint64_t>::max();
  Array u = array<uint64_t>({top, max, top + 5, 3});
  Array v = array<uint64_t>({1, top, 2, top});
  EXPECT_TRUE(same_values(less(u, v), array<bool>({false, false, false, true}), "u64 less"));
  EXPECT_TRUE(same_values(maximum(u, v), array<uint64_t>({top, max, top + 5, top}), "u64 maximum"));
  EXPECT_TRUE(same_values(floor_divide(u, v), array<uint64_t>({top, 1, (top + 5) / 2, 0}), "u64 floor_divide"));
  EXPECT_TRUE(same_values(remainder(u, v), array<uint64_t>({0, max - top, 1, 3}), "u64 remainder"));
  EXPECT_TRUE(same_values(right_shift(u, array<uint64_t>({63, 1, 62, 64})), array<uint64_t>({1, max >> 1, 2, 0}),
                          "u64 right shift is logical"));
  EXPECT_TRUE(same_values(u + u, array<uint64_t>({0, max - 1, 10, 6}), "u64 wraps"));
  EXPECT_TRUE(same_values(astype(u, DType::f64), array<double>({0x1p63, 0x1p64, 0x1p63, 3}), "u64 to f64"));
  // Unsigned right shifts of the top bit are logical at every width.
  for (DType dtype : {DType::u8, DType::u16, DType::u32, DType::u64}) {
    int bits = bits_of(dtype);
    Array top_bit = astype(left_shift(astype(array<int64_t>({1}), dtype), bits - 1), dtype);
    Array shifted = right_shift(top_bit, astype(array<int64_t>({bits - 1}), dtype));
    EXPECT_TRUE(same_values(shifted, astype(array<int64_t>({1}), dtype), name_of(dtype) + " logical shift"));
    auto jitted = jit([](const Array& x, const Array& n) { return right_shift(x, n); });
    EXPECT_TRUE(same_values(jitted(top_bit, astype(array<int64_t>({bits - 1}), dtype)), shifted,
                            name_of(dtype) + " logical shift compiled"));
  }
}

// ---- Elementwise on f16 and bf16 -----------------------------------------------

TEST(DtypeFamilies, HalfBinaryOperationsRoundOnce) {
  DtypeData data(3);
  DtypeBatch batch;
  for (DType dtype : halves) {
    Array a = data({3, 5}, dtype), b = data({5}, dtype), column = data({3, 1}, dtype);
    Array ties = data({3, 5}, dtype, Values::small), cond = data({3, 5}, DType::bool_);
    Array positive = abs(data({3, 5}, dtype, Values::finite));
    auto add = [&](const std::string& name, std::function<Array(const Args&)> fn, const std::string& numpy, Args inputs,
                   double rtol = 0) {
      batch.add({name, std::move(fn), numpy, std::move(inputs), rtol, rtol != 0});
    };
    add("add", [](const Args& v) { return v[0] + v[1]; }, "a + b", {a, b});
    add("sub", [](const Args& v) { return v[0] - v[1]; }, "a - b", {a, column});
    add("mul", [](const Args& v) { return v[0] * v[1]; }, "a * b", {a, b});
    add("div", [](const Args& v) { return v[0] / v[1]; }, "a / b", {a, ties});
    add("maximum", [](const Args& v) { return maximum(v[0], v[1]); }, "np.maximum(a, b)", {a, ties});
    add("minimum", [](const Args& v) { return minimum(v[0], v[1]); }, "np.minimum(a, b)", {a, column});
    add("equal", [](const Args& v) { return equal(v[0], v[1]); }, "a == b", {ties, a});
    add("not_equal", [](const Args& v) { return not_equal(v[0], v[1]); }, "a != b", {ties, a});
    add("less", [](const Args& v) { return less(v[0], v[1]); }, "a < b", {a, ties});
    add("less_equal", [](const Args& v) { return less_equal(v[0], v[1]); }, "a <= b", {a, b});
    add("greater", [](const Args& v) { return greater(v[0], v[1]); }, "a > b", {a, column});
    add("greater_equal", [](const Args& v) { return greater_equal(v[0], v[1]); }, "a >= b", {a, ties});
    add("where", [](const Args& v) { return where(v[0], v[1], v[2]); }, "np.where(a, b, c)", {cond, a, b});
    add("floor_divide", [](const Args& v) { return floor_divide(v[0], v[1]); }, "np.floor_divide(a, b)", {a, ties});
    add("remainder", [](const Args& v) { return remainder(v[0], v[1]); }, "np.remainder(a, b)", {a, ties});
    add(
        "pow", [](const Args& v) { return pow(v[0], v[1]); }, "np.power(a, b)", {positive, ties}, default_rtol(dtype));
    add(
        "arctan2", [](const Args& v) { return arctan2(v[0], v[1]); }, "np.arctan2(a, b)", {a, b}, default_rtol(dtype));
  }
  batch.run();
}

TEST(DtypeFamilies, HalfUnaryOperations) {
  DtypeData data(4);
  DtypeBatch batch;
  for (DType dtype : halves) {
    Array a = data({4, 6}, dtype), ties = data({4, 6}, dtype, Values::small) + data({4, 6}, dtype, Values::small);
    Array positive = abs(a);
    double rtol = default_rtol(dtype);
    auto add = [&](const std::string& name, std::function<Array(const Args&)> fn, const std::string& numpy,
                   const Array& x, double tolerance = 0) {
      batch.add({name, std::move(fn), numpy, {x}, tolerance, tolerance != 0});
    };
    add(
        "neg", [](const Args& v) { return neg(v[0]); }, "-a", a);
    add(
        "abs", [](const Args& v) { return abs(v[0]); }, "np.abs(a)", a);
    add(
        "sign", [](const Args& v) { return sign(v[0]); }, "np.sign(a)", a);
    add(
        "square", [](const Args& v) { return square(v[0]); }, "np.square(a)", a);
    add(
        "sqrt", [](const Args& v) { return sqrt(v[0]); }, "np.sqrt(a)", a);
    add(
        "floor", [](const Args& v) { return floor(v[0]); }, "np.floor(a)", a);
    add(
        "ceil", [](const Args& v) { return ceil(v[0]); }, "np.ceil(a)", a);
    add(
        "round", [](const Args& v) { return round(v[0]); }, "np.round(a)", ties);
    add(
        "relu", [](const Args& v) { return relu(v[0]); }, "np.maximum(a, 0).astype(a.dtype)", a);
    add(
        "isnan", [](const Args& v) { return isnan(v[0]); }, "np.isnan(a)", a);
    add(
        "isinf", [](const Args& v) { return isinf(v[0]); }, "np.isinf(a)", a);
    add(
        "isfinite", [](const Args& v) { return isfinite(v[0]); }, "np.isfinite(a)", a);
    add(
        "reciprocal", [](const Args& v) { return reciprocal(v[0]); }, "np.reciprocal(a)", a);
    add(
        "exp", [](const Args& v) { return exp(v[0]); }, "np.exp(a)", a, rtol);
    add(
        "exp2", [](const Args& v) { return exp2(v[0]); }, "np.exp2(a)", a, rtol);
    add(
        "expm1", [](const Args& v) { return expm1(v[0]); }, "np.expm1(a)", a, rtol);
    add(
        "log", [](const Args& v) { return log(v[0]); }, "np.log(a)", positive, rtol);
    add(
        "log2", [](const Args& v) { return log2(v[0]); }, "np.log2(a)", positive, rtol);
    add(
        "log1p", [](const Args& v) { return log1p(v[0]); }, "np.log1p(a)", positive, rtol);
    add(
        "tanh", [](const Args& v) { return tanh(v[0]); }, "np.tanh(a)", a, rtol);
    add(
        "sin", [](const Args& v) { return sin(v[0]); }, "np.sin(a)", a, rtol);
    add(
        "cos", [](const Args& v) { return cos(v[0]); }, "np.cos(a)", a, rtol);
    add(
        "arctan", [](const Args& v) { return arctan(v[0]); }, "np.arctan(a)", a, rtol);
    add(
        "sigmoid", [](const Args& v) { return sigmoid(v[0]); }, "1 / (1 + np.exp(-a.astype(np.float32)))", a, rtol);
    add(
        "rsqrt", [](const Args& v) { return rsqrt(v[0]); }, "1 / np.sqrt(a.astype(np.float32))", positive, rtol);
  }
  batch.run();
}

// ---- Weak C++ numbers and promotion ---------------------------------------------

TEST(DtypeFamilies, CppNumbersAreWeak) {
  DtypeData data(5);
  DtypeBatch batch;
  for (DType dtype : new_dtypes) {
    Array a = data({2, 4}, dtype);
    std::string n = numpy_dtype(dtype);
    auto check = [&](const std::string& name, const Array& result, DType expected) {
      EXPECT_EQ(result.dtype(), expected) << name << " " << name_of(dtype);
      EXPECT_FALSE(result.weak_type()) << name << " " << name_of(dtype);
    };
    check("x + 1", a + 1, dtype);
    check("2 * x", 2 * a, dtype);
    check("x - true", a - true, dtype);
    check("maximum(x, 3)", maximum(a, 3), dtype);
    if (is_floating(dtype)) {
      check("x * 2.0", a * 2.0, dtype);
      check("x / 3.0", a / 3.0, dtype);
      batch.add({"x * 2.5", [](const Args& v) { return v[0] * 2.5; }, "a * np.float32(2.5)", {a}});
      batch.add({"x + 1", [](const Args& v) { return v[0] + 1; }, "a + np.float32(1)", {a}});
    } else {
      // An integer with a C++ float is a weak float (f32), as in JAX.
      Array product = a * 2.0;
      EXPECT_EQ(product.dtype(), DType::f32) << name_of(dtype);
      EXPECT_TRUE(product.weak_type()) << name_of(dtype);
      batch.add({"x + 1", [](const Args& v) { return v[0] + 1; }, "a + " + n + "(1)", {a}});
      batch.add({"x - 1", [](const Args& v) { return v[0] - 1; }, "a - " + n + "(1)", {a}});
      batch.add({"3 * x", [](const Args& v) { return 3 * v[0]; }, n + "(3) * a", {a}});
      batch.add({"x & 6", [](const Args& v) { return bitwise_and(v[0], 6); }, "a & " + n + "(6)", {a}});
      batch.add({"x >> 1", [](const Args& v) { return right_shift(v[0], 1); }, "a >> " + n + "(1)", {a}});
    }
  }
  batch.run();
}

TEST(DtypeFamilies, PromotionBetweenNewDtypes) {
  DtypeData data(6);
  DtypeBatch batch;
  // JAX's lattice: the narrowest type holding both (where NumPy agrees,
  // against NumPy); unsigned 64 with a signed integer is a float; f16 and
  // bf16 meet at f32; an integer meets a float at the float.
  struct Pair {
    DType a, b, result;
  };
  const std::vector<Pair> pairs = {
      {u8, i8, i16},   {u16, i16, i32},   {u32, i32, i64},     {u8, u16, u16},    {u32, u64, u64},  {i8, i16, i16},
      {i8, i64, i64},  {u8, i32, i32},    {f16, bf16, f32},    {f16, f32, f32},   {bf16, f64, f64}, {u8, f16, f16},
      {i16, f16, f16}, {u64, bf16, bf16}, {bool_, bf16, bf16}, {bool_, u16, u16}, {u64, i8, f32},   {u64, i64, f32},
  };
  for (const Pair& p : pairs) {
    Array a = data({6}, p.a, Values::small), b = data({6}, p.b, Values::small);
    Array sum = a + b;
    EXPECT_EQ(sum.dtype(), p.result) << name_of(p.a) << " + " << name_of(p.b);
    // u64 with a signed integer joins at the weak float class (JAX).
    bool weak = p.a == DType::u64 && !is_floating(p.b) && !is_unsigned(p.b);
    EXPECT_EQ(sum.weak_type(), weak) << name_of(p.a) << " + " << name_of(p.b);
    // Small values: every sum is exact in the result.
    batch.add({"promoted add",
               [](const Args& v) { return v[0] + v[1]; },
               "a.astype(np.float64) + b.astype(np.float64)",
               {a, b}});
  }
  batch.run();
}

// ---- astype ------------------------------------------------------------------------

TEST(DtypeFamilies, AstypeBetweenEveryPair) {
  DtypeData data(7);
  DtypeBatch batch;
  for (DType from : every_dtype) {
    // Floats become integers where NumPy defines it: in range, no NaN.
    Array any = data({40}, from);
    Array signed_range = data.range({40}, from, -127, 127);
    Array unsigned_range = data.range({40}, from, 0, 255);
    for (DType to : every_dtype) {
      std::string target = to == DType::bf16 ? "np.float32" : numpy_dtype(to);
      auto fn = [to](const Args& v) { return astype(v[0], to); };
      Array x = any;
      if (is_floating(from) && is_integer(to)) x = is_unsigned(to) ? unsigned_range : signed_range;
      std::string numpy;
      if (to == DType::bf16 && (from == DType::f64 || is_integer(from)))
        numpy = numpy_round_to_bf16("a");  // NumPy has no bf16: rounded straight from f64
      else if (to == DType::bool_) numpy = "a != 0";
      else numpy = "a.astype(" + target + ")";
      batch.add({"astype " + name_of(from) + " to " + name_of(to), fn, numpy, {x}});
      Array result = astype(x, to);
      EXPECT_EQ(result.dtype(), to);
    }
  }
  batch.run();
}

TEST(DtypeFamilies, AstypeRoundsTiesToEvenOnce) {
  DtypeBatch batch;
  // Halfway cases and values just off them, from f64 (no double rounding
  // through f32: 2^-40 is below f32's resolution at 1), subnormals and overflow.
  const std::vector<double> f16_cases = {
      1 + 0x1p-11, 1 + 3 * 0x1p-11, 1 + 0x1p-11 + 0x1p-40, 1 + 0x1p-11 - 0x1p-40, -(1 + 0x1p-11), 65504, 65519.99,
      65520,       0x1p-25,         3 * 0x1p-25,           0x1p-25 + 0x1p-50,     -0x1p-26,       2049,  2051,
      1e-8,        -70000};
  const std::vector<double> bf16_cases = {1 + 0x1p-8,
                                          1 + 3 * 0x1p-8,
                                          1 + 0x1p-8 + 0x1p-40,
                                          1 + 0x1p-8 - 0x1p-40,
                                          -(1 + 0x1p-8),
                                          257,
                                          259,
                                          0x1.ffp127,
                                          0x1.feffffffffp127,
                                          0x1p-134,
                                          3 * 0x1p-134,
                                          0x1p-134 + 0x1p-160,
                                          16842753,
                                          -16842753,
                                          1e-45,
                                          3.14159265358979};
  Array f16_values = array(f16_cases), bf16_values = array(bf16_cases);
  batch.add(
      {"f64 to f16", [](const Args& v) { return astype(v[0], DType::f16); }, "a.astype(np.float16)", {f16_values}});
  batch.add({"f64 to bf16",
             [](const Args& v) { return astype(v[0], DType::bf16); },
             numpy_round_to_bf16("a"),
             {bf16_values}});
  // Integers just past a bf16 halfway point: through f32 they would round to it and then to even.
  Array past_half = array<int64_t>({16842753, -16842753, (int64_t{1} << 40) + (int64_t{1} << 32) + 1, 257, 259});
  for (DType dtype : {DType::i32, DType::i64, DType::u32, DType::u64}) {
    Array x = astype(dtype == DType::u32 || dtype == DType::u64 ? abs(past_half) : past_half, dtype);
    batch.add({"int to bf16", [](const Args& v) { return astype(v[0], DType::bf16); }, numpy_round_to_bf16("a"), {x}});
    batch.add({"int to f16", [](const Args& v) { return astype(v[0], DType::f16); }, "a.astype(np.float16)", {x}});
  }
  // f32 values past a bf16 halfway point.
  Array f32_values = array<float>({1 + 0x1p-8f + 0x1p-20f, 1 + 0x1p-8f, 1 + 3 * 0x1p-8f, 0x1.fffffep127f});
  batch.add(
      {"f32 to bf16", [](const Args& v) { return astype(v[0], DType::bf16); }, numpy_round_to_bf16("a"), {f32_values}});
  batch.run();
  // Saturating float to integer (kiln's definition; NumPy leaves it undefined).
  Array wide = array<double>({1e10, -1e10, std::nan(""), 300.7, -300.7, -0.9, 255.9});
  EXPECT_TRUE(same_values(astype(wide, DType::u8), array<uint8_t>({255, 0, 0, 255, 0, 0, 255}), "f64 to u8"));
  EXPECT_TRUE(same_values(astype(wide, DType::i8), array<int8_t>({127, -128, 0, 127, -128, 0, 127}), "f64 to i8"));
  Array half_wide = astype(array<double>({65504, -65504, 300.5, -1.5}), DType::f16);
  EXPECT_TRUE(same_values(astype(half_wide, DType::u8), array<uint8_t>({255, 0, 255, 0}), "f16 to u8"));
  EXPECT_TRUE(same_values(astype(half_wide, DType::i16), array<int16_t>({32767, -32768, 300, -1}), "f16 to i16"));
  auto compiled = jit([](const Array& x) { return astype(x, DType::u8); });
  EXPECT_TRUE(same_values(compiled(wide), astype(wide, DType::u8), "f64 to u8 compiled"));
  EXPECT_TRUE(same_values(compiled(half_wide), astype(half_wide, DType::u8), "f16 to u8 compiled"));
  auto to_u64 = jit([](const Array& x) { return astype(x, DType::u64); });
  Array big = array<double>({0x1p63, 0x1.fffffffffffffp63, 1e30, -5});
  EXPECT_TRUE(same_values(astype(big, DType::u64),
                          array<uint64_t>({uint64_t{1} << 63, 0xfffffffffffff800, ~uint64_t{0}, 0}), "f64 to u64"));
  EXPECT_TRUE(same_values(to_u64(big), astype(big, DType::u64), "f64 to u64 compiled"));
}

// ---- What the new dtypes cannot do: clear errors, not garbage ------------------------

TEST(DtypeFamilies, UnsupportedDtypesRaiseClearErrors) {
  Array h = zeros({2}, DType::f16), b = zeros({2}, DType::bf16), u = zeros({2}, DType::u8);
  // Bits of floats: convert first.
  expect_error(__LINE__, [&] { bitwise_and(h, h); }, {"[bitwise_and]", "f16[2]", "astype"});
  expect_error(__LINE__, [&] { (void)(b >> u); }, {"[right_shift]", "bf16[2]", "astype"});
  expect_error(__LINE__, [&] { bitwise_not(b); }, {"[bitwise_not]", "bf16[2]", "astype"});
  // LAPACK factors f32 and f64 only.
  const int cholesky_line = __LINE__ + 1;
  auto factor_half = [] { linalg::cholesky(eye(3, std::nullopt, 0, DType::bf16)); };
  expect_error(cholesky_line, factor_half, {"[cholesky]", "bf16[3,3]", "astype"});
  const int inverse_line = __LINE__ + 1;
  auto invert_bytes = [] { linalg::inv(eye(2, std::nullopt, 0, DType::u8)); };
  expect_error(inverse_line, invert_bytes, {"[inv]", "u8[2,2]", "astype"});
  const int solve_line = __LINE__ + 1;
  auto solve_half = [] { linalg::solve(eye(2, std::nullopt, 0, DType::f16), ones({2, 1}, DType::f16)); };
  expect_error(solve_line, solve_half, {"[solve]", "f16[2,2]", "astype"});
}

}  // namespace
}  // namespace kiln::testing
