// Accuracy of the native backend's transcendental functions, and proof that
// they vectorize.
//
// Each function runs, compiled, over ~500k points per dtype: every binade of
// the format (subnormals included) with both signs, a dense uniform sweep of
// the interval where the function does its work, and the special values
// (+-0, +-inf, NaN, the extremes, each approximation's switch-over points).
// The error is measured in ulps of the result's format against a reference
// that is exact for that format's purposes: for f32 the reference interpreter
// run in f64 (glibc's double functions, < 1 f64 ulp), for f64 glibc's long
// double functions (64-bit significand). An ulp is the spacing of the format
// at the exact result (the subnormal spacing below the normal range). Results
// that are NaN, infinite or zero in the format must match exactly, sign of
// zero included. Each test prints its measurement per dtype, e.g.
//   [ accuracy ] erf      f32  max  1.52 ulp (bound 2; scalar libm 0.89)  524363 points: every binade, ...
//   [ accuracy ]               worst: x = 1.00479937 gives 0.844683409, exact 0.8446835
// where "scalar libm" is the same measurement of the glibc function the
// reference interpreter calls, for comparison.
//
// The vectorization tests compile each function with KILN_DUMP set and read
// the assembly: sin, cos and pow must call libmvec's vector functions
// (_ZGVeN16v_sinf, ...); the functions math.cpp writes out (exp, exp2, log,
// log2, log10, tanh, logistic, erf, log1p, expm1, arctan, arctan2) must make no
// calls at all and compute on packed full-width vector registers.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <regex>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "backend/interp/interpreter.h"
#include "backend/llvm/backend.h"
#include "differential.h"

