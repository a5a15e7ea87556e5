// Random graph generation with a forward error analysis (see the header):
// the driver, argument data and the elementwise steps.
#include <algorithm>
#include <stdexcept>

#include "random_graph_generator.h"
#include "trace/trace.h"

namespace kiln::testing {
namespace generator {

Array Randomness::random_data(const Shape& shape, DType dtype, bool specials, bool positive) {
  auto n = static_cast<size_t>(shape_size(shape));
  double range = choose(std::vector<double>{1, 3, 10});
  std::vector<double> values(n);
  const std::vector<double> special = {std::nan(""), inf, -inf, 0.0, -0.0, 1e30, -1e-30};
  for (double& v : values) {
    v = positive ? real(0.1, range) : real(-range, range);
    if (specials && coin(15)) v = choose(special);
  }
  switch (dtype) {
    case DType::bool_: {
      std::vector<bool> b(n);
      for (size_t i = 0; i < n; ++i) b[i] = coin(50);
      return array(b, shape);
    }
    case DType::i32:
    case DType::i64: {
      int64_t bound = choose(std::vector<int64_t>{3, 3, 100});
      bool extremes = coin(5);
      std::vector<int64_t> v(n);
      for (int64_t& x : v) {
        x = integer(positive ? 0 : -bound, bound);
        if (extremes && coin(20)) x = dtype == DType::i32 ? INT32_MAX : INT64_MIN;
      }
      if (dtype == DType::i64) return array(v, shape);
      return array(std::vector<int32_t>(v.begin(), v.end()), shape);
    }
    case DType::f32: return array(std::vector<float>(values.begin(), values.end()), shape);
    case DType::f64: break;
  }
  return array(values, shape);
}

Bounds bounds_of(const Array& data) {
  Bounds bounds;
  bounds.lo = inf;
  bounds.hi = -inf;
  for (double x : data.to_vector<double>()) {
    if (std::isnan(x)) {
      bounds.nan = true;
      continue;
    }
    bounds.lo = std::min(bounds.lo, x);
    bounds.hi = std::max(bounds.hi, x);
  }
  if (bounds.lo > bounds.hi) bounds.lo = bounds.hi = 0;  // no elements, or only NaN
  return bounds;
}

Value Generator::concrete(const Array& data) {
  Value v;
  static_cast<Bounds&>(v) = bounds_of(data);
  v.array = data;
  return v;
}

bool complete(Bounds& value, DType dtype, bool operand_zero_sign) {
  if (std::isnan(value.lo) || std::isnan(value.hi) || std::isnan(value.error)) return false;
  if (dtype == DType::bool_) {
    if (value.error > 0) return false;
    value.lo = 0;
    value.hi = 1;
    value.nan = false;
  } else if (!is_floating(dtype)) {
    if (value.error > 0) return false;
    double low = dtype == DType::i32 ? INT32_MIN : static_cast<double>(INT64_MIN);
    double high = dtype == DType::i32 ? INT32_MAX : static_cast<double>(INT64_MAX);
    // Beyond the range, integer arithmetic wraps: anything is possible.
    if (!(value.lo >= low && value.hi <= high)) {
      value.lo = low;
      value.hi = high;
    }
    value.nan = false;
  } else {
    // Widen for the rounding of the reference result itself.
    double slack = 4 * epsilon(dtype);
    value.lo -= std::fabs(value.lo) * slack;
    value.hi += std::fabs(value.hi) * slack;
    if (value.error > 0) {
      if (!std::isfinite(value.error) || !value.finite() || value.magnitude() > safe_limit(dtype)) return false;
      // Past this the bound says little; such steps are redrawn.
      if (value.error > 1e-2 * (value.magnitude() + 1)) return false;
    }
    value.zero_sign = value.zero_sign || operand_zero_sign;
    if (value.magnitude() > largest(dtype)) {
      value.lo = -inf;
      value.hi = inf;
      value.nan = true;  // inf - inf, 0 * inf
    }
  }
  return true;
}

bool Generator::admit(Value value, const std::string& text) {
  DType dtype = value.dtype();
  if (std::isnan(value.lo) || std::isnan(value.hi) || std::isnan(value.error)) return false;
  if (too_large(value.shape())) return false;  // a traced node holds no data yet: dropping it is free
  if (!complete(value, dtype, step_zero_sign_)) return false;
  value.id = static_cast<int>(pool_.size());
  recipe_ << "  %" << value.id << " = " << text << " -> " << dtype << shape_string(value.shape()) << " in ["
          << number_text(value.lo) << ", " << number_text(value.hi) << "]";
  if (value.error > 0) recipe_ << " error " << number_text(value.error);
  if (value.nan) recipe_ << " nan";
  recipe_ << "\n";
  pool_.push_back(std::move(value));
  used_.push_back(0);
  return true;
}

/// The smallest integer of an integer dtype: the one whose negation wraps.
static double integer_minimum(DType dtype) { return dtype == DType::i32 ? INT32_MIN : static_cast<double>(INT64_MIN); }

std::optional<Value> Generator::positive(const Value& x, double c) {
  if (x.dtype() == DType::bool_ || !x.finite() || x.nan) return std::nullopt;
  if (is_integer(x.dtype()) && x.lo <= integer_minimum(x.dtype())) return std::nullopt;  // abs would wrap
  double lo = x.lo <= 0 && x.hi >= 0 ? 0 : std::min(std::fabs(x.lo), std::fabs(x.hi));
  Array result = abs(x.array) + c;
  double hi = x.magnitude() + c;
  if (!admit(make(result, lo + c, hi, rounded(x.error, result.dtype(), hi), false),
             "abs(%" + std::to_string(x.id) + ") + " + number_text(c)))
    return std::nullopt;
  return pool_.back();
}

// ---- elementwise, unary ---------------------------------------------------------------

bool Generator::unary() {
  std::optional<Value> picked = pick_any();
  Value x = *picked;
  DType dtype = x.dtype();
  bool numeric = dtype != DType::bool_;
  DType float_dtype = is_floating(dtype) ? dtype : DType::f32;
  const double lo = x.lo, hi = x.hi, e = x.error, m = x.magnitude();
  std::string on = "(%" + std::to_string(x.id) + ")";
  auto transcendental = [&](const char* name, auto function, double result_lo, double result_hi, double lipschitz) {
    Array r = function(x.array);
    double bound = std::max(std::fabs(result_lo), std::fabs(result_hi));
    return admit(make(r, result_lo, result_hi, rounded(lipschitz * e, float_dtype, bound, transcendental_ulps), x.nan),
                 name + on);
  };
  // Domain-restricted functions of an inexact (or non-finite) value read a positive shift of it.
  auto in_domain = [&](double minimum) -> std::optional<Value> {
    if (x.finite() && x.low() > minimum && numeric) return x;
    std::optional<Value> shifted = positive(x, choose(std::vector<double>{0.5, 1, 2}));
    // A large error can still reach below the domain.
    if (!shifted || !(shifted->low() > minimum)) return std::nullopt;
    return shifted;
  };
  switch (integer(0, 21)) {
    case 0:
      if (!numeric) return false;
      return admit(make(neg(x.array), -hi, -lo, e, x.nan), "neg" + on);
    case 1: {
      if (!numeric) return false;
      double low = lo >= 0 ? lo : hi <= 0 ? -hi : 0;
      if (is_integer(dtype) && lo <= integer_minimum(dtype)) low = lo;  // abs(min) wraps to itself
      return admit(make(abs(x.array), low, m, e, x.nan), "abs" + on);
    }
    case 2:
      if (!numeric || !x.exact()) return false;
      return admit(make(sign(x.array), -1, 1, 0, x.nan), "sign" + on);
    case 3: {
      if (!numeric) return false;
      double low = lo >= 0 ? lo * lo : hi <= 0 ? hi * hi : 0;
      Array r = square(x.array);
      return admit(make(r, low, m * m, rounded(2 * m * e + e * e, r.dtype(), m * m), x.nan), "square" + on);
    }
    case 4:
      if (!numeric) return false;
      return admit(make(relu(x.array), std::max(lo, 0.0), std::max(hi, 0.0), e, x.nan), "relu" + on);
    case 5:
    case 6: {
      if (!x.finite() || x.high() > std::log(safe_limit(float_dtype))) return false;
      double top = std::exp(x.high());
      if (coin(50))
        return transcendental(
            "exp", [](const Array& v) { return exp(v); }, std::exp(lo), std::exp(hi), top);
      return transcendental(
          "expm1", [](const Array& v) { return expm1(v); }, std::expm1(lo), std::expm1(hi), top);
    }
    case 7: {
      std::optional<Value> p = in_domain(0);
      if (!p) return false;
      const Value& y = *p;
      DType result_dtype = is_floating(y.dtype()) ? y.dtype() : DType::f32;
      double bound = std::max(std::fabs(std::log(y.lo)), std::fabs(std::log(y.hi)));
      return admit(make(log(y.array), std::log(y.lo), std::log(y.hi),
                        rounded(y.error / y.low(), result_dtype, bound, transcendental_ulps), y.nan),
                   "log(%" + std::to_string(y.id) + ")");
    }
    case 8: {
      std::optional<Value> p = in_domain(-1);
      if (!p) return false;
      Value y = *p;
      double low = y.low();
      on = "(%" + std::to_string(y.id) + ")";
      Array r = log1p(y.array);
      double bound = std::max(std::fabs(std::log1p(y.lo)), std::fabs(std::log1p(y.hi)));
      return admit(make(r, std::log1p(y.lo), std::log1p(y.hi),
                        rounded(y.error / (1 + low), float_dtype, bound, transcendental_ulps), y.nan),
                   "log1p" + on);
    }
    case 9:
    case 10: {
      bool reciprocal = coin(50);
      const char* name = reciprocal ? "rsqrt" : "sqrt";
      auto function = [&](const Array& v) { return reciprocal ? rsqrt(v) : sqrt(v); };
      // (1 / sqrt(-0.0) is -inf: a zero of unknown sign needs the shifted path.)
      if (x.exact() && numeric && (x.low() <= 0 || !x.finite()) && !(reciprocal && x.zero_sign)) {
        // Exact: outside the domain both sides give the same NaN or infinity.
        bool nan = x.nan || lo < 0;
        double top = hi > 0 ? std::sqrt(hi) : 0;
        if (reciprocal) return admit(make(function(x.array), -inf, inf, 0, true), name + on);
        return admit(make(function(x.array), 0, std::isfinite(top) ? top : inf, 0, nan), name + on);
      }
      std::optional<Value> p = in_domain(0);
      if (!p) return false;
      Value y = *p;
      on = "(%" + std::to_string(y.id) + ")";
      double low = y.low();
      Array r = function(y.array);
      if (reciprocal) {
        double lipschitz = 0.5 * std::pow(low, -1.5);
        return admit(make(r, 1 / std::sqrt(y.hi), 1 / std::sqrt(y.lo),
                          rounded(lipschitz * y.error, float_dtype, 1 / std::sqrt(y.lo)), y.nan),
                     name + on);
      }
      return admit(make(r, std::sqrt(y.lo), std::sqrt(y.hi),
                        rounded(0.5 / std::sqrt(low) * y.error, float_dtype, std::sqrt(y.hi)), y.nan),
                   name + on);
    }
    case 11:
      if (!x.finite()) return false;
      return transcendental(
          "tanh", [](const Array& v) { return tanh(v); }, std::tanh(lo), std::tanh(hi), 1);
    case 12: {
      if (!x.finite()) return false;
      auto sigmoid_of = [](double v) { return 1 / (1 + std::exp(-v)); };
      return transcendental(
          "sigmoid", [](const Array& v) { return sigmoid(v); }, sigmoid_of(lo), sigmoid_of(hi), 0.25);
    }
    case 13:
      if (!x.finite()) return false;
      return transcendental(
          "erf", [](const Array& v) { return erf(v); }, std::erf(lo), std::erf(hi), 1.13);
    case 14:
      if (!x.finite() || m > 1e4) return false;
      if (coin(50))
        return transcendental(
            "sin", [](const Array& v) { return sin(v); }, -1, 1, 1);
      return transcendental(
          "cos", [](const Array& v) { return cos(v); }, -1, 1, 1);
    case 15: {
      if (!x.exact()) return false;
      int which = static_cast<int>(integer(0, 2));
      Array r = which == 0 ? floor(x.array) : which == 1 ? ceil(x.array) : round(x.array);
      const char* names[] = {"floor", "ceil", "round"};
      return admit(make(r, std::floor(lo), std::ceil(hi), 0, x.nan), names[which] + on);
    }
    case 16:
      if (!x.exact()) return false;
      return admit(make(isnan(x.array), 0, 1, 0, false), "isnan" + on);
    case 17:
      if (!x.exact()) return false;
      return admit(make(logical_not(x.array), 0, 1, 0, false), "logical_not" + on);
    case 18: return admit(make(stop_gradient(x.array), lo, hi, e, x.nan), "stop_gradient" + on);
    default: {
      DType to = random_dtype();
      if (!is_floating(to) && !x.exact()) return false;
      Array r = astype(x.array, to);
      double low = lo, high = hi;
      bool nan = x.nan;
      if (!is_floating(to)) {
        // Truncation toward zero, NaN to 0, saturation: the interval only narrows.
        low = std::trunc(lo);
        high = std::trunc(hi);
        if (nan) {
          low = std::min(low, 0.0);
          high = std::max(high, 0.0);
        }
        if (to == DType::i32) {
          low = std::clamp(low, double{INT32_MIN}, double{INT32_MAX});
          high = std::clamp(high, double{INT32_MIN}, double{INT32_MAX});
        } else if (to == DType::i64) {
          low = std::clamp(low, static_cast<double>(INT64_MIN), static_cast<double>(INT64_MAX));
          high = std::clamp(high, static_cast<double>(INT64_MIN), static_cast<double>(INT64_MAX));
        }
        nan = false;
      }
      double error = e > 0 && to == DType::f32 && dtype == DType::f64 ? rounded(e, to, m) : e;
      return admit(make(r, low, high, error, nan), "astype" + on + " " + std::string(dtype_name(to)));
    }
  }
}

// ---- elementwise, binary ----------------------------------------------------------------

Side Generator::other_operand(const Value& a) {
  Side side;
  int64_t kind = integer(0, 99);
  if (kind < 45) {
    std::optional<Value> b = pick([&](const Value& v) { return broadcast_shapes(a.shape(), v.shape()).has_value(); });
    if (b) {
      side.value = *b;
      return side;
    }
  }
  if (kind < 80) {
    switch (a.dtype()) {
      case DType::bool_: side.number = coin(50); break;
      case DType::i32:
      case DType::i64:
        if (coin(70)) side.number = integer(-3, 5);
        else if (coin(50)) side.number = integer(-100000, 100000);
        else side.number = choose(std::vector<double>{0.5, -1.5});
        break;
      default:
        // Arbitrary values too: literals are passed to compiled kernels as parameters.
        if (coin(70)) side.number = choose(std::vector<double>{0.0, 1.0, -1.0, 0.5, 2.0, 3.0, -2.5, 1e-3, 0.1, -0.0});
        else side.number = real(-4, 4);
        // The interval analysis uses the number as the array's dtype will hold it.
        if (a.dtype() != DType::f64)
          side.number = static_cast<double>(static_cast<float>(std::get<double>(side.number)));
    }
    if (std::holds_alternative<bool>(side.number) && a.dtype() != DType::bool_) side.number = int64_t{1};
    return side;
  }
  // A fresh array read by the trace: lifted to an implicit input.
  Shape shape = coin(70) ? broadcastable(a.shape()) : a.shape();
  // A leading dim broadcasts `a` up a rank.
  if (coin(15) && shape.size() == a.shape().size() && a.rank() < options_.max_rank)
    shape.insert(shape.begin(), integer(1, 3));
  DType dtype = coin(70) ? a.dtype() : random_dtype();
  if (!admit(concrete(random_data(shape, dtype, specials_ && coin(30), coin(20))),
             "a captured " + std::string(dtype_name(dtype)) + shape_string(shape)))
    return side;
  side.value = pool_.back();
  return side;
}

bool Generator::binary() {
  std::optional<Value> picked = pick_any();
  Side left{*picked, {}}, right = other_operand(*picked);
  if (coin(40)) std::swap(left, right);
  if (!left.value && !right.value) return false;
  if (left.value && right.value && too_large(broadcast_shapes(left.value->shape(), right.value->shape()))) return false;
  DType ldt = left.value ? left.value->dtype() : DType::f32;
  DType rdt = right.value ? right.value->dtype() : DType::f32;
  bool both_bool = (ldt == DType::bool_ || (!left.value && std::holds_alternative<bool>(left.number))) &&
                   (rdt == DType::bool_ || (!right.value && std::holds_alternative<bool>(right.number)));
  const double alo = left.lo(), ahi = left.hi(), blo = right.lo(), bhi = right.hi();
  const double ea = left.error(), eb = right.error(), ma = left.magnitude();
  bool finite = left.finite() && right.finite();
  bool nan = left.nan() || right.nan();
  bool exact = left.exact() && right.exact();
  std::string args = "(" + left.text() + ", " + right.text() + ")";
  int64_t op = integer(0, 8);
  switch (op) {
    case 0:
    case 1: {  // add, sub
      bool subtract = op == 1;
      if (subtract && both_bool) return false;
      Array r = subtract ? left.operand() - right.operand() : left.operand() + right.operand();
      Bounds b = add_bounds(left.bounds(), right.bounds(), subtract, r.dtype());
      return admit(make(r, b.lo, b.hi, b.error, b.nan), (subtract ? "sub" : "add") + args);
    }
    case 2: {  // mul
      Array r = left.operand() * right.operand();
      Bounds b = mul_bounds(left.bounds(), right.bounds(), r.dtype());
      return admit(make(r, b.lo, b.hi, b.error, b.nan), "mul" + args);
    }
    case 3: {  // div
      if (!exact || !finite || right.zero_sign()) {
        // The perturbed denominator must stay away from zero.
        if (!right.value || !(right.value->low() > 0 || right.value->high() < 0)) {
          if (!right.value || !right.finite()) return false;
          std::optional<Value> shifted = positive(*right.value, choose(std::vector<double>{0.5, 1, 3}));
          if (!shifted || !(shifted->low() > 0)) return false;
          right.value = shifted;
        }
        if (!right.finite()) return false;
      }
      Array r = left.operand() / right.operand();
      args = "(" + left.text() + ", " + right.text() + ")";
      Bounds b = div_bounds(left.bounds(), right.bounds(), r.dtype());
      return admit(make(r, b.lo, b.hi, b.error, b.nan), "div" + args);
    }
    case 4: {  // pow
      if (both_bool) return false;
      bool integral = !is_floating(ldt) && !is_floating(rdt) &&
                      (left.value || !std::holds_alternative<double>(left.number)) &&
                      (right.value || !std::holds_alternative<double>(right.number));
      if (integral) {
        Array r = pow(left.operand(), right.operand());
        bool small = ma <= 3 && blo >= 0 && bhi <= 5;
        double bound = small ? std::pow(ma, bhi) : inf;
        return admit(make(r, -bound, bound, 0, false), "pow" + args);
      }
      // Floating: a positive base and a moderate exponent keep pow smooth.
      if (!left.value || !right.finite() || right.magnitude() > 4 || right.nan()) return false;
      if (!(left.value->finite() && left.value->low() > 0.05 && !left.value->nan)) {
        std::optional<Value> shifted = positive(*left.value, choose(std::vector<double>{0.5, 1}));
        if (!shifted || !(shifted->low() > 0.05)) return false;
        left.value = shifted;
      }
      const Value& base = *left.value;
      double b_low = blo - eb, b_high = bhi + eb;
      double logs[] = {std::log(base.low()), std::log(base.high())};
      double extremes[] = {b_low * logs[0], b_low * logs[1], b_high * logs[0], b_high * logs[1]};
      double top = std::exp(*std::max_element(extremes, extremes + 4));
      double bottom = std::exp(*std::min_element(extremes, extremes + 4));
      if (!(top < safe_limit(DType::f32))) return false;
      // |d/da| = |b| a^(b-1) <= |b| top / a_min;  |d/db| = |log a| a^b.
      double lipschitz_a = std::max(std::fabs(b_low), std::fabs(b_high)) * top / base.low();
      double lipschitz_b = std::max(std::fabs(logs[0]), std::fabs(logs[1])) * top;
      Array r = pow(Operand(base.array), right.operand());
      args = "(%" + std::to_string(base.id) + ", " + right.text() + ")";
      return admit(
          make(r, bottom, top,
               rounded(lipschitz_a * base.error + lipschitz_b * eb, r.dtype(), top, transcendental_ulps), false),
          "pow" + args);
    }
    case 5:
    case 6: {  // maximum, minimum
      bool is_max = op == 5;
      Array r = is_max ? maximum(left.operand(), right.operand()) : minimum(left.operand(), right.operand());
      double low = is_max ? std::max(alo, blo) : std::min(alo, blo);
      double high = is_max ? std::max(ahi, bhi) : std::min(ahi, bhi);
      return admit(make(r, low, high, std::max(ea, eb), nan), (is_max ? "maximum" : "minimum") + args);
    }
    case 7: {  // comparisons
      if (!exact) return false;
      int which = static_cast<int>(integer(0, 5));
      const char* names[] = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"};
      Operand a = left.operand(), b = right.operand();
      Array r = which == 0   ? equal(a, b)
                : which == 1 ? not_equal(a, b)
                : which == 2 ? less(a, b)
                : which == 3 ? less_equal(a, b)
                : which == 4 ? greater(a, b)
                             : greater_equal(a, b);
      return admit(make(r, 0, 1, 0, false), names[which] + args);
    }
    default: {  // logical
      if (!exact) return false;
      bool is_and = coin(50);
      Array r = is_and ? logical_and(left.operand(), right.operand()) : logical_or(left.operand(), right.operand());
      return admit(make(r, 0, 1, 0, false), (is_and ? "logical_and" : "logical_or") + args);
    }
  }
}

bool Generator::select_or_clip() {
  std::optional<Value> picked = pick_any();
  Value a = *picked;
  if (coin(30)) {
    if (a.dtype() == DType::bool_) return false;
    double low = choose(std::vector<double>{-2, -1, 0, 0.5});
    double high = low + choose(std::vector<double>{0.0, 0.5, 1, 3});
    Array r = clip(a.array, low, high);
    double lo = std::clamp(a.lo, low, high), hi = std::clamp(a.hi, low, high);
    return admit(make(r, lo, hi, a.error, a.nan),
                 "clip(%" + std::to_string(a.id) + ", " + number_text(low) + ", " + number_text(high) + ")");
  }
  Side other = other_operand(a);
  std::optional<Value> condition = pick(
      [&](const Value& v) { return v.dtype() == DType::bool_ && broadcast_shapes(v.shape(), a.shape()).has_value(); });
  if (!condition) {
    Shape shape = broadcastable(a.shape());
    if (!admit(concrete(random_data(shape, DType::bool_, false)), "a captured bool" + shape_string(shape)))
      return false;
    condition = pool_.back();
  }
  if (!other.value && a.dtype() == DType::bool_ && !std::holds_alternative<bool>(other.number)) other.number = false;
  Side self{a, {}};
  std::optional<Shape> shape = broadcast_shapes(condition->shape(), a.shape());
  if (shape && other.value) shape = broadcast_shapes(*shape, other.value->shape());
  if (too_large(shape)) return false;
  bool flip = coin(50);
  Array r =
      kiln::where(condition->array, flip ? other.operand() : self.operand(), flip ? self.operand() : other.operand());
  double lo = std::min(a.lo, other.lo()), hi = std::max(a.hi, other.hi());
  return admit(
      make(r, lo, hi, std::max(a.error, other.error()), a.nan || other.nan()),
      "where(%" + std::to_string(condition->id) + ", " +
          (flip ? other.text() + ", %" + std::to_string(a.id) : "%" + std::to_string(a.id) + ", " + other.text()) +
          ")");
}

// ---- the driver -------------------------------------------------------------------------

RandomGraph Generator::run() {
  specials_ = coin(options_.special_values_percent);
  large_ = coin(options_.large_percent);
  std::vector<Array> examples;
  Shape base = random_shape();
  for (int64_t i = integer(1, 4); i > 0; --i) {
    Shape shape = coin(50) ? base : coin(60) ? broadcastable(base) : random_shape();
    examples.push_back(random_data(shape, random_dtype(), specials_ && coin(60), coin(20)));
  }
  bool with_key = coin(12);
  if (with_key) examples.push_back(random::key(static_cast<uint64_t>(integer(0, 1 << 30))));

  recipe_ << "seed " << seed_ << (specials_ ? " (special values)" : "") << (large_ ? " (large)" : "") << "\n";
  detail::TraceSession session("random_graph_" + std::to_string(seed_), Location::current());
  for (size_t i = 0; i < examples.size(); ++i) {
    Value value = concrete(examples[i]);
    value.array = session.argument(examples[i]);
    if (with_key && i + 1 == examples.size()) keys_.push_back(value.array);
    admit(value, "argument " + std::to_string(i));
  }
  size_t arguments = pool_.size();

  struct Kind {
    int weight;
    bool (Generator::*step)();
  };
  const std::vector<Kind> kinds = {
      {22, &Generator::unary},    {28, &Generator::binary},    {6, &Generator::select_or_clip},
      {16, &Generator::movement}, {14, &Generator::reduction}, {5, &Generator::matrix_product},
      {6, &Generator::indexing},  {4, &Generator::creation},   {2, &Generator::randomness}};
  int total = 0;
  for (const Kind& kind : kinds) total += kind.weight;
  int64_t steps = integer(options_.min_steps, options_.max_steps);
  for (int64_t done = 0, attempts = 0; done < steps && attempts < steps * 30; ++attempts) {
    int64_t draw = integer(0, total - 1);
    size_t k = 0;
    while (draw >= kinds[k].weight) draw -= kinds[k++].weight;
    step_zero_sign_ = false;
    try {
      if ((this->*kinds[k].step)()) ++done;
    } catch (const std::exception& error) {
      throw std::logic_error("the random graph generator made an invalid step (seed " + std::to_string(seed_) +
                             "): " + error.what() + "\nrecipe so far:\n" + recipe_.str());
    }
  }

  // Outputs: the last value, a few others, sometimes an argument as it came
  // (an output aliasing an input), a literal, or one value twice.
  // Values nothing read are outputs too (else they would be dead code).
  std::vector<Value> outputs{pool_.back()};
  std::vector<Value> unread;
  for (size_t i = arguments; i + 1 < pool_.size(); ++i)
    if (!used_[i] && pool_[i].array.is_tracer()) unread.push_back(pool_[i]);
  std::shuffle(unread.begin(), unread.end(), engine_);
  for (size_t i = 0; i < unread.size() && i < 3; ++i) outputs.push_back(unread[i]);
  if (coin(20)) outputs.push_back(choose(pool_));
  if (coin(8)) outputs.push_back(pool_[static_cast<size_t>(integer(0, static_cast<int64_t>(arguments) - 1))]);
  if (coin(5)) outputs.push_back(make(full({}, 2.5), 2.5, 2.5, 0, false));
  if (coin(5)) outputs.push_back(outputs.front());
  std::shuffle(outputs.begin(), outputs.end(), engine_);

  RandomGraph result;
  result.seed = seed_;
  std::vector<Array> arrays;
  recipe_ << "outputs:";
  for (const Value& output : outputs) {
    arrays.push_back(output.array);
    Tolerance tolerance;
    // Twice the bound: the analysis is a bound on exact real arithmetic of the
    // interval's ends, and this keeps it clear of its own rounding.
    if (output.error > 0) tolerance.absolute = 2 * output.error;
    tolerance.zero_sign_matters = !output.zero_sign;
    result.tolerances.push_back(tolerance);
    recipe_ << " " << (output.id >= 0 ? "%" + std::to_string(output.id) : std::string("literal"));
  }
  recipe_ << "\n";
  Graph graph = session.finish(arrays);
  result.test.emplace(DifferentialCase{graph, examples, session.captured()});
  result.recipe = recipe_.str();
  return result;
}

}  // namespace generator

RandomGraph make_random_graph(uint64_t seed, const RandomGraphOptions& options) {
  return generator::Generator(seed, options).run();
}

std::string check_random_graph(const RandomGraph& graph, const runtime::Backend& backend) {
  std::string report = run_differential(*graph.test, graph.tolerances, backend);
  if (report.empty()) return report;
  return "random graph, seed " + std::to_string(graph.seed) + "\n" + graph.recipe + report;
}

}  // namespace kiln::testing
