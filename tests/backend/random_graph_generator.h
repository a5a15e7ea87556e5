// The random graph generator's internals, shared by random_graph.cpp
// (elementwise steps, driver) and random_graph_structure.cpp (movement,
// reductions, matmul, indexing); the error analysis and the draws also serve
// dynamic_random_graph.cpp. See random_graph.h for the error analysis.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "random_graph.h"

namespace kiln::testing::generator {

inline constexpr double inf = std::numeric_limits<double>::infinity();
/// A transcendental function is within this many ulps of the correctly rounded result.
inline constexpr double transcendental_ulps = 4;

/// Largest magnitude an inexact value may reach: far enough from overflow
/// that no perturbation turns a finite result into an infinity.
inline double safe_limit(DType dtype) { return dtype == DType::f32 ? 1e30 : 1e290; }
inline double largest(DType dtype) {
  return dtype == DType::f32 ? std::numeric_limits<float>::max() : std::numeric_limits<double>::max();
}

/// What the error analysis knows of a value: an interval holding its
/// elements and a bound on how far the compiled value may be from the
/// reference one.
struct Bounds {
  double lo = 0, hi = 0;  // every element lies in [lo, hi], NaN aside
  double error = 0;       // |compiled - reference| <= error per element; 0: bitwise equal
  bool nan = false;       // may hold NaN
  // A zero's sign may differ: a max/min reduction over +0.0 and -0.0 keeps
  // whichever its order of evaluation meets first.
  bool zero_sign = false;

  bool exact() const { return error == 0; }
  bool finite() const { return std::isfinite(lo) && std::isfinite(hi); }
  double magnitude() const { return std::max(std::fabs(lo), std::fabs(hi)); }
  /// Bounds of the perturbed value: the reference's interval widened by the error.
  double low() const { return lo - error; }
  double high() const { return hi + error; }
};

struct Value : Bounds {
  Array array;
  int id = -1;

  DType dtype() const { return array.dtype(); }
  const Shape& shape() const { return array.shape(); }
  int64_t rank() const { return array.ndim(); }
  int64_t size() const { return array.size(); }
};

/// Error of a result whose inputs were perturbed by `propagated` (their
/// errors times the Lipschitz constant), with `own_ulps` of its own.
inline double rounded(double propagated, DType dtype, double bound, double own_ulps = 0) {
  if (!is_floating(dtype)) return 0;
  double eps = epsilon(dtype);
  double error = propagated;
  if (propagated > 0) error += eps * bound;  // rounding may land on a neighbouring float
  // An exact result stays exact whatever its bound (0 * inf would be NaN).
  if (own_ulps > 0) error += own_ulps * eps * bound;
  return error;
}
/// How far a perturbation of `error` moves a product with a factor up to
/// `magnitude`: nothing when there is none, even against an infinity.
inline double scaled(double error, double magnitude) { return error > 0 ? error * magnitude : 0; }

/// The error of a float sum of n elements of magnitude at most m, each off
/// by e: a sum may be reassociated, |difference| <= (n-1) eps sum|x|.
inline double sum_error(double n, double e, double m, DType dtype) {
  double reassociation = std::max(n - 1, 0.0) * epsilon(dtype) * n * m;
  return rounded(n * e + reassociation, dtype, n * m);
}
/// The same for a mean (a sum divided by n).
inline double mean_error(double n, double e, double m, DType dtype) {
  double error = (n * e + std::max(n - 1, 0.0) * epsilon(dtype) * n * m) / std::max(n, 1.0);
  return rounded(error, dtype, m);
}
/// logsumexp over n elements in [-m, m] off by e, with results bounded by `bound`.
inline double logsumexp_error(double n, double e, double m, double bound, DType dtype) {
  double eps = epsilon(dtype);
  return rounded(e + (8 + 2 * n + 4 * m) * eps + 2 * eps * bound, dtype, bound);
}
/// softmax along an axis of `extent` elements in [-m, m] off by e (results in [0, 1]).
inline double softmax_error(double extent, double e, double m, DType dtype) {
  return rounded(2 * e + (8 + 2 * extent + 4 * m) * epsilon(dtype), dtype, 1);
}
/// log_softmax likewise, whose results lie in [low, 0].
inline double log_softmax_error(double extent, double e, double m, double low, DType dtype) {
  double eps = epsilon(dtype);
  return rounded(2 * e + (8 + 2 * extent + 4 * m) * eps + 2 * eps * std::fabs(low), dtype, std::fabs(low));
}
/// A float matmul contracting k products of operands of magnitudes ma, mb
/// off by ea, eb (BLAS orders its sums as it likes).
inline double matmul_error(double k, double ma, double ea, double mb, double eb, DType dtype) {
  double bound = k * ma * mb;
  double error = k * (ea * mb + eb * ma + ea * eb) + k * epsilon(dtype) * bound;
  return rounded(error, dtype, bound);
}

/// a + b, or a - b.
inline Bounds add_bounds(const Bounds& a, const Bounds& b, bool subtract, DType dtype) {
  Bounds r;
  r.lo = subtract ? a.lo - b.hi : a.lo + b.lo;
  r.hi = subtract ? a.hi - b.lo : a.hi + b.hi;
  r.nan = a.nan || b.nan;
  if (!a.finite() || !b.finite()) r.lo = -inf, r.hi = inf, r.nan = true;
  r.error = rounded(a.error + b.error, dtype, std::max(std::fabs(r.lo), std::fabs(r.hi)));
  return r;
}
/// a * b.
inline Bounds mul_bounds(const Bounds& a, const Bounds& b, DType dtype) {
  double corners[] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
  Bounds r;
  r.lo = *std::min_element(corners, corners + 4);
  r.hi = *std::max_element(corners, corners + 4);
  r.nan = a.nan || b.nan;
  if (!a.finite() || !b.finite()) r.lo = -inf, r.hi = inf, r.nan = true;
  double ma = a.magnitude(), mb = b.magnitude();
  r.error = rounded(scaled(a.error, mb) + scaled(b.error, ma) + a.error * b.error, dtype, ma * mb);
  return r;
}
/// a / b; unbounded when b's interval holds 0 (an inexact b must keep away from it).
inline Bounds div_bounds(const Bounds& a, const Bounds& b, DType dtype) {
  Bounds r;
  if (b.lo <= 0 && b.hi >= 0) {
    r.lo = -inf, r.hi = inf, r.nan = true;
    return r;
  }
  double corners[] = {a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi};
  r.lo = *std::min_element(corners, corners + 4);
  r.hi = *std::max_element(corners, corners + 4);
  double nearest = std::min(std::fabs(b.lo), std::fabs(b.hi)) - b.error;
  double error = a.error / nearest + scaled(b.error, a.magnitude()) / (nearest * nearest);
  r.nan = a.nan || b.nan;
  if (!a.finite() || !b.finite()) r.lo = -inf, r.hi = inf, r.nan = true;
  r.error = rounded(error, dtype, std::max(std::fabs(r.lo), std::fabs(r.hi)));
  return r;
}

/// The bounds of `data`'s elements, exactly.
Bounds bounds_of(const Array& data);

/// Completes bounds from their dtype (integer ranges wrap, floats may
/// overflow); false if the analysis cannot bound the value usefully.
/// `operand_zero_sign`: an operand's zero may have either sign.
bool complete(Bounds& bounds, DType dtype, bool operand_zero_sign);

/// A binary operand: a value or a weakly typed C++ number.
struct Side {
  std::optional<Value> value;
  std::variant<bool, int64_t, double> number;