namespace kiln {
namespace {

using Wide = long double;

template <class T>
DType dtype_for() {
  return std::is_same_v<T, float> ? DType::f32 : DType::f64;
}
template <class T>
const char* dtype_text() {
  return std::is_same_v<T, float> ? "f32" : "f64";
}

// ---- running one graph both ways --------------------------------------------------------

std::vector<Array> run_compiled(const Graph& graph, const std::vector<Array>& arguments) {
  auto executable = llvm_backend::llvm_backend().compile(detail::shared_ir(graph));
  return executable->run(arguments, {});
}

// ---- measuring ----------------------------------------------------------------------------

// The spacing of T's values at `exact` (the subnormal spacing below the normal range).
template <class T>
Wide ulp_at(Wide exact) {
  int exponent = 0;
  std::frexp(exact, &exponent);
  exponent = std::max(exponent, std::numeric_limits<T>::min_exponent);
  return std::ldexp(Wide(1), exponent - std::numeric_limits<T>::digits);
}

struct Worst {
  double ulps = 0;
  std::string where;
  int64_t failures = 0;  // wrong NaN/inf/zero class
  std::string first_failure;
};

// Error of `got` against the exact value; infinite when the classes differ.
template <class T>
double error_ulps(T got, Wide exact) {
  T rounded = static_cast<T>(exact);
  if (std::isnan(rounded) || std::isnan(got)) return std::isnan(rounded) && std::isnan(got) ? 0 : INFINITY;
  if (std::isinf(rounded) || std::isinf(got)) return got == rounded ? 0 : INFINITY;
  if (rounded == 0 && got == 0 && std::signbit(rounded) != std::signbit(got)) return INFINITY;
  if (exact == 0) return got == 0 ? 0 : INFINITY;
  return static_cast<double>(std::fabs(static_cast<Wide>(got) - exact) / ulp_at<T>(exact));
}

template <class T>
std::string describe_point(const std::vector<T>& inputs, T got, Wide exact) {
  std::ostringstream out;
  out.precision(std::numeric_limits<T>::max_digits10);
  out << "x = " << inputs[0];
  if (inputs.size() > 1) out << ", y = " << inputs[1];
  out << " gives " << got << ", exact " << static_cast<double>(exact);
  return out.str();
}

template <class T>
void measure(Worst& worst, const std::vector<T>& inputs, T got, Wide exact) {
  double error = error_ulps<T>(got, exact);
  if (std::isinf(error)) {
    if (worst.failures++ == 0) worst.first_failure = describe_point(inputs, got, exact);
    return;
  }
  if (error > worst.ulps) {
    worst.ulps = error;
    worst.where = describe_point(inputs, got, exact);
  }
}

// ---- inputs -----------------------------------------------------------------------------

constexpr int dense_points = 1 << 18;
constexpr int binade_points = 1 << 18;

// Every finite value of T is equally likely to come from any binade: random
// sign, exponent field and significand bits (the exponent field 0 gives the
// subnormals).
template <class T>
void add_every_binade(std::vector<T>& values, std::mt19937_64& engine) {
  using Bits = std::conditional_t<std::is_same_v<T, float>, uint32_t, uint64_t>;
  constexpr int significand_bits = std::numeric_limits<T>::digits - 1;
  constexpr Bits max_exponent_field = (Bits(1) << (sizeof(T) * 8 - 1 - significand_bits)) - 2;
  std::uniform_int_distribution<uint64_t> exponent(0, max_exponent_field);
  std::uniform_int_distribution<uint64_t> significand(0, (uint64_t(1) << significand_bits) - 1);
  for (int i = 0; i < binade_points; ++i) {
    Bits bits = static_cast<Bits>(exponent(engine)) << significand_bits | static_cast<Bits>(significand(engine));
    if (engine() & 1) bits |= Bits(1) << (sizeof(T) * 8 - 1);
    values.push_back(std::bit_cast<T>(bits));
  }
}

template <class T>
void add_uniform(std::vector<T>& values, std::mt19937_64& engine, double lo, double hi, int count) {
  std::uniform_real_distribution<double> real(lo, hi);
  for (int i = 0; i < count; ++i) values.push_back(static_cast<T>(real(engine)));
}

// Special values, plus each given point and its neighbours two ulps either way.
template <class T>
void add_specials(std::vector<T>& values, const std::vector<double>& edges) {
  using limits = std::numeric_limits<T>;
  for (T v : {T(0), limits::infinity(), limits::quiet_NaN(), limits::denorm_min(), limits::min(), limits::max(),
              limits::epsilon(), T(1), T(0.5), T(2)}) {
    values.push_back(v);
    values.push_back(-v);
  }
  for (double edge : edges) {
    T v = static_cast<T>(edge);
    T below = v, above = v;
    values.push_back(v);
    for (int k = 0; k < 2; ++k) {
      below = std::nextafter(below, -limits::infinity());
      above = std::nextafter(above, limits::infinity());
      values.push_back(below);
      values.push_back(above);
    }
  }
}

// ---- unary functions ------------------------------------------------------------------

struct UnaryFunction {
  const char* name;
  std::function<Array(const Array&)> apply;
  std::function<Wide(Wide)> exact;                // in long double, for the f64 reference
  std::vector<std::pair<double, double>> sweeps;  // dense uniform intervals
  std::vector<double> edges;                      // switch-over points, overflow thresholds
  double bound_f32, bound_f64;                    // maximum error allowed, in ulps
};

std::string describe_domain(const std::vector<std::pair<double, double>>& sweeps) {
  std::ostringstream out;
  out << "every binade";
  for (const auto& [lo, hi] : sweeps) out << ", uniform [" << lo << ", " << hi << "]";
  out << ", specials";
  return out.str();
}

void print_result(const char* name, const char* dtype, const Worst& kiln_error, const Worst& libm_error, double bound,
                  int64_t points, const std::string& domain) {
  std::printf("[ accuracy ] %-8s %s  max %5.2f ulp (bound %g; scalar libm %4.2f)  %lld points: %s\n", name, dtype,
              kiln_error.ulps, bound, libm_error.ulps, static_cast<long long>(points), domain.c_str());
  std::printf("[ accuracy ]               worst: %s\n", kiln_error.where.c_str());
}

template <class T>
void check_unary(const UnaryFunction& function) {
  std::mt19937_64 engine(0x6d617468);
  std::vector<T> values;
  add_every_binade(values, engine);
  for (const auto& [lo, hi] : function.sweeps)
    add_uniform(values, engine, lo, hi, dense_points / static_cast<int>(function.sweeps.size()));
  add_specials(values, function.edges);
  auto n = static_cast<int64_t>(values.size());
  Array x = array(values, Shape{n});

  Graph graph = make_graph(std::string(function.name) + "_" + dtype_text<T>(), function.apply, x);
  std::vector<T> compiled = run_compiled(graph, {x})[0].to_vector<T>();
  std::vector<T> libm = detail::interpret(graph, {x}, {})[0].to_vector<T>();
  std::vector<Wide> exact(values.size());
  if constexpr (std::is_same_v<T, float>) {
    Array wide = astype(x, DType::f64);
    Graph wide_graph = make_graph(std::string(function.name) + "_reference", function.apply, wide);
    std::vector<double> reference = detail::interpret(wide_graph, {wide}, {})[0].to_vector<double>();
    for (size_t i = 0; i < values.size(); ++i) exact[i] = reference[i];
  } else {
    for (size_t i = 0; i < values.size(); ++i) exact[i] = function.exact(values[i]);
  }

  Worst kiln_error, libm_error;
  for (size_t i = 0; i < values.size(); ++i) {
    measure<T>(kiln_error, {values[i]}, compiled[i], exact[i]);
    measure<T>(libm_error, {values[i]}, libm[i], exact[i]);
  }
  double bound = std::is_same_v<T, float> ? function.bound_f32 : function.bound_f64;
  print_result(function.name, dtype_text<T>(), kiln_error, libm_error, bound, n, describe_domain(function.sweeps));
  EXPECT_EQ(kiln_error.failures, 0) << function.name << " " << dtype_text<T>()
                                    << ": a NaN, infinity or zero differs from the reference, first at "
                                    << kiln_error.first_failure;
  EXPECT_LE(kiln_error.ulps, bound) << function.name << " " << dtype_text<T>() << " at " << kiln_error.where;
}

void check_both(const UnaryFunction& function) {
  check_unary<float>(function);
  check_unary<double>(function);
}

Wide logistic_exact(Wide x) { return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x)); }

