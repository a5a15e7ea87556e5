// Random graph generation: the steps that change shapes — movement,
// reductions, matmul, indexing — and those that create values (iota, full,
// random numbers). See random_graph.h for the error analysis.
#include <algorithm>
#include <numeric>

#include "random_graph_generator.h"

namespace kiln::testing::generator {

namespace {

std::string ints_text(const std::vector<int64_t>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? "," : "") + std::to_string(values[i]);
  return text + "]";
}

std::string id_of(const Value& v) { return "%" + std::to_string(v.id); }

/// NumPy matmul's shape rule (1-d operands promoted, batch dims broadcast).
bool matmul_compatible(Shape a, Shape b) {
  if (a.empty() || b.empty()) return false;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  if (a.back() != b[b.size() - 2]) return false;
  return broadcast_shapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2)).has_value();
}

}  // namespace

Axes Generator::random_axes(const Value& x, std::vector<int64_t>& normalized) {
  int64_t rank = x.rank();
  normalized.clear();
  if (coin(20)) {
    normalized.resize(static_cast<size_t>(rank));
    std::iota(normalized.begin(), normalized.end(), 0);
    return Axes::all();
  }
  std::vector<int64_t> written;
  for (int64_t a = 0; a < rank; ++a) {
    if (!coin(45)) continue;
    normalized.push_back(a);
    written.push_back(coin(40) ? a - rank : a);
  }
  if (written.empty() && rank > 0 && coin(70)) {
    int64_t a = integer(0, rank - 1);
    normalized.push_back(a);
    written.push_back(coin(40) ? a - rank : a);
  }
  std::shuffle(written.begin(), written.end(), engine_);
  return Axes(written);
}

// ---- movement ----------------------------------------------------------------------------

