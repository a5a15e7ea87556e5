// The Fourier transforms against numpy.fft (every function, odd and even
// lengths, padding and cutting, each norm, f32/f64/c64/c128/integer input),
// eager against compiled and vmap, derivatives against central finite
// differences (JAX's convention for complex values: grad f = df/dx - i df/dy),
// and the errors.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <complex>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "support/errors.h"
#include "support/gradient_check.h"
#include "support/numpy_oracle.h"

namespace kiln {
namespace {

using testing::expect_error;
using testing::NumpyOracle;
using c128_t = std::complex<double>;

Array random_complex(testing::RandomArrays& random, const Shape& shape, DType dtype) {
  DType part = dtype == c64 ? f32 : f64;
  return astype(random.uniform(shape, part), dtype) + astype(random.uniform(shape, part), dtype) * c128_t(0, 1);
}

struct Case {
  std::string numpy;  // the NumPy call on `a`
  std::function<Array(const Array&)> kiln;
};

std::string norm_name(fft::Norm norm) {
  return norm == fft::Norm::backward ? "backward" : norm == fft::Norm::ortho ? "ortho" : "forward";
}

TEST(Fft, OneAxisTransformsMatchNumpy) {
  testing::RandomArrays random(1);
  NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  for (DType dtype : {f32, f64, c64, c128, i32}) {
    for (int64_t length : {1, 5, 8}) {
      Array x = is_complex(dtype) ? random_complex(random, {3, length}, dtype)
                                  : astype(random.uniform({3, length}, f64, -4, 4), dtype);
      bool real_input = !is_complex(dtype);
      DType complex_result = dtype == f64 || dtype == c128 ? c128 : c64;
      DType real_result = complex_result == c128 ? f64 : f32;
      for (fft::Norm norm : {fft::Norm::backward, fft::Norm::ortho, fft::Norm::forward}) {
        std::string n = norm_name(norm);
        std::vector<std::tuple<std::string, Array, DType>> results = {
            {"np.fft.fft(a, norm='" + n + "')", fft::fft(x, std::nullopt, -1, norm), complex_result},
            {"np.fft.ifft(a, n=6, axis=1, norm='" + n + "')", fft::ifft(x, 6, 1, norm), complex_result},
            {"np.fft.fft(a, n=2, axis=0, norm='" + n + "')", fft::fft(x, 2, 0, norm), complex_result},
            {"np.fft.irfft(a, n=7, norm='" + n + "')", fft::irfft(x, 7, -1, norm), real_result},
            {"np.fft.hfft(a, n=4, norm='" + n + "')", fft::hfft(x, 4, -1, norm), real_result},
        };
        if (length > 1)
          results.emplace_back("np.fft.irfft(a, norm='" + n + "')", fft::irfft(x, std::nullopt, -1, norm), real_result);
        if (real_input) {
          results.emplace_back("np.fft.rfft(a, norm='" + n + "')", fft::rfft(x, std::nullopt, -1, norm),
                               complex_result);
          results.emplace_back("np.fft.rfft(a, n=9, axis=0, norm='" + n + "')", fft::rfft(x, 9, 0, norm),
                               complex_result);
          results.emplace_back("np.fft.ihfft(a, norm='" + n + "')", fft::ihfft(x, std::nullopt, -1, norm),
                               complex_result);
        }
        for (auto& [expression, actual, expected_dtype] : results) {
          EXPECT_EQ(actual.dtype(), expected_dtype) << expression;
          std::string context = expression + " of " + std::string(dtype_name(dtype)) + shape_string(x.shape());
          cases.push_back({actual,
                           oracle.add(expression + ".astype(" + testing::numpy_dtype(expected_dtype) + ")", {x}),
                           context, expected_dtype == f32 || expected_dtype == c64 ? 2e-5 : 1e-11});
        }
      }
    }
  }
  oracle.run();
  testing::expect_cases_match(oracle, cases);
}

TEST(Fft, SeveralAxesFrequenciesAndShiftsMatchNumpy) {
  testing::RandomArrays random(2);
  Array x = random.uniform({4, 3, 6}, f64);
  Array z = random_complex(random, {4, 3, 6}, c128);
  NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  auto add = [&](const std::string& expression, const Array& input, const Array& actual) {
    cases.push_back({actual, oracle.add(expression, {input}), expression, 1e-11});
  };
  add("np.fft.fftn(a)", x, fft::fftn(x));
  add("np.fft.fftn(a, s=(5, 4), axes=(0, 2))", x, fft::fftn(x, Shape{5, 4}, std::vector<int64_t>{0, 2}));
  add("np.fft.ifftn(a, axes=(1, 2), norm='ortho')", z,
      fft::ifftn(z, std::nullopt, std::vector<int64_t>{1, 2}, fft::Norm::ortho));
  add("np.fft.rfftn(a)", x, fft::rfftn(x));
  add("np.fft.rfftn(a, s=(2, 7))", x, fft::rfftn(x, Shape{2, 7}));
  add("np.fft.irfftn(a)", z, fft::irfftn(z));
  add("np.fft.irfftn(a, s=(3, 5), axes=(0, 1))", z, fft::irfftn(z, Shape{3, 5}, std::vector<int64_t>{0, 1}));
  add("np.fft.fftshift(a)", x, fft::fftshift(x));
  add("np.fft.ifftshift(a, axes=(2,))", x, fft::ifftshift(x, Axes{2}));
  add("np.fft.ifftshift(np.fft.fftshift(a, axes=(0, 1)), axes=(0, 1))", x,
      fft::ifftshift(fft::fftshift(x, Axes{0, 1}), Axes{0, 1}));
  Array unused = zeros({1}, f64);
  add("np.fft.fftfreq(7, d=0.5)", unused, fft::fftfreq(7, 0.5, f64));
  add("np.fft.fftfreq(8)", unused, fft::fftfreq(8, 1.0, f64));
  add("np.fft.rfftfreq(9, d=2.0)", unused, fft::rfftfreq(9, 2.0, f64));
  oracle.run();
  testing::expect_cases_match(oracle, cases);
  EXPECT_EQ(fft::fftfreq(4).dtype(), f32);
}

TEST(Fft, CompiledAndBatchedEqualEager) {
  testing::RandomArrays random(3);
  Array x = random.uniform({5, 12}, f32);
  auto spectrum = [](const Array& v) { return fft::irfft(fft::rfft(v) * fft::rfft(v), 12) + real(fft::fft(v)); };
  Array eager = spectrum(x);
  auto compiled = jit(spectrum, {.name = "spectrum"});
  EXPECT_TRUE(testing::all_close(compiled(x), eager, 0, 0, "jit"));
  EXPECT_TRUE(testing::all_close(vmap(spectrum)(x), eager, 0, 0, "vmap over rows"));
  Array columns = vmap([](const Array& v) { return fft::fft(v); }, 1, 1)(x);
  EXPECT_TRUE(testing::all_close(columns, fft::fft(x, std::nullopt, 0), 0, 0, "vmap over columns"));
}

// KISS FFT plans of lengths with a prime factor above 5 keep a scratch
// buffer: transforms of such lengths on many threads at once must each get
// the result a lone transform gets.
TEST(Fft, TransformsOnManyThreadsAtOnceEqualALoneTransform) {
  testing::RandomArrays random(5);
  std::vector<Array> inputs;
  std::vector<Array> expected;
  for (int64_t n : {7, 11, 13, 14}) {
    inputs.push_back(random_complex(random, {64, n}, c128));
    expected.push_back(fft::ifft(fft::fft(inputs.back())));
  }
  constexpr int threads = 8;
  std::vector<std::vector<Array>> results(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round)
        for (const Array& x : inputs) results[t].push_back(fft::ifft(fft::fft(x)));
    });
  for (std::thread& worker : workers) worker.join();
  for (int t = 0; t < threads; ++t)
    for (size_t k = 0; k < results[t].size(); ++k)
      ASSERT_TRUE(testing::all_close(results[t][k], expected[k % inputs.size()], 0, 0,
                                     "thread " + std::to_string(t) + ", transform " + std::to_string(k)));
}

