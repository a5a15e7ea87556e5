// Composites over the reductions and comparisons: any, all, count_nonzero,
// var, std, isclose, allclose, array_equal. Built from primitives, so they
// trace, fuse and differentiate like them; NumPy's rules for empty
// reductions, ddof, infinities and NaN.
#include <limits>

#include "core/error_format.h"
#include "core/location_scope.h"
#include "kiln/ops.h"
#include "ops/common/axes.h"
#include "ops/common/promotion.h"

namespace kiln {

using detail::OperationScope;

namespace {

constexpr double infinity = std::numeric_limits<double>::infinity();

Array nonzero(const Array& x) { return x != 0; }

// As mean computes them: var's dtype is mean's.
Array floating(const Array& x, Location where) {
  return ops::as_floating(x, detail::impl_of(x, "var", where).type, where);
}

int64_t reduced_count(const Array& x, const Axes& axes, const char* operation, Location where) {
  std::vector<int64_t> normalized = ops::normalize_axes(axes, x.ndim(), operation, x.shape(), where);
  int64_t count = 1;
  for (int64_t axis : normalized) count *= x.shape()[static_cast<size_t>(axis)];
  return count;
}

// The number of elements, over `axes`, for which `test` holds; errors name `operation`.
Array count(const Array& test, const Array& x, const Axes& axes, bool keepdims, const char* operation, Location where) {
  reduced_count(x, axes, operation, where);
  return sum(astype(test, DType::i64, where), axes, keepdims, where);
}

}  // namespace

Array count_nonzero(const Array& x, Axes axes, bool keepdims, Location where) {
  OperationScope at("count_nonzero", where);
  return count(nonzero(x), x, axes, keepdims, "count_nonzero", where);
}

Array any(const Array& x, Axes axes, bool keepdims, Location where) {
  OperationScope at("any", where);
  return count(nonzero(x), x, axes, keepdims, "any", where) > 0;
}

Array all(const Array& x, Axes axes, bool keepdims, Location where) {
  OperationScope at("all", where);
  return count(logical_not(nonzero(x)), x, axes, keepdims, "all", where) == 0;
}

// Two passes (the mean first), as NumPy: one pass of sums of squares loses
// everything when the mean is large against the spread.
Array var(const Array& x, Axes axes, int64_t ddof, bool keepdims, Location where) {
  OperationScope at("var", where);
  if (ddof < 0)
    detail::raise("var", "ddof " + std::to_string(ddof) + " is negative", where,
                  "ddof is subtracted from the count: 0 for the population, 1 for the sample variance");
  Array values = floating(x, where);
  int64_t divisor = std::max<int64_t>(reduced_count(x, axes, "var", where) - ddof, 0);
  Array centered = values - mean(values, axes, true);
  return sum(centered * centered, axes, keepdims) / static_cast<double>(divisor);
}

Array std(const Array& x, Axes axes, int64_t ddof, bool keepdims, Location where) {
  OperationScope at("std", where);
  return sqrt(var(x, axes, ddof, keepdims, where));
}

Array isclose(const Array& a, const Array& b, double rtol, double atol, bool equal_nan, Location where) {
  OperationScope at("isclose", where);
  if (rtol < 0 || atol < 0)
    detail::raise("isclose",
                  "negative tolerance (rtol " + std::to_string(rtol) + ", atol " + std::to_string(atol) + ")", where,
                  "tolerances are bounds on a distance: pass values >= 0");
  Array x = floating(a, where), y = floating(b, where);
  Array within = abs(x - y) <= atol + rtol * abs(y);
  // An infinite b is close only to itself: the bound would be infinite too.
  Array close = logical_or(logical_and(within, abs(y) < infinity), x == y);
  if (!equal_nan) return close;
  return logical_or(close, logical_and(isnan(x), isnan(y)));
}

Array allclose(const Array& a, const Array& b, double rtol, double atol, bool equal_nan, Location where) {
  OperationScope at("allclose", where);
  return all(isclose(a, b, rtol, atol, equal_nan));
}

Array array_equal(const Array& a, const Array& b, bool equal_nan, Location where) {
  OperationScope at("array_equal", where);
  if (a.shape() != b.shape()) return full({}, false, DType::bool_);
  Array same = a == b;
  if (equal_nan && (is_floating(a.dtype()) || is_floating(b.dtype())))
    same = logical_or(same, logical_and(isnan(floating(a, where)), isnan(floating(b, where))));
  return all(same);
}

}  // namespace kiln
