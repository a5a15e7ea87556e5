// Random shape-generic functions (see the header).
//
// A function is a list of steps, each a C++ closure over the earlier values
// that builds its array at whatever sizes it is traced at, so the same
// function can be traced at the probe points, at the hints and at every
// run's sizes. Each step's shape is kept as polynomials in the symbols, and
// its bounds (random_graph.h's analysis) at every run's sizes: a step is
// kept only where the analysis bounds it at all of them.
#include "dynamic_random_graph.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <span>
#include <stdexcept>

#include "backend/interp/interpreter.h"
#include "ir/graph.h"
#include "ir/symbolic.h"
#include "random_graph_generator.h"
#include "trace/trace.h"
#include "transform/symbolic_fit.h"
#include "transform/verify.h"

namespace kiln::testing {

transform::ProbeGrid probe_grid_above(const std::vector<int64_t>& hints) {
  transform::ProbeGrid grid{hints, std::vector<int64_t>(hints.size(), 1), {}};
  for (size_t k : {size_t{0}, size_t{2}}) {  // check_offsets alternate above and below
    std::vector<int64_t> point = hints, offsets = transform::check_offsets(k, hints.size());
    for (size_t i = 0; i < hints.size(); ++i) point[i] += offsets[i];
    grid.checks.push_back(std::move(point));
  }
  return grid;
}
namespace generator {
namespace {

using ir::DimExpr;
using SymbolicShape = std::vector<DimExpr>;
using Sizes = std::span<const int64_t>;
/// Builds a step's array in a trace from the earlier values, at the trace's sizes.
using Build = std::function<Array(const std::vector<Array>& values, Sizes sizes)>;
/// A step's bounds at run r, given its dtype.
using Analysis = std::function<Bounds(size_t run, DType dtype)>;

DimExpr constant(int64_t value) { return DimExpr::constant(value); }
int64_t static_extent(const DimExpr& dim) { return dim.evaluate({}); }

Shape evaluate(const SymbolicShape& shape, Sizes sizes) {
  Shape result;
  for (const DimExpr& dim : shape) result.push_back(dim.evaluate(sizes));
  return result;
}

DimExpr product(const SymbolicShape& shape, const std::vector<int64_t>& axes) {
  DimExpr total = constant(1);
  for (int64_t axis : axes) total = total * shape[static_cast<size_t>(axis)];
  return total;
}

DimExpr product(const SymbolicShape& shape) {
  std::vector<int64_t> all(shape.size());
  std::iota(all.begin(), all.end(), 0);
  return product(shape, all);
}

/// What a fitted number can be: of degree at most one in each symbol (the
/// fit's grid moves each symbol by one step only).
bool fittable(const DimExpr& expr) {
  for (const auto& term : expr.terms())
    for (size_t i = 1; i < term.symbols.size(); ++i)
      if (term.symbols[i] == term.symbols[i - 1]) return false;
  return true;
}

std::optional<SymbolicShape> broadcast(const SymbolicShape& a, const SymbolicShape& b) {
  size_t rank = std::max(a.size(), b.size());
  SymbolicShape result(rank);
  for (size_t i = 0; i < rank; ++i) {
    DimExpr da = i < rank - a.size() ? constant(1) : a[i - (rank - a.size())];
    DimExpr db = i < rank - b.size() ? constant(1) : b[i - (rank - b.size())];
    if (da == db || db == constant(1)) result[i] = da;
    else if (da == constant(1)) result[i] = db;
    else return std::nullopt;
  }
  return result;
}

/// Whether `expr` is at least `minimum` at every size of the symbols (each >= 2):
/// true where it is at 2 and grows with every symbol.
bool at_least(const DimExpr& expr, int64_t minimum) {
  for (const auto& term : expr.terms())
    if (!term.symbols.empty() && term.coefficient < 0) return false;
  std::vector<int64_t> twos(8, 2);
  return expr.evaluate(twos) >= minimum;
}

std::string ints_text(const std::vector<int64_t>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? "," : "") + std::to_string(values[i]);
  return text + "]";
}

std::string sizes_text(Sizes sizes) {
  std::string text;
  for (size_t i = 0; i < sizes.size(); ++i)
    text += (i ? ", s" : "s") + std::to_string(i) + " = " + std::to_string(sizes[i]);
  return text;
}

std::string id_text(int slot) { return "%" + std::to_string(slot); }

/// NumPy's length of start:stop:step (step > 0) on an extent.
int64_t slice_length(int64_t extent, int64_t start, int64_t stop, int64_t step) {
  start = start < 0 ? std::max<int64_t>(start + extent, 0) : std::min(start, extent);
  stop = stop < 0 ? std::max<int64_t>(stop + extent, 0) : std::min(stop, extent);
  return stop <= start ? 0 : (stop - start + step - 1) / step;
}

std::vector<int64_t> swap_last_two(size_t rank) {
  std::vector<int64_t> perm(rank);
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[rank - 1], perm[rank - 2]);
  return perm;
}

/// One value of the function.
struct Slot {
  DType dtype = DType::f32;
  SymbolicShape shape;
  std::vector<Bounds> bounds;  // per run
  bool traced = false;         // computed from an argument; else static (a captured operand, or made from ones)
  int argument = -1;           // its position among the arguments, if one
  Build build;

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  bool dynamic(int64_t axis) const { return !shape[static_cast<size_t>(axis)].is_constant(); }
  bool all(const std::function<bool(const Bounds&)>& ok) const { return std::all_of(bounds.begin(), bounds.end(), ok); }
  bool exact() const {
    return all([](const Bounds& b) { return b.exact(); });
  }
  bool finite() const {
    return all([](const Bounds& b) { return b.finite(); });
  }
  bool nan() const {
    return !all([](const Bounds& b) { return !b.nan; });
  }
  bool zero_sign() const {
    return !all([](const Bounds& b) { return !b.zero_sign; });
  }
};

/// A binary operand: a value or a weakly typed C++ number.
struct Other {
  int slot = -1;
  std::variant<bool, int64_t, double> number;

  double as_double() const {
    return std::visit([](auto n) { return static_cast<double>(n); }, number);
  }
  Operand operand(const std::vector<Array>& values) const {
    if (slot >= 0) return Operand(values[static_cast<size_t>(slot)]);
    return std::visit([](auto n) { return Operand(n); }, number);
  }
  std::string text() const {
    if (slot >= 0) return id_text(slot);
    std::ostringstream out;
    out.precision(17);
    std::visit([&](auto n) { out << n; }, number);
    return out.str();
  }
};

class DynamicGenerator : Randomness {
 public:
  DynamicGenerator(uint64_t seed, const DynamicGraphOptions& options)
      : Randomness(seed), options_(options), seed_(seed), name_("dynamic_random_graph_" + std::to_string(seed)) {}

  DynamicRandomGraph run();

 private:
  // ---- setup ----
  void choose_symbols();
  void choose_arguments();
  void choose_runs();

  // ---- the pool of values ----
  std::optional<int> pick(const std::function<bool(const Slot&)>& ok) {
    std::vector<int> candidates;
    for (size_t i = 0; i < slots_.size(); ++i)
      if (ok(slots_[i])) candidates.push_back(static_cast<int>(i));
    if (candidates.empty()) return std::nullopt;
    // Prefer recent values, so steps chain into fusible sequences.
    return coin(50) ? candidates.back() : choose(candidates);
  }
  std::optional<int> pick_traced() {
    return pick([](const Slot& s) { return s.traced; });
  }
  const Slot& at(int slot) const { return slots_[static_cast<size_t>(slot)]; }
  Bounds bounds(int slot, size_t run) const { return at(slot).bounds[run]; }
  Bounds bounds(const Other& other, size_t run) const {
    if (other.slot >= 0) return bounds(other.slot, run);
    Bounds number;
    number.lo = number.hi = other.as_double();
    return number;
  }

  /// Admits a step, built at the hints to learn its dtype (and to check the
  /// symbolic shape), if its shape is one a fit can give and the analysis
  /// bounds it at every run.
  bool admit(SymbolicShape shape, Build build, const std::vector<int>& inputs, const Analysis& analysis,
             const std::string& text);
  /// A static operand the function reads (a weight, a mask): an implicit input.
  std::optional<int> captured(const Shape& shape, DType dtype, bool specials, bool positive);
  /// abs(x) + c: a strictly positive value, for log, sqrt and division.
  std::optional<int> positive(int x, double c);
  /// x, or a positive shift of it, whose perturbed values all exceed `minimum`.
  std::optional<int> in_domain(int x, double minimum);
  /// A static shape that broadcasts against `shape`: dynamic dims become 1,
  /// some static ones too, leading ones may be dropped.
  Shape static_broadcastable(const SymbolicShape& shape);
  Other other_operand(int a);
  /// Axes to reduce; one dynamic axis among them more often than chance.
  std::vector<int64_t> random_axes(const Slot& x, bool& all);
  int64_t random_axis(const Slot& x, bool prefer_dynamic);

  // ---- steps ----
  bool unary();
  bool binary();
  bool select();
  bool reduction();
  bool softmax_step();
  bool movement();
  bool reshape_step(int x);
  bool slice_step(int x);
  bool concatenate_step(int x);
  bool matrix_product();
  bool take_step();
  bool size_scale();

  /// The function traced at `sizes`.
  Graph trace(Sizes sizes, std::vector<Array>* captures) const;

