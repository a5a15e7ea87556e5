// Derivatives of the elementwise primitives (unary, binary, select, convert,
// stop_gradient) through the public functions, composites and operators:
// vjp and jvp against finite differences, broadcasting, ties of maximum and
// minimum, pow at zero, second derivatives against closed forms, and the
// primitives whose derivative is zero or absent.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <functional>
#include <numbers>
#include <random>
#include <string>

#include "support/gradient_check.h"

namespace kiln {
namespace {

using testing::check_derivatives;
using testing::DerivativeTolerance;

using Accept = std::function<bool(double)>;

double distance_to_integer(double x) { return std::fabs(x - std::round(x)); }

/// f64 values drawn uniformly from [lo, hi), redrawn until `accept` holds (to
/// keep finite differences away from kinks and jumps).
Array sample(const Shape& shape, double lo, double hi, uint64_t seed, const Accept& accept = nullptr) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> uniform(lo, hi);
  int64_t count = 1;
  for (int64_t extent : shape) count *= extent;
  std::vector<double> values;
  while (static_cast<int64_t>(values.size()) < count) {
    double v = uniform(engine);
    if (!accept || accept(v)) values.push_back(v);
  }
  return array(values, shape);
}

const std::vector<Shape> unary_shapes = {{2, 3}, {}, {2, 1, 2}, {0, 2}};

struct UnaryCase {
  std::string name;
  std::function<Array(const Array&)> fn;
  double lo, hi;
  Accept accept = nullptr;
};

bool away_from_zero(double x) { return std::fabs(x) > 0.1; }

TEST(ElementwiseDerivatives, UnaryFunctionsMatchFiniteDifferences) {
  std::vector<UnaryCase> cases = {
      {"neg", [](const Array& x) { return neg(x); }, -2, 2},
      {"abs", [](const Array& x) { return abs(x); }, -2, 2, away_from_zero},
      {"exp", [](const Array& x) { return exp(x); }, -2, 2},
      {"log", [](const Array& x) { return log(x); }, 0.2, 3},
      {"log1p", [](const Array& x) { return log1p(x); }, -0.7, 2},
      {"expm1", [](const Array& x) { return expm1(x); }, -2, 2},
      {"sqrt", [](const Array& x) { return sqrt(x); }, 0.2, 3},
      {"rsqrt", [](const Array& x) { return rsqrt(x); }, 0.2, 3},
      {"square", [](const Array& x) { return square(x); }, -2, 2},
      {"tanh", [](const Array& x) { return tanh(x); }, -2, 2},
      {"sigmoid", [](const Array& x) { return sigmoid(x); }, -4, 4},
      {"erf", [](const Array& x) { return erf(x); }, -2, 2},
      {"sin", [](const Array& x) { return sin(x); }, -3, 3},
      {"cos", [](const Array& x) { return cos(x); }, -3, 3},
      {"exp2", [](const Array& x) { return exp2(x); }, -2, 2},
      {"log2", [](const Array& x) { return log2(x); }, 0.2, 3},
      {"log10", [](const Array& x) { return log10(x); }, 0.2, 3},
      {"arctan", [](const Array& x) { return arctan(x); }, -3, 3},
      {"arcsin", [](const Array& x) { return arcsin(x); }, -0.9, 0.9},
      {"arccos", [](const Array& x) { return arccos(x); }, -0.9, 0.9},
      {"arcsinh", [](const Array& x) { return arcsinh(x); }, -3, 3},
      {"arccosh", [](const Array& x) { return arccosh(x); }, 1.2, 4},
      {"arctanh", [](const Array& x) { return arctanh(x); }, -0.9, 0.9},
      {"relu", [](const Array& x) { return relu(x); }, -2, 2, away_from_zero},
      // Piecewise constant: zero derivative away from the jumps.
      {"sign", [](const Array& x) { return sign(x); }, -2, 2, away_from_zero},
      {"floor", [](const Array& x) { return floor(x); }, -3, 3, [](double x) { return distance_to_integer(x) > 0.1; }},
      {"ceil", [](const Array& x) { return ceil(x); }, -3, 3, [](double x) { return distance_to_integer(x) > 0.1; }},
      {"round", [](const Array& x) { return round(x); }, -3, 3,
       [](double x) { return distance_to_integer(x + 0.5) > 0.1; }},
      {"clip", [](const Array& x) { return clip(x, -0.5, 0.5); }, -2, 2,
       [](double x) { return std::fabs(std::fabs(x) - 0.5) > 0.1; }},
      {"where", [](const Array& x) { return where(x > 0, sin(x), x * x); }, -2, 2, away_from_zero},
      {"maximum number", [](const Array& x) { return maximum(x, 0.3); }, -2, 2,
       [](double x) { return std::fabs(x - 0.3) > 0.1; }},
      {"minimum number", [](const Array& x) { return minimum(0.3, x); }, -2, 2,
       [](double x) { return std::fabs(x - 0.3) > 0.1; }},
      {"pow number exponent", [](const Array& x) { return pow(x, 3.0); }, -2, 2},
      {"pow number base", [](const Array& x) { return pow(2.0, x); }, -2, 2},
      {"pow fractional exponent", [](const Array& x) { return pow(x, 0.5); }, 0.2, 3},
      {"operators", [](const Array& x) { return 2.0 * x + 1 - x / 3.0 - (3 - x) * -x; }, -2, 2},
      {"reciprocal", [](const Array& x) { return 1.0 / x; }, 0.5, 2},
      {"composition", [](const Array& x) { return log(1 + exp(sin(x) * 2)) / (1 + x * x); }, -2, 2},
  };
  uint64_t seed = 1;
  for (const UnaryCase& c : cases) {
    for (const Shape& shape : unary_shapes) {
      Array x = sample(shape, c.lo, c.hi, seed++, c.accept);
      auto fn = [&](const std::vector<Array>& in) { return c.fn(in[0]); };
      EXPECT_TRUE(check_derivatives(fn, {x})) << c.name << " on f64" << shape_string(shape);
    }
  }
}

TEST(ElementwiseDerivatives, PiecewiseConstantFunctionsHaveZeroNotMissingGradients) {
  Array x = array({-1.7, -0.2, 0.3, 2.6});
  auto fn = [](const Array& v) { return sign(v) + floor(v) + ceil(v) + round(v); };
  auto [value, pullback] = vjp(fn, x);
  auto [gradient] = pullback(ones_like(value));
  ASSERT_TRUE(gradient.defined());
  EXPECT_EQ(gradient.dtype(), f64);
  EXPECT_EQ(gradient.to_vector<double>(), std::vector<double>(4, 0.0));
  auto [y, tangent] = jvp(fn, std::tuple{x}, std::tuple{ones_like(x)});
  EXPECT_EQ(tangent.to_vector<double>(), std::vector<double>(4, 0.0));
}

TEST(ElementwiseDerivatives, AbsHasZeroDerivativeAtZero) {
  // sign(x) * cotangent, as torch and MLX (JAX takes +1 at 0).
  auto [value, pullback] = vjp([](const Array& v) { return abs(v); }, array({-2.0, 0.0, 3.0}));
  auto [gradient] = pullback(array({1.0, 1.0, 1.0}));
  EXPECT_EQ(gradient.to_vector<double>(), (std::vector<double>{-1, 0, 1}));
}

struct BinaryCase {
  std::string name;
  std::function<Array(const Array&, const Array&)> fn;
  double lo_a, hi_a, lo_b, hi_b;
};

TEST(ElementwiseDerivatives, BinaryFunctionsMatchFiniteDifferencesWithBroadcasting) {
  Array condition = array({true, false, false, true, true, false}, {2, 3});
  std::vector<BinaryCase> cases = {
      {"add", [](const Array& a, const Array& b) { return add(a, b); }, -2, 2, -2, 2},
      {"sub", [](const Array& a, const Array& b) { return sub(a, b); }, -2, 2, -2, 2},
      {"mul", [](const Array& a, const Array& b) { return mul(a, b); }, -2, 2, -2, 2},
      {"div", [](const Array& a, const Array& b) { return div(a, b); }, -2, 2, 0.5, 2},
      {"div negative", [](const Array& a, const Array& b) { return a / b; }, -2, 2, -2, -0.5},
      {"pow", [](const Array& a, const Array& b) { return pow(a, b); }, 0.3, 2, -1.5, 1.5},
      // Continuous random values never tie; ties are tested on their own.
      {"maximum", [](const Array& a, const Array& b) { return maximum(a, b); }, -2, 2, -2, 2},
      {"minimum", [](const Array& a, const Array& b) { return minimum(a, b); }, -2, 2, -2, 2},
      {"where", [](const Array& a, const Array& b) { return where(a > b, a * b, a - b); }, -2, 2, -2, 2},
      {"arctan2", [](const Array& a, const Array& b) { return arctan2(a, b); }, -2, 2, 0.3, 2},
      {"arctan2 left half-plane", [](const Array& a, const Array& b) { return arctan2(a, b); }, 0.3, 2, -2, 2},
      // Continuous random values never sit on a jump of floor(a / b).
      {"remainder", [](const Array& a, const Array& b) { return remainder(a, b); }, -5, 5, 0.7, 2},
      {"remainder negative divisor", [](const Array& a, const Array& b) { return remainder(a, b); }, -5, 5, -2, -0.7},
      {"floor_divide times b", [](const Array& a, const Array& b) { return floor_divide(a, b) * b; }, -5, 5, 0.7, 2},
      {"copysign", [](const Array& a, const Array& b) { return copysign(a, b); }, -2, 2, -2, 2},
      {"nextafter", [](const Array& a, const Array& b) { return nextafter(a, b) * b; }, -2, 2, -2, 2},
      {"operators", [](const Array& a, const Array& b) { return (a + 1) * (b - 2) / (a * a + 1) - a * b; }, -2, 2, -2,
       2},
  };
  std::vector<std::pair<Shape, Shape>> shapes = {
      {{2, 3}, {2, 3}}, {{3, 1}, {4}}, {{}, {2, 3}}, {{2, 3}, {}}, {{2, 1, 3}, {4, 1}}, {{}, {}}, {{0, 3}, {3}},
  };
  uint64_t seed = 100;
  for (const BinaryCase& c : cases) {
    for (const auto& [shape_a, shape_b] : shapes) {
      Array a = sample(shape_a, c.lo_a, c.hi_a, seed++);
      Array b = sample(shape_b, c.lo_b, c.hi_b, seed++);
      auto fn = [&](const std::vector<Array>& in) { return c.fn(in[0], in[1]); };
      EXPECT_TRUE(check_derivatives(fn, {a, b}))
          << c.name << " on f64" << shape_string(shape_a) << " and f64" << shape_string(shape_b);
    }
  }
  // A fixed condition (no derivative) choosing between two differentiable branches.
  Array a = sample({2, 3}, -2, 2, seed++), b = sample({3}, -2, 2, seed++);
  auto select = [&](const std::vector<Array>& in) { return where(condition, sin(in[0]), in[1] * in[1]); };
  EXPECT_TRUE(check_derivatives(select, {a, b})) << "where with a bool array condition";
}

TEST(ElementwiseDerivatives, SelectSendsTheCotangentToTheChosenBranch) {
  Array condition = array({true, false, true});
  auto fn = [&](const Array& x, const Array& y) { return where(condition, x, y); };
  auto [value, pullback] = vjp(fn, array({1.0, 2.0, 3.0}), array({4.0, 5.0, 6.0}));
  auto [dx, dy] = pullback(array({10.0, 20.0, 30.0}));
  EXPECT_EQ(dx.to_vector<double>(), (std::vector<double>{10, 0, 30}));
  EXPECT_EQ(dy.to_vector<double>(), (std::vector<double>{0, 20, 0}));
}

TEST(ElementwiseDerivatives, MaximumAndMinimumSplitTiesHalfAndHalf) {
  Array x = array({1.0, 2.0, 3.0, -1.0});
  Array y = array({1.0, 5.0, 3.0, -2.0});
  Array cotangent = array({4.0, 4.0, 8.0, 4.0});
  {
    auto [value, pullback] = vjp([](const Array& a, const Array& b) { return maximum(a, b); }, x, y);
    auto [dx, dy] = pullback(cotangent);
    EXPECT_EQ(dx.to_vector<double>(), (std::vector<double>{2, 0, 4, 4}));
    EXPECT_EQ(dy.to_vector<double>(), (std::vector<double>{2, 4, 4, 0}));
  }
  {
    auto [value, pullback] = vjp([](const Array& a, const Array& b) { return minimum(a, b); }, x, y);
    auto [dx, dy] = pullback(cotangent);
    EXPECT_EQ(dx.to_vector<double>(), (std::vector<double>{2, 4, 4, 0}));
    EXPECT_EQ(dy.to_vector<double>(), (std::vector<double>{2, 0, 4, 4}));
  }
  // Forward mode: a tie moves with the mean of the two tangents.
  auto [value, tangent] = jvp([](const Array& a, const Array& b) { return maximum(a, b); }, std::tuple{x, y},
                              std::tuple{array({2.0, 1.0, 6.0, 1.0}), array({4.0, 3.0, 0.0, 7.0})});
  EXPECT_EQ(tangent.to_vector<double>(), (std::vector<double>{3, 3, 3, 1}));
  // The same split for a tie with a number, after broadcasting.
  auto [relu_value, relu_pullback] = vjp([](const Array& a) { return maximum(a, 0.0); }, array({0.0, 1.0, -1.0}));
  auto [relu_gradient] = relu_pullback(array({1.0, 1.0, 1.0}));
  EXPECT_EQ(relu_gradient.to_vector<double>(), (std::vector<double>{0.5, 1, 0}));
  // relu itself is a select: zero gradient at 0 as in JAX, NaN propagates.
  auto [relu_at_zero, relu_zero_pullback] = vjp([](const Array& a) { return relu(a); }, array({0.0, 1.0, -1.0}));
  auto [relu_zero_gradient] = relu_zero_pullback(array({1.0, 1.0, 1.0}));
  EXPECT_EQ(relu_zero_gradient.to_vector<double>(), (std::vector<double>{0, 1, 0}));
  EXPECT_TRUE(std::isnan(relu(array({std::nan("")})).item<double>()));
}

TEST(ElementwiseDerivatives, PowIsSafeAtZero) {
  // d/dx x^y = y x^(y-1) and d/dy x^y = log(x) x^y, with 0 (not NaN) for
  // y == 0 in the first and for x == 0 in the second, as JAX.
  Array x = array({0.0, 0.0, 0.0, 2.0, 0.0});
  Array y = array({0.0, 1.0, 2.0, 0.0, 0.5});
  auto [value, pullback] = vjp([](const Array& a, const Array& b) { return pow(a, b); }, x, y);
  auto [dx, dy] = pullback(ones_like(value));
  std::vector<double> gx = dx.to_vector<double>(), gy = dy.to_vector<double>();
  EXPECT_EQ(gx[0], 0.0);
  EXPECT_EQ(gx[1], 1.0);
  EXPECT_EQ(gx[2], 0.0);
  EXPECT_EQ(gx[3], 0.0);
  EXPECT_TRUE(std::isinf(gx[4]) && gx[4] > 0) << gx[4];  // the true derivative of sqrt at 0
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(gy[i], 0.0) << i;
  EXPECT_DOUBLE_EQ(gy[3], std::log(2.0));
  EXPECT_EQ(gy[4], 0.0);
}

TEST(ElementwiseDerivatives, AstypeRoundTripThroughF32) {
  // The cotangent converts back to each input's dtype; f32 rounding needs loose tolerances.
  Array x = sample({2, 3}, -2, 2, 7);
  auto fn = [](const std::vector<Array>& in) { return astype(sin(astype(in[0], f32)) * 3.0f, f64); };
  EXPECT_TRUE(check_derivatives(fn, {x}, DerivativeTolerance{.step = 1e-3, .rtol = 1e-3, .atol = 1e-4}));
  auto [value, pullback] = vjp([](const Array& v) { return astype(v, f32); }, x);
  auto [gradient] = pullback(ones_like(value));
  EXPECT_EQ(gradient.dtype(), f64);
}

TEST(ElementwiseDerivatives, IntegerConversionsCarryNoDerivative) {
  // Through an integer value nothing flows back (the conversion to int is
  // piecewise constant); an integer operand converted to float is a constant.
  Array counts = array({1, 2, 3});
  auto fn = [&](const Array& v) { return astype(astype(v, i32), f64) * v + astype(counts, f64) * v; };
  auto [value, pullback] = vjp(fn, array({1.5, 2.5, -3.5}));
  auto [gradient] = pullback(array({1.0, 1.0, 1.0}));
  EXPECT_EQ(gradient.to_vector<double>(), (std::vector<double>{2, 4, 0}));
}

TEST(ElementwiseDerivatives, SecondDerivativesMatchClosedForms) {
  struct Case {
    std::string name;
    std::function<Array(const Array&)> fn;
    std::function<double(double)> second;
    std::vector<double> points;
  };
  std::vector<Case> cases = {
      {"sin", [](const Array& x) { return sin(x); }, [](double x) { return -std::sin(x); }, {-1.3, 0.0, 0.7, 2.5}},
      {"cos", [](const Array& x) { return cos(x); }, [](double x) { return -std::cos(x); }, {-1.3, 0.7}},
      {"exp", [](const Array& x) { return exp(x); }, [](double x) { return std::exp(x); }, {-1.0, 0.5, 2.0}},
      {"x*x*x", [](const Array& x) { return x * x * x; }, [](double x) { return 6 * x; }, {-1.5, 0.0, 2.0}},
      {"pow(x, 3)", [](const Array& x) { return pow(x, 3.0); }, [](double x) { return 6 * x; }, {-1.5, 2.0}},
      {"tanh",
       [](const Array& x) { return tanh(x); },
       [](double x) {
         double t = std::tanh(x);
         return -2 * t * (1 - t * t);
       },
       {-0.8, 0.0, 1.2}},
      {"sigmoid",
       [](const Array& x) { return sigmoid(x); },
       [](double x) {
         double s = 1 / (1 + std::exp(-x));
         return s * (1 - s) * (1 - 2 * s);
       },
       {-2.0, 0.3, 1.5}},
      {"log", [](const Array& x) { return log(x); }, [](double x) { return -1 / (x * x); }, {0.5, 2.0}},
      {"sqrt", [](const Array& x) { return sqrt(x); }, [](double x) { return -0.25 / std::pow(x, 1.5); }, {0.5, 2.0}},
      {"rsqrt", [](const Array& x) { return rsqrt(x); }, [](double x) { return 0.75 / std::pow(x, 2.5); }, {0.5, 2.0}},
      {"erf",
       [](const Array& x) { return erf(x); },
       [](double x) { return -4 * x / std::sqrt(std::numbers::pi) * std::exp(-x * x); },
       {-0.7, 1.1}},
      {"1/x", [](const Array& x) { return 1.0 / x; }, [](double x) { return 2 / (x * x * x); }, {-1.5, 0.5}},
      {"x^x",
       [](const Array& x) { return pow(x, x); },
       [](double x) { return std::pow(x, x) * (std::pow(1 + std::log(x), 2) + 1 / x); },
       {0.5, 1.5}},
  };
  for (const Case& c : cases) {
    auto second = grad(grad(c.fn));
    for (double point : c.points) {
      Array result = second(scalar(point));
      EXPECT_EQ(result.dtype(), f64);
      EXPECT_NEAR(result.item<double>(), c.second(point), 1e-12 * (1 + std::fabs(c.second(point))))
          << c.name << "'' at " << point;
    }
  }
  // A third derivative: sin''' = -cos.
  auto third = grad(grad(grad([](const Array& x) { return sin(x); })));
  EXPECT_NEAR(third(scalar(0.4)).item<double>(), -std::cos(0.4), 1e-12);
}

TEST(ElementwiseDerivatives, SecondOrderMixedPartials) {
  // d/dy d/dx (x^2 y + sin(x y)) = 2x + cos(xy) - xy sin(xy).
  auto fn = [](const Array& x, const Array& y) { return x * x * y + sin(x * y); };
  auto dfdx = [fn](const Array& x, const Array& y) { return grad(fn)(x, y); };
  auto both = grad(dfdx, {0, 1});
  double x = 0.7, y = -1.3;
  auto [dxx, dxy] = both(scalar(x), scalar(y));
  // d2/dx2 = 2y - y^2 sin(xy).
  EXPECT_NEAR(dxx.item<double>(), 2 * y - y * y * std::sin(x * y), 1e-12);
  EXPECT_NEAR(dxy.item<double>(), 2 * x + std::cos(x * y) - x * y * std::sin(x * y), 1e-12);
  auto [unused, only_y] = grad(dfdx, {1})(scalar(x), scalar(y));
  EXPECT_FALSE(unused.defined());
  EXPECT_NEAR(only_y.item<double>(), dxy.item<double>(), 1e-15);
}

TEST(ElementwiseDerivatives, StopGradientBlocks) {
  // d/dx [stop_gradient(x) * x] = stop_gradient(x): the first factor is a constant.
  Array x = array({1.5, -2.0, 0.5});
  auto [value, pullback] = vjp([](const Array& v) { return stop_gradient(v) * v + stop_gradient(exp(v)); }, x);
  auto [gradient] = pullback(ones_like(value));
  EXPECT_EQ(gradient.to_vector<double>(), x.to_vector<double>());
  auto [y, tangent] =
      jvp([](const Array& v) { return stop_gradient(sin(v)); }, std::tuple{x}, std::tuple{ones_like(x)});
  EXPECT_EQ(tangent.to_vector<double>(), std::vector<double>(3, 0.0));
  // A gradient only through stop_gradient is zero, not missing.
  Array only = grad([](const Array& v) { return stop_gradient(v * v); })(scalar(3.0));
  EXPECT_EQ(only.item<double>(), 0.0);
}

TEST(ElementwiseDerivatives, BoolResultsPassNoDerivative) {
  // Comparisons, logical ops and isnan feed only conditions; the gradient
  // flows through the chosen values alone.
  auto fn = [](const Array& v) {
    Array keep = logical_and(v > -1, !isnan(v)) | (v == 5.0);
    return where(keep, v * v, 3 * v);
  };
  auto [value, pullback] = vjp(fn, array({-2.0, 0.5, 2.0}));
  auto [gradient] = pullback(array({1.0, 1.0, 1.0}));
  EXPECT_EQ(gradient.to_vector<double>(), (std::vector<double>{3, 1, 4}));
}

TEST(ElementwiseDerivatives, GradientWithRespectToAnIntegerIsAnError) {
  auto fn = [](const Array& v) { return astype(v, f32) * 2.0f; };
  int line = __LINE__ + 1;
  auto g = grad(fn);
  try {
    g(scalar(3));
    FAIL() << "expected a kiln::Error";
  } catch (const Error& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("[grad"), std::string::npos) << message;
    EXPECT_NE(message.find("i32"), std::string::npos) << message;
    EXPECT_NE(message.find("test_elementwise_derivatives.cpp:" + std::to_string(line)), std::string::npos) << message;
  }
  EXPECT_THROW(grad([](const Array& v) { return astype(v, f64); })(array({true})), Error);
}