// Bounds: sin and cos are glibc's libmvec functions, held to its
// documented 4 ulps (pow measures far better and is held to 2). The others,
// log included, are held to what they measure plus about half an ulp
// (math.cpp and math_inverse.cpp explain each).
TEST(MathAccuracy, Exp) {
  check_both({"exp",
              [](const Array& x) { return kiln::exp(x); },
              [](Wide x) { return std::exp(x); },
              {{-104, 89}, {-746, 710}},
              {-745.1332, -708.3964, 709.7827, -103.9721, -87.33655, 88.72284, 0},
              1.5,
              1.5});
}

TEST(MathAccuracy, Log) {
  check_both({"log",
              [](const Array& x) { return kiln::log(x); },
              [](Wide x) { return std::log(x); },
              {{0, 4}},
              {1, 0.5, 2},
              1.5,
              1.5});
}

TEST(MathAccuracy, Log1p) {
  check_both({"log1p",
              [](const Array& x) { return kiln::log1p(x); },
              [](Wide x) { return std::log1p(x); },
              {{-1, 2}, {-1e-3, 1e-3}},
              {-1, -0.5, 0.41421356, -0.29289322, 1, 16777216, 9007199254740992, 1e-8, -1e-8, 1e-17, -1e-17},
              1.5,
              1.5});
}

TEST(MathAccuracy, Expm1) {
  check_both({"expm1",
              [](const Array& x) { return kiln::expm1(x); },
              [](Wide x) { return std::expm1(x); },
              {{-5, 5}, {-1e-3, 1e-3}, {-746, 710}},
              {0.3466, -0.3466, 1.04, 17.33, 36.7, 38.1, -17.5, -38, 1e-8, -1e-8, 1e-17, -1e-17, 88.72284, 709.7827,
               -103.9721, -745.1332},
              1.5,
              1.5});
}

TEST(MathAccuracy, Tanh) {
  check_both({"tanh",
              [](const Array& x) { return kiln::tanh(x); },
              [](Wide x) { return std::tanh(x); },
              {{-10, 10}, {-1, 1}},
              {0.625, -0.625, 9.01, 19.06},
              2,
              2});
}

TEST(MathAccuracy, Logistic) {
  check_both({"logistic",
              [](const Array& x) { return kiln::sigmoid(x); },
              logistic_exact,
              {{-104, 20}, {-746, 40}},
              {-87.33655, -103.9721, -708.3964, -745.1332, 16.6355, 36.7368},
              2.5,
              2.5});
}

TEST(MathAccuracy, Erf) {
  check_both({"erf",
              [](const Array& x) { return kiln::erf(x); },
              [](Wide x) { return std::erf(x); },
              {{-7, 7}, {-1, 1}, {1, 4}},
              {1, -1, 2, -2, 4, -4, 6, -6, 3.92, 5.92, 1e-20},
              1.5,
              2});
}

TEST(MathAccuracy, Sin) {
  check_both({"sin",
              [](const Array& x) { return kiln::sin(x); },
              [](Wide x) { return std::sin(x); },
              {{-10, 10}, {-1e6, 1e6}},
              {3.14159265358979, 1.5707963267949, 1e5, 1e22},
              4,
              4});
}

TEST(MathAccuracy, Cos) {
  check_both({"cos",
              [](const Array& x) { return kiln::cos(x); },
              [](Wide x) { return std::cos(x); },
              {{-10, 10}, {-1e6, 1e6}},
              {3.14159265358979, 1.5707963267949, 1e5, 1e22},
              4,
              4});
}

TEST(MathAccuracy, Exp2) {
  check_both({"exp2",
              [](const Array& x) { return kiln::exp2(x); },
              [](Wide x) { return std::exp2(x); },
              {{-152, 129}, {-1076, 1025}, {-1, 1}},
              {-149, -150, -149.5, -126, 127, 128, -1074, -1075, -1074.5, -1022, 1023, 1024, 0.5, -0.5, 0},
              1.5,
              1.5});
}