  DynamicGraphOptions options_;
  uint64_t seed_;
  std::string name_;
  int symbols_ = 1;
  std::vector<int64_t> hints_;
  std::vector<SymbolicShape> argument_shapes_;
  std::vector<DType> argument_dtypes_;
  std::vector<DynamicRun> runs_;
  std::vector<Slot> slots_;
  std::vector<int> outputs_;
  std::vector<char> used_;  // by slot: read by a later step
  // While generating: a trace at the hints and its values, by slot.
  std::optional<detail::TraceSession> session_;
  std::vector<Array> live_;
  std::ostringstream recipe_;
  bool specials_ = false;
};

// ---- setup ------------------------------------------------------------------------------

void DynamicGenerator::choose_symbols() {
  symbols_ = options_.max_symbols >= 2 && coin(45) ? 2 : 1;
  for (int i = 0; i < symbols_; ++i) hints_.push_back(coin(75) ? integer(2, 8) : integer(9, 160));
}

void DynamicGenerator::choose_arguments() {
  int64_t count = integer(1, 3);
  auto static_extent_draw = [&] { return coin(15) ? 1 : integer(2, 6); };
  for (int64_t k = 0; k < count; ++k) {
    SymbolicShape shape;
    if (k > 0 && coin(45)) {
      shape = argument_shapes_[0];
    } else {
      int64_t rank = coin(10) ? 4 : integer(1, 3);
      for (int64_t d = 0; d < rank; ++d)
        shape.push_back(coin(45) ? DimExpr::symbol(static_cast<int>(integer(0, symbols_ - 1)))
                                 : constant(static_extent_draw()));
    }
    argument_shapes_.push_back(shape);
    argument_dtypes_.push_back(coin(80) ? (coin(60) ? DType::f32 : DType::f64) : random_dtype());
  }
  // Every symbol is some argument's dimension, and the first argument has one.
  for (int symbol = 0; symbol < symbols_; ++symbol) {
    bool present = false;
    for (const SymbolicShape& shape : argument_shapes_)
      for (const DimExpr& dim : shape) present = present || dim == DimExpr::symbol(symbol);
    if (present) continue;
    // In place of a static dim, or as one more: never in place of another symbol.
    SymbolicShape& shape = argument_shapes_[static_cast<size_t>(symbol == 0 ? 0 : integer(0, count - 1))];
    std::vector<size_t> static_dims;
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d].is_constant()) static_dims.push_back(d);
    if (static_dims.empty() || (shape.size() < 4 && coin(30)))
      shape.insert(shape.begin() + integer(0, static_cast<int64_t>(shape.size())), DimExpr::symbol(symbol));
    else shape[choose(static_dims)] = DimExpr::symbol(symbol);
  }
}

void DynamicGenerator::choose_runs() {
  auto largest_argument = [&](const std::vector<int64_t>& sizes) {
    int64_t largest = 0;
    for (const SymbolicShape& shape : argument_shapes_) largest = std::max(largest, shape_size(evaluate(shape, sizes)));
    return largest;
  };
  for (int r = 0; r < std::max(options_.runs, 1); ++r) {
    std::vector<int64_t> sizes(static_cast<size_t>(symbols_), 2);
    if (r == 1) {
      for (int64_t& size : sizes) size = 3;
      if (symbols_ == 2 && coin(60)) sizes[static_cast<size_t>(integer(0, 1))] = 2;
    } else if (r >= 2) {
      for (int64_t& size : sizes)
        size = coin(40) ? integer(4, 16) : integer(17, std::max<int64_t>(options_.max_size, 17));
      if (r == options_.runs - 1 && coin(20)) sizes = hints_;
      // Arguments hold a quarter of the elements a value may: steps can grow them.
      while (largest_argument(sizes) > options_.max_elements / 4) {
        auto largest = std::max_element(sizes.begin(), sizes.end());
        if (*largest <= 2) break;
        *largest = std::max<int64_t>(2, *largest / 2);
      }
    }
    runs_.push_back(DynamicRun{sizes, {}, {}});
  }
}

// ---- the pool -----------------------------------------------------------------------------

bool DynamicGenerator::admit(SymbolicShape shape, Build build, const std::vector<int>& inputs, const Analysis& analysis,
                             const std::string& text) {
  for (const DimExpr& dim : shape)
    if (!fittable(dim)) return false;
  Array live = build(live_, hints_);
  if (live.shape() != evaluate(shape, hints_))
    throw std::logic_error("the generator's shape " + ir::symbolic_shape_string(shape) + " of '" + text + "' is " +
                           shape_string(live.shape()) + " at the hints");
  Slot slot;
  slot.dtype = live.dtype();
  slot.shape = std::move(shape);
  slot.build = std::move(build);
  for (int input : inputs) slot.traced = slot.traced || at(input).traced;
  for (size_t r = 0; r < runs_.size(); ++r) {
    if (shape_size(evaluate(slot.shape, runs_[r].sizes)) > options_.max_elements) return false;
    Bounds b = analysis(r, slot.dtype);
    bool operand_zero_sign = false;
    for (int input : inputs) operand_zero_sign = operand_zero_sign || bounds(input, r).zero_sign;
    if (!complete(b, slot.dtype, operand_zero_sign)) return false;
    slot.bounds.push_back(b);
  }
  for (int input : inputs) used_[static_cast<size_t>(input)] = 1;
  double lo = inf, hi = -inf, error = 0;
  for (const Bounds& b : slot.bounds) {
    lo = std::min(lo, b.lo);
    hi = std::max(hi, b.hi);
    error = std::max(error, b.error);
  }
  recipe_ << "  %" << slots_.size() << " = " << text << " -> " << slot.dtype << ir::symbolic_shape_string(slot.shape)
          << " in [" << number_text(lo) << ", " << number_text(hi) << "]";
  if (error > 0) recipe_ << " error " << number_text(error);
  if (slot.nan()) recipe_ << " nan";
  if (!slot.traced) recipe_ << " static";
  recipe_ << "\n";
  slots_.push_back(std::move(slot));
  used_.push_back(0);
  live_.push_back(live);
  return true;
}

std::optional<int> DynamicGenerator::captured(const Shape& shape, DType dtype, bool specials, bool positive) {
  Array data = random_data(shape, dtype, specials, positive);
  SymbolicShape symbolic;
  for (int64_t e : shape) symbolic.push_back(constant(e));
  Bounds b = bounds_of(data);
  if (!admit(
          symbolic, [data](const std::vector<Array>&, Sizes) { return data; }, {}, [b](size_t, DType) { return b; },
          "a captured " + std::string(dtype_name(dtype)) + shape_string(shape)))
    return std::nullopt;
  return static_cast<int>(slots_.size()) - 1;
}

std::optional<int> DynamicGenerator::positive(int x, double c) {
  const Slot& s = at(x);
  if (s.dtype == DType::bool_ || !s.finite() || s.nan()) return std::nullopt;
  double minimum = s.dtype == DType::i32 ? INT32_MIN : static_cast<double>(INT64_MIN);
  if (is_integer(s.dtype) && !s.all([&](const Bounds& b) { return b.lo > minimum; })) return std::nullopt;
  auto analysis = [this, x, c](size_t r, DType dtype) {
    Bounds in = bounds(x, r), out;
    double lo = in.lo <= 0 && in.hi >= 0 ? 0 : std::min(std::fabs(in.lo), std::fabs(in.hi));
    out.lo = lo + c;
    out.hi = in.magnitude() + c;
    out.error = rounded(in.error, dtype, out.hi);
    return out;
  };
  if (!admit(
          s.shape, [x, c](const std::vector<Array>& v, Sizes) { return abs(v[static_cast<size_t>(x)]) + c; }, {x},
          analysis, "abs(" + id_text(x) + ") + " + number_text(c)))
    return std::nullopt;
  return static_cast<int>(slots_.size()) - 1;
}

std::optional<int> DynamicGenerator::in_domain(int x, double minimum) {
  if (at(x).dtype != DType::bool_ && at(x).all([&](const Bounds& b) { return b.finite() && b.low() > minimum; }))
    return x;
  std::optional<int> shifted = positive(x, choose(std::vector<double>{0.5, 1, 2}));
  // A large error can still reach below the domain.
  if (!shifted || !at(*shifted).all([&](const Bounds& b) { return b.low() > minimum; })) return std::nullopt;
  return shifted;
}

Shape DynamicGenerator::static_broadcastable(const SymbolicShape& shape) {
  auto drop = static_cast<size_t>(integer(0, static_cast<int64_t>(shape.size())));
  Shape result;
  for (size_t d = drop; d < shape.size(); ++d)
    result.push_back(!shape[d].is_constant() || coin(30) ? 1 : static_extent(shape[d]));
  // A leading dim broadcasts the value up a rank.
  if (drop == 0 && shape.size() < 4 && coin(15)) result.insert(result.begin(), integer(2, 3));
  return result;
}

Other DynamicGenerator::other_operand(int a) {
  Other other;
  int64_t kind = integer(0, 99);
  const Slot& x = at(a);
  if (kind < 45) {
    std::optional<int> b = pick([&](const Slot& v) { return broadcast(x.shape, v.shape).has_value(); });
    if (b) {
      other.slot = *b;
      return other;
    }
  }
  if (kind < 80) {
    switch (x.dtype) {
      case DType::bool_: other.number = coin(50); break;
      case DType::i32:
      case DType::i64:
        if (coin(70)) other.number = integer(-3, 5);
        else if (coin(50)) other.number = integer(-100000, 100000);
        else other.number = choose(std::vector<double>{0.5, -1.5});
        break;
      default:
        if (coin(70)) other.number = choose(std::vector<double>{0.0, 1.0, -1.0, 0.5, 2.0, 3.0, -2.5, 1e-3, 0.1, -0.0});
        else other.number = real(-4, 4);
        // The analysis uses the number as the array's dtype will hold it.
        if (x.dtype != DType::f64)
          other.number = static_cast<double>(static_cast<float>(std::get<double>(other.number)));
    }
    if (std::holds_alternative<bool>(other.number) && x.dtype != DType::bool_) other.number = int64_t{1};
    return other;
  }
  Shape shape = static_broadcastable(x.shape);
  DType dtype = coin(70) ? x.dtype : random_dtype();
  std::optional<int> fixed = captured(shape, dtype, specials_ && coin(30), coin(20));
  if (fixed) other.slot = *fixed;
  else other.number = 1.0;
  return other;
}