void expect_gradient(const std::function<Array(const Array&)>& f, const Array& z, const std::string& name) {
  std::vector<c128_t> expected = testing::numerical_complex_gradient(f, z);
  std::vector<c128_t> actual = grad(f)(z).to_vector<c128_t>();
  ASSERT_EQ(actual.size(), expected.size()) << name;
  for (size_t k = 0; k < actual.size(); ++k)
    EXPECT_NEAR(std::abs(actual[k] - expected[k]), 0.0, 1e-5 * (1 + std::abs(expected[k]))) << name << " at " << k;
}

TEST(Fft, DerivativesMatchFiniteDifferences) {
  testing::RandomArrays random(4);
  Array z = random_complex(random, {2, 6}, c128);
  Array weights = random.uniform({2, 6}, f64);
  Array half_weights = random.uniform({2, 4}, f64);
  expect_gradient([&](const Array& v) { return sum(real(fft::fft(v) * conj(v)) * weights); }, z, "fft");
  expect_gradient([&](const Array& v) { return sum(abs(fft::ifft(v, 8, -1, fft::Norm::ortho))); }, z, "ifft");
  expect_gradient([&](const Array& v) { return sum(fft::irfft(v, 6) * weights); }, slice(z, {0, 0}, {2, 4}),
                  "irfft even");
  expect_gradient([&](const Array& v) { return sum(square(fft::irfft(v, 7))); }, slice(z, {0, 0}, {2, 4}), "irfft odd");
  expect_gradient([&](const Array& v) { return sum(imag(fft::fftn(v)) * weights); }, z, "fftn");
  // Real inputs: the ordinary gradient, checked with the suite's own checker.
  Array x = random.uniform({2, 6}, f64);
  auto real_case = [&](std::function<Array(const Array&)> f, const std::string& name) {
    EXPECT_TRUE(testing::check_derivatives([f](const std::vector<Array>& in) { return f(in[0]); }, {x})) << name;
  };
  real_case([&](const Array& v) { return abs(fft::rfft(v)) * half_weights; }, "rfft");
  real_case([&](const Array& v) { return real(fft::rfft(v, 9, 0)) + imag(fft::rfft(v, 9, 0)); }, "rfft padded");
  real_case([&](const Array& v) { return abs(fft::fft(v)); }, "fft of a real input");
  real_case([&](const Array& v) { return fft::irfft(fft::rfft(v), 6) * 2.0; }, "irfft(rfft)");
  real_case([&](const Array& v) { return abs(fft::rfftn(v, Shape{3, 4})); }, "rfftn");
}

TEST(Fft, ErrorsNameTheOperationAndLine) {
  expect_error(__LINE__, [] { fft::fft(scalar(1.0f)); }, {"[fft]", "scalar"});
  expect_error(__LINE__, [] { fft::fft(zeros({3}), 0); }, {"[fft]", "n=0"});
  expect_error(__LINE__, [] { fft::irfft(zeros({1}, c64)); }, {"[irfft]", "n=0"});
  expect_error(__LINE__, [] { fft::rfft(zeros({4}, c64)); }, {"[rfft]", "c64", "kiln::fft::fft"});
  expect_error(__LINE__, [] { fft::fft(zeros({3}), std::nullopt, 2); }, {"[fft]", "axis"});
  expect_error(__LINE__, [] { fft::fftn(zeros({3, 3}), Shape{2}, std::vector<int64_t>{0, 1}); }, {"[fftn]", "s has 1"});
}

}  // namespace
}  // namespace kiln