TEST(MathAccuracy, Log2) {
  check_both({"log2",
              [](const Array& x) { return kiln::log2(x); },
              [](Wide x) { return std::log2(x); },
              {{0, 4}, {0.7, 1.5}},
              {1, 0.5, 2, 0.70710678118654752, 1.4142135623730950, 1e-310, 1e-40},
              2,
              2});
}

TEST(MathAccuracy, Log10) {
  check_both({"log10",
              [](const Array& x) { return kiln::log10(x); },
              [](Wide x) { return std::log10(x); },
              {{0, 4}, {0.7, 1.5}, {1, 1e6}},
              {1, 0.5, 2, 10, 100, 1000, 0.1, 0.70710678118654752, 1.4142135623730950, 1e-310, 1e-40},
              2,
              2});
}

TEST(MathAccuracy, Arctan) {
  check_both({"arctan",
              [](const Array& x) { return kiln::arctan(x); },
              [](Wide x) { return std::atan(x); },
              {{-10, 10}, {-1, 1}, {-3, 3}},
              {0.41421356237309505, -0.41421356237309505, 2.414213562373095, -2.414213562373095, 0.66, -0.66, 1, -1,
               1e-20, 1e20},
              2.5,
              1.5});
}

// The composites: arcsin and arccos through arctan2, the hyperbolic ones
// through log1p (elementwise_composites.cpp), so their errors add the
// roundings of their arguments to those functions' own. Like the others,
// each is held to what it measures plus about half an ulp.
TEST(MathAccuracy, Arcsin) {
  check_both({"arcsin",
              [](const Array& x) { return kiln::arcsin(x); },
              [](Wide x) { return std::asin(x); },
              {{-1, 1}, {0.99, 1}},
              {1, -1, 0.5, -0.5, 0.9999999, 1e-20},
              3.5,
              2.5});
}

TEST(MathAccuracy, Arccos) {
  check_both({"arccos",
              [](const Array& x) { return kiln::arccos(x); },
              [](Wide x) { return std::acos(x); },
              {{-1, 1}, {0.99, 1}, {-1, -0.99}},
              {1, -1, 0.5, -0.5, 0.9999999, -0.9999999, 1e-20},
              3.5,
              2.5});
}

TEST(MathAccuracy, Arcsinh) {
  check_both({"arcsinh",
              [](const Array& x) { return kiln::arcsinh(x); },
              [](Wide x) { return std::asinh(x); },
              {{-10, 10}, {-1e-3, 1e-3}, {-1e6, 1e6}},
              {268435456, -268435456, 1, -1, 1e-20, 1e20, 1e300},
              2,
              2});
}

TEST(MathAccuracy, Arccosh) {
  check_both({"arccosh",
              [](const Array& x) { return kiln::arccosh(x); },
              [](Wide x) { return std::acosh(x); },
              {{1, 10}, {1, 1.001}, {1, 1e6}},
              {1, 2, 268435456, 1e20, 1e300},
              2.5,
              3});
}

TEST(MathAccuracy, Arctanh) {
  check_both({"arctanh",
              [](const Array& x) { return kiln::arctanh(x); },
              [](Wide x) { return std::atanh(x); },
              {{-1, 1}, {-1e-3, 1e-3}, {0.99, 1}},
              {0.5, -0.5, 1, -1, 0.9999999, -0.9999999, 1e-20},
              2,
              2});
}

// ---- arctan2 -------------------------------------------------------------------------------