int64_t DynamicGenerator::random_axis(const Slot& x, bool prefer_dynamic) {
  std::vector<int64_t> dynamic;
  for (int64_t a = 0; a < x.rank(); ++a)
    if (x.dynamic(a)) dynamic.push_back(a);
  if (prefer_dynamic && !dynamic.empty() && coin(70)) return choose(dynamic);
  return integer(0, x.rank() - 1);
}

std::vector<int64_t> DynamicGenerator::random_axes(const Slot& x, bool& all) {
  std::vector<int64_t> axes;
  all = coin(15);
  if (all) {
    axes.resize(static_cast<size_t>(x.rank()));
    std::iota(axes.begin(), axes.end(), 0);
    return axes;
  }
  for (int64_t a = 0; a < x.rank(); ++a)
    if (coin(40)) axes.push_back(a);
  if (x.rank() > 0 && (axes.empty() || coin(50))) {
    int64_t a = random_axis(x, true);
    if (std::find(axes.begin(), axes.end(), a) == axes.end()) axes.push_back(a);
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

// ---- elementwise --------------------------------------------------------------------------

bool DynamicGenerator::unary() {
  std::optional<int> picked = pick_traced();
  if (!picked) return false;
  const int x = *picked;
  const DType dtype = at(x).dtype;
  const bool numeric = dtype != DType::bool_;
  const DType float_dtype = is_floating(dtype) ? dtype : DType::f32;
  const SymbolicShape shape = at(x).shape;
  auto of = [](int input, auto function) -> Build {
    return [input, function](const std::vector<Array>& v, Sizes) { return function(v[static_cast<size_t>(input)]); };
  };
  auto apply = [&](int input, const std::string& name, auto function, auto analysis) {
    return admit(at(input).shape, of(input, function), {input}, analysis, name + "(" + id_text(input) + ")");
  };
  // A transcendental function: results in [f(lo), f(hi)] for increasing f, within a few ulps.
  auto transcendental = [&](int input, const std::string& name, auto function, auto reference, double lipschitz_at_top,
                            bool increasing) {
    return apply(input, name, function, [this, input, reference, lipschitz_at_top, increasing](size_t r, DType out) {
      Bounds in = bounds(input, r), b;
      b.lo = increasing ? reference(in.lo) : -1;
      b.hi = increasing ? reference(in.hi) : 1;
      double lipschitz = lipschitz_at_top > 0 ? lipschitz_at_top : std::exp(in.high());
      b.error = rounded(lipschitz * in.error, out, std::max(std::fabs(b.lo), std::fabs(b.hi)), transcendental_ulps);
      b.nan = in.nan;
      return b;
    });
  };
  switch (integer(0, 12)) {
    case 0:
      if (!numeric) return false;
      return apply(
          x, "neg", [](const Array& v) { return neg(v); },
          [this, x](size_t r, DType) {
            Bounds in = bounds(x, r), b = in;
            b.lo = -in.hi;
            b.hi = -in.lo;
            b.zero_sign = false;
            return b;
          });
    case 1:
      if (!numeric) return false;
      return apply(
          x, "abs", [](const Array& v) { return abs(v); },
          [this, x, dtype](size_t r, DType) {
            Bounds in = bounds(x, r), b = in;
            b.lo = in.lo >= 0 ? in.lo : in.hi <= 0 ? -in.hi : 0;
            double minimum = dtype == DType::i32 ? INT32_MIN : static_cast<double>(INT64_MIN);
            if (is_integer(dtype) && in.lo <= minimum) b.lo = in.lo;  // abs(min) wraps to itself
            b.hi = in.magnitude();
            b.zero_sign = false;
            return b;
          });
    case 2:
      if (!numeric) return false;
      return apply(
          x, "square", [](const Array& v) { return square(v); },
          [this, x](size_t r, DType out) {
            Bounds in = bounds(x, r), b;
            double m = in.magnitude(), e = in.error;
            b.lo = in.lo >= 0 ? in.lo * in.lo : in.hi <= 0 ? in.hi * in.hi : 0;
            b.hi = m * m;
            b.error = rounded(2 * m * e + e * e, out, m * m);
            b.nan = in.nan;
            return b;
          });
    case 3:
      if (!numeric) return false;
      return apply(
          x, "relu", [](const Array& v) { return relu(v); },
          [this, x](size_t r, DType) {
            Bounds in = bounds(x, r), b = in;
            b.lo = std::max(in.lo, 0.0);
            b.hi = std::max(in.hi, 0.0);
            b.zero_sign = false;
            return b;
          });
    case 4: {
      if (!at(x).all([&](const Bounds& b) { return b.finite() && b.high() <= std::log(safe_limit(float_dtype)); }))
        return false;
      if (coin(50))
        return transcendental(
            x, "exp", [](const Array& v) { return exp(v); }, [](double v) { return std::exp(v); }, 0, true);
      return transcendental(
          x, "expm1", [](const Array& v) { return expm1(v); }, [](double v) { return std::expm1(v); }, 0, true);
    }
    case 5: {
      bool plain = coin(50);
      std::optional<int> y = in_domain(x, plain ? 0 : -1);
      if (!y) return false;
      int input = *y;
      auto function = [plain](const Array& v) { return plain ? log(v) : log1p(v); };
      return apply(input, plain ? "log" : "log1p", function, [this, input, plain](size_t r, DType out) {
        Bounds in = bounds(input, r), b;
        auto f = [plain](double v) { return plain ? std::log(v) : std::log1p(v); };
        b.lo = f(in.lo);
        b.hi = f(in.hi);
        double slope = 1 / (in.low() + (plain ? 0 : 1));
        b.error = rounded(in.error * slope, out, std::max(std::fabs(b.lo), std::fabs(b.hi)), transcendental_ulps);
        b.nan = in.nan;
        return b;
      });
    }
    case 6: {
      std::optional<int> y = in_domain(x, 0);
      if (!y) return false;
      int input = *y;
      bool reciprocal = coin(50);
      auto function = [reciprocal](const Array& v) { return reciprocal ? rsqrt(v) : sqrt(v); };
      return apply(input, reciprocal ? "rsqrt" : "sqrt", function, [this, input, reciprocal](size_t r, DType out) {
        Bounds in = bounds(input, r), b;
        if (reciprocal) {
          b.lo = 1 / std::sqrt(in.hi);
          b.hi = 1 / std::sqrt(in.lo);
          b.error = rounded(0.5 * std::pow(in.low(), -1.5) * in.error, out, b.hi);
        } else {
          b.lo = std::sqrt(in.lo);
          b.hi = std::sqrt(in.hi);
          b.error = rounded(0.5 / std::sqrt(in.low()) * in.error, out, b.hi);
        }
        b.nan = in.nan;
        return b;
      });
    }
    case 7: {
      if (!at(x).finite()) return false;
      switch (integer(0, 2)) {
        case 0:
          return transcendental(
              x, "tanh", [](const Array& v) { return tanh(v); }, [](double v) { return std::tanh(v); }, 1, true);
        case 1:
          return transcendental(
              x, "sigmoid", [](const Array& v) { return sigmoid(v); }, [](double v) { return 1 / (1 + std::exp(-v)); },
              0.25, true);
        default:
          return transcendental(
              x, "erf", [](const Array& v) { return erf(v); }, [](double v) { return std::erf(v); }, 1.13, true);
      }
    }
    case 8: {
      if (!at(x).all([](const Bounds& b) { return b.finite() && b.magnitude() <= 1e4; })) return false;
      if (coin(50))
        return transcendental(
            x, "sin", [](const Array& v) { return sin(v); }, [](double v) { return v; }, 1, false);
      return transcendental(
          x, "cos", [](const Array& v) { return cos(v); }, [](double v) { return v; }, 1, false);
    }
    case 9: {
      if (!at(x).exact()) return false;
      int which = static_cast<int>(integer(0, 2));
      const char* names[] = {"floor", "ceil", "round"};
      return apply(
          x, names[which], [which](const Array& v) { return which == 0   ? floor(v)
                                                            : which == 1 ? ceil(v)
                                                                         : round(v); },
          [this, x](size_t r, DType) {
            Bounds in = bounds(x, r), b = in;
            b.lo = std::floor(in.lo);
            b.hi = std::ceil(in.hi);
            return b;
          });
    }
    case 10: {
      if (!at(x).exact()) return false;
      bool not_a_number = coin(50);
      return apply(
          x, not_a_number ? "isnan" : "logical_not",
          [not_a_number](const Array& v) { return not_a_number ? isnan(v) : logical_not(v); },
          [](size_t, DType) { return Bounds{}; });
    }
    case 11:
      if (!numeric || !at(x).exact()) return false;
      return apply(
          x, "sign", [](const Array& v) { return sign(v); },
          [this, x](size_t r, DType) {
            Bounds b;
            b.lo = -1;
            b.hi = 1;
            b.nan = bounds(x, r).nan;
            return b;
          });
    default: {
      DType to = random_dtype();
      if (!is_floating(to) && !at(x).exact()) return false;
      return admit(
          shape, of(x, [to](const Array& v) { return astype(v, to); }), {x},
          [this, x, to, dtype](size_t r, DType) {
            Bounds in = bounds(x, r), b = in;
            if (!is_floating(to)) {
              // Truncation toward zero, NaN to 0, saturation: the interval only narrows.
              b.lo = std::trunc(in.lo);
              b.hi = std::trunc(in.hi);
              if (in.nan) {
                b.lo = std::min(b.lo, 0.0);
                b.hi = std::max(b.hi, 0.0);
              }
              double low = to == DType::i32 ? INT32_MIN : static_cast<double>(INT64_MIN);
              double high = to == DType::i32 ? INT32_MAX : static_cast<double>(INT64_MAX);
              if (to != DType::bool_) {
                b.lo = std::clamp(b.lo, low, high);
                b.hi = std::clamp(b.hi, low, high);
              }
              b.nan = false;
              b.zero_sign = false;
            }
            if (in.error > 0 && to == DType::f32 && dtype == DType::f64)
              b.error = rounded(in.error, to, in.magnitude());
            return b;
          },
          "astype(" + id_text(x) + ", " + std::string(dtype_name(to)) + ")");
    }
  }
}

bool DynamicGenerator::binary() {
  std::optional<int> picked = pick_traced();
  if (!picked) return false;
  Other left{*picked, {}}, right = other_operand(*picked);
  if (coin(40)) std::swap(left, right);
  auto shape_of = [&](const Other& o) { return o.slot >= 0 ? at(o.slot).shape : SymbolicShape{}; };
  auto dtype_of = [&](const Other& o) {
    if (o.slot >= 0) return at(o.slot).dtype;
    return std::holds_alternative<bool>(o.number) ? DType::bool_ : DType::f32;
  };
  std::optional<SymbolicShape> shape = broadcast(shape_of(left), shape_of(right));
  if (!shape) return false;
  bool both_bool = dtype_of(left) == DType::bool_ && dtype_of(right) == DType::bool_;
  std::vector<int> inputs;
  for (const Other& o : {left, right})
    if (o.slot >= 0) inputs.push_back(o.slot);
  auto exact = [&](const Other& o) { return o.slot < 0 || at(o.slot).exact(); };
  // The operands as they are when the step is built (a denominator may be shifted first).
  auto build = [&](auto function) -> Build {
    return [left, right, function](const std::vector<Array>& v, Sizes) {
      return function(left.operand(v), right.operand(v));
    };
  };
  std::string args = "(" + left.text() + ", " + right.text() + ")";
  switch (integer(0, 7)) {
    case 0:
    case 1: {
      bool subtract = coin(50);
      if (subtract && both_bool) return false;
      return admit(
          *shape, build([subtract](Operand a, Operand b) { return subtract ? a - b : a + b; }), inputs,
          [this, left, right, subtract](size_t r, DType out) {
            return add_bounds(bounds(left, r), bounds(right, r), subtract, out);
          },
          (subtract ? "sub" : "add") + args);
    }
    case 2:
      return admit(
          *shape, build([](Operand a, Operand b) { return a * b; }), inputs,
          [this, left, right](size_t r, DType out) { return mul_bounds(bounds(left, r), bounds(right, r), out); },
          "mul" + args);
    case 3: {
      bool safe =
          exact(left) && exact(right) && (right.slot < 0 || (at(right.slot).finite() && !at(right.slot).zero_sign()));
      if (left.slot >= 0) safe = safe && at(left.slot).finite();
      if (!safe) {
        // The perturbed denominator must keep away from zero.
        if (right.slot < 0) return false;
        bool away = at(right.slot).all([](const Bounds& b) { return b.finite() && (b.low() > 0 || b.high() < 0); });
        if (!away) {
          std::optional<int> shifted = positive(right.slot, choose(std::vector<double>{0.5, 1, 3}));
          if (!shifted || !at(*shifted).all([](const Bounds& b) { return b.low() > 0; })) return false;
          right.slot = *shifted;
          inputs.back() = *shifted;
        }
      }
      return admit(
          *shape, build([](Operand a, Operand b) { return a / b; }), inputs,
          [this, left, right](size_t r, DType out) { return div_bounds(bounds(left, r), bounds(right, r), out); },
          "div(" + left.text() + ", " + right.text() + ")");
    }
    case 4:
    case 5: {
      bool is_max = coin(50);
      return admit(
          *shape, build([is_max](Operand a, Operand b) { return is_max ? maximum(a, b) : minimum(a, b); }), inputs,
          [this, left, right, is_max](size_t r, DType) {
            Bounds a = bounds(left, r), b = bounds(right, r), m;
            m.lo = is_max ? std::max(a.lo, b.lo) : std::min(a.lo, b.lo);
            m.hi = is_max ? std::max(a.hi, b.hi) : std::min(a.hi, b.hi);
            m.error = std::max(a.error, b.error);
            m.nan = a.nan || b.nan;
            return m;
          },
          (is_max ? "maximum" : "minimum") + args);
    }
    case 6: {
      if (!exact(left) || !exact(right)) return false;
      int which = static_cast<int>(integer(0, 5));
      const char* names[] = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"};
      return admit(
          *shape, build([which](Operand a, Operand b) {
            return which == 0   ? equal(a, b)
                   : which == 1 ? not_equal(a, b)
                   : which == 2 ? less(a, b)
                   : which == 3 ? less_equal(a, b)
                   : which == 4 ? greater(a, b)
                                : greater_equal(a, b);
          }),
          inputs, [](size_t, DType) { return Bounds{}; }, names[which] + args);
    }
    default: {
      if (!exact(left) || !exact(right)) return false;
      bool is_and = coin(50);
      return admit(
          *shape, build([is_and](Operand a, Operand b) { return is_and ? logical_and(a, b) : logical_or(a, b); }),
          inputs, [](size_t, DType) { return Bounds{}; }, (is_and ? "logical_and" : "logical_or") + args);
    }
  }
}

bool DynamicGenerator::select() {
  std::optional<int> picked = pick_traced();
  if (!picked) return false;
  int a = *picked;
  if (coin(30)) {
    if (at(a).dtype == DType::bool_) return false;
    double low = choose(std::vector<double>{-2, -1, 0, 0.5});
    double high = low + choose(std::vector<double>{0.0, 0.5, 1, 3});
    return admit(
        at(a).shape,
        [a, low, high](const std::vector<Array>& v, Sizes) { return clip(v[static_cast<size_t>(a)], low, high); }, {a},
        [this, a, low, high](size_t r, DType) {
          Bounds b = bounds(a, r);
          b.lo = std::clamp(b.lo, low, high);
          b.hi = std::clamp(b.hi, low, high);
          return b;
        },
        "clip(" + id_text(a) + ", " + number_text(low) + ", " + number_text(high) + ")");
  }
  Other other = other_operand(a);
  std::optional<int> condition =
      pick([&](const Slot& v) { return v.dtype == DType::bool_ && broadcast(v.shape, at(a).shape).has_value(); });
  if (!condition || coin(20)) condition = captured(static_broadcastable(at(a).shape), DType::bool_, false, false);
  if (!condition) return false;
  if (other.slot < 0 && at(a).dtype == DType::bool_ && !std::holds_alternative<bool>(other.number))
    other.number = false;
  std::optional<SymbolicShape> shape = broadcast(at(*condition).shape, at(a).shape);
  if (shape && other.slot >= 0) shape = broadcast(*shape, at(other.slot).shape);
  if (!shape) return false;
  bool flip = coin(50);
  int c = *condition;
  std::vector<int> inputs{c, a};
  if (other.slot >= 0) inputs.push_back(other.slot);
  std::string self = id_text(a);
  return admit(
      *shape,
      [c, a, other, flip](const std::vector<Array>& v, Sizes) {
        Operand mine(v[static_cast<size_t>(a)]), theirs = other.operand(v);
        return kiln::where(v[static_cast<size_t>(c)], flip ? theirs : mine, flip ? mine : theirs);
      },
      inputs,
      [this, a, other](size_t r, DType) {
        Bounds x = bounds(a, r), y = bounds(other, r), b;
        b.lo = std::min(x.lo, y.lo);
        b.hi = std::max(x.hi, y.hi);
        b.error = std::max(x.error, y.error);
        b.nan = x.nan || y.nan;
        return b;
      },
      "where(" + id_text(c) + ", " + (flip ? other.text() + ", " + self : self + ", " + other.text()) + ")");
}

// ---- reductions ------------------------------------------------------------------------------

bool DynamicGenerator::reduction() {
  std::optional<int> picked = pick([](const Slot& s) { return s.traced && s.rank() > 0; });
  if (!picked) return false;
  const int x = *picked;
  const Slot& s = at(x);
  const DType dtype = s.dtype;
  const DType float_dtype = is_floating(dtype) ? dtype : DType::f32;
  bool all = false;
  std::vector<int64_t> reduced = random_axes(s, all);
  bool keepdims = coin(40);
  SymbolicShape shape;
  for (int64_t a = 0; a < s.rank(); ++a) {
    bool gone = std::find(reduced.begin(), reduced.end(), a) != reduced.end();
    if (!gone) shape.push_back(s.shape[static_cast<size_t>(a)]);
    else if (keepdims) shape.push_back(constant(1));
  }
  DimExpr count = product(s.shape, reduced);
  std::vector<double> counts;
  for (const DynamicRun& run : runs_) counts.push_back(static_cast<double>(count.evaluate(run.sizes)));
  bool empty = std::any_of(counts.begin(), counts.end(), [](double n) { return n == 0; });
  // Axes as written: some negative, in any order; "all" spelled as such.
  std::vector<int64_t> written = reduced;
  for (int64_t& a : written)
    if (coin(40)) a -= s.rank();
  std::shuffle(written.begin(), written.end(), engine_);
  Axes axes = all ? Axes::all() : Axes(written);
  std::string args = "(" + id_text(x) + ", " + (all ? "all" : ints_text(written)) + (keepdims ? ", keepdims)" : ")");
  auto reduce = [x, axes, keepdims](auto function) -> Build {
    return [x, axes, keepdims, function](const std::vector<Array>& v, Sizes) {
      return function(v[static_cast<size_t>(x)], axes, keepdims);
    };
  };
  switch (integer(0, 7)) {
    case 0:
    case 1: {
      if (is_floating(dtype) && !s.finite()) return false;
      return admit(
          shape, reduce([](const Array& v, Axes a, bool k) { return sum(v, a, k); }), {x},
          [this, x, counts](size_t r, DType out) {
            Bounds in = bounds(x, r), b;
            double n = counts[r];
            b.lo = n * in.lo;
            b.hi = n * in.hi;
            b.nan = in.nan;
            if (is_floating(out)) b.error = sum_error(n, in.error, in.magnitude(), out);
            return b;
          },
          "sum" + args);
    }
    case 2: {
      // The mean's count is a literal in the graph: a fitted one.
      if (!s.finite() || !fittable(count)) return false;
      return admit(
          shape, reduce([](const Array& v, Axes a, bool k) { return mean(v, a, k); }), {x},
          [this, x, counts, float_dtype](size_t r, DType) {
            Bounds in = bounds(x, r), b = in;
            b.error = mean_error(counts[r], in.error, in.magnitude(), float_dtype);
            b.nan = in.nan || counts[r] == 0;
            b.zero_sign = false;
            return b;
          },
          "mean" + args);
    }
    case 3:
    case 4: {
      if (empty) return false;
      bool is_max = coin(50);
      return admit(
          shape, reduce([is_max](const Array& v, Axes a, bool k) { return is_max ? max(v, a, k) : min(v, a, k); }), {x},
          [this, x](size_t r, DType out) {
            Bounds b = bounds(x, r);
            b.zero_sign = is_floating(out);
            return b;
          },
          (is_max ? "max" : "min") + args);
    }
    case 5: {  // argmax, argmin along one axis
      if (!s.exact()) return false;
      int64_t axis = random_axis(s, true);
      DimExpr extent = s.shape[static_cast<size_t>(axis)];
      SymbolicShape result = s.shape;
      if (keepdims) result[static_cast<size_t>(axis)] = constant(1);
      else result.erase(result.begin() + axis);
      bool is_max = coin(50);
      int64_t written_axis = coin(40) ? axis - s.rank() : axis;
      for (const DynamicRun& run : runs_)
        if (extent.evaluate(run.sizes) == 0) return false;
      return admit(
          result,
          [x, written_axis, keepdims, is_max](const std::vector<Array>& v, Sizes) {
            const Array& in = v[static_cast<size_t>(x)];
            return is_max ? argmax(in, written_axis, keepdims) : argmin(in, written_axis, keepdims);
          },
          {x},
          [this, extent](size_t r, DType) {
            Bounds b;
            b.hi = static_cast<double>(extent.evaluate(runs_[r].sizes) - 1);
            return b;
          },
          std::string(is_max ? "argmax(" : "argmin(") + id_text(x) + ", " + std::to_string(written_axis) +
              (keepdims ? ", keepdims)" : ")"));
    }
    case 6: {
      if (empty || !s.finite()) return false;
      return admit(
          shape, reduce([](const Array& v, Axes a, bool k) { return logsumexp(v, a, k); }), {x},
          [this, x, counts, float_dtype](size_t r, DType) {
            Bounds in = bounds(x, r), b;
            double n = counts[r];
            b.lo = in.lo;
            b.hi = in.hi + std::log(std::max(n, 1.0));
            double bound = std::max(std::fabs(b.lo), std::fabs(b.hi));
            b.error = logsumexp_error(n, in.error, in.magnitude(), bound, float_dtype);
            b.nan = in.nan;
            return b;
          },
          "logsumexp" + args);
    }
    default: {  // cumsum along one axis: the reference kernel on both sides, so exact inputs give exact sums
      if (!s.finite() && !s.exact()) return false;
      int64_t axis = random_axis(s, true);
      DimExpr extent = s.shape[static_cast<size_t>(axis)];
      int64_t written_axis = coin(40) ? axis - s.rank() : axis;
      return admit(
          s.shape,
          [x, written_axis](const std::vector<Array>& v, Sizes) {
            return cumsum(v[static_cast<size_t>(x)], written_axis);
          },
          {x},
          [this, x, extent, float_dtype](size_t r, DType) {
            Bounds in = bounds(x, r), b = in;
            auto n = static_cast<double>(extent.evaluate(runs_[r].sizes));
            b.lo = n * std::min(in.lo, 0.0);
            b.hi = n * std::max(in.hi, 0.0);
            if (!in.finite()) b.lo = -inf, b.hi = inf, b.nan = true;
            b.error = in.exact() ? 0 : rounded(n * in.error, float_dtype, std::max(std::fabs(b.lo), b.hi), n);
            return b;
          },
          "cumsum(" + id_text(x) + ", " + std::to_string(written_axis) + ")");
    }
  }
}

bool DynamicGenerator::softmax_step() {
  std::optional<int> picked = pick([](const Slot& s) { return s.traced && s.rank() > 0 && s.finite(); });
  if (!picked) return false;
  const int x = *picked;
  const Slot& s = at(x);
  const DType float_dtype = is_floating(s.dtype) ? s.dtype : DType::f32;
  int64_t axis = random_axis(s, true);
  DimExpr extent = s.shape[static_cast<size_t>(axis)];
  for (const DynamicRun& run : runs_)
    if (extent.evaluate(run.sizes) == 0) return false;
  int64_t written = coin(40) ? axis - s.rank() : axis;
  bool logarithm = coin(40);
  return admit(
      s.shape,
      [x, written, logarithm](const std::vector<Array>& v, Sizes) {
        const Array& in = v[static_cast<size_t>(x)];
        return logarithm ? log_softmax(in, written) : softmax(in, written);
      },
      {x},
      [this, x, extent, logarithm, float_dtype](size_t r, DType) {
        Bounds in = bounds(x, r), b;
        auto n = static_cast<double>(extent.evaluate(runs_[r].sizes));
        b.nan = in.nan;
        if (logarithm) {
          b.lo = in.lo - in.hi - std::log(n);
          b.error = log_softmax_error(n, in.error, in.magnitude(), b.lo, float_dtype);
        } else {
          b.hi = 1;
          b.error = softmax_error(n, in.error, in.magnitude(), float_dtype);
        }
        return b;
      },
      std::string(logarithm ? "log_softmax(" : "softmax(") + id_text(x) + ", " + std::to_string(written) + ")");
}

// ---- movement ----------------------------------------------------------------------------------

bool DynamicGenerator::movement() {
  std::optional<int> picked = pick_traced();
  if (!picked) return false;
  const int x = *picked;
  const SymbolicShape shape = at(x).shape;
  const int64_t rank = at(x).rank();
  auto same_bounds = [this, x](size_t r, DType) { return bounds(x, r); };
  switch (integer(0, 8)) {
    case 0:
    case 1: return reshape_step(x);
    case 2: {  // transpose
      if (rank < 2) return false;
      std::vector<int64_t> perm(static_cast<size_t>(rank));
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), engine_);
      if (coin(20)) perm.clear();
      SymbolicShape result;
      for (int64_t d = 0; d < rank; ++d)
        result.push_back(shape[static_cast<size_t>(perm.empty() ? rank - 1 - d : perm[static_cast<size_t>(d)])]);
      return admit(
          result, [x, perm](const std::vector<Array>& v, Sizes) { return transpose(v[static_cast<size_t>(x)], perm); },
          {x}, same_bounds, "transpose(" + id_text(x) + ", " + ints_text(perm) + ")");
    }
    case 3: {  // expand_dims, or a static leading dim broadcast
      if (coin(50) && rank < 4) {
        int64_t leading = integer(2, 3);
        SymbolicShape result = shape;
        result.insert(result.begin(), constant(leading));
        return admit(
            result,
            [x, result](const std::vector<Array>& v, Sizes sizes) {
              return broadcast_to(v[static_cast<size_t>(x)], evaluate(result, sizes));
            },
            {x}, same_bounds, "broadcast_to(" + id_text(x) + ", " + ir::symbolic_shape_string(result) + ")");
      }
      int64_t position = integer(-(rank + 1), rank);
      SymbolicShape result = shape;
      result.insert(result.begin() + (position < 0 ? position + rank + 1 : position), constant(1));
      return admit(
          result,
          [x, position](const std::vector<Array>& v, Sizes) {
            return expand_dims(v[static_cast<size_t>(x)], Axes({position}));
          },
          {x}, same_bounds, "expand_dims(" + id_text(x) + ", " + std::to_string(position) + ")");
    }
    case 4: {  // squeeze the static ones
      std::vector<int64_t> ones;
      SymbolicShape result;
      for (int64_t a = 0; a < rank; ++a) {
        if (shape[static_cast<size_t>(a)] == constant(1)) ones.push_back(coin(40) ? a - rank : a);
        else result.push_back(shape[static_cast<size_t>(a)]);
      }
      if (ones.empty()) return false;
      return admit(
          result,
          [x, ones](const std::vector<Array>& v, Sizes) { return squeeze(v[static_cast<size_t>(x)], Axes(ones)); }, {x},
          same_bounds, "squeeze(" + id_text(x) + ", " + ints_text(ones) + ")");
    }
    case 5: return slice_step(x);
    case 6: return concatenate_step(x);
    case 7: {  // pad, along dynamic axes too
      std::vector<int64_t> lo, hi;
      SymbolicShape result;
      for (int64_t a = 0; a < rank; ++a) {
        lo.push_back(integer(0, 2));
        hi.push_back(integer(0, 2));
        result.push_back(shape[static_cast<size_t>(a)] + constant(lo.back() + hi.back()));
      }
      bool is_bool = at(x).dtype == DType::bool_;
      double value = is_bool ? static_cast<double>(coin(50)) : choose(std::vector<double>{0, 1, -2, 7});
      Scalar fill = is_bool ? Scalar(value != 0) : Scalar(static_cast<int64_t>(value));
      return admit(
          result,
          [x, lo, hi, fill](const std::vector<Array>& v, Sizes) {
            return pad(v[static_cast<size_t>(x)], lo, hi, fill);
          },
          {x},
          [this, x, value](size_t r, DType) {
            Bounds b = bounds(x, r);
            b.lo = std::min(b.lo, value);
            b.hi = std::max(b.hi, value);
            return b;
          },
          "pad(" + id_text(x) + ", " + ints_text(lo) + ", " + ints_text(hi) + ", " + number_text(value) + ")");
    }
    default: return take_step();
  }
}

