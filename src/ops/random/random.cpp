// Counter-based random numbers (Threefry-2x32, as in JAX): the primitives
// random_bits and random_uniform, and the public functions of kiln::random.
//
// Counters. A draw of N 32-bit words under key k hashes the counters
// 0, 1, ..., N-1 (plus one 0 when N is odd) in pairs, exactly as JAX's
// threefry_2x32(k, iota(N)): with H = ceil(N/2),
//   (y0, y1) = threefry2x32(k, (j, H + j))  (the counter H + j is 0 if it is N)
//   word[j] = y0, word[H + j] = y1           for j < H (word N is dropped).
// A 64-bit word i of a draw of N such words is (word[i] << 32) | word[N + i]
// of the 32-bit draw of 2N words, as JAX builds 64-bit random bits. So
// split(key(0)) and uniform(key(0), {}) give JAX's numbers bit for bit. Every
// element depends only on the key, the shape and its flat index: the same on
// every backend, eagerly or inside a trace.
#include "kiln/random.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>

#include "core/error_format.h"
#include "ops/common/apply.h"
#include "ops/common/batching.h"
#include "ops/common/promotion.h"
#include "ops/random/threefry.h"

namespace kiln {
namespace ops {
namespace {

// Counters are 32-bit, so one draw holds at most 2^32 - 1 words.
constexpr int64_t max_words = std::numeric_limits<uint32_t>::max();

void check_key_type(std::string_view operation, const AbstractValue& key, Location where) {
  if (key.dtype != DType::i32 || key.shape != Shape{2})
    detail::raise(operation, "key must be i32[2], got " + key.to_string(), where,
                  "make one with kiln::random::key(seed), or take a row of kiln::random::split(key, n)");
}

void check_draw_shape(std::string_view operation, const Shape& shape, int64_t words_per_element, Location where) {
  for (int64_t extent : shape)
    if (extent < 0)
      detail::raise(operation, "negative dimension in shape " + shape_string(shape), where,
                    "every extent must be >= 0");
  // Dividing avoids overflowing the product for absurd shapes.
  int64_t limit = max_words / words_per_element;
  int64_t size = 1;
  for (int64_t extent : shape) {
    if (extent != 0 && size > limit / extent)
      detail::raise(operation, "shape " + shape_string(shape) + " needs more than 2^32 random words", where,
                    "draw in several calls with split keys");
    size *= extent;
  }
}

AbstractValue infer_random(const Node& node, std::span<const AbstractValue* const> inputs) {
  std::string_view name = ir::primitive_name(node.op);
  if (inputs.size() != 1)
    detail::raise(name, "takes a key, got " + std::to_string(inputs.size()) + " operands", node.where);
  check_key_type(name, *inputs[0], node.where);
  if (node.op == Primitive::random_bits) {
    check_draw_shape(name, node.attrs.shape, 1, node.where);
    return {DType::i32, false, node.attrs.shape};
  }
  DType dtype = node.attrs.dtype;
  if (dtype != DType::f32 && dtype != DType::f64)
    detail::raise(name, "draws f32 or f64, got " + std::string(dtype_name(dtype)), node.where);
  check_draw_shape(name, node.attrs.shape, dtype == DType::f64 ? 2 : 1, node.where);
  return {dtype, false, node.attrs.shape};
}

ThreefryWords key_words(const Array& key) {
  const int32_t* words = detail::impl(key)->data<int32_t>();
  return {static_cast<uint32_t>(words[0]), static_cast<uint32_t>(words[1])};
}

/// `count` words under `key`, with the counter layout described at the top.
std::vector<uint32_t> random_words(ThreefryWords key, int64_t count) {
  std::vector<uint32_t> words(static_cast<size_t>(count + count % 2));
  auto half = static_cast<uint32_t>((count + 1) / 2);
  for (uint32_t j = 0; j < half; ++j) {
    uint32_t high = half + j;
    ThreefryWords out = threefry2x32(key, {j, high == count ? 0u : high});
    words[j] = out[0];
    words[half + j] = out[1];
  }
  words.resize(static_cast<size_t>(count));
  return words;
}

Array evaluate_random_bits(const Node& node, std::span<const Array> inputs) {
  Array result = detail::allocate(node.type);
  int64_t n = node.type.size();
  std::vector<uint32_t> words = random_words(key_words(inputs[0]), n);
  int32_t* out = detail::impl(result)->mutable_data<int32_t>();
  // uint32 -> int32 keeps the bit pattern (modular since C++20).
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<int32_t>(words[static_cast<size_t>(i)]);
  return result;
}

// Random mantissa bits under the exponent of 1.0 give a float in [1, 2);
// subtracting 1 leaves a multiple of 2^-23 (f32) or 2^-52 (f64) in [0, 1).
Array evaluate_random_uniform(const Node& node, std::span<const Array> inputs) {
  Array result = detail::allocate(node.type);
  int64_t n = node.type.size();
  ThreefryWords key = key_words(inputs[0]);
  if (node.type.dtype == DType::f32) {
    std::vector<uint32_t> words = random_words(key, n);
    float* out = detail::impl(result)->mutable_data<float>();
    for (int64_t i = 0; i < n; ++i) {
      uint32_t bits = (words[static_cast<size_t>(i)] >> 9) | 0x3F800000u;
      float value;
      std::memcpy(&value, &bits, sizeof value);
      out[i] = value - 1.0f;
    }
  } else {
    std::vector<uint32_t> words = random_words(key, 2 * n);
    double* out = detail::impl(result)->mutable_data<double>();
    for (int64_t i = 0; i < n; ++i) {
      uint64_t word = (uint64_t{words[static_cast<size_t>(i)]} << 32) | words[static_cast<size_t>(n + i)];
      uint64_t bits = (word >> 12) | 0x3FF0000000000000u;
      double value;
      std::memcpy(&value, &bits, sizeof value);
      out[i] = value - 1.0;
    }
  }
  return result;
}

std::string describe_random(const Node& node) {
  std::string text = "shape=" + shape_string(node.attrs.shape);
  if (node.op == Primitive::random_uniform) text += " dtype=" + std::string(dtype_name(node.attrs.dtype));
  return text;
}

// ---- builder helpers ---------------------------------------------------------------

void check_key(const char* operation, const Array& key, Location where) {
  check_key_type(operation, detail::impl_of(key, operation, where).type, where);
}

void check_float(const char* operation, DType dtype, Location where) {
  if (!is_floating(dtype))
    detail::raise(operation, "dtype must be floating (f16, bf16, f32, f64), got " + std::string(dtype_name(dtype)),
                  where, "draw floats and convert with astype");
}

Array draw_bits(const Array& key, Shape shape, Location where) {
  ir::Attributes attrs;
  attrs.shape = std::move(shape);
  return detail::apply(Primitive::random_bits, {key}, std::move(attrs), where);
}

Array draw_uniform(const Array& key, Shape shape, DType dtype, Location where) {
  if (is_half(dtype)) {
    // As JAX: as many random bits as the dtype has fraction bits, so every
    // value is exact in it and below 1.
    double steps = dtype == DType::f16 ? 0x1p10 : 0x1p7;
    Array unit = draw_uniform(key, std::move(shape), DType::f32, where);
    return astype(floor(unit * steps) / steps, dtype, where);
  }
  ir::Attributes attrs;
  attrs.shape = std::move(shape);
  attrs.dtype = dtype;
  return detail::apply(Primitive::random_uniform, {key}, std::move(attrs), where);
}

// The integers of an integer dtype as [lowest, past_highest) in doubles (exact: powers of two).
std::pair<double, double> dtype_value_range(DType dtype) {
  auto bits = static_cast<int>(8 * dtype_size(dtype));
  if (is_unsigned(dtype)) return {0.0, std::ldexp(1.0, bits)};
  return {-std::ldexp(1.0, bits - 1), std::ldexp(1.0, bits - 1)};
}

// The neighbour of a 16-bit float towards +infinity (up) or -infinity.
template <HalfFloat H>
H half_step(H value, bool up) {
  uint16_t bits = value.bits();
  if ((bits & 0x7FFF) == 0) return H::from_bits(up ? 0x0001 : 0x8001);
  bool negative = (bits & 0x8000) != 0;
  return H::from_bits(static_cast<uint16_t>(up != negative ? bits + 1 : bits - 1));
}

// The nearest value of a 16-bit float type above or equal (up) or strictly below `value`.
template <HalfFloat H>
double half_bound(double value, bool up) {
  H rounded(value);
  double back = static_cast<float>(rounded);
  if (up ? back < value : back >= value) rounded = half_step(rounded, up);
  return static_cast<float>(rounded);
}

/// The smallest value of `dtype` that is >= value.
double round_up(double value, DType dtype) {
  if (dtype == DType::f16) return half_bound<float16>(value, true);
  if (dtype == DType::bf16) return half_bound<bfloat16>(value, true);
  if (dtype == DType::f64) return value;
  auto rounded = static_cast<float>(value);
  if (static_cast<double>(rounded) < value) rounded = std::nextafter(rounded, std::numeric_limits<float>::infinity());
  return rounded;
}

/// The largest value of `dtype` that is < value.
double below(double value, DType dtype) {
  if (dtype == DType::f16) return half_bound<float16>(value, false);
  if (dtype == DType::bf16) return half_bound<bfloat16>(value, false);
  if (dtype == DType::f64) return std::nextafter(value, -std::numeric_limits<double>::infinity());
  auto rounded = static_cast<float>(value);
  if (static_cast<double>(rounded) >= value) rounded = std::nextafter(rounded, -std::numeric_limits<float>::infinity());
  return rounded;
}

}  // namespace

void register_random_rules(RuleTable& table) {
  // The only input is an integer key, so the samples are constants of
  // differentiation. Threefry is a few dozen integer operations per pair of words.
  // A batch of keys gives each lane its own stream (JAX's semantics); the
  // kernel takes one key, so each lane is drawn by its own node.
  table[static_cast<size_t>(Primitive::random_bits)] = {.infer = &infer_random,
                                                        .evaluate = &evaluate_random_bits,
                                                        .describe = &describe_random,
                                                        .no_derivative = "integer key and integer result",
                                                        .batch = &batch_lane_by_lane,
                                                        .fusion = Fusion::kernel,
                                                        .cost = 16,
                                                        .kernel = NativeKernel::random};
  table[static_cast<size_t>(Primitive::random_uniform)] = {.infer = &infer_random,
                                                           .evaluate = &evaluate_random_uniform,
                                                           .describe = &describe_random,
                                                           .no_derivative = "integer key: samples are constants",
                                                           .batch = &batch_lane_by_lane,
                                                           .fusion = Fusion::kernel,
                                                           .cost = 16,
                                                           .kernel = NativeKernel::random};
}

}  // namespace ops

namespace random {

using detail::OperationScope;

Array key(uint64_t seed, Location where) {
  OperationScope at("random.key", where);
  // As JAX: [seed >> 32, seed & 0xffffffff], each word's bits kept in an i32.
  auto high = static_cast<int32_t>(static_cast<uint32_t>(seed >> 32));
  auto low = static_cast<int32_t>(static_cast<uint32_t>(seed));
  // Built from literals so that a key made inside a trace stays a number of
  // the graph rather than a captured array.
  Array first = ops::iota(DType::i32, {2}, 0, where) == 0;
  return kiln::where(first, detail::literal(high, DType::i32, false, where),
                     detail::literal(low, DType::i32, false, where));
}

Array split(const Array& key, int64_t n, Location where) {
  ops::check_key("random.split", key, where);
  if (n < 0) detail::raise("random.split", "n must be >= 0, got " + std::to_string(n), where);
  return ops::draw_bits(key, {n, 2}, where);
}

std::vector<Array> split_keys(const Array& key, int64_t n, Location where) {
  Array keys = split(key, n, where);
  std::vector<Array> result;
  result.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) result.push_back(take(keys, detail::literal(i, DType::i32, false, where), 0, where));
  return result;
}

Array uniform(const Array& key, Shape shape, DType dtype, double minval, double maxval, Location where) {
  OperationScope at("random.uniform", where);
  ops::check_key("random.uniform", key, where);
  ops::check_float("random.uniform", dtype, where);
  ops::check_draw_shape("random.uniform", shape, dtype == DType::f64 ? 2 : 1, where);
  if (!(minval < maxval) || !std::isfinite(minval) || !std::isfinite(maxval))
    detail::raise("random.uniform",
                  "needs finite minval < maxval, got [" + std::to_string(minval) + ", " + std::to_string(maxval) + ")",
                  where);
  double scale = maxval - minval;
  bool scale_fits = dtype == DType::f64   ? std::isfinite(scale)
                    : dtype == DType::f16 ? std::isfinite(static_cast<float>(float16(scale)))
                                          : std::isfinite(static_cast<float>(scale));
  if (!scale_fits)
    detail::raise("random.uniform",
                  "maxval - minval overflows " + std::string(dtype_name(dtype)) + " for [" + std::to_string(minval) +
                      ", " + std::to_string(maxval) + ")",
                  where, "draw in f64, or draw in [0, 1) and shift in two steps");
  // As JAX: u * (maxval - minval) + minval. Rounding can land on maxval (or
  // below minval), so the result is clamped into the dtype's values of
  // [minval, maxval).
  double lo = ops::round_up(minval, dtype);
  double hi = ops::below(maxval, dtype);
  if (lo > hi)
    detail::raise("random.uniform",
                  "no " + std::string(dtype_name(dtype)) + " value lies in [" + std::to_string(minval) + ", " +
                      std::to_string(maxval) + ")",
                  where, "widen the interval or draw in f64");
  Array unit = ops::draw_uniform(key, std::move(shape), dtype, where);
  if (minval == 0 && maxval == 1) return unit;
  return clip(unit * scale + minval, lo, hi);
}

Array normal(const Array& key, Shape shape, DType dtype, Location where) {
  OperationScope at("random.normal", where);
  ops::check_key("random.normal", key, where);
  ops::check_float("random.normal", dtype, where);
  ops::check_draw_shape("random.normal", shape, dtype == DType::f64 ? 2 : 1, where);
  std::vector<Array> keys = split_keys(key, 2, where);
  Array u1 = ops::draw_uniform(keys[0], shape, dtype, where);
  Array u2 = ops::draw_uniform(keys[1], shape, dtype, where);
  // Box–Muller. 1 - u1 lies in (0, 1] (exactly, since u1 is a multiple of the
  // mantissa step), so the logarithm is finite; the largest radius is
  // sqrt(2 * 23 * ln 2) ~ 5.6 for f32 and ~ 8.5 for f64.
  Array radius = sqrt(-2 * log(1 - u1));
  return radius * cos(2 * std::numbers::pi * u2);
}

Array randint(const Array& key, Shape shape, int64_t minval, int64_t maxval, DType dtype, Location where) {
  OperationScope at("random.randint", where);
  ops::check_key("random.randint", key, where);
  if (!is_integer(dtype))
    detail::raise("random.randint", "dtype must be an integer dtype, got " + std::string(dtype_name(dtype)), where,
                  "draw integers and convert with astype");
  if (minval >= maxval)
    detail::raise("random.randint",
                  "needs minval < maxval, got [" + std::to_string(minval) + ", " + std::to_string(maxval) + ")", where);
  // Draws go through i64: [minval, maxval) must hold values of the dtype
  // (u64 draws below 2^63 only).
  auto [lowest, past_highest] = ops::dtype_value_range(dtype);
  if (static_cast<double>(minval) < lowest || static_cast<double>(maxval) > past_highest)
    detail::raise("random.randint",
                  "[" + std::to_string(minval) + ", " + std::to_string(maxval) + ") does not fit in " +
                      std::string(dtype_name(dtype)),
                  where, "use a wider dtype (kiln::i64)");
  ops::check_draw_shape("random.randint", shape, 2, where);
  // offset = floor(u * span) with u a 52-bit uniform in [0, 1). For spans up
  // to 2^52 every offset is reachable and each has probability within about
  // a relative span * 2^-52 of 1/span (about 2^-20 at most for an i32 range);
  // wider i64 spans reach only a grid of about 2^52 evenly spaced values.
  uint64_t span = static_cast<uint64_t>(maxval) - static_cast<uint64_t>(minval);
  auto span_value = static_cast<double>(span);
  // The largest double not above span - 1 keeps the offset in range whatever
  // the rounding of u * span.
  double cap = static_cast<double>(span - 1);
  if (cap >= 0x1p64 || static_cast<uint64_t>(cap) > span - 1) cap = std::nextafter(cap, 0.0);
  Array unit = ops::draw_uniform(key, std::move(shape), DType::f64, where);
  Array offset = minimum(floor(unit * span_value), cap);
  Array offset_i64;
  if (cap < 0x1p63) {
    offset_i64 = astype(offset, DType::i64, where);
  } else {
    // Offsets from 2^63 on do not fit in i64: convert them less 2^63 (exact,
    // doubles there are multiples of 2^11) and add 2^63 back, wrapping.
    Array high = offset >= 0x1p63;
    Array reduced = kiln::where(high, offset - 0x1p63, offset);
    Array shift = kiln::where(high, detail::literal(std::numeric_limits<int64_t>::min(), DType::i64, false, where),
                              detail::literal(int64_t{0}, DType::i64, false, where));
    offset_i64 = astype(reduced, DType::i64) + shift;
  }
  // i64 addition wraps, so minval + offset is exact modulo 2^64 and lands in [minval, maxval).
  return astype(offset_i64 + detail::literal(minval, DType::i64, false, where), dtype);
}

Array bernoulli(const Array& key, double p, Shape shape, Location where) {
  OperationScope at("random.bernoulli", where);
  ops::check_key("random.bernoulli", key, where);
  if (!(p >= 0 && p <= 1)) detail::raise("random.bernoulli", "p must lie in [0, 1], got " + std::to_string(p), where);
  ops::check_draw_shape("random.bernoulli", shape, 1, where);
  // As JAX: u < p with u an f32 uniform, so the probability is p rounded to a
  // multiple of 2^-23 (after rounding p to f32); p = 0 and p = 1 are exact.
  Array unit = ops::draw_uniform(key, std::move(shape), DType::f32, where);
  return unit < p;
}

}  // namespace random
}  // namespace kiln
