// Distributions built on the counter-based draws of random.cpp, so they are
// identical eagerly, under jit and on every backend: gumbel, laplace,
// truncated_normal, categorical, permutation, shuffle, choice and
// multivariate_normal.
#include <cmath>
#include <limits>
#include <numbers>

#include "core/array_impl.h"
#include "core/error_format.h"
#include "core/location_scope.h"
#include "kiln/linalg.h"
#include "kiln/ops.h"
#include "kiln/random.h"

namespace kiln::random {

using detail::OperationScope;

namespace {

double smallest_normal(DType dtype) {
  return dtype == DType::f64 ? std::numeric_limits<double>::min() : std::numeric_limits<float>::min();
}

/// An order of n: argsort of 52-bit uniforms (ties, with probability about
/// n^2 / 2^53, keep index order).
Array random_order(const Array& key, int64_t n, Location where) {
  return argsort(uniform(key, {n}, DType::f64, 0.0, 1.0, where), 0, false, where);
}

int64_t elements(const Shape& shape) {
  int64_t count = 1;
  for (int64_t extent : shape) count *= extent;
  return count;
}

}  // namespace

Array gumbel(const Array& key, Shape shape, DType dtype, Location where) {
  OperationScope at("random.gumbel", where);
  // As JAX: -log(-log(u)) with u in [tiny, 1): both logarithms finite.
  Array u = uniform(key, std::move(shape), dtype, smallest_normal(dtype), 1.0, where);
  return -log(-log(u));
}

Array laplace(const Array& key, Shape shape, DType dtype, Location where) {
  OperationScope at("random.laplace", where);
  // As JAX: u uniform in (-1, 1), -sign(u) log1p(-|u|).
  double lowest = std::nextafter(-1.0, 0.0);
  if (dtype == DType::f32) lowest = static_cast<double>(std::nextafter(-1.0f, 0.0f));
  Array u = uniform(key, std::move(shape), dtype, lowest, 1.0, where);
  return -(sign(u) * log1p(-abs(u)));
}

Array truncated_normal(const Array& key, double lower, double upper, Shape shape, DType dtype, Location where) {
  OperationScope at("random.truncated_normal", where);
  if (!(lower < upper))
    detail::raise("random.truncated_normal",
                  "needs lower < upper, got [" + std::to_string(lower) + ", " + std::to_string(upper) + "]", where);
  // As JAX: the inverse CDF of a uniform draw between the bounds' CDFs,
  // clamped into the open interval.
  double a = std::erf(lower / std::numbers::sqrt2), b = std::erf(upper / std::numbers::sqrt2);
  if (!(a < b))
    detail::raise(
        "random.truncated_normal",
        "[" + std::to_string(lower) + ", " + std::to_string(upper) + "] holds no probability that a double can resolve",
        where, "draw from a wider interval, or shift it toward 0");
  Array u = uniform(key, std::move(shape), dtype, a, b, where);
  Array x = std::numbers::sqrt2 * erfinv(u);
  auto inside = [&](double bound, double toward) {
    return dtype == DType::f64
               ? std::nextafter(bound, toward)
               : static_cast<double>(std::nextafter(static_cast<float>(bound), static_cast<float>(toward)));
  };
  double lo = std::isfinite(lower) ? inside(lower, upper) : lower,
         hi = std::isfinite(upper) ? inside(upper, lower) : upper;
  return clip(x, lo, hi);
}

Array categorical(const Array& key, const Array& logits, int64_t axis, Location where) {
  OperationScope at("random.categorical", where);
  // The Gumbel-max trick: argmax(logits + gumbel) picks each class with its softmax probability.
  const Shape& shape = logits.shape(where);
  DType dtype = is_floating(logits.dtype(where)) ? logits.dtype(where) : DType::f32;
  Array noise = gumbel(key, shape, dtype, where);
  return argmax(logits + noise, axis, false, where);
}

Array permutation(const Array& key, int64_t n, Location where) {
  OperationScope at("random.permutation", where);
  if (n < 0) detail::raise("random.permutation", "n must be >= 0, got " + std::to_string(n), where);
  return random_order(key, n, where);
}

Array permutation(const Array& key, const Array& x, int64_t axis, Location where) {
  OperationScope at("random.permutation", where);
  if (x.ndim(where) == 0)
    detail::raise("random.permutation", "cannot shuffle a 0-d array " + detail::impl(x)->type.to_string(), where,
                  "pass n for a permutation of 0..n-1, or an array of at least one dimension");
  int64_t n = x.shape(axis, where);
  return take(x, random_order(key, n, where), axis, where);
}

Array shuffle(const Array& key, const Array& x, int64_t axis, Location where) {
  OperationScope at("random.shuffle", where);
  return permutation(key, x, axis, where);
}

Array choice(const Array& key, int64_t n, Shape shape, bool replace, const std::optional<Array>& p, Location where) {
  OperationScope at("random.choice", where);
  int64_t count = elements(shape);
  if (n <= 0 && count > 0)
    detail::raise("random.choice", "cannot draw " + std::to_string(count) + " from an empty population", where);
  if (p) {
    const Shape& p_shape = p->shape(where);
    if (p_shape != Shape{n})
      detail::raise(
          "random.choice",
          "p must be a vector of " + std::to_string(n) + " probabilities, got " + detail::impl(*p)->type.to_string(),
          where);
  }
  if (!replace && count > n)
    detail::raise("random.choice",
                  "cannot draw " + std::to_string(count) + " without replacement from " + std::to_string(n), where,
                  "draw at most n, or pass replace = true");
  if (replace) {
    if (!p) return randint(key, std::move(shape), 0, n, DType::i32, where);
    // One Gumbel-max draw per sample over the classes' log-probabilities.
    Shape logits_shape = shape;
    logits_shape.push_back(n);
    Array log_p = log(astype(*p, is_floating(p->dtype(where)) ? p->dtype(where) : DType::f32, where), where);
    return categorical(key, broadcast_to(log_p, logits_shape, where), -1, where);
  }
  Array picked;
  if (!p) {
    Shape first{0}, stop{count};
    picked = slice(random_order(key, n, where), first, stop, {}, where);
  } else {
    // Gumbel-top-k: the k largest of log p + gumbel are a draw without
    // replacement with probabilities proportional to p.
    Array log_p = log(astype(*p, is_floating(p->dtype(where)) ? p->dtype(where) : DType::f32, where), where);
    Array keys = log_p + gumbel(key, {n}, log_p.dtype(where));
    picked = top_k(keys, count, where).second;
  }
  return reshape(picked, shape, where);
}

Array choice(const Array& key, const Array& a, Shape shape, bool replace, const std::optional<Array>& p,
             Location where) {
  if (a.ndim(where) == 0)
    detail::raise("random.choice",
                  "the population must have at least one dimension, got " + detail::impl(a)->type.to_string(), where,
                  "pass n to draw indices of 0..n-1");
  Array indices = choice(key, a.shape(0, where), shape, replace, p, where);
  return take(a, indices, 0, where);
}

Array multivariate_normal(const Array& key, const Array& mean, const Array& covariance, Shape shape, Location where) {
  OperationScope at("random.multivariate_normal", where);
  const Shape& mean_shape = mean.shape(where);
  if (mean_shape.size() != 1 || covariance.shape(where) != Shape{mean_shape[0], mean_shape[0]})
    detail::raise("random.multivariate_normal",
                  "needs a mean [d] and a covariance [d, d], got " + detail::impl(mean)->type.to_string() + " and " +
                      detail::impl(covariance)->type.to_string(),
                  where);
  // mean + z L^T with L L^T = covariance (Cholesky, as numpy.random's "cholesky" method).
  DType dtype = mean.dtype(where);
  shape.push_back(mean_shape[0]);
  Array z = normal(key, std::move(shape), dtype, where);
  Array factor = linalg::cholesky(covariance, where);
  return mean + matmul(z, transpose(factor));
}

}  // namespace kiln::random