bool DynamicGenerator::reshape_step(int x) {
  const SymbolicShape shape = at(x).shape;
  const auto rank = static_cast<int64_t>(shape.size());
  SymbolicShape result;
  std::string how;
  // A dimension of one term (c * s0 * s1...) splits into two factors: the
  // coefficient's primes and the symbols dealt to either side.
  auto split = [&](const DimExpr& dim) -> std::optional<std::pair<DimExpr, DimExpr>> {
    if (dim.terms().size() != 1 || dim.terms()[0].coefficient <= 0) return std::nullopt;
    const auto& term = dim.terms()[0];
    DimExpr first = constant(1), second = constant(1);
    int64_t rest = term.coefficient;
    for (int64_t p = 2; rest > 1;) {
      if (rest % p != 0) {
        ++p;
        continue;
      }
      if (coin(50)) first = first * constant(p);
      else second = second * constant(p);
      rest /= p;
    }
    for (int symbol : term.symbols) {
      if (coin(50)) first = first * DimExpr::symbol(symbol);
      else second = second * DimExpr::symbol(symbol);
    }
    return std::pair{first, second};
  };
  switch (integer(0, 3)) {
    case 0: {  // merge two neighbours
      if (rank < 2) return false;
      int64_t d = integer(0, rank - 2);
      result = shape;
      result[static_cast<size_t>(d)] = shape[static_cast<size_t>(d)] * shape[static_cast<size_t>(d + 1)];
      result.erase(result.begin() + d + 1);
      how = "merge " + std::to_string(d);
      break;
    }
    case 1: {  // split one
      if (rank == 0 || rank >= 4) return false;
      int64_t d = integer(0, rank - 1);
      auto parts = split(shape[static_cast<size_t>(d)]);
      if (!parts) return false;
      result = shape;
      result[static_cast<size_t>(d)] = parts->first;
      result.insert(result.begin() + d + 1, parts->second);
      how = "split " + std::to_string(d);
      break;
    }
    case 2: {  // flatten
      result = {product(shape)};
      how = "flatten";
      break;
    }
    default: {  // regroup: the whole size dealt into two or three dims
      auto parts = split(product(shape));
      if (!parts) return false;
      result = {parts->first, parts->second};
      if (coin(40)) {
        auto more = split(parts->second);
        if (more) result = {parts->first, more->first, more->second};
      }
      how = "regroup";
    }
  }
  // Spelled with one dimension -1 sometimes, a dynamic one by preference.
  int64_t inferred = -1;
  bool empty = std::any_of(result.begin(), result.end(), [](const DimExpr& d) { return d == constant(0); });
  if (!result.empty() && !empty && coin(35)) {
    inferred = integer(0, static_cast<int64_t>(result.size()) - 1);
    for (size_t d = 0; d < result.size(); ++d)
      if (!result[d].is_constant() && coin(50)) inferred = static_cast<int64_t>(d);
  }
  SymbolicShape target = result;
  return admit(
      result,
      [x, target, inferred](const std::vector<Array>& v, Sizes sizes) {
        Shape concrete = evaluate(target, sizes);
        if (inferred >= 0) concrete[static_cast<size_t>(inferred)] = -1;
        return reshape(v[static_cast<size_t>(x)], concrete);
      },
      {x}, [this, x](size_t r, DType) { return bounds(x, r); },
      "reshape(" + id_text(x) + ", " + ir::symbolic_shape_string(result) + ", " + how +
          (inferred >= 0 ? ", -1 at " + std::to_string(inferred) : "") + ")");
}

