// Counter-based random numbers with functional keys, as in JAX: the same key
// gives the same numbers everywhere, eagerly or inside a trace.
#pragma once

#include <optional>

#include "kiln/ops.h"

namespace kiln::random {

/// A key is an i32[2] array (the two 32-bit words of a Threefry-2x32 key).
Array key(uint64_t seed, Location where = Location::current());
/// `n` independent keys as an i32[n,2] array; index it with `take` or use `split_keys`.
Array split(const Array& key, int64_t n = 2, Location where = Location::current());
/// The same keys as separate arrays.
std::vector<Array> split_keys(const Array& key, int64_t n = 2, Location where = Location::current());
/// Uniform in [minval, maxval).
Array uniform(const Array& key, Shape shape, DType dtype = DType::f32, double minval = 0.0, double maxval = 1.0,
              Location where = Location::current());
/// Standard normal (Box–Muller over two uniform draws).
Array normal(const Array& key, Shape shape, DType dtype = DType::f32, Location where = Location::current());
/// Integers uniform in [minval, maxval).
Array randint(const Array& key, Shape shape, int64_t minval, int64_t maxval, DType dtype = DType::i32,
              Location where = Location::current());
/// True with probability p.
Array bernoulli(const Array& key, double p, Shape shape, Location where = Location::current());

/// Standard Gumbel: -log(-log(u)).
Array gumbel(const Array& key, Shape shape, DType dtype = DType::f32, Location where = Location::current());
/// Standard Laplace (location 0, scale 1).
Array laplace(const Array& key, Shape shape, DType dtype = DType::f32, Location where = Location::current());
/// Standard normal restricted to (lower, upper) (infinite bounds allowed).
Array truncated_normal(const Array& key, double lower, double upper, Shape shape, DType dtype = DType::f32,
                       Location where = Location::current());
/// A class index along `axis` per row of unnormalized log-probabilities (i32).
Array categorical(const Array& key, const Array& logits, int64_t axis = -1, Location where = Location::current());
/// A random order of 0..n-1.
Array permutation(const Array& key, int64_t n, Location where = Location::current());
/// x with its slices along `axis` in a random order.
Array permutation(const Array& key, const Array& x, int64_t axis = 0, Location where = Location::current());
Array shuffle(const Array& key, const Array& x, int64_t axis = 0, Location where = Location::current());
/// Indices of 0..n-1 (i32), `shape` of them, with or without replacement,
/// uniform or with probabilities p (a vector of n).
Array choice(const Array& key, int64_t n, Shape shape, bool replace = true,
             const std::optional<Array>& p = std::nullopt, Location where = Location::current());
/// Rows of `a` chosen the same way.
Array choice(const Array& key, const Array& a, Shape shape, bool replace = true,
             const std::optional<Array>& p = std::nullopt, Location where = Location::current());

/// Draws of the normal with this mean [d] and covariance [d, d] (symmetric
/// positive definite): shape + [d].
Array multivariate_normal(const Array& key, const Array& mean, const Array& covariance, Shape shape,
                          Location where = Location::current());

}  // namespace kiln::random
