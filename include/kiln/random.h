// Counter-based random numbers with functional keys, as in JAX: the same key
// gives the same numbers everywhere, eagerly or inside a trace.
#pragma once

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

}  // namespace kiln::random