bool DynamicGenerator::slice_step(int x) {
  const SymbolicShape shape = at(x).shape;
  const auto rank = static_cast<int64_t>(shape.size());
  if (rank == 0) return false;
  int64_t axes = integer(1, rank);
  // Per axis: static bounds on static axes; on dynamic ones the whole axis
  // (its size read in C++), or bounds that fit every size >= 2.
  enum class Stop { fixed, size, size_less_one };
  struct Bound {
    int64_t start = 0, stop = 0, step = 1;
    Stop kind = Stop::fixed;
  };
  std::vector<Bound> bounds_by_axis;
  SymbolicShape result = shape;
  std::string text;
  bool any_step = false;
  for (int64_t a = 0; a < axes; ++a) {
    const DimExpr& dim = shape[static_cast<size_t>(a)];
    Bound bound;
    if (dim.is_constant()) {
      int64_t d = static_extent(dim);
      bound.start = integer(-d, d);
      bound.stop = integer(-d, d);
      bound.step = coin(60) ? 1 : integer(2, 3);
      any_step = any_step || bound.step != 1;
      result[static_cast<size_t>(a)] = constant(slice_length(d, bound.start, bound.stop, bound.step));
      text += " " + std::to_string(bound.start) + ":" + std::to_string(bound.stop) + ":" + std::to_string(bound.step);
    } else {
      int64_t kind = coin(60) ? 0 : integer(1, 4);
      // Bounds that fit every size: 1:n-1 needs an extent of 2, 0:2 and 1:2 one of 2.
      if (!at_least(dim, 2)) kind = 0;
      bound.start = kind == 0 ? 0 : integer(0, 1);
      if (kind <= 1) {
        bound.kind = Stop::size;
        result[static_cast<size_t>(a)] = dim + constant(-bound.start);
        text += " " + std::to_string(bound.start) + ":n";
      } else if (kind == 2) {
        bound.kind = Stop::size_less_one;
        result[static_cast<size_t>(a)] = dim + constant(-bound.start - 1);
        text += " " + std::to_string(bound.start) + ":n-1";
      } else if (kind == 3) {
        bound.stop = -1;  // as NumPy counts from the end
        result[static_cast<size_t>(a)] = dim + constant(-bound.start - 1);
        text += " " + std::to_string(bound.start) + ":-1";
      } else {
        bound.stop = 2;
        result[static_cast<size_t>(a)] = constant(2 - bound.start);
        text += " " + std::to_string(bound.start) + ":2";
      }
    }
    bounds_by_axis.push_back(bound);
  }
  bool with_steps = any_step || coin(30);
  return admit(
      result,
      [x, bounds_by_axis, with_steps](const std::vector<Array>& v, Sizes) {
        const Array& in = v[static_cast<size_t>(x)];
        std::vector<int64_t> start, stop, step;
        for (size_t a = 0; a < bounds_by_axis.size(); ++a) {
          const Bound& bound = bounds_by_axis[a];
          int64_t extent = in.shape()[a];
          start.push_back(bound.start);
          stop.push_back(bound.kind == Stop::size            ? extent
                         : bound.kind == Stop::size_less_one ? extent - 1
                                                             : bound.stop);
          step.push_back(bound.step);
        }
        if (!with_steps) step.clear();
        return slice(in, start, stop, step);
      },
      {x}, [this, x](size_t r, DType) { return bounds(x, r); }, "slice(" + id_text(x) + "," + text + ")");
}