constexpr double f32_loss_gradient_tolerance = 2e-5;

Array loss(const Array& x) {
  return sum(tanh(x) * exp(-x * x) + sigmoid(2 * x) * sqrt(x * x + 1) - pow(abs(x) + 1, 1.5) / (x * x + 2));
}

TEST(ElementwiseDerivatives, ValueAndGradAgreesAcrossDtypesAndJit) {
  Array x = sample({7}, -2, 2, 11, away_from_zero);
  auto vg = value_and_grad(loss);
  auto [value, gradient] = vg(x);
  auto [value32, gradient32] = vg(astype(x, f32));
  EXPECT_EQ(gradient.dtype(), f64);
  EXPECT_EQ(gradient32.dtype(), f32);
  EXPECT_NEAR(value32.item<double>(), value.item<double>(), 1e-5 * (1 + std::fabs(value.item<double>())));
  std::vector<double> g64 = gradient.to_vector<double>(), g32 = gradient32.to_vector<double>();
  for (size_t i = 0; i < g64.size(); ++i)
    EXPECT_NEAR(g32[i], g64[i], f32_loss_gradient_tolerance * (1 + std::fabs(g64[i])));

  // Finite differences on the f64 loss.
  EXPECT_TRUE(check_derivatives([](const std::vector<Array>& in) { return loss(in[0]); }, {x}));

  auto jitted = jit([](const Array& v) { return value_and_grad(loss)(v); });
  auto [jit_value, jit_gradient] = jitted(x);
  EXPECT_NEAR(jit_value.item<double>(), value.item<double>(), 1e-14);
  std::vector<double> jit_g64 = jit_gradient.to_vector<double>();
  for (size_t i = 0; i < g64.size(); ++i) EXPECT_NEAR(jit_g64[i], g64[i], 1e-14) << i;
}

TEST(ElementwiseDerivatives, DerivativeNodesCarryTheUsersLine) {
  auto f = [](const Array& v) { return sum(sin(v) * v); };
  int line = __LINE__ - 1;
  std::string text = jit(grad(f)).lower(array({1.0, 2.0})).to_string();
  EXPECT_NE(text.find("cos"), std::string::npos) << text;
  EXPECT_NE(text.find("test_elementwise_derivatives.cpp:" + std::to_string(line)), std::string::npos) << text;
}

}  // namespace
}  // namespace kiln
