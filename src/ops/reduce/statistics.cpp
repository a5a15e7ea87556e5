// Composites over the reductions and comparisons: any, all, count_nonzero,
// var, std, isclose, allclose, array_equal. Built from primitives, so they
// trace, fuse and differentiate like them; NumPy's rules for empty
// reductions, ddof, infinities and NaN.
#include <limits>

#include "core/error_format.h"
#include "kiln/ops.h"
#include "ops/common/axes.h"
#include "ops/common/promotion.h"

namespace kiln {

namespace {

constexpr double infinity = std::numeric_limits<double>::infinity();

Array nonzero(const Array& x, Location where) { return not_equal(Operand(x, where), Operand(0, where)); }

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
  return count(nonzero(x, where), x, axes, keepdims, "count_nonzero", where);
}

Array any(const Array& x, Axes axes, bool keepdims, Location where) {
  Array nonzeros = count(nonzero(x, where), x, axes, keepdims, "any", where);
  return greater(Operand(nonzeros, where), Operand(0, where));
}

Array all(const Array& x, Axes axes, bool keepdims, Location where) {
  Array zeros = count(logical_not(nonzero(x, where), where), x, axes, keepdims, "all", where);
  return equal(Operand(zeros, where), Operand(0, where));
}

// Two passes (the mean first), as NumPy: one pass of sums of squares loses
// everything when the mean is large against the spread.
Array var(const Array& x, Axes axes, int64_t ddof, bool keepdims, Location where) {
  if (ddof < 0)
    detail::raise("var", "ddof " + std::to_string(ddof) + " is negative", where,
                  "ddof is subtracted from the count: 0 for the population, 1 for the sample variance");
  Array values = floating(x, where);
  int64_t divisor = std::max<int64_t>(reduced_count(x, axes, "var", where) - ddof, 0);
  Array centered = sub(Operand(values, where), Operand(mean(values, axes, true, where), where));
  Array squares = sum(mul(Operand(centered, where), Operand(centered, where)), axes, keepdims, where);
  return div(Operand(squares, where), Operand(static_cast<double>(divisor), where));
}

Array std(const Array& x, Axes axes, int64_t ddof, bool keepdims, Location where) {
  return sqrt(var(x, axes, ddof, keepdims, where), where);
}

Array isclose(const Array& a, const Array& b, double rtol, double atol, bool equal_nan, Location where) {
  if (rtol < 0 || atol < 0)
    detail::raise("isclose",
                  "negative tolerance (rtol " + std::to_string(rtol) + ", atol " + std::to_string(atol) + ")", where,
                  "tolerances are bounds on a distance: pass values >= 0");
  Array x = floating(a, where), y = floating(b, where);
  Array distance = abs(sub(Operand(x, where), Operand(y, where)), where);
  Array bound = add(Operand(atol, where), Operand(mul(Operand(rtol, where), Operand(abs(y, where), where)), where));
  // An infinite b is close only to itself: the bound would be infinite too.
  Array finite_b = less(Operand(abs(y, where), where), Operand(infinity, where));
  Array close =
      logical_or(Operand(logical_and(Operand(less_equal(Operand(distance, where), Operand(bound, where)), where),
                                     Operand(finite_b, where)),
                         where),
                 Operand(equal(Operand(x, where), Operand(y, where)), where));
  if (!equal_nan) return close;
  Array both_nan = logical_and(Operand(isnan(x, where), where), Operand(isnan(y, where), where));
  return logical_or(Operand(close, where), Operand(both_nan, where));
}

Array allclose(const Array& a, const Array& b, double rtol, double atol, bool equal_nan, Location where) {
  return all(isclose(a, b, rtol, atol, equal_nan, where), Axes::all(), false, where);
}

Array array_equal(const Array& a, const Array& b, bool equal_nan, Location where) {
  if (a.shape() != b.shape()) return full({}, false, DType::bool_, where);
  Array same = equal(Operand(a, where), Operand(b, where));
  if (equal_nan && (is_floating(a.dtype()) || is_floating(b.dtype())))
    same = logical_or(Operand(same, where), Operand(logical_and(Operand(isnan(floating(a, where), where), where),
                                                                Operand(isnan(floating(b, where), where), where)),
                                                    where));
  return all(same, Axes::all(), false, where);
}

}  // namespace kiln