bool DynamicGenerator::concatenate_step(int x) {
  const Slot s = at(x);  // a copy: captured pieces grow the pool
  const int64_t rank = s.rank();
  if (rank == 0) return false;
  int64_t axis = random_axis(s, true);
  auto matches = [&](const SymbolicShape& other) {
    if (static_cast<int64_t>(other.size()) != rank) return false;
    for (int64_t a = 0; a < rank; ++a)
      if (a != axis && !(other[static_cast<size_t>(a)] == s.shape[static_cast<size_t>(a)])) return false;
    return true;
  };
  std::vector<int> parts{x};
  for (int64_t k = integer(1, 2); k > 0; --k) {
    std::optional<int> other = pick([&](const Slot& v) { return v.dtype == s.dtype && matches(v.shape); });
    bool all_static = true;
    for (int64_t a = 0; a < rank; ++a) all_static = all_static && (a == axis || !s.dynamic(a));
    if (all_static && coin(30)) {
      // A static piece: a captured array of the same dims but along the axis.
      Shape piece = evaluate(s.shape, hints_);
      piece[static_cast<size_t>(axis)] = integer(1, 3);
      other = captured(piece, s.dtype, false, false);
    }
    parts.push_back(other && coin(60) ? *other : x);
  }
  std::shuffle(parts.begin(), parts.end(), engine_);
  SymbolicShape result = s.shape;
  DimExpr joined;
  std::string text = "concatenate([";
  for (int part : parts) {
    joined = joined + at(part).shape[static_cast<size_t>(axis)];
    text += id_text(part) + " ";
  }
  result[static_cast<size_t>(axis)] = joined;
  int64_t written = coin(40) ? axis - rank : axis;
  return admit(
      result,
      [parts, written](const std::vector<Array>& v, Sizes) {
        std::vector<Array> arrays;
        for (int part : parts) arrays.push_back(v[static_cast<size_t>(part)]);
        return concatenate(arrays, written);
      },
      parts,
      [this, parts](size_t r, DType) {
        Bounds b = bounds(parts[0], r);
        for (int part : parts) {
          Bounds p = bounds(part, r);
          b.lo = std::min(b.lo, p.lo);
          b.hi = std::max(b.hi, p.hi);
          b.error = std::max(b.error, p.error);
          b.nan = b.nan || p.nan;
        }
        return b;
      },
      text + "], " + std::to_string(written) + ")");
}