bool Generator::movement() {
  std::optional<Value> picked = pick_any();
  Value x = *picked;
  const Shape shape = x.shape();
  int64_t rank = x.rank();
  auto keep = [&](const Array& r, const std::string& text) { return admit(make(r, x.lo, x.hi, x.error, x.nan), text); };
  switch (integer(0, 9)) {
    case 0: {  // reshape
      int64_t size = x.size();
      Shape target;
      if (size == 0) {
        target.assign(static_cast<size_t>(integer(1, 3)), 0);
        for (int64_t& e : target) e = integer(1, 3);
        target[static_cast<size_t>(integer(0, static_cast<int64_t>(target.size()) - 1))] = 0;
      } else {
        target.assign(static_cast<size_t>(integer(size == 1 ? 0 : 1, 4)), 1);
        int64_t rest = size;
        for (int64_t p = 2; rest > 1;) {
          if (rest % p == 0) {
            target[static_cast<size_t>(integer(0, static_cast<int64_t>(target.size()) - 1))] *= p;
            rest /= p;
          } else {
            ++p;
          }
        }
        if (coin(30) && !target.empty())
          target[static_cast<size_t>(integer(0, static_cast<int64_t>(target.size()) - 1))] = -1;
      }
      return keep(reshape(x.array, target), "reshape(" + id_of(x) + ", " + shape_string(target) + ")");
    }
    case 1: {  // transpose
      std::vector<int64_t> perm(static_cast<size_t>(rank));
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), engine_);
      if (coin(20)) perm.clear();
      return keep(transpose(x.array, perm), "transpose(" + id_of(x) + ", " + ints_text(perm) + ")");
    }
    case 2: {  // broadcast_to
      Shape target = shape;
      for (int64_t& e : target)
        if (e == 1 && coin(60)) e = integer(0, 4);
      for (int64_t lead = integer(0, 2); lead > 0 && static_cast<int64_t>(target.size()) <= options_.max_rank; --lead)
        target.insert(target.begin(), integer(1, 3));
      if (too_large(target)) return false;
      return keep(broadcast_to(x.array, target), "broadcast_to(" + id_of(x) + ", " + shape_string(target) + ")");
    }
    case 3: {  // expand_dims
      int64_t count = integer(1, 2), result_rank = rank + count;
      std::vector<int64_t> positions(static_cast<size_t>(result_rank));
      std::iota(positions.begin(), positions.end(), 0);
      std::shuffle(positions.begin(), positions.end(), engine_);
      positions.resize(static_cast<size_t>(count));
      for (int64_t& p : positions)
        if (coin(40)) p -= result_rank;
      return keep(expand_dims(x.array, Axes(positions)), "expand_dims(" + id_of(x) + ", " + ints_text(positions) + ")");
    }
    case 4: {  // squeeze
      std::vector<int64_t> ones;
      for (int64_t a = 0; a < rank; ++a)
        if (shape[static_cast<size_t>(a)] == 1 && coin(70)) ones.push_back(coin(40) ? a - rank : a);
      if (coin(30)) return keep(squeeze(x.array), "squeeze(" + id_of(x) + ")");
      if (ones.empty()) return false;
      return keep(squeeze(x.array, Axes(ones)), "squeeze(" + id_of(x) + ", " + ints_text(ones) + ")");
    }
    case 5: {  // slice
      if (rank == 0) return false;
      int64_t axes = integer(1, rank);
      std::vector<int64_t> start, stop, step;
      for (int64_t a = 0; a < axes; ++a) {
        int64_t d = shape[static_cast<size_t>(a)];
        start.push_back(integer(-d, d));
        stop.push_back(integer(-d, d));
        step.push_back(coin(60) ? 1 : integer(2, 3));
      }
      if (coin(30)) step.clear();
      return keep(slice(x.array, start, stop, step), "slice(" + id_of(x) + ", " + ints_text(start) + ", " +
                                                         ints_text(stop) + ", " + ints_text(step) + ")");
    }
    case 6: {  // concatenate
      if (rank == 0) return false;
      int64_t axis = integer(0, rank - 1);
      std::vector<Value> parts{x};
      for (int64_t k = integer(1, 2); k > 0; --k) {
        std::optional<Value> other = pick([&](const Value& v) {
          if (v.rank() != rank) return false;
          for (int64_t a = 0; a < rank; ++a)
            if (a != axis && v.shape()[static_cast<size_t>(a)] != shape[static_cast<size_t>(a)]) return false;
          return true;
        });
        parts.push_back(coin(50) && other ? *other : x);
      }
      std::shuffle(parts.begin(), parts.end(), engine_);
      std::vector<Array> arrays;
      Value joined = x;
      std::string text = "concatenate([";
      for (const Value& part : parts) {
        arrays.push_back(part.array);
        joined.lo = std::min(joined.lo, part.lo);
        joined.hi = std::max(joined.hi, part.hi);
        joined.error = std::max(joined.error, part.error);
        joined.nan = joined.nan || part.nan;
        text += id_of(part) + " ";
      }
      int64_t written = coin(40) ? axis - rank : axis;
      joined.array = concatenate(arrays, written);
      return admit(joined, text + "], " + std::to_string(written) + ")");
    }
    case 7: {  // stack
      std::optional<Value> other = pick([&](const Value& v) { return v.shape() == shape; });
      Value second = other && coin(60) ? *other : x;
      int64_t axis = integer(-(rank + 1), rank);
      Value stacked = make(stack({x.array, second.array}, axis), std::min(x.lo, second.lo), std::max(x.hi, second.hi),
                           std::max(x.error, second.error), x.nan || second.nan);
      return admit(stacked, "stack([" + id_of(x) + " " + id_of(second) + "], " + std::to_string(axis) + ")");
    }
    case 8: {  // pad
      std::vector<int64_t> lo, hi;
      for (int64_t a = 0; a < rank; ++a) {
        lo.push_back(integer(0, 2));
        hi.push_back(integer(0, 2));
      }
      double value =
          x.dtype() == DType::bool_ ? static_cast<double>(coin(50)) : choose(std::vector<double>{0, 1, -2, 7});
      Scalar fill = x.dtype() == DType::bool_ ? Scalar(value != 0) : Scalar(static_cast<int64_t>(value));
      Array r = pad(x.array, lo, hi, fill);
      return admit(make(r, std::min(x.lo, value), std::max(x.hi, value), x.error, x.nan),
                   "pad(" + id_of(x) + ", " + ints_text(lo) + ", " + ints_text(hi) + ", " + number_text(value) + ")");
    }
    default: {  // flip
      std::vector<int64_t> normalized;
      Axes axes = random_axes(x, normalized);
      return keep(flip(x.array, axes),
                  "flip(" + id_of(x) + ", " + (axes.is_all() ? "all" : ints_text(axes.list())) + ")");
    }
  }
}