template <class T>
void check_arctan2(double bound) {
  std::mt19937_64 engine(0x61746e32);
  std::vector<T> ys, xs;
  std::uniform_real_distribution<double> unit(0, 1);
  auto sign = [&] { return engine() & 1 ? 1.0 : -1.0; };
  // Every quadrant, at comparable magnitudes and at magnitudes far apart.
  for (int i = 0; i < dense_points; ++i) {
    ys.push_back(static_cast<T>(sign() * 10 * unit(engine)));
    xs.push_back(static_cast<T>(sign() * 10 * unit(engine)));
  }
  int limit = std::is_same_v<T, float> ? 120 : 1000;
  for (int i = 0; i < dense_points; ++i) {
    ys.push_back(static_cast<T>(sign() * std::exp2(-limit + 2 * limit * unit(engine))));
    xs.push_back(static_cast<T>(sign() * std::exp2(-limit + 2 * limit * unit(engine))));
  }
  // Every pair of special values (C99 Annex F: atan2(+-0, -0) = +-pi,
  // atan2(+-inf, -inf) = +-3pi/4, atan2(y, +-0) = +-pi/2, NaN, ...).
  using limits = std::numeric_limits<T>;
  std::vector<T> specials = {T(0), T(1), T(2), limits::infinity(), limits::denorm_min(), limits::max()};
  for (size_t i = 0, count = specials.size(); i < count; ++i) specials.push_back(-specials[i]);
  specials.push_back(limits::quiet_NaN());
  for (T y : specials)
    for (T x : specials) {
      ys.push_back(y);
      xs.push_back(x);
    }
  auto n = static_cast<int64_t>(ys.size());
  Array y = array(ys, Shape{n}), x = array(xs, Shape{n});
  auto angle = [](const Array& a, const Array& b) { return kiln::arctan2(a, b); };
  Graph graph = make_graph(std::string("arctan2_") + dtype_text<T>(), angle, y, x);
  std::vector<T> compiled = run_compiled(graph, {y, x})[0].to_vector<T>();
  std::vector<T> libm = detail::interpret(graph, {y, x}, {})[0].to_vector<T>();
  Worst kiln_error, libm_error;
  for (size_t i = 0; i < ys.size(); ++i) {
    Wide exact = std::atan2(static_cast<Wide>(ys[i]), static_cast<Wide>(xs[i]));
    measure<T>(kiln_error, {ys[i], xs[i]}, compiled[i], exact);
    measure<T>(libm_error, {ys[i], xs[i]}, libm[i], exact);
  }
  print_result("arctan2", dtype_text<T>(), kiln_error, libm_error, bound, n,
               "x, y in [-10, 10]; x, y of magnitudes 2^-" + std::to_string(limit) + " to 2^" + std::to_string(limit) +
                   " with any signs; every pair of 13 special values");
  EXPECT_EQ(kiln_error.failures, 0) << "arctan2 " << dtype_text<T>()
                                    << ": a NaN, infinity or zero differs from the reference, first at "
                                    << kiln_error.first_failure;
  EXPECT_LE(kiln_error.ulps, bound) << "arctan2 " << dtype_text<T>() << " at " << kiln_error.where;
  // Where a side is zero, infinite or NaN the angle is exactly 0, NaN or a
  // multiple of pi/4: the compiled result is std::atan2's, sign of zero included.
  for (size_t i = ys.size() - specials.size() * specials.size(); i < ys.size(); ++i) {
    bool exact_case = ys[i] == 0 || xs[i] == 0 || !std::isfinite(ys[i]) || !std::isfinite(xs[i]);
    if (!exact_case) continue;
    bool same = std::isnan(libm[i]) ? std::isnan(compiled[i])
                                    : compiled[i] == libm[i] && std::signbit(compiled[i]) == std::signbit(libm[i]);
    EXPECT_TRUE(same) << "arctan2(" << ys[i] << ", " << xs[i] << ") compiled " << compiled[i] << ", std::atan2 "
                      << libm[i];
  }
}

TEST(MathAccuracy, Arctan2) {
  check_arctan2<float>(3);
  check_arctan2<double>(2);
}

// ---- pow ---------------------------------------------------------------------------------

