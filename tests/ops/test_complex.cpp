// Complex numbers (c64, c128): the dtype core (names, sizes, elements,
// printing), promotion (the Array API standard's table, JAX's lattice, weak
// complex numbers), every complex operation against NumPy, eager against the
// interpreter and the compiled graph (bit for bit), the refusals of ordering
// operations, and .npy and safetensors files.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <complex>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "support/errors.h"
#include "support/numpy_oracle.h"

namespace kiln {
namespace {

using testing::expect_error;
using testing::NumpyOracle;
using c64_t = std::complex<float>;
using c128_t = std::complex<double>;

// Same dtype, then all_close (part by part for complex arrays).
::testing::AssertionResult complex_close(const Array& actual, const Array& expected, double rtol,
                                         const std::string& context) {
  if (actual.dtype() != expected.dtype())
    return ::testing::AssertionFailure() << context << ": dtype " << actual.dtype() << " vs expected "
                                         << expected.dtype();
  return testing::all_close(actual, expected, rtol, rtol, context);
}

// Exactly the same values (NaN equal to NaN): eager, interpreted and
// compiled complex results all come from the same reference kernels.
::testing::AssertionResult same_values(const Array& a, const Array& b, const std::string& context) {
  return complex_close(a, b, 0, context);
}

Array random_complex(testing::RandomArrays& random, const Shape& shape, DType dtype, double lo = -2, double hi = 2) {
  DType part = dtype == c64 ? f32 : f64;
  Array re = random.uniform(shape, part, lo, hi);
  Array im = random.uniform(shape, part, lo, hi);
  return astype(re, dtype) + astype(im, dtype) * c128_t(0, 1);
}

TEST(ComplexDType, NamesSizesAndElements) {
  EXPECT_EQ(dtype_name(c64), "c64");
  EXPECT_EQ(dtype_name(c128), "c128");
  EXPECT_EQ(dtype_from_name("c64"), c64);
  EXPECT_EQ(dtype_from_name("c128"), c128);
  EXPECT_EQ(dtype_size(c64), 8u);
  EXPECT_EQ(dtype_size(c128), 16u);
  EXPECT_TRUE(is_complex(c64) && is_complex(c128));
  EXPECT_FALSE(is_complex(f64) || is_floating(c64) || is_integer(c128));
  // The numbering is stable (persistent cache keys hold it): appended last.
  EXPECT_EQ(static_cast<int>(DType::c64), 13);
  EXPECT_EQ(static_cast<int>(DType::c128), 14);
  static_assert(dtype_of<c64_t>() == DType::c64 && dtype_of<c128_t>() == DType::c128);

  Array x = array<c64_t>({{1, 2}, {-3, 0.5f}});
  EXPECT_EQ(x.dtype(), c64);
  EXPECT_EQ(x.to_vector<c64_t>(), (std::vector<c64_t>{{1, 2}, {-3, 0.5f}}));
  EXPECT_EQ(x.to_vector<c128_t>()[1], c128_t(-3, 0.5));
  EXPECT_EQ(scalar(c128_t(0, -1)).item<c128_t>(), c128_t(0, -1));
  EXPECT_EQ(array({1.5f, 2.0f}).to_vector<c64_t>()[0], c64_t(1.5f, 0));
  std::ostringstream text;
  text << x;
  EXPECT_EQ(text.str(), "array([1+2j, -3+0.5j], c64[2])");
  EXPECT_EQ(Scalar(c128_t(1, -2)).to_string(), "(1.0-2.0j)");
  EXPECT_EQ(Scalar(c128_t(0, 3)).to_string(), "3.0j");
  EXPECT_FALSE(Scalar(c128_t(1, 2)) == Scalar(c128_t(1, 3)));
  EXPECT_FALSE(Scalar(c128_t(1, 0)) == Scalar(1.0));
}

TEST(ComplexDType, ReadingARealValueRefusesToDropTheImaginaryPart) {
  Array x = array<c64_t>({{1, 2}});
  expect_error(__LINE__, [&] { x.item<float>(); }, {"[item]", "imaginary part", "c64[1]", "std::complex<float>"});
  expect_error(__LINE__, [&] { x.to_vector<double>(); }, {"[to_vector]", "kiln::real(x)"});
}

TEST(ComplexDType, CreationAndMovementMoveComplexElements) {
  testing::RandomArrays random(11);
  NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  for (DType dtype : {c64, c128}) {
    std::string name = std::string(dtype_name(dtype));
    Array x = random_complex(random, {2, 3, 4}, dtype);
    auto check = [&](const Array& actual, const std::string& expression, const std::vector<Array>& inputs) {
      cases.push_back({actual, oracle.add(expression, inputs), name + ": " + expression, 0});
    };
    check(reshape(x, {6, -1}), "a.reshape(6, -1)", {x});
    check(transpose(x, {2, 0, 1}), "a.transpose(2, 0, 1)", {x});
    check(slice(x, {0, 1, 0}, {2, 3, 4}, {1, 1, 2}), "a[0:2, 1:3, 0:4:2]", {x});
    check(concatenate({x, x * 2}, 1), "np.concatenate([a, a * 2], 1)", {x});
    check(stack({x, conj(x)}, 0), "np.stack([a, np.conj(a)], 0)", {x});
    check(broadcast_to(slice(x, {0, 0, 0}, {1, 3, 4}), {5, 3, 4}), "np.broadcast_to(a[0:1], (5, 3, 4))", {x});
    check(flip(x, {1}), "np.flip(a, 1)", {x});
    check(pad(x, {1, 0, 0}, {0, 0, 2}), "np.pad(a, [(1, 0), (0, 0), (0, 2)])", {x});
    check(take(x, array({2, 0}), 2), "np.take(a, [2, 0], 2)", {x});
    check(expand_dims(x, 1), "np.expand_dims(a, 1)", {x});
    check(where(real(x) > 0, x, conj(x)), "np.where(a.real > 0, a, np.conj(a))", {x});
    check(zeros({2}, dtype), "np.zeros(2, " + testing::numpy_dtype(dtype) + ")", {});
    check(ones({2}, dtype), "np.ones(2, " + testing::numpy_dtype(dtype) + ")", {});
    check(full({2}, c128_t(1, -2), dtype), "np.full(2, 1-2j, " + testing::numpy_dtype(dtype) + ")", {});
  }
  oracle.run();
  for (const auto& c : cases) EXPECT_TRUE(complex_close(c.actual, oracle.expected(c.id), 0, c.context));
}

// The Array API standard 2023.12's table where complex meets a real float,
// integers and bool with complex give the complex type (JAX's lattice, as
// for int and float), 16-bit floats rise to c64.
TEST(ComplexPromotion, ArraysFollowTheArrayApiTable) {
  struct Case {
    DType a, b, result;
  };
  std::vector<Case> table = {
      {f32, c64, c64}, {f64, c64, c128}, {f32, c128, c128}, {f64, c128, c128}, {c64, c128, c128}, {c64, c64, c64},
      {f16, c64, c64}, {bf16, c64, c64}, {f16, c128, c128}, {bool_, c64, c64}, {i8, c64, c64},    {u8, c64, c64},
      {i32, c64, c64}, {i64, c64, c64},  {u64, c64, c64},   {i64, c128, c128},
  };
  for (const Case& c : table) {
    Array a = ones({2}, c.a), b = ones({2}, c.b);
    EXPECT_EQ((a + b).dtype(), c.result) << c.a << " + " << c.b;
    EXPECT_EQ((b * a).dtype(), c.result) << c.b << " * " << c.a;
    EXPECT_EQ(matmul(a, b).dtype(), c.result) << c.a << " @ " << c.b;
  }
}

TEST(ComplexPromotion, ComplexNumbersAreWeaklyTyped) {
  c128_t j(0, 1);
  EXPECT_EQ((ones({2}, c64) * j).dtype(), c64);  // x_c64 * 2j stays c64
  EXPECT_EQ((ones({2}, c64) * 2.0).dtype(), c64);
  EXPECT_EQ((ones({2}, c128) + 1).dtype(), c128);
  EXPECT_EQ((ones({2}, f32) * j).dtype(), c64);  // x_f32 * 1j is c64
  EXPECT_EQ((ones({2}, f64) * j).dtype(), c128);
  EXPECT_EQ((ones({2}, f16) * j).dtype(), c64);
  EXPECT_EQ((ones({2}, bf16) * j).dtype(), c64);
  EXPECT_EQ((ones({2}, i32) * j).dtype(), c64);
  EXPECT_EQ((ones({2}, bool_) * j).dtype(), c64);
  EXPECT_EQ((j * ones({2}, f64)).dtype(), c128);
  Array weak = scalar(1.0f) * j;  // a 0-d f32 is strongly typed
  EXPECT_EQ(weak.dtype(), c64);
  EXPECT_EQ((ones({2}, f32) + 1.5).dtype(), f32);  // real weak numbers are unchanged
  EXPECT_EQ((ones({2}, f32) * j).to_vector<c64_t>()[0], c64_t(0, 1));
  EXPECT_EQ(full({1}, j).dtype(), c64);
}

TEST(ComplexOps, ElementwiseMatchNumpy) {
  testing::RandomArrays random(3);
  NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  for (DType dtype : {c64, c128}) {
    std::string name = std::string(dtype_name(dtype));
    double rtol = dtype == c64 ? 2e-5 : 1e-12;
    Array a = random_complex(random, {3, 4}, dtype);
    Array b = random_complex(random, {4}, dtype);
    Array r = random.uniform({3, 1}, dtype == c64 ? f32 : f64);
    auto check = [&](const Array& actual, const std::string& expression, const std::vector<Array>& inputs) {
      cases.push_back({actual, oracle.add(expression, inputs), name + ": " + expression, rtol});
    };
    check(a + b, "a + b", {a, b});
    check(a - b, "a - b", {a, b});
    check(a * b, "a * b", {a, b});
    check(a / b, "a / b", {a, b});
    check(a * r, "a * b", {a, r});
    check(r / a, "b / a", {a, r});
    check(pow(a, b), "a ** b", {a, b});
    check(pow(a, 2), "a ** 2", {a});
    check(-a, "-a", {a});
    check(abs(a), "np.abs(a)", {a});
    check(conj(a), "np.conj(a)", {a});
    check(real(a), "np.real(a)", {a});
    check(imag(a), "np.imag(a)", {a});
    check(angle(a), "np.angle(a)", {a});
    check(exp(a), "np.exp(a)", {a});
    check(log(a), "np.log(a)", {a});
    check(log10(a), "np.log10(a)", {a});
    check(sqrt(a), "np.sqrt(a)", {a});
    check(rsqrt(a), "1 / np.sqrt(a)", {a});
    check(square(a), "np.square(a)", {a});
    check(sin(a), "np.sin(a)", {a});
    check(cos(a), "np.cos(a)", {a});
    check(tanh(a), "np.tanh(a)", {a});
    check(tan(a), "np.tan(a)", {a});
    check(reciprocal(a), "1 / a", {a});
    check(sign(a), "np.where(a == 0, 0, a / np.abs(a)).astype(a.dtype)", {a});
    check(equal(a, conj(conj(a))), "a == a", {a});
    check(not_equal(a, b), "a != b", {a, b});
    check(a * c128_t(0, 2), "a * 2j", {a});
    check(astype(a, f32), "a.real.astype(np.float32)", {a});
    check(astype(a, c128), "a.astype(np.complex128)", {a});
    check(astype(a, i32), "a.real.astype(np.int32)", {a});
    check(astype(a, bool_), "a != 0", {a});
    check(astype(r, dtype), "a.astype(" + testing::numpy_dtype(dtype) + ")", {r});
  }
  oracle.run();
  for (const auto& c : cases) EXPECT_TRUE(complex_close(c.actual, oracle.expected(c.id), c.rtol, c.context));
}

TEST(ComplexOps, SpecialValuesAndRealArraysFollowNumpy) {
  double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  Array z = array<c128_t>({{0, 0}, {inf, 1}, {1, nan}, {nan, nan}, {-inf, -inf}, {2, -3}});
  EXPECT_EQ(isnan(z).to_vector<bool>(), (std::vector<bool>{false, false, true, true, false, false}));
  EXPECT_EQ(isinf(z).to_vector<bool>(), (std::vector<bool>{false, true, false, false, true, false}));
  EXPECT_EQ(isfinite(z).to_vector<bool>(), (std::vector<bool>{true, false, false, false, false, true}));
  EXPECT_EQ(sign(z).to_vector<c128_t>()[0], c128_t(0, 0));
  EXPECT_EQ(pow(array<c128_t>({{0, 0}}), array<c128_t>({{0, 0}})).item<c128_t>(), c128_t(1, 0));
  EXPECT_EQ(pow(array<c128_t>({{0, 0}}), 2).item<c128_t>(), c128_t(0, 0));
  // NumPy's real, imag and conj of real arrays.
  Array x = array({-1.5f, 2.0f});
  EXPECT_EQ(real(x).to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(conj(x).dtype(), f32);
  EXPECT_EQ(imag(x).to_vector<float>(), (std::vector<float>{0, 0}));
  EXPECT_EQ(imag(array({1, 2})).dtype(), i32);
  EXPECT_NEAR(angle(x).to_vector<float>()[0], 3.14159265f, 1e-6);
  EXPECT_EQ(angle(x).to_vector<float>()[1], 0.0f);
}

TEST(ComplexOps, ReductionsAndMatmulMatchNumpy) {
  testing::RandomArrays random(5);
  NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  for (DType dtype : {c64, c128}) {
    std::string name = std::string(dtype_name(dtype));
    double rtol = dtype == c64 ? 1e-5 : 1e-12;
    Array a = random_complex(random, {2, 3, 5}, dtype);
    Array m = random_complex(random, {2, 5, 4}, dtype);
    Array v = random_complex(random, {5}, dtype);
    Array r = random.uniform({5, 3}, f32);
    auto check = [&](const Array& actual, const std::string& expression, const std::vector<Array>& inputs) {
      cases.push_back({actual, oracle.add(expression, inputs), name + ": " + expression, rtol});
    };
    check(sum(a), "np.sum(a)", {a});
    check(sum(a, {0, 2}), "np.sum(a, (0, 2))", {a});
    check(sum(a, 1, true), "np.sum(a, 1, keepdims=True)", {a});
    check(mean(a, 2), "np.mean(a, 2)", {a});
    check(mean(a), "np.mean(a)", {a});
    check(prod(a, 2), "np.prod(a, 2)", {a});
    check(cumsum(a, 2), "np.cumsum(a, 2)", {a});
    check(matmul(a, m), "a @ b", {a, m});
    check(matmul(a, v), "a @ b", {a, v});
    check(matmul(v, m), "a @ b", {v, m});
    check(matmul(a, r), "a @ b", {a, r});
    check(matmul(v, v), "a @ a", {v});
    check(matmul(slice(a, {0, 0, 0}, {2, 3, 1}), slice(m, {0, 0, 0}, {2, 1, 4})), "a[:, :, :1] @ b[:, :1, :]", {a, m});
    check(matmul(zeros({2, 0}, dtype), zeros({0, 3}, dtype)), "np.zeros((2, 3), np.complex64)", {});
  }
  oracle.run();
  for (const auto& c : cases) {
    Array expected = oracle.expected(c.id);
    if (expected.dtype() != c.actual.dtype()) expected = astype(expected, c.actual.dtype());
    EXPECT_TRUE(complex_close(c.actual, expected, c.rtol, c.context));
  }
}

// A function mixing every kind of complex step: elementwise chains, a
// product, reductions, movement, parts and real arithmetic after them.
Array mixed_program(const Array& z, const Array& w, const Array& r) {
  Array y = exp(z * c128_t(0, 0.5)) + z * w - sqrt(z) / (w + 2.0);
  Array p = matmul(y, transpose(conj(w), {1, 0}));
  Array s = sum(p, 1) + sum(y * r, 1) + mean(log(z), 1) + prod(slice(y, {0, 0}, {3, 2}), 1);
  Array parts = abs(s) + angle(s) * real(s) - imag(s) + sum(abs(y) * r, 1);
  return concatenate({astype(parts, s.dtype()), s, sign(s), pow(s, c128_t(0.5, 1))}, 0);
}

TEST(ComplexOps, EagerInterpretedAndCompiledAgreeBitForBit) {
  testing::RandomArrays random(9);
  for (DType dtype : {c64, c128}) {
    Array z = random_complex(random, {3, 4}, dtype, 0.2, 2);
    Array w = random_complex(random, {3, 4}, dtype);
    Array r = random.uniform({3, 4}, dtype == c64 ? f32 : f64);
    std::string name(dtype_name(dtype));
    Array eager = testing::eager_and_traced(name, mixed_program, z, w, r);
    auto compiled = jit(mixed_program);
    Array once = compiled(z, w, r);
    EXPECT_TRUE(same_values(once, eager, name + " compiled vs eager"));
    EXPECT_TRUE(same_values(compiled(z, w, r), eager, name + " compiled again"));
    EXPECT_EQ(compiled.stats().compiles, 1);
    // Large enough for eager operations to run compiled kernels of their own.
    Array big = random_complex(random, {300, 300}, dtype);
    auto elementwise = [](const Array& x) { return sum(exp(x) * x + 1.5, 0); };
    EXPECT_TRUE(same_values(jit(elementwise)(big), elementwise(big), name + " large"));
  }
}

TEST(ComplexOps, VmapBatchesComplexFunctions) {
  testing::RandomArrays random(2);
  Array z = random_complex(random, {4, 3}, c64);
  auto f = [](const Array& x) { return sum(x * conj(x)) + sum(abs(slice(x, {0}, {1}))); };
  Array batched = vmap(f)(z);
  for (int64_t i = 0; i < 4; ++i) {
    Array row = slice(z, {i, 0}, {i + 1, 3});
    EXPECT_TRUE(same_values(slice(batched, {i}, {i + 1}), reshape(f(reshape(row, {3})), {1}), "lane"));
  }
}

TEST(ComplexOps, OrderingOperationsRefuseComplexNumbers) {
  Array z = array<c64_t>({{1, 2}, {3, -1}});
  expect_error(__LINE__, [&] { (void)(z < z); }, {"[less]", "complex numbers", "c64[2]", "kiln::abs(x)"});
  expect_error(__LINE__, [&] { (void)(z >= 1.0); }, {"[greater_equal]", "c64[2]", "no order"});
  expect_error(__LINE__, [&] { maximum(z, z); }, {"[maximum]", "c64[2] and c64[2]", "no order"});
  expect_error(__LINE__, [&] { clip(z, 0, 1); }, {"[clip]", "complex", "the number 0"});
  expect_error(__LINE__, [&] { max(z); }, {"[reduce_max]", "c64[2]", "no order", "kiln::real(x)"});
  expect_error(__LINE__, [&] { argmax(z, 0); }, {"[argmax]", "c64[2]", "no order"});
  expect_error(__LINE__, [&] { sort(z); }, {"[sort]", "c64[2]", "no order"});
  expect_error(__LINE__, [&] { argsort(z); }, {"[argsort]", "c64[2]"});
  expect_error(__LINE__, [&] { cummax(z, 0); }, {"[cummax]", "c64[2]"});
  expect_error(__LINE__, [&] { floor(z); }, {"[floor]", "complex numbers", "c64[2]", "kiln::real(x)"});
  expect_error(__LINE__, [&] { erf(z); }, {"[erf]", "complex"});
  expect_error(__LINE__, [&] { arctan2(z, z); }, {"[arctan2]", "complex"});
  expect_error(__LINE__, [&] { remainder(z, 2); }, {"[remainder]", "c64[2] and the number 2"});
  // Inside a trace too, with the user's line.
  auto traced = jit([](const Array& x) { return sort(x * 2.0); });
  expect_error(__LINE__ - 1, [&] { traced(z); }, {"[sort]", "c64[2]"});
}

TEST(ComplexIo, NpyRoundTripsAndNumpyReadsIt) {
  testing::RandomArrays random(4);
  std::string directory = ::testing::TempDir();
  NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  for (DType dtype : {c64, c128}) {
    Array x = random_complex(random, {2, 3}, dtype);
    std::string path = directory + "/complex_" + std::string(dtype_name(dtype)) + ".npy";
    save_npy(path, x);
    Array back = load_npy(path);
    EXPECT_TRUE(same_values(back, x, path));
    cases.push_back({x, oracle.add("np.load(r'" + path + "')", {}), path, 0});
    // NumPy's own file, read by kiln.
    cases.push_back({x, oracle.add("a.copy()", {x}), path + " (written by NumPy)", 0});
  }
  oracle.run();
  for (const auto& c : cases) {
    EXPECT_TRUE(complex_close(c.actual, oracle.expected(c.id), 0, c.context));
    EXPECT_EQ(oracle.expected(c.id).dtype(), c.actual.dtype()) << c.context;
  }
}

TEST(ComplexIo, SafetensorsHoldsC64AndRefusesC128) {
  testing::RandomArrays random(8);
  std::string path = ::testing::TempDir() + "/complex.safetensors";
  Array x = random_complex(random, {3, 2}, c64);
  Array r = random.uniform({5}, f64);
  save(path, {{"z", x}, {"r", r}});
  std::map<std::string, Array> back = load(path);
  EXPECT_TRUE(same_values(back.at("z"), x, "z"));
  EXPECT_TRUE(same_values(back.at("r"), r, "r"));
  std::ifstream file(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_NE(bytes.find("\"dtype\":\"C64\""), std::string::npos);
  auto save_wide = [&] { save(path, {{"w", astype(x, c128)}}); };
  expect_error(__LINE__ - 1, save_wide, {"[save]", "no dtype", "'w' c128[3,2]", "astype(x, kiln::c64)", "save_npy"});
}

}  // namespace
}  // namespace kiln