  Operand operand() const {
    if (value) return Operand(value->array);
    return std::visit([](auto n) { return Operand(n); }, number);
  }
  double lo() const { return value ? value->lo : as_double(); }
  double hi() const { return value ? value->hi : as_double(); }
  double error() const { return value ? value->error : 0; }
  bool exact() const { return error() == 0; }
  bool nan() const { return value && value->nan; }
  bool zero_sign() const { return value && value->zero_sign; }
  bool finite() const { return std::isfinite(lo()) && std::isfinite(hi()); }
  double magnitude() const { return std::max(std::fabs(lo()), std::fabs(hi())); }
  Bounds bounds() const {
    if (value) return *value;
    Bounds number_bounds;
    number_bounds.lo = number_bounds.hi = as_double();
    return number_bounds;
  }
  double as_double() const {
    return std::visit([](auto n) { return static_cast<double>(n); }, number);
  }
  std::string text() const {
    if (value) return "%" + std::to_string(value->id);
    std::ostringstream out;
    out.precision(17);
    std::visit([&](auto n) { out << n; }, number);
    return out.str();
  }
};

inline std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape result(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    result[i] = da == 1 ? db : da;
  }
  return result;
}

inline std::string number_text(double value) {
  std::ostringstream out;
  out.precision(4);
  out << value;
  return out.str();
}

/// The draws both generators make from their seed.
class Randomness {
 public:
  explicit Randomness(uint64_t seed) : engine_(seed) {}

 protected:
  int64_t integer(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(engine_); }
  bool coin(int percent) { return integer(0, 99) < percent; }
  double real(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(engine_); }
  template <class T>
  const T& choose(const std::vector<T>& items) {
    return items[static_cast<size_t>(integer(0, static_cast<int64_t>(items.size()) - 1))];
  }

  DType random_dtype() {
    int64_t r = integer(0, 99);
    if (r < 35) return DType::f32;
    if (r < 55) return DType::f64;
    if (r < 70) return DType::i32;
    if (r < 80) return DType::i64;
    return DType::bool_;
  }