template <class T>
void check_pow(double bound) {
  std::mt19937_64 engine(0x706f77);
  std::vector<T> bases, exponents;
  auto add = [&](T base, T exponent) {
    bases.push_back(base);
    exponents.push_back(exponent);
  };
  std::uniform_real_distribution<double> unit(0, 1);
  // Positive bases over many binades with moderate exponents.
  for (int i = 0; i < dense_points; ++i)
    add(static_cast<T>(std::exp2(-60 + 120 * unit(engine))), static_cast<T>(-8 + 16 * unit(engine)));
  // Bases near 1 with large exponents, where pow needs extra precision inside.
  for (int i = 0; i < dense_points / 2; ++i)
    add(static_cast<T>(0.9 + 0.2 * unit(engine)), static_cast<T>(-2000 + 4000 * unit(engine)));
  // Negative bases with integer exponents.
  for (int i = 0; i < dense_points / 2; ++i)
    add(static_cast<T>(-10 + 20 * unit(engine)), static_cast<T>(std::round(-30 + 60 * unit(engine))));
  // Every pair of special values (C99 Annex F: pow(x, +-0) = 1, pow(1, y) = 1,
  // pow(-0, odd negative) = -inf, pow(-1, +-inf) = 1, pow(negative, non-integer) = NaN, ...).
  using limits = std::numeric_limits<T>;
  const T big_odd = std::is_same_v<T, float> ? T(16777215) : T(9007199254740991.0);
  std::vector<T> specials = {
      T(0), T(0.5), T(1), T(1.5), T(2), T(3), big_odd, limits::infinity(), limits::denorm_min(), limits::max()};
  for (size_t i = 0, count = specials.size(); i < count; ++i) specials.push_back(-specials[i]);
  specials.push_back(limits::quiet_NaN());
  for (T base : specials)
    for (T exponent : specials) add(base, exponent);

  auto n = static_cast<int64_t>(bases.size());
  Array x = array(bases, Shape{n}), y = array(exponents, Shape{n});
  auto power = [](const Array& a, const Array& b) { return kiln::pow(a, b); };
  Graph graph = make_graph(std::string("pow_") + dtype_text<T>(), power, x, y);
  std::vector<T> compiled = run_compiled(graph, {x, y})[0].to_vector<T>();
  std::vector<T> libm = detail::interpret(graph, {x, y}, {})[0].to_vector<T>();
  Worst kiln_error, libm_error;
  for (size_t i = 0; i < bases.size(); ++i) {
    Wide exact = std::pow(static_cast<Wide>(bases[i]), static_cast<Wide>(exponents[i]));
    measure<T>(kiln_error, {bases[i], exponents[i]}, compiled[i], exact);
    measure<T>(libm_error, {bases[i], exponents[i]}, libm[i], exact);
  }
  print_result("pow", dtype_text<T>(), kiln_error, libm_error, bound, n,
               "x in [2^-60, 2^60] with y in [-8, 8]; x in [0.9, 1.1] with y in [-2000, 2000]; x in [-10, 10] with "
               "integer y in [-30, 30]; every pair of 21 special values");
  EXPECT_EQ(kiln_error.failures, 0) << "pow " << dtype_text<T>()
                                    << ": a NaN, infinity or zero differs from the reference, first at "
                                    << kiln_error.first_failure;
  EXPECT_LE(kiln_error.ulps, bound) << "pow " << dtype_text<T>() << " at " << kiln_error.where;
  // Where C99 Annex F gives pow an exact special value (NaN, +-inf, +-0, +-1),
  // the compiled result must be exactly std::pow's.
  for (size_t i = bases.size() - specials.size() * specials.size(); i < bases.size(); ++i) {
    T reference = libm[i];
    if (std::isfinite(reference) && reference != 0 && std::fabs(reference) != 1) continue;
    bool same = std::isnan(reference)
                    ? std::isnan(compiled[i])
                    : compiled[i] == reference && std::signbit(compiled[i]) == std::signbit(reference);
    EXPECT_TRUE(same) << "pow(" << bases[i] << ", " << exponents[i] << ") compiled " << compiled[i] << ", std::pow "
                      << reference;
  }
}

TEST(MathAccuracy, Pow) {
  check_pow<float>(2);
  check_pow<double>(2);
}

// ---- vectorization --------------------------------------------------------------------------

using testing::compiled_assembly;

// Straight-line vector code: packed (ps/pd) arithmetic on ymm or zmm
// registers, and no call of any kind (a call would spill every register).
void expect_inline_vector_code(const std::string& assembly, const std::string& context) {
  EXPECT_TRUE(std::regex_search(assembly,
                                std::regex("\\s(v(add|sub|mul|div)p[sd]|vfn?m(add|sub)[0-9]+p[sd])\\s+[^\\n]*%[yz]mm")))
      << context << ": no packed arithmetic on ymm/zmm registers";
  std::smatch call;
  EXPECT_FALSE(std::regex_search(assembly, call, std::regex("\\scall[q]?\\s[^\\n]*")))
      << context << " makes a call: " << call.str();
}

struct VectorizedFunction {
  const char* name;
  std::function<Array(const Array&)> apply;
  std::vector<std::string> vector_calls_f32, vector_calls_f64;  // libmvec functions the loop must call
  bool composite;                                               // more than a call: its own arithmetic must be packed
};

// libmvec's vector variants are named _ZGV<isa>N<lanes><one v per argument>_<function>.
bool calls_vector_function(const std::string& assembly, const std::string& function) {
  return std::regex_search(assembly, std::regex("_ZGV[a-z]N([2-9]|[1-9][0-9])v+_" + function + "\\b"));
}

// The backend reuses a kernel compiled earlier in the process (writing no dump
// then), and flat elementwise kernels do not depend on the shape. So each
// function runs on where(mask, x, -x) with x [3, 1013] and an all-true mask
// [1013]: the broadcast makes the kernel shape-specific (no other test uses
// this shape) and adds no arithmetic, only a sign flip and a blend.
const Shape vectorized_shape{3, 1013};

template <class T>
std::string function_assembly(const std::string& name, const std::function<Array(const Array&)>& apply) {
  Array x = full(vectorized_shape, 0.25, dtype_for<T>());
  Array mask = full(Shape{vectorized_shape[1]}, true, DType::bool_);
  auto masked = [&](const Array& a, const Array& m) { return apply(kiln::where(m, a, -a)); };
  return compiled_assembly(make_graph(name + "_" + dtype_text<T>(), masked, x, mask));
}