// ---- reductions ---------------------------------------------------------------------------

bool Generator::reduction() {
  std::optional<Value> picked = pick_any();
  Value x = *picked;
  DType dtype = x.dtype();
  DType float_dtype = is_floating(dtype) ? dtype : DType::f32;
  double eps = epsilon(float_dtype);
  std::vector<int64_t> reduced;
  Axes axes = random_axes(x, reduced);
  bool keepdims = coin(40);
  int64_t count = 1;
  bool empty = false;
  for (int64_t a : reduced) {
    count *= x.shape()[static_cast<size_t>(a)];
    empty = empty || x.shape()[static_cast<size_t>(a)] == 0;
  }
  auto n = static_cast<double>(count);
  const double lo = x.lo, hi = x.hi, e = x.error, m = x.magnitude();
  std::string args =
      "(" + id_of(x) + ", " + (axes.is_all() ? "all" : ints_text(axes.list())) + (keepdims ? ", keepdims)" : ")");
  // The single axis of softmax, argmax, cumsum: one of extent > 0.
  auto single_axis = [&](int64_t& axis, double& extent) {
    if (x.rank() == 0) return false;
    axis = integer(0, x.rank() - 1);
    extent = static_cast<double>(x.shape()[static_cast<size_t>(axis)]);
    if (coin(40)) axis -= x.rank();
    return extent > 0;
  };
  switch (integer(0, 10)) {
    case 0:
    case 1: {  // sum: a float sum may be reassociated, |difference| <= (n-1) eps sum|x|
      if (!x.finite() && dtype != DType::bool_ && is_floating(dtype)) return false;
      Array r = sum(x.array, axes, keepdims);
      double low = n * lo, high = n * hi;
      if (!is_floating(dtype)) return admit(make(r, low, high, 0, false), "sum" + args);
      return admit(make(r, low, high, sum_error(n, e, m, dtype), x.nan), "sum" + args);
    }
    case 2: {  // mean
      if (!x.finite()) return false;
      Array r = mean(x.array, axes, keepdims);
      return admit(make(r, lo, hi, mean_error(n, e, m, float_dtype), x.nan || count == 0), "mean" + args);
    }
    case 3: {  // prod
      double base = std::max(m, 1.0);
      if (is_floating(dtype) && (!x.finite() || count > 16 || std::pow(base, n) > safe_limit(dtype))) return false;
      Array r = prod(x.array, axes, keepdims);
      if (!is_floating(dtype)) {
        double bound = std::pow(m, n);
        if (dtype == DType::bool_) return admit(make(r, 0, 1, 0, false), "prod" + args);
        return admit(make(r, -bound, bound, 0, false), "prod" + args);
      }
      double top = std::pow(base, n);
      double error = n * std::pow(base, std::max(n - 1, 0.0)) * e + 2 * n * eps * top;
      return admit(make(r, -top, top, rounded(error, dtype, top), x.nan), "prod" + args);
    }
    case 4:
    case 5: {  // max, min
      if (empty) return false;
      bool is_max = coin(50);
      Array r = is_max ? max(x.array, axes, keepdims) : min(x.array, axes, keepdims);
      Value result = make(r, lo, hi, e, x.nan);
      result.zero_sign = is_floating(dtype);
      return admit(result, (is_max ? "max" : "min") + args);
    }
    case 6: {  // argmax, argmin
      if (!x.exact()) return false;
      bool is_max = coin(50);
      int64_t axis = 0;
      double extent = 0;
      std::optional<int64_t> chosen;
      if (coin(30)) {
        if (x.size() == 0) return false;
        extent = static_cast<double>(x.size());
      } else {
        if (!single_axis(axis, extent)) return false;
        chosen = axis;
      }
      Array r = is_max ? argmax(x.array, chosen, keepdims) : argmin(x.array, chosen, keepdims);
      return admit(make(r, 0, extent - 1, 0, false), std::string(is_max ? "argmax(" : "argmin(") + id_of(x) + ", " +
                                                         (chosen ? std::to_string(axis) : "none") + ")");
    }
    case 7: {  // logsumexp
      if (empty || !x.finite()) return false;
      Array r = logsumexp(x.array, axes, keepdims);
      double top = hi + std::log(std::max(n, 1.0));
      double bound = std::max(std::fabs(lo), std::fabs(top));
      return admit(make(r, lo, top, logsumexp_error(n, e, m, bound, float_dtype), x.nan), "logsumexp" + args);
    }
    case 8: {  // softmax, log_softmax along one axis
      int64_t axis = 0;
      double extent = 0;
      if (!x.finite() || !single_axis(axis, extent)) return false;
      if (coin(50))
        return admit(make(softmax(x.array, axis), 0, 1, softmax_error(extent, e, m, float_dtype), x.nan),
                     "softmax(" + id_of(x) + ", " + std::to_string(axis) + ")");
      double low = lo - hi - std::log(extent);
      return admit(make(log_softmax(x.array, axis), low, 0, log_softmax_error(extent, e, m, low, float_dtype), x.nan),
                   "log_softmax(" + id_of(x) + ", " + std::to_string(axis) + ")");
    }
    default: {  // cumsum: the reference kernel on both sides, so exact inputs give exact sums
      int64_t axis = 0;
      double extent = 0;
      std::optional<int64_t> chosen;
      if (coin(30) || x.rank() == 0) {
        extent = static_cast<double>(x.size());
      } else {
        single_axis(axis, extent);
        chosen = axis;
      }
      if (!x.finite() && !x.exact()) return false;
      Array r = cumsum(x.array, chosen);
      double low = extent * std::min(lo, 0.0), high = extent * std::max(hi, 0.0);
      if (!x.finite()) low = -inf, high = inf;
      double error = x.exact() ? 0 : rounded(extent * e, float_dtype, std::max(std::fabs(low), high), extent);
      return admit(make(r, low, high, error, x.nan || !x.finite()),
                   "cumsum(" + id_of(x) + ", " + (chosen ? std::to_string(axis) : "none") + ")");
    }
  }
}