  /// Arguments and captured operands: floats in [-range, range] (or
  /// [0.1, range]) for a random range, special values among them if asked;
  /// small or wide integers, some at their dtype's extremes.
  Array random_data(const Shape& shape, DType dtype, bool specials, bool positive = false);

  std::mt19937_64 engine_;
};

class Generator : Randomness {
 public:
  Generator(uint64_t seed, const RandomGraphOptions& options) : Randomness(seed), options_(options), seed_(seed) {}

  RandomGraph run();

 private:
  int64_t extent() {
    if (coin(6)) return 0;
    if (large_ && coin(50)) return integer(64, 400);
    if (options_.elements > 0 && coin(50)) return integer(16, 256);
    if (coin(12)) return integer(6, 40);
    return integer(1, options_.max_extent);
  }

  Shape random_shape(int min_rank = 0) {
    if (options_.elements > 0) return sized_shape(min_rank);
    // Mostly rank 2 and up: 0-d graphs are cheap to cover and say little.
    int64_t rank = coin(10) ? integer(0, 1) : integer(2, std::max(2, options_.max_rank));
    Shape shape(static_cast<size_t>(std::max<int64_t>(rank, min_rank)));
    for (int64_t& e : shape) e = extent();
    // Keep graphs quick to run in a debug build.
    while (shape_size(shape) > (large_ ? 100000 : 6000))
      for (int64_t& e : shape) e = std::max<int64_t>(1, e / 2);
    return shape;
  }

  /// About options_.elements elements: rows of 16 to 1024, rank 1 to 3.
  Shape sized_shape(int min_rank) {
    int64_t rank = std::max<int64_t>(integer(1, 3), min_rank);
    if (rank == 1) return {options_.elements};
    int64_t inner = int64_t{1} << integer(4, 10);
    int64_t outer = std::max<int64_t>(1, options_.elements / inner);
    if (rank == 2) return {outer, inner};
    int64_t middle = int64_t{1} << integer(0, 3);
    Shape shape{std::max<int64_t>(1, outer / middle), middle, inner};
    while (static_cast<int64_t>(shape.size()) < rank) shape.insert(shape.begin(), 1);
    return shape;
  }

  /// A shape that broadcasts against `shape`: leading dims dropped, some set to 1.
  Shape broadcastable(const Shape& shape) {
    Shape result(shape.begin() + integer(0, static_cast<int64_t>(shape.size())), shape.end());
    for (int64_t& e : result)
      if (coin(30)) e = 1;
    return result;
  }

  /// Results past this many elements are not built (broadcasts multiply sizes).
  bool too_large(const std::optional<Shape>& shape) const {
    if (options_.elements > 0) return !shape || shape_size(*shape) > 8 * options_.elements;
    return !shape || shape_size(*shape) > (large_ ? 200000 : 20000);
  }

  Value concrete(const Array& data);

  // ---- the pool of values ----
  std::optional<Value> pick(const std::function<bool(const Value&)>& ok) {
    std::vector<size_t> candidates;
    for (size_t i = 0; i < pool_.size(); ++i)
      if (ok(pool_[i])) candidates.push_back(i);
    if (candidates.empty()) return std::nullopt;
    // Prefer recent values, so steps chain into fusible sequences.
    size_t at = coin(50) ? candidates.back() : choose(candidates);
    used_[at] = 1;
    step_zero_sign_ = step_zero_sign_ || pool_[at].zero_sign;
    return pool_[at];
  }
  std::optional<Value> pick_any() {
    return pick([](const Value&) { return true; });
  }

  /// Completes a value from its dtype (integer ranges wrap, floats may
  /// overflow) and admits it to the pool; false if the analysis cannot bound
  /// it usefully (the node then stays unused and is dropped from the graph).
  bool admit(Value value, const std::string& text);
  Value make(const Array& array, double lo, double hi, double error, bool nan) {
    Value v;
    v.array = array;
    v.lo = lo;
    v.hi = hi;
    v.error = error;
    v.nan = nan;
    return v;
  }
  /// abs(x) + c: a strictly positive value, for log, sqrt, division and pow.
  std::optional<Value> positive(const Value& x, double c);

  // ---- steps ----
  bool unary();
  bool binary();
  bool select_or_clip();
  bool movement();
  bool reduction();
  bool matrix_product();
  bool indexing();
  bool creation();
  bool randomness();

  Side other_operand(const Value& a);
  Axes random_axes(const Value& x, std::vector<int64_t>& normalized);

  RandomGraphOptions options_;
  uint64_t seed_;
  std::vector<Value> pool_;
  std::vector<char> used_;  // by pool position: read by a later step
  std::vector<Array> keys_;
  std::ostringstream recipe_;
  bool specials_ = false;
  bool large_ = false;
  bool step_zero_sign_ = false;  // an operand of the current step has zero_sign
};

}  // namespace kiln::testing::generator