template <class T>
void check_vectorized(const VectorizedFunction& function) {
  std::string assembly = function_assembly<T>(std::string("vectorized_") + function.name, function.apply);
  std::string context = std::string(function.name) + " " + dtype_text<T>();
  ASSERT_FALSE(assembly.empty()) << context << ": KILN_DUMP wrote no assembly (was the kernel compiled before?)";
  const auto& expected = std::is_same_v<T, float> ? function.vector_calls_f32 : function.vector_calls_f64;
  for (const std::string& callee : expected)
    EXPECT_TRUE(calls_vector_function(assembly, callee))
        << context << ": no vector call to " << callee
        << " (without InjectTLIMappings before the loop vectorizer, calls become vector intrinsics that the "
           "code generator splits into scalar calls)";
  // Functions built here must never fall back to scalar libm.
  EXPECT_FALSE(std::regex_search(assembly, std::regex("[\\s$*](exp|log1p|expm1|erf|erfc|tanh)f?(@PLT)?\\b")))
      << context << " calls a scalar libm function";
  if (function.composite) expect_inline_vector_code(assembly, context);
}

TEST(MathVectorization, EveryFunctionVectorizes) {
  const std::vector<VectorizedFunction> functions = {
      {"exp", [](const Array& x) { return kiln::exp(x); }, {}, {}, true},
      {"log", [](const Array& x) { return kiln::log(x); }, {}, {}, true},
      {"sin", [](const Array& x) { return kiln::sin(x); }, {"sinf"}, {"sin"}, false},
      {"cos", [](const Array& x) { return kiln::cos(x); }, {"cosf"}, {"cos"}, false},
      {"pow", [](const Array& x) { return kiln::pow(x, x); }, {"powf"}, {"pow"}, false},
      {"log1p", [](const Array& x) { return kiln::log1p(x); }, {}, {}, true},
      {"expm1", [](const Array& x) { return kiln::expm1(x); }, {}, {}, true},
      {"tanh", [](const Array& x) { return kiln::tanh(x); }, {}, {}, true},
      {"logistic", [](const Array& x) { return kiln::sigmoid(x); }, {}, {}, true},
      {"erf", [](const Array& x) { return kiln::erf(x); }, {}, {}, true},
      {"exp2", [](const Array& x) { return kiln::exp2(x); }, {}, {}, true},
      {"log2", [](const Array& x) { return kiln::log2(x); }, {}, {}, true},
      {"log10", [](const Array& x) { return kiln::log10(x); }, {}, {}, true},
      {"arctan", [](const Array& x) { return kiln::arctan(x); }, {}, {}, true},
      {"arctan2", [](const Array& x) { return kiln::arctan2(x, x + 1); }, {}, {}, true},
  };
  for (const VectorizedFunction& function : functions) {
    check_vectorized<float>(function);
    check_vectorized<double>(function);
  }
}

// On AVX-512 machines loops call libmvec's AVX-512 sin, cos and pow
// (engine.cpp: 16 f32 or 8 f64 lanes), which must give the bits of the AVX2
// ones (8 f32 or 4 f64 lanes) that a loop vectorized narrower calls, so that
// eager, fused and op-by-op results stay equal bit for bit.
template <class T>
struct LaneVectors;
template <>
struct LaneVectors<float> {
  using Narrow = float __attribute__((vector_size(32)));
  using Wide = float __attribute__((vector_size(64)));
};
template <>
struct LaneVectors<double> {
  using Narrow = double __attribute__((vector_size(32)));
  using Wide = double __attribute__((vector_size(64)));
};

struct LaneVariants {
  const char* name;
  void* narrow;
  void* wide;
  bool binary;
};