// ---- matmul ----------------------------------------------------------------------------------

bool Generator::matrix_product() {
  auto usable = [](const Value& v) { return v.rank() >= 1 && (!is_floating(v.dtype()) || (v.finite() && !v.nan)); };
  std::optional<Value> picked = pick(usable);
  if (!picked) return false;
  Value a = *picked;
  int64_t k = a.shape().back();
  Array left = a.array, right;
  Value b;
  std::string text;
  int64_t kind = integer(0, 99);
  if (kind < 25 && a.rank() >= 2) {
    // a^T a or a a^T: a transpose of the last two axes, read transposed by BLAS.
    std::vector<int64_t> perm(static_cast<size_t>(a.rank()));
    std::iota(perm.begin(), perm.end(), 0);
    std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
    b = a;
    Array transposed = transpose(a.array, perm);
    bool first = coin(50);
    left = first ? transposed : a.array;
    right = first ? a.array : transposed;
    k = first ? a.shape()[a.shape().size() - 2] : k;
    text = first ? "matmul(transpose(%A), %A)" : "matmul(%A, transpose(%A))";
  } else {
    std::optional<Value> other;
    if (kind < 60) other = pick([&](const Value& v) { return usable(v) && matmul_compatible(a.shape(), v.shape()); });
    if (other) {
      b = *other;
      right = b.array;
      text = "matmul(%A, %B)";
    } else {
      Shape shape;
      if (a.rank() >= 2 && coin(40)) shape.assign(a.shape().begin(), a.shape().end() - 2);
      bool transposed = coin(35);
      int64_t n = integer(1, 6);
      if (coin(20) && shape.empty()) {
        shape = {k};
        transposed = false;
      } else if (transposed) {
        shape.push_back(n);
        shape.push_back(k);
      } else {
        shape.push_back(k);
        shape.push_back(n);
      }
      DType dtype = coin(70) ? a.dtype() : random_dtype();
      b = concrete(random_data(shape, dtype, false));
      if (!admit(b, "a captured " + std::string(dtype_name(dtype)) + shape_string(shape))) return false;
      b = pool_.back();
      right = b.array;
      if (transposed) {
        std::vector<int64_t> perm(shape.size());
        std::iota(perm.begin(), perm.end(), 0);
        std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
        right = transpose(b.array, perm);
        text = "matmul(%A, transpose(%B))";
      } else {
        text = "matmul(%A, %B)";
      }
    }
  }
  if (!matmul_compatible(left.shape(), right.shape())) return false;
  Array r = matmul(left, right);
  auto kk = static_cast<double>(k);
  double ma = a.magnitude(), mb = b.magnitude(), bound = kk * ma * mb;
  size_t at;
  while ((at = text.find("%A")) != std::string::npos) text.replace(at, 2, id_of(a));
  while ((at = text.find("%B")) != std::string::npos) text.replace(at, 2, id_of(b));
  if (!is_floating(r.dtype())) return admit(make(r, -bound, bound, 0, false), text);
  return admit(make(r, -bound, bound, matmul_error(kk, ma, a.error, mb, b.error, r.dtype()), false), text);
}