bool DynamicGenerator::take_step() {
  std::optional<int> picked = pick([](const Slot& s) {
    if (!s.traced) return false;
    for (int64_t a = 0; a < s.rank(); ++a)
      if (!s.dynamic(a) && static_extent(s.shape[static_cast<size_t>(a)]) > 0) return true;
    return false;
  });
  if (!picked) return false;
  const int x = *picked;
  const Slot& s = at(x);
  std::vector<int64_t> static_axes;
  for (int64_t a = 0; a < s.rank(); ++a)
    if (!s.dynamic(a) && static_extent(s.shape[static_cast<size_t>(a)]) > 0) static_axes.push_back(a);
  int64_t axis = choose(static_axes);
  int64_t extent = static_extent(s.shape[static_cast<size_t>(axis)]);
  Shape index_shape(static_cast<size_t>(integer(0, 2)));
  for (int64_t& e : index_shape) e = integer(1, 4);
  // Out-of-range indices too: both sides must treat them alike.
  std::vector<int64_t> values(static_cast<size_t>(shape_size(index_shape)));
  for (int64_t& v : values) v = integer(-extent - 1, extent);
  // Made concrete in their dtype: a conversion now would be recorded in the trace at the hints.
  Array indices =
      coin(50) ? array(std::vector<int32_t>(values.begin(), values.end()), index_shape) : array(values, index_shape);
  SymbolicShape result(s.shape.begin(), s.shape.begin() + axis);
  for (int64_t e : index_shape) result.push_back(constant(e));
  result.insert(result.end(), s.shape.begin() + axis + 1, s.shape.end());
  int64_t written = coin(40) ? axis - s.rank() : axis;
  return admit(
      result,
      [x, indices, written](const std::vector<Array>& v, Sizes) {
        return take(v[static_cast<size_t>(x)], indices, written);
      },
      {x}, [this, x](size_t r, DType) { return bounds(x, r); },
      "take(" + id_text(x) + ", i" + shape_string(index_shape) + " " + ints_text(values) + ", " +
          std::to_string(written) + ")");
}

// ---- matmul ------------------------------------------------------------------------------------

bool DynamicGenerator::matrix_product() {
  auto usable = [](const Slot& v) { return v.rank() >= 1 && (!is_floating(v.dtype) || (v.finite() && !v.nan())); };
  std::optional<int> picked = pick([&](const Slot& v) { return v.traced && usable(v); });
  if (!picked) return false;
  const int a = *picked;
  const SymbolicShape shape = at(a).shape;
  const auto rank = static_cast<int64_t>(shape.size());
  // left @ right, each possibly transposed (its last two axes swapped).
  int left = a, right = a;
  bool transpose_left = false, transpose_right = false;
  int64_t kind = integer(0, 99);
  // A static weight cannot meet a dynamic last dim: contract it instead.
  if (kind < 35 && !shape.back().is_constant()) kind = integer(50, 99);
  if (kind < 35) {
    // x @ W, a static weight [k, n] (or [n, k] transposed, or a vector [k]).
    int64_t k = static_extent(shape.back());
    bool vector = coin(15);
    transpose_right = !vector && coin(35);
    int64_t n = integer(1, 6);
    Shape weight = vector ? Shape{k} : transpose_right ? Shape{n, k} : Shape{k, n};
    DType dtype = coin(70) ? at(a).dtype : random_dtype();
    std::optional<int> w = captured(weight, dtype, false, false);
    if (!w) return false;
    right = *w;
  } else if (kind < 50) {
    // W @ x, a static weight [m, k] on the left of x [..., k, n].
    if (rank < 2 || !shape[static_cast<size_t>(rank - 2)].is_constant()) return false;
    int64_t k = static_extent(shape[static_cast<size_t>(rank - 2)]);
    std::optional<int> w = captured({integer(1, 5), k}, coin(70) ? at(a).dtype : random_dtype(), false, false);
    if (!w) return false;
    left = *w;
  } else if (kind < 80) {
    // Contracting the rows: x^T @ y over a shared first dim (of y = x, or another value).
    if (rank == 1) {
      std::optional<int> other = pick([&](const Slot& v) { return usable(v) && v.rank() == 1 && v.shape == shape; });
      right = other && coin(60) ? *other : a;
    } else {
      std::optional<int> other = pick([&](const Slot& v) {
        return usable(v) && v.rank() >= 2 && v.shape[v.shape.size() - 2] == shape[static_cast<size_t>(rank - 2)] &&
               broadcast(SymbolicShape(v.shape.begin(), v.shape.end() - 2),
                         SymbolicShape(shape.begin(), shape.end() - 2))
                   .has_value();
      });
      right = other && coin(60) ? *other : a;
      transpose_left = true;
    }
  } else {
    // x @ x^T: contracting the last dim, the result square in the first.
    if (rank < 2) return false;
    transpose_right = true;
  }
  auto operand_shape = [&](int slot, bool transposed) {
    SymbolicShape s = at(slot).shape;
    if (transposed) std::swap(s[s.size() - 1], s[s.size() - 2]);
    return s;
  };
  SymbolicShape ls = operand_shape(left, transpose_left), rs = operand_shape(right, transpose_right);
  // NumPy's rule: 1-d operands promoted, batch dims broadcast.
  bool left_vector = ls.size() == 1, right_vector = rs.size() == 1;
  if (left_vector) ls.insert(ls.begin(), constant(1));
  if (right_vector) rs.push_back(constant(1));
  if (!(ls.back() == rs[rs.size() - 2])) return false;
  DimExpr k = ls.back();
  std::optional<SymbolicShape> batch =
      broadcast(SymbolicShape(ls.begin(), ls.end() - 2), SymbolicShape(rs.begin(), rs.end() - 2));
  if (!batch) return false;
  SymbolicShape result = *batch;
  if (!left_vector) result.push_back(ls[ls.size() - 2]);
  if (!right_vector) result.push_back(rs.back());
  std::vector<double> contracted;
  for (const DynamicRun& run : runs_) contracted.push_back(static_cast<double>(k.evaluate(run.sizes)));
  auto text_of = [&](int slot, bool transposed) {
    return transposed ? "transpose(" + id_text(slot) + ")" : id_text(slot);
  };
  return admit(
      result,
      [left, right, transpose_left, transpose_right](const std::vector<Array>& v, Sizes) {
        Array l = v[static_cast<size_t>(left)], r = v[static_cast<size_t>(right)];
        if (transpose_left) l = transpose(l, swap_last_two(static_cast<size_t>(l.ndim())));
        if (transpose_right) r = transpose(r, swap_last_two(static_cast<size_t>(r.ndim())));
        return matmul(l, r);
      },
      {left, right},
      [this, left, right, contracted](size_t r, DType out) {
        Bounds a = bounds(left, r), b = bounds(right, r), m;
        double kk = contracted[r];
        double bound = kk * a.magnitude() * b.magnitude();
        m.lo = -bound;
        m.hi = bound;
        if (is_floating(out)) m.error = matmul_error(kk, a.magnitude(), a.error, b.magnitude(), b.error, out);
        return m;
      },
      "matmul(" + text_of(left, transpose_left) + ", " + text_of(right, transpose_right) + ")");
}

// ---- a size read in C++ ------------------------------------------------------------------------------

bool DynamicGenerator::size_scale() {
  std::optional<int> picked = pick([](const Slot& s) {
    if (!s.traced || s.dtype == DType::bool_) return false;
    for (int64_t a = 0; a < s.rank(); ++a)
      if (s.dynamic(a)) return true;
    return false;
  });
  if (!picked) return false;
  const int x = *picked;
  const Slot& s = at(x);
  int64_t axis = random_axis(s, true);
  if (!s.dynamic(axis)) return false;
  DimExpr size = s.shape[static_cast<size_t>(axis)];
  // x * n, x / n, or x * (1.0 / n): the number follows the size, a fitted literal.
  int way = is_floating(s.dtype) ? static_cast<int>(integer(0, 2)) : 0;
  const char* names[] = {"mul", "div", "mul_reciprocal"};
  return admit(
      s.shape,
      [x, axis, way](const std::vector<Array>& v, Sizes) {
        const Array& in = v[static_cast<size_t>(x)];
        int64_t n = in.shape()[static_cast<size_t>(axis)];
        if (way == 0) return in * n;
        if (way == 1) return in / static_cast<double>(n);
        return in * (1.0 / static_cast<double>(n));
      },
      {x},
      [this, x, size, way](size_t r, DType out) {
        Bounds in = bounds(x, r), b = in;
        auto n = static_cast<double>(size.evaluate(runs_[r].sizes));
        double factor = way == 0 ? n : 1 / n;
        b.lo = in.lo * factor;
        b.hi = in.hi * factor;
        // The reciprocal is rounded once to a double and then to the dtype: an
        // inexact factor, alike on both sides.
        b.error = rounded(in.error * factor * (1 + 4 * epsilon(DType::f32)), out, in.magnitude() * factor);
        return b;
      },
      std::string(names[way]) + "(" + id_text(x) + ", " + size.to_string() + " read in C++)");
}

// ---- tracing and the driver ------------------------------------------------------------------------

Graph DynamicGenerator::trace(Sizes sizes, std::vector<Array>* captures) const {
  detail::TraceSession session(name_, Location::current());
  std::vector<Shape> shapes;
  for (const SymbolicShape& shape : argument_shapes_) shapes.push_back(evaluate(shape, sizes));
  session.trace_at_shapes(shapes);
  std::vector<Array> values;
  for (const Slot& slot : slots_) {
    if (slot.argument >= 0) values.push_back(session.argument(runs_[0].arguments[static_cast<size_t>(slot.argument)]));
    else values.push_back(slot.build(values, sizes));
  }
  std::vector<Array> outputs;
  for (int output : outputs_) outputs.push_back(values[static_cast<size_t>(output)]);
  Graph graph = session.finish(outputs);
  if (captures) *captures = session.captured();
  return graph;
}