// How many wide vectors differ from the two narrow calls on their halves.
template <class T>
__attribute__((target("avx512f"))) size_t differing_vectors(const LaneVariants& variants, const std::vector<T>& x,
                                                            const std::vector<T>& y) {
  using Narrow = typename LaneVectors<T>::Narrow;
  using Wide = typename LaneVectors<T>::Wide;
  constexpr size_t lanes = 64 / sizeof(T), half = lanes / 2;
  size_t differing = 0;
  for (size_t at = 0; at + lanes <= x.size(); at += lanes) {
    Wide a, b, wide;
    Narrow a_low, a_high, b_low, b_high, low, high;
    std::memcpy(&a, x.data() + at, sizeof a);
    std::memcpy(&b, y.data() + at, sizeof b);
    std::memcpy(&a_low, x.data() + at, sizeof a_low);
    std::memcpy(&a_high, x.data() + at + half, sizeof a_high);
    std::memcpy(&b_low, y.data() + at, sizeof b_low);
    std::memcpy(&b_high, y.data() + at + half, sizeof b_high);
    if (variants.binary) {
      wide = reinterpret_cast<Wide (*)(Wide, Wide)>(variants.wide)(a, b);
      low = reinterpret_cast<Narrow (*)(Narrow, Narrow)>(variants.narrow)(a_low, b_low);
      high = reinterpret_cast<Narrow (*)(Narrow, Narrow)>(variants.narrow)(a_high, b_high);
    } else {
      wide = reinterpret_cast<Wide (*)(Wide)>(variants.wide)(a);
      low = reinterpret_cast<Narrow (*)(Narrow)>(variants.narrow)(a_low);
      high = reinterpret_cast<Narrow (*)(Narrow)>(variants.narrow)(a_high);
    }
    T narrow[lanes];
    std::memcpy(narrow, &low, sizeof low);
    std::memcpy(narrow + half, &high, sizeof high);
    differing += static_cast<size_t>(std::memcmp(narrow, &wide, sizeof narrow) != 0);
  }
  return differing;
}

// Uniform points where the functions do their work (and bases for pow
// above zero), every binade of both signs, and the special values.
template <class T>
void lane_test_points(std::vector<T>& x, std::vector<T>& y) {
  std::mt19937 random(7);
  std::uniform_real_distribution<T> wide(-100, 100), exponents(-8, 8);
  for (int k = 0; k < 1 << 20; ++k) {
    x.push_back(k % 2 ? std::abs(wide(random)) : wide(random));
    y.push_back(exponents(random));
  }
  for (int e = std::numeric_limits<T>::min_exponent - std::numeric_limits<T>::digits;
       e < std::numeric_limits<T>::max_exponent; ++e)
    for (T sign : {T(1), T(-1)}) {
      x.push_back(sign * std::ldexp(T(1), e));
      y.push_back(sign / 2);
    }
  for (T special : {T(0), T(-0.0), std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::infinity(),
                    std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::max()}) {
    x.push_back(special);
    y.push_back(special);
  }
  while (x.size() % (64 / sizeof(T))) {
    x.push_back(1);
    y.push_back(1);
  }
}

TEST(MathVectorization, AvxFiveTwelveVariantsGiveTheAvxTwoBits) {
  if (!__builtin_cpu_supports("avx512f")) GTEST_SKIP() << "no AVX-512: loops call the AVX2 variants only";
  void* library = dlopen("libmvec.so.1", RTLD_NOW);
  ASSERT_NE(library, nullptr);
  auto variants = [&](const char* name, const char* narrow, const char* wide, bool binary) {
    return LaneVariants{name, dlsym(library, narrow), dlsym(library, wide), binary};
  };
  std::vector<float> x32, y32;
  std::vector<double> x64, y64;
  lane_test_points(x32, y32);
  lane_test_points(x64, y64);
  for (const LaneVariants& function : {variants("sinf", "_ZGVdN8v_sinf", "_ZGVeN16v_sinf", false),
                                       variants("cosf", "_ZGVdN8v_cosf", "_ZGVeN16v_cosf", false),
                                       variants("powf", "_ZGVdN8vv_powf", "_ZGVeN16vv_powf", true)}) {
    ASSERT_TRUE(function.narrow && function.wide) << function.name << ": libmvec lacks a variant";
    EXPECT_EQ(differing_vectors(function, x32, y32), 0u) << function.name;
  }
  for (const LaneVariants& function :
       {variants("sin", "_ZGVdN4v_sin", "_ZGVeN8v_sin", false), variants("cos", "_ZGVdN4v_cos", "_ZGVeN8v_cos", false),
        variants("pow", "_ZGVdN4vv_pow", "_ZGVeN8vv_pow", true)}) {
    ASSERT_TRUE(function.narrow && function.wide) << function.name << ": libmvec lacks a variant";
    EXPECT_EQ(differing_vectors(function, x64, y64), 0u) << function.name;
  }
}

// A chain of them fuses into one kernel that still vectorizes.
TEST(MathVectorization, FusedChainVectorizes) {
  auto chain = [](const Array& v) { return kiln::erf(kiln::tanh(v) * kiln::sigmoid(v)) + kiln::expm1(v); };
  std::string assembly = function_assembly<float>("vectorized_chain", chain);
  ASSERT_FALSE(assembly.empty()) << "KILN_DUMP wrote no assembly";
  expect_inline_vector_code(assembly, "erf(tanh(x) * sigmoid(x)) + expm1(x)");
}

}  // namespace
}  // namespace kiln