// ---- indexing ---------------------------------------------------------------------------------

bool Generator::indexing() {
  std::optional<Value> picked = pick_any();
  Value x = *picked;
  const Shape shape = x.shape();
  int64_t rank = x.rank();
  auto index_dtype = [&] { return coin(50) ? DType::i32 : DType::i64; };
  // Random indices in [-(extent + spill), extent + spill), out-of-range ones included.
  auto indices = [&](const Shape& index_shape, int64_t extent, int64_t spill) {
    std::vector<int64_t> values(static_cast<size_t>(shape_size(index_shape)));
    for (int64_t& v : values) v = integer(-extent - spill, std::max<int64_t>(extent + spill - 1, 0));
    return astype(array(values, index_shape), index_dtype());
  };
  switch (integer(0, 5)) {
    case 0: {  // take
      Shape index_shape(static_cast<size_t>(integer(0, 2)));
      for (int64_t& e : index_shape) e = integer(0, 4);
      std::optional<int64_t> axis;
      int64_t extent = x.size();
      if (rank > 0 && coin(70)) {
        axis = integer(0, rank - 1);
        extent = shape[static_cast<size_t>(*axis)];
        if (coin(40)) *axis -= rank;
      }
      if (extent == 0) return false;
      Array index = indices(index_shape, extent, 2);
      std::optional<Value> derived = pick([](const Value& v) { return is_integer(v.dtype()) && v.size() <= 64; });
      if (derived && coin(30)) index = derived->array;
      return admit(make(take(x.array, index, axis), x.lo, x.hi, x.error, x.nan),
                   "take(" + id_of(x) + ", i" + shape_string(index.shape()) + ", " +
                       (axis ? std::to_string(*axis) : "none") + ")");
    }
    case 1: {  // take_along_axis
      if (rank == 0) return false;
      int64_t axis = integer(0, rank - 1);
      if (shape[static_cast<size_t>(axis)] == 0) return false;
      Shape index_shape = shape;
      for (size_t d = 0; d < index_shape.size(); ++d)
        index_shape[d] = static_cast<int64_t>(d) == axis ? integer(0, 4) : coin(25) ? 1 : shape[d];
      Array index = indices(index_shape, shape[static_cast<size_t>(axis)], 1);
      int64_t written = coin(40) ? axis - rank : axis;
      return admit(
          make(take_along_axis(x.array, index, written), x.lo, x.hi, x.error, x.nan),
          "take_along_axis(" + id_of(x) + ", i" + shape_string(index_shape) + ", " + std::to_string(written) + ")");
    }
    case 2:
    case 3: {  // dynamic_slice, dynamic_update_slice
      if (rank == 0) return false;
      std::vector<Operand> starts;
      std::string text;
      Shape sizes;
      for (int64_t d : shape) {
        sizes.push_back(integer(0, d));
        int64_t start = integer(-2, d + 2);
        if (coin(40)) {
          starts.emplace_back(astype(scalar(start), index_dtype()));  // a captured 0-d start
          text += " c" + std::to_string(start);
        } else {
          starts.emplace_back(start);
          text += " " + std::to_string(start);
        }
      }
      if (coin(50)) {
        return admit(make(dynamic_slice(x.array, starts, sizes), x.lo, x.hi, x.error, x.nan),
                     "dynamic_slice(" + id_of(x) + ", [" + text + " ], " + shape_string(sizes) + ")");
      }
      Value update;
      if (coin(50)) {
        update = concrete(random_data(sizes, x.dtype(), false));
      } else {
        std::vector<int64_t> zero(sizes.size(), 0);
        update =
            make(slice(x.array, zero, std::vector<int64_t>(sizes.begin(), sizes.end())), x.lo, x.hi, x.error, x.nan);
      }
      return admit(make(dynamic_update_slice(x.array, update.array, starts), std::min(x.lo, update.lo),
                        std::max(x.hi, update.hi), std::max(x.error, update.error), x.nan || update.nan),
                   "dynamic_update_slice(" + id_of(x) + ", u" + shape_string(sizes) + ", [" + text + " ])");
    }
    case 4: {  // scatter_add
      if (rank == 0 || x.dtype() == DType::bool_) return false;
      int64_t axis = integer(0, rank - 1);
      int64_t extent = shape[static_cast<size_t>(axis)];
      if (extent == 0) return false;
      int64_t length = integer(0, 5);
      Array index = indices({length}, extent, 0);
      Shape update_shape = shape;
      update_shape[static_cast<size_t>(axis)] = length;
      Value updates = concrete(random_data(update_shape, x.dtype(), false));
      if (is_floating(x.dtype()) && !x.finite() && !x.exact()) return false;
      auto l = static_cast<double>(length);
      double low = x.lo + l * std::min(updates.lo, 0.0), high = x.hi + l * std::max(updates.hi, 0.0);
      double bound = std::max(std::fabs(low), std::fabs(high));
      // Each index hitting a slot adds once more: as many roundings of a perturbed sum.
      double error = x.error > 0 ? rounded(x.error, x.dtype(), bound, l) : 0;
      return admit(make(scatter_add(x.array, index, updates.array, axis), low, high, error, x.nan),
                   "scatter_add(" + id_of(x) + ", i[" + std::to_string(length) + "], u" + shape_string(update_shape) +
                       ", " + std::to_string(axis) + ")");
    }
    default: {  // one_hot
      std::optional<Value> index = pick([](const Value& v) { return is_integer(v.dtype()) && v.size() <= 256; });
      Array source = index ? index->array : indices(random_shape(), 4, 1);
      int64_t classes = integer(0, 5);
      DType dtype = choose(std::vector<DType>{DType::f32, DType::i32, DType::f64, DType::bool_});
      return admit(make(one_hot(source, classes, dtype), 0, 1, 0, false),
                   "one_hot(" + (index ? id_of(*index) : "i" + shape_string(source.shape())) + ", " +
                       std::to_string(classes) + ", " + std::string(dtype_name(dtype)) + ")");
    }
  }
}