DynamicRandomGraph DynamicGenerator::run() {
  specials_ = coin(options_.special_values_percent);
  choose_symbols();
  choose_arguments();
  choose_runs();
  recipe_ << "seed " << seed_ << (specials_ ? " (special values)" : "") << ", hints " << sizes_text(hints_)
          << "\nruns:";
  for (const DynamicRun& run : runs_) recipe_ << " (" << sizes_text(run.sizes) << ")";
  recipe_ << "\n";

  // Each argument's data at every run, decided once for the argument.
  session_.emplace(name_, Location::current());
  std::vector<Shape> hint_shapes;
  for (const SymbolicShape& shape : argument_shapes_) hint_shapes.push_back(evaluate(shape, hints_));
  session_->trace_at_shapes(hint_shapes);
  for (size_t k = 0; k < argument_shapes_.size(); ++k) {
    bool specials = specials_ && coin(60), positive = coin(20);
    for (DynamicRun& run : runs_)
      run.arguments.push_back(
          random_data(evaluate(argument_shapes_[k], run.sizes), argument_dtypes_[k], specials, positive));
    Slot slot;
    slot.dtype = argument_dtypes_[k];
    slot.shape = argument_shapes_[k];
    slot.traced = true;
    slot.argument = static_cast<int>(k);
    for (const DynamicRun& run : runs_) slot.bounds.push_back(bounds_of(run.arguments.back()));
    for (Bounds& b : slot.bounds) complete(b, slot.dtype, false);
    recipe_ << "  %" << slots_.size() << " = argument " << k << " -> " << slot.dtype
            << ir::symbolic_shape_string(slot.shape) << (specials ? " (special values)" : "") << "\n";
    live_.push_back(session_->argument(runs_[0].arguments.back()));
    slots_.push_back(std::move(slot));
    used_.push_back(0);
  }
  size_t arguments = slots_.size();

  struct Kind {
    int weight;
    bool (DynamicGenerator::*step)();
  };
  const std::vector<Kind> kinds = {{20, &DynamicGenerator::unary},         {24, &DynamicGenerator::binary},
                                   {6, &DynamicGenerator::select},         {14, &DynamicGenerator::reduction},
                                   {5, &DynamicGenerator::softmax_step},   {18, &DynamicGenerator::movement},
                                   {8, &DynamicGenerator::matrix_product}, {3, &DynamicGenerator::size_scale}};
  int total = 0;
  for (const Kind& kind : kinds) total += kind.weight;
  int64_t steps = integer(options_.min_steps, options_.max_steps);
  for (int64_t done = 0, attempts = 0; done < steps && attempts < steps * 30; ++attempts) {
    int64_t draw = integer(0, total - 1);
    size_t k = 0;
    while (draw >= kinds[k].weight) draw -= kinds[k++].weight;
    try {
      if ((this->*kinds[k].step)()) ++done;
    } catch (const std::exception& error) {
      throw std::logic_error("the dynamic random graph generator made an invalid step (seed " + std::to_string(seed_) +
                             "): " + error.what() + "\nrecipe so far:\n" + recipe_.str());
    }
  }
  live_.clear();
  session_.reset();

  // Outputs: the last value, values nothing read (else dead code), sometimes
  // an argument as it came.
  int last = static_cast<int>(slots_.size()) - 1;
  outputs_.push_back(last);
  std::vector<int> unread;
  for (size_t i = arguments; i + 1 < slots_.size(); ++i)
    if (!used_[i] && slots_[i].traced) unread.push_back(static_cast<int>(i));
  std::shuffle(unread.begin(), unread.end(), engine_);
  for (size_t i = 0; i < unread.size() && i < 3; ++i) outputs_.push_back(unread[i]);
  if (coin(8)) outputs_.push_back(static_cast<int>(integer(0, static_cast<int64_t>(arguments) - 1)));
  std::shuffle(outputs_.begin(), outputs_.end(), engine_);
  recipe_ << "outputs:";
  for (int output : outputs_) recipe_ << " " << id_text(output);
  recipe_ << "\n";
  for (size_t r = 0; r < runs_.size(); ++r)
    for (int output : outputs_) {
      const Bounds& b = slots_[static_cast<size_t>(output)].bounds[r];
      Tolerance tolerance;
      // Twice the bound, as random_graph.cpp: clear of the analysis' own rounding.
      if (b.error > 0) tolerance.absolute = 2 * b.error;
      tolerance.zero_sign_matters = !b.zero_sign;
      runs_[r].tolerances.push_back(tolerance);
    }

  DynamicRandomGraph result;
  result.seed = seed_;
  result.runs = runs_;
  // Trace at the probe points and fit, as jit does. A trace leaves out an
  // operation that is an identity at its sizes (a reshape of [s0,3] into
  // [3,s0] at s0 = 3): where one probe point meets such a size the traces
  // part, and jit would compile those sizes static. Other hints avoid it;
  // a fit that fails at three sets of hints is reported.
  transform::FitResult fit;
  std::string failures;
  for (int attempt = 0; attempt < 3 && !fit.graph; ++attempt) {
    if (attempt > 0)
      for (int64_t& hint : hints_) hint += integer(3, 30);
    transform::ProbeGrid grid = probe_grid_above(hints_);
    std::vector<std::vector<int64_t>> points = grid.points();
    std::vector<Graph> traces;
    std::vector<const ir::Graph*> graphs;
    try {
      for (size_t p = 0; p < points.size(); ++p)
        traces.push_back(trace(points[p], p == 0 ? &result.captures : nullptr));
    } catch (const std::exception& error) {
      throw std::logic_error("the dynamic random graph (seed " + std::to_string(seed_) + ") fails to trace at " +
                             sizes_text(points[traces.size()]) + ": " + error.what() + "\nrecipe:\n" + recipe_.str());
    }
    for (const Graph& graph : traces) graphs.push_back(&detail::ir_of(graph));
    fit = transform::fit_symbols(graphs, grid);
    if (!fit.graph) {
      failures += "the fit at hints " + sizes_text(hints_) + " failed: " + fit.failure + "\n";
      if (attempt == 2) failures += "--- trace at those hints\n" + traces[0].to_string();
    }
  }
  result.hints = hints_;
  if (fit.graph && !failures.empty()) recipe_ << "fitted at hints " << sizes_text(hints_) << "; before:\n" << failures;
  result.recipe = recipe_.str();
  if (!fit.graph) {
    result.failure = failures;
    return result;
  }
  result.graph = detail::wrap(fit.graph);
  // The symbolic graph must accept each run's sizes (as jit checks before
  // reusing it), and be the function traced there (checked when running).
  for (DynamicRun& run : result.runs) {
    try {
      transform::verify(ir::instantiate(*fit.graph, run.sizes));
      run.traced.emplace(trace(run.sizes, &run.traced_captures));
    } catch (const std::exception& error) {
      result.failure += "at " + sizes_text(run.sizes) + ": instantiating or tracing threw: " + error.what() + "\n";
    }
  }
  return result;
}

}  // namespace
}  // namespace generator

DynamicRandomGraph make_dynamic_random_graph(uint64_t seed, const DynamicGraphOptions& options) {
  return generator::DynamicGenerator(seed, options).run();
}

std::string check_dynamic_random_graph(const DynamicRandomGraph& graph, const runtime::Backend& backend) {
  std::string failure = graph.failure;
  std::ostringstream runs;
  if (failure.empty() && graph.graph) {
    std::shared_ptr<const runtime::Executable> executable;
    try {
      executable = backend.compile(detail::shared_ir(*graph.graph));
    } catch (const std::exception& error) {
      failure = std::string("the ") + std::string(backend.name()) + " backend threw compiling: " + error.what() + "\n";
    }
    for (size_t r = 0; executable && r < graph.runs.size(); ++r) {
      const DynamicRun& run = graph.runs[r];
      std::string at_sizes = "at " + generator::sizes_text(run.sizes) + ": ";
      std::vector<Array> expected, direct, got, donated_got;
      std::string mismatch;
      try {
        expected = detail::interpret(*graph.graph, run.arguments, graph.captures);
        if (run.traced) direct = detail::interpret(*run.traced, run.arguments, run.traced_captures);
      } catch (const std::exception& error) {
        mismatch = std::string("the interpreter threw: ") + error.what() + "\n";
      }
      // Identities a trace at these sizes leaves out (a slice of every row)
      // change no value: the interpreter gives the same bits.
      if (mismatch.empty() && run.traced) {
        mismatch = compare_outputs(expected, direct, {}, at_sizes + "the symbolic graph against the trace here, ");
        if (!mismatch.empty()) mismatch += "--- traced at these sizes\n" + run.traced->to_string();
      }
      if (mismatch.empty()) {
        try {
          std::tie(got, donated_got) = run_with_and_without_donation(*executable, run.arguments, graph.captures);
        } catch (const std::exception& error) {
          mismatch = std::string("the ") + std::string(backend.name()) + " backend threw: " + error.what() + "\n";
        }
      }
      if (mismatch.empty()) mismatch = compare_outputs(got, expected, run.tolerances, at_sizes);
      if (mismatch.empty())
        mismatch = compare_outputs(donated_got, expected, run.tolerances, at_sizes + "with every argument donated, ");
      if (mismatch.empty()) continue;
      if (mismatch.rfind(at_sizes, 0) != 0) mismatch = at_sizes + mismatch;
      failure += mismatch;
      runs << "--- " << at_sizes << "\n"
           << describe_arrays("argument", run.arguments) << describe_arrays("expected", expected)
           << describe_arrays("got", got);
    }
  }
  if (failure.empty()) return "";
  std::ostringstream report;
  report << "dynamic random graph, seed " << graph.seed << "\n" << graph.recipe << failure;
  if (graph.graph) {
    report << "\n--- symbolic graph\n" << graph.graph->to_string();
    try {
      report << "--- plan at the hints\n" << describe_plan(*graph.graph);
    } catch (const std::exception& error) {
      report << "--- plan failed: " << error.what() << "\n";
    }
  }
  report << describe_arrays("capture", graph.captures) << runs.str();
  return report.str();
}

}  // namespace kiln::testing