// ---- creation and random numbers ----------------------------------------------------------------

bool Generator::creation() {
  switch (integer(0, 4)) {
    case 0: {
      // Sometimes past the size up to which literal-only values are folded when compiling.
      int64_t n = coin(15) ? integer(4000, 9000) : integer(0, 12);
      return admit(make(arange(n), 0, static_cast<double>(std::max<int64_t>(n - 1, 0)), 0, false),
                   "arange(" + std::to_string(n) + ")");
    }
    case 1: {
      double start = choose(std::vector<double>{-1, 0, 0.5}), step = choose(std::vector<double>{0.25, 0.5, 1});
      double stop = start + step * static_cast<double>(integer(0, 9));
      return admit(make(arange(start, stop, step), start, stop, 0, false),
                   "arange(" + number_text(start) + ", " + number_text(stop) + ", " + number_text(step) + ")");
    }
    case 2: {
      Shape shape = coin(15) ? Shape{integer(40, 100), integer(60, 100)} : random_shape();
      DType dtype = random_dtype();
      double value = dtype == DType::bool_ ? 1 : choose(std::vector<double>{0, 1, -3, 2});
      return admit(make(full(shape, value, dtype), value, value, 0, false),
                   "full(" + shape_string(shape) + ", " + number_text(value) + ")");
    }
    case 3: {
      int64_t n = integer(0, 5), m = integer(0, 5), k = integer(-2, 2);
      DType dtype = choose(std::vector<DType>{DType::f32, DType::i32, DType::f64});
      return admit(make(eye(n, m, k, dtype), 0, 1, 0, false),
                   "eye(" + std::to_string(n) + ", " + std::to_string(m) + ", " + std::to_string(k) + ")");
    }
    default: {
      int64_t num = integer(0, 9);
      DType dtype = coin(50) ? DType::f32 : DType::f64;
      return admit(make(linspace(-1, 2, num, coin(50), dtype), -1, 2, 0, false),
                   "linspace(-1, 2, " + std::to_string(num) + ")");
    }
  }
}

bool Generator::randomness() {
  if (keys_.empty()) return false;
  Array key = choose(keys_);
  Shape shape = random_shape();
  DType dtype = coin(50) ? DType::f32 : DType::f64;
  switch (integer(0, 4)) {
    case 0:
      return admit(make(random::uniform(key, shape, dtype, -1, 3), -1, 3, 0, false), "uniform" + shape_string(shape));
    case 1: {
      // Box-Muller: a logarithm, a square root and a cosine, each within a few ulps.
      double bound = dtype == DType::f32 ? 6 : 9;
      return admit(make(random::normal(key, shape, dtype), -bound, bound, 16 * epsilon(dtype) * bound, false),
                   "normal" + shape_string(shape));
    }
    case 2:
      return admit(make(random::randint(key, shape, -5, 50, coin(50) ? DType::i32 : DType::i64), -5, 49, 0, false),
                   "randint" + shape_string(shape));
    case 3: return admit(make(random::bernoulli(key, 0.3, shape), 0, 1, 0, false), "bernoulli" + shape_string(shape));
    default: {
      Array keys = random::split(key, 3);
      keys_.push_back(take(keys, scalar(int32_t{1}), 0));
      return admit(make(keys, INT32_MIN, INT32_MAX, 0, false), "split");
    }
  }
}

}  // namespace kiln::testing::generator
