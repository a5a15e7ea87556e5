// Collectives over MPI, run by ctest alone (a world of one) and under
// `mpirun -np 2` and `-np 3`. Every rank runs every test; each checks its own
// results against the same computation done in this one process (each rank
// can rebuild every other rank's input: they are functions of the rank).
#include <gtest/gtest.h>
#include <kiln/distributed.h>
#include <kiln/kiln.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "support/errors.h"

namespace kiln {
namespace {

namespace dist = kiln::distributed;
using dist::ReduceOp;

int expected_world() {
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  return size ? std::atoi(size) : 1;
}

// What rank r holds: values that differ by rank and by element.
Array input_of(int r, Shape shape, DType dtype) {
  int64_t count = 1;
  for (int64_t extent : shape) count *= extent;
  Array values = arange(0, count, 1, f64) * (r + 1) + 3.0 * r - 0.5 * (static_cast<double>(count) / 2);
  return astype(reshape(values, shape), dtype);
}

std::vector<Array> every_input(Shape shape, DType dtype) {
  std::vector<Array> inputs;
  for (int r = 0; r < dist::world_size(); ++r) inputs.push_back(input_of(r, shape, dtype));
  return inputs;
}

bool close(const Array& got, const Array& expected, double tolerance) {
  std::vector<double> a = astype(got, f64).to_vector<double>(), b = astype(expected, f64).to_vector<double>();
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (std::abs(a[k] - b[k]) > tolerance * (1 + std::abs(b[k]))) return false;
  return true;
}

void expect_same(const Array& got, const Array& expected, const std::string& what) {
  ASSERT_EQ(got.dtype(), expected.dtype()) << what;
  ASSERT_EQ(got.shape(), expected.shape()) << what;
  EXPECT_TRUE(close(got, expected, 1e-6)) << what << "\ngot " << got << "\nexpected " << expected;
}

TEST(Distributed, TheWorldIsTheLaunch) {
  dist::init();
  EXPECT_EQ(dist::world_size(), expected_world());
  EXPECT_GE(dist::rank(), 0);
  EXPECT_LT(dist::rank(), dist::world_size());
  dist::barrier();
}

TEST(Distributed, EveryCollectiveAndDtypeMatchesOneProcess) {
  const int world = dist::world_size(), me = dist::rank();
  for (DType dtype : {f32, f64, i32, i64}) {
    std::string name(dtype_name(dtype));
    Array x = input_of(me, {2 * world, 3}, dtype);
    std::vector<Array> all = every_input({2 * world, 3}, dtype);
    Array sum = all[0], high = all[0], low = all[0];
    for (int r = 1; r < world; ++r) {
      sum = sum + all[static_cast<size_t>(r)];
      high = maximum(high, all[static_cast<size_t>(r)]);
      low = minimum(low, all[static_cast<size_t>(r)]);
    }
    auto reduce_scattered = [&](int64_t axis) {
      int64_t block = sum.shape()[static_cast<size_t>(axis)] / world;
      std::vector<int64_t> start{0, 0}, stop{sum.shape()[0], sum.shape()[1]};
      start[static_cast<size_t>(axis)] = me * block;
      stop[static_cast<size_t>(axis)] = (me + 1) * block;
      return slice(sum, start, stop);
    };
    // Eagerly, then inside jit (where each is a node the compiled code runs).
    for (bool jitted : {false, true}) {
      auto run = [&](auto fn) { return jitted ? jit(fn)(x) : fn(x); };
      std::string how = name + (jitted ? " under jit" : " eagerly");
      expect_same(run([](const Array& v) { return dist::all_reduce(v, ReduceOp::sum); }), sum, "sum " + how);
      expect_same(run([](const Array& v) { return dist::all_reduce(v, ReduceOp::max); }), high, "max " + how);
      expect_same(run([](const Array& v) { return dist::all_reduce(v, ReduceOp::min); }), low, "min " + how);
      if (is_floating(dtype))
        expect_same(run([](const Array& v) { return dist::all_reduce(v, ReduceOp::mean); }), sum / world,
                    "mean " + how);
      expect_same(run([](const Array& v) { return dist::all_gather(v, 0); }), concatenate(all, 0),
                  "all_gather axis 0 " + how);
      expect_same(run([](const Array& v) { return dist::all_gather(v, 1); }), concatenate(all, 1),
                  "all_gather axis 1 " + how);
      expect_same(run([](const Array& v) { return dist::reduce_scatter(v, 0); }), reduce_scattered(0),
                  "reduce_scatter axis 0 " + how);
      expect_same(run([](const Array& v) { return dist::broadcast(v, 0); }), all.front(), "broadcast 0 " + how);
      expect_same(run([world](const Array& v) { return dist::broadcast(v, world - 1); }), all.back(),
                  "broadcast last " + how);
    }
    Array wide = input_of(me, {2, 3 * world}, dtype);
    std::vector<Array> every_wide = every_input({2, 3 * world}, dtype);
    Array wide_sum = every_wide[0];
    for (int r = 1; r < world; ++r) wide_sum = wide_sum + every_wide[static_cast<size_t>(r)];
    expect_same(dist::reduce_scatter(wide, 1), slice(wide_sum, {0, 3 * me}, {2, 3 * (me + 1)}),
                "reduce_scatter axis 1 " + name);
  }
  // bool: max is any, min is all.
  Array flags = array({me == 0, true, false});
  Array any = dist::all_reduce(flags, ReduceOp::max), every = dist::all_reduce(flags, ReduceOp::min);
  EXPECT_EQ(any.to_vector<bool>(), (std::vector<bool>{true, true, false}));
  EXPECT_EQ(every.to_vector<bool>(), (std::vector<bool>{world == 1, true, false}));
  EXPECT_EQ(jit([] { return dist::all_reduce(dist::rank_array(), ReduceOp::sum); })().item<int32_t>(),
            world * (world - 1) / 2);
}

// ---- The narrow, unsigned and 16-bit float dtypes --------------------------------------
//
// Element k of rank r, exactly representable in T. Integers: the extremes at
// the front, then bit patterns spread over the whole range, so sums wrap.
// f16 and bf16: element 0 is 1 on rank 0 and half an ulp of 1 elsewhere (one
// by one, each addition ties back to 1; summed in f32 and rounded once, three
// ranks give 1 + ulp); elements 1 and 2 overflow f16/bf16 when summed (their
// mean does not); the rest are small multiples of 3/8, whose f32 sums are
// exact in any order.
template <class T>
T element_of(int r, int64_t k) {
  if constexpr (HalfFloat<T>) {
    constexpr bool is_f16 = std::is_same_v<T, float16>;
    const double big = is_f16 ? 40000.0 : std::ldexp(1.0, 127);
    switch (k) {
      case 0: return T(r == 0 ? 1.0 : std::ldexp(1.0, is_f16 ? -11 : -8));
      case 1: return T(big);
      case 2: return T(-big);
      case 3: return T(r == 1 ? -0.5 : 0.25 * (r + 1));
      default: break;
    }
    double m = static_cast<double>((k * 37 + r * 11) % 97 - 48) * 0.375;
    return T(std::ldexp(m, static_cast<int>(k % 5)));
  } else {
    using limits = std::numeric_limits<T>;
    switch (k) {
      case 0: return limits::max();
      case 1: return r % 2 ? limits::min() : limits::max();
      case 2: return limits::min();
      case 3: return static_cast<T>(r + 1);
      default: break;
    }
    return static_cast<T>(static_cast<uint64_t>(k) * 0x9E3779B97F4A7C15ull +
                          static_cast<uint64_t>(r) * 0xBF58476D1CE4E5B9ull);
  }
}

template <class T>
std::vector<T> elements_of(int r, int64_t count) {
  std::vector<T> values;
  for (int64_t k = 0; k < count; ++k) values.push_back(element_of<T>(r, k));
  return values;
}

template <class T>
std::vector<uint64_t> bits_of(const std::vector<T>& values) {
  std::vector<uint64_t> bits;
  for (T v : values) {
    if constexpr (HalfFloat<T>) bits.push_back(v.bits());
    else bits.push_back(static_cast<uint64_t>(v));
  }
  return bits;
}

/// got holds exactly `expected` (bit for bit) with dtype T and `shape`.
template <class T>
void expect_bits(const Array& got, const std::vector<T>& expected, const Shape& shape, const std::string& what) {
  ASSERT_EQ(got.dtype(), dtype_of<T>()) << what;
  ASSERT_EQ(got.shape(), shape) << what;
  EXPECT_EQ(bits_of(got.to_vector<T>()), bits_of(expected)) << what << "\ngot " << got;
}

/// What every rank expects from each collective, computed in this process:
/// integer sums wrap (modulo 2^bits); f16 and bf16 sums and means are taken
/// in f32 and rounded once.
template <class T>
void expect_collectives_match_one_process() {
  const int world = dist::world_size(), me = dist::rank();
  // Rows of 40 elements: long enough for MPI's vectorized reductions.
  const int64_t columns = 40;
  const Shape shape{2 * world, columns};
  const int64_t count = 2 * world * columns;
  const std::string name(dtype_name(dtype_of<T>()));
  std::vector<std::vector<T>> every;
  for (int r = 0; r < world; ++r) every.push_back(elements_of<T>(r, count));
  std::vector<T> sum, high, low, mean;
  for (int64_t k = 0; k < count; ++k) {
    auto at = [&](int r) { return every[static_cast<size_t>(r)][static_cast<size_t>(k)]; };
    T most = at(0), least = at(0);
    for (int r = 1; r < world; ++r) {
      most = std::max(most, at(r), [](T a, T b) { return a < b; });
      least = std::min(least, at(r), [](T a, T b) { return a < b; });
    }
    high.push_back(most);
    low.push_back(least);
    if constexpr (HalfFloat<T>) {
      double exact = 0;
      for (int r = 0; r < world; ++r) exact += static_cast<float>(at(r));
      auto in_f32 = static_cast<float>(exact);
      ASSERT_TRUE(std::isinf(in_f32) || static_cast<double>(in_f32) == exact)
          << name << " element " << k << ": the test's f32 sums must be exact, whatever the order";
      sum.push_back(T(in_f32));
      mean.push_back(T(in_f32 / static_cast<float>(world)));
    } else {
      uint64_t wrapped = 0;
      for (int r = 0; r < world; ++r) wrapped += static_cast<uint64_t>(at(r));
      sum.push_back(static_cast<T>(wrapped));
    }
  }
  if constexpr (HalfFloat<T>) {
    // Rounding once is not rounding after each addition: 1 + ulp, not 1, at
    // three ranks. The sums of elements 1 and 2 overflow; their means do not.
    T one_by_one = every[0][0];
    for (int r = 1; r < world; ++r) one_by_one = T(one_by_one + every[static_cast<size_t>(r)][0]);
    if (world >= 3) EXPECT_NE(sum[0].bits(), one_by_one.bits()) << name;
    if (world >= 2) {
      EXPECT_TRUE(std::isinf(static_cast<float>(sum[1])) && std::isinf(static_cast<float>(sum[2]))) << name;
      // f16's overflow fits in f32, so the mean is finite; bf16's overflows f32 too.
      if (std::is_same_v<T, float16>) EXPECT_EQ(mean[1].bits(), every[0][1].bits()) << name;
    }
  } else if (world >= 2) {
    EXPECT_EQ(sum[0], static_cast<T>(std::numeric_limits<T>::max() * static_cast<uint64_t>(world))) << name;
  }
  // Rank r's block of rows [2r, 2r + 2) for reduce_scatter; all_gather along
  // axis 0 stacks the ranks' rows, along axis 1 their columns.
  std::vector<T> scattered(sum.begin() + 2 * columns * me, sum.begin() + 2 * columns * (me + 1));
  std::vector<T> stacked, side_by_side;
  for (const std::vector<T>& values : every) stacked.insert(stacked.end(), values.begin(), values.end());
  for (int64_t row = 0; row < 2 * world; ++row)
    for (const std::vector<T>& values : every)
      side_by_side.insert(side_by_side.end(), values.begin() + columns * row, values.begin() + columns * (row + 1));

  Array x = array(every[static_cast<size_t>(me)], shape);
  for (bool jitted : {false, true}) {
    auto run = [&](auto fn) { return jitted ? jit(fn)(x) : fn(x); };
    std::string how = name + (jitted ? " under jit" : " eagerly") + " on rank " + std::to_string(me);
    expect_bits(run([](const Array& v) { return dist::all_reduce(v, ReduceOp::sum); }), sum, shape, "sum " + how);
    expect_bits(run([](const Array& v) { return dist::all_reduce(v, ReduceOp::max); }), high, shape, "max " + how);
    expect_bits(run([](const Array& v) { return dist::all_reduce(v, ReduceOp::min); }), low, shape, "min " + how);
    if constexpr (HalfFloat<T>)
      expect_bits(run([](const Array& v) { return dist::all_reduce(v, ReduceOp::mean); }), mean, shape, "mean " + how);
    expect_bits(run([](const Array& v) { return dist::reduce_scatter(v, 0); }), scattered, {2, columns},
                "reduce_scatter " + how);
    expect_bits(run([](const Array& v) { return dist::all_gather(v, 0); }), stacked, {2 * world * world, columns},
                "all_gather axis 0 " + how);
    expect_bits(run([](const Array& v) { return dist::all_gather(v, 1); }), side_by_side, {2 * world, columns * world},
                "all_gather axis 1 " + how);
    expect_bits(run([](const Array& v) { return dist::broadcast(v, 0); }), every.front(), shape,
                "broadcast from 0 " + how);
    expect_bits(run([world](const Array& v) { return dist::broadcast(v, world - 1); }), every.back(), shape,
                "broadcast from the last rank " + how);
  }
}

TEST(Distributed, NarrowUnsignedAndHalfDtypesMatchOneProcess) {
  expect_collectives_match_one_process<uint8_t>();
  expect_collectives_match_one_process<int8_t>();
  expect_collectives_match_one_process<int16_t>();
  expect_collectives_match_one_process<uint16_t>();
  expect_collectives_match_one_process<uint32_t>();
  expect_collectives_match_one_process<uint64_t>();
  expect_collectives_match_one_process<float16>();
  expect_collectives_match_one_process<bfloat16>();
  // Means are defined for floating dtypes only.
  const int line = __LINE__ + 1;
  auto mean_of_bytes = [] { dist::all_reduce(ones({2}, u8), ReduceOp::mean); };
  testing::expect_error(line, mean_of_bytes, {"[all_reduce]", "mean of u8 values", "astype"});
}

// The objective of a data-parallel program is the sum of every rank's loss;
// the gradient on rank r is its derivative by rank r's input. Checked by
// central differences: every rank evaluates together, one rank's input moved.
template <class Loss>
void expect_gradient_matches_differences(const Loss& loss, const Array& x, const std::string& what) {
  Array gradient = jit(grad(loss))(x);
  const double step = 1e-6;
  std::vector<double> values = x.to_vector<double>();
  for (int owner = 0; owner < dist::world_size(); ++owner) {
    for (size_t i = 0; i < values.size(); ++i) {
      auto total = [&](double shift) {
        std::vector<double> moved = values;
        if (dist::rank() == owner) moved[i] += shift;
        Array mine = loss(reshape(array(moved), x.shape()));
        return dist::all_reduce(mine, ReduceOp::sum).item<double>();
      };
      double estimate = (total(step) - total(-step)) / (2 * step);
      if (dist::rank() == owner)
        EXPECT_NEAR(gradient.to_vector<double>()[i], estimate, 1e-6 * std::max(1.0, std::abs(estimate)))
            << what << " element " << i;
    }
  }
}

// Jitted calls with collectives, and eager collectives, are queued (their
// order must be every rank's); the barrier, called on this thread, comes
// after them.
TEST(Distributed, QueuedCollectivesKeepTheirOrderOnEveryRank) {
  Shape shape{64, 512};
  Array total = zeros(shape);
  for (const Array& input : every_input(shape, f32)) total = total + input;
  auto doubled_sum = jit([](const Array& v) { return dist::all_reduce(v * 2.0f); }, {.name = "queued_reduce"});
  Array reduced = doubled_sum(input_of(dist::rank(), shape, f32));
  Array largest = dist::all_reduce(reduced + 1.0f, ReduceOp::max);  // on a pending input: after it
  Array gathered = dist::all_gather(largest, 0);
  dist::barrier();
  std::vector<Array> copies(static_cast<size_t>(dist::world_size()), total * 2.0f + 1.0f);
  EXPECT_EQ(gathered.to_vector<float>(), concatenate(copies, 0).to_vector<float>());
}

TEST(Distributed, GradientsThroughCollectivesMatchFiniteDifferences) {
  const int world = dist::world_size(), me = dist::rank();
  Array x = input_of(me, {world, 2}, f64) * 0.1;
  expect_gradient_matches_differences([](const Array& v) { return sum(sin(dist::all_reduce(v, ReduceOp::sum)) * v); },
                                      x, "all_reduce sum");
  expect_gradient_matches_differences(
      [](const Array& v) { return sum(cos(dist::all_reduce(v * v, ReduceOp::mean)) * v); }, x, "all_reduce mean");
  expect_gradient_matches_differences([](const Array& v) { return sum(square(dist::all_reduce(v, ReduceOp::max))); }, x,
                                      "all_reduce max");
  expect_gradient_matches_differences([](const Array& v) { return sum(exp(dist::all_gather(v, 1)) * 0.5); }, x,
                                      "all_gather");
  expect_gradient_matches_differences([](const Array& v) { return sum(tanh(dist::reduce_scatter(v * v, 0))); }, x,
                                      "reduce_scatter");
  expect_gradient_matches_differences([](const Array& v) { return sum(dist::broadcast(v, 0) * v); }, x, "broadcast");
}

struct Mlp {
  Array w1, b1, w2, b2;
};
}  // namespace
}  // namespace kiln

KILN_TREE(kiln::Mlp, w1, b1, w2, b2);

namespace kiln {
namespace {

Array mlp_loss(const Mlp& p, const Array& x, const Array& y) {
  Array hidden = tanh(matmul(x, p.w1) + p.b1);
  return mean(square(matmul(hidden, p.w2) + p.b2 - y));
}

TEST(Distributed, DataParallelTrainingMatchesOneProcessOnTheFullBatch) {
  const int world = dist::world_size(), me = dist::rank();
  const int64_t shard = 8;
  Array x = random::normal(random::key(11), {shard * world, 16});
  Array y = random::normal(random::key(12), {shard * world, 4});
  Mlp start{random::normal(random::key(1), {16, 32}) * 0.3f, zeros({32}),
            random::normal(random::key(2), {32, 4}) * 0.3f, zeros({4})};
  auto update = [](const Mlp& p, const Mlp& g) {
    return tree_map([](const Array& w, const Array& d) { return w - 0.1f * d; }, p, g);
  };
  auto parallel = jit([&](const Mlp& p, const Array& bx, const Array& by) {
    return update(p, dist::average_gradients(grad(mlp_loss)(p, bx, by)));
  });
  auto alone =
      jit([&](const Mlp& p, const Array& bx, const Array& by) { return update(p, grad(mlp_loss)(p, bx, by)); });
  Array my_x = slice(x, {me * shard, 0}, {(me + 1) * shard, 16});
  Array my_y = slice(y, {me * shard, 0}, {(me + 1) * shard, 4});
  Mlp shared = start, reference = start;
  for (int step = 0; step < 20; ++step) {
    shared = parallel(shared, my_x, my_y);
    reference = alone(reference, x, y);
  }
  std::vector<Array> got = tree_leaves(shared), expected = tree_leaves(reference);
  for (size_t k = 0; k < got.size(); ++k)
    EXPECT_TRUE(close(got[k], expected[k], 1e-5)) << "parameter " << k << "\n" << got[k] << "\n" << expected[k];
  // The parameters stay identical across ranks, bit for bit.
  for (const Array& leaf : got) expect_same(dist::broadcast(leaf, 0), leaf, "parameters on rank 0");
}

TEST(Distributed, ARankDependentNumberRaisesOnEveryRankInsteadOfHanging) {
  float scale = static_cast<float>(dist::rank() + 1);
  auto scaled = jit([scale](const Array& v) { return dist::all_reduce(v * scale); }, {.name = "scaled"});
  Array x = ones({3});
  if (dist::world_size() == 1) {
    EXPECT_EQ(scaled(x).to_vector<float>(), (std::vector<float>{1, 1, 1}));
    return;
  }
  testing::expect_error(__LINE__ - 6, [&] { scaled(x); },
                        {"[jit]", "'scaled' would run different graphs on different ranks", "rank 0:", "literal 1.0",
                         "literal 2.0", "distributed::rank()"});
  // Read at run time instead, the rank keeps the graph the same everywhere.
  auto read_at_run_time = jit([](const Array& v) { return dist::all_reduce(v * astype(dist::rank_array(), f32)); });
  float total = static_cast<float>(dist::world_size() * (dist::world_size() - 1) / 2);
  EXPECT_EQ(read_at_run_time(x).to_vector<float>(), (std::vector<float>{total, total, total}));
}

TEST(Distributed, EagerCollectivesThatDisagreeRaiseOnEveryRank) {
  Array mine = zeros({dist::rank() + 1});
  if (dist::world_size() == 1) return;
  const int line = __LINE__ + 1;
  auto disagreeing = [&] { dist::all_reduce(mine); };
  testing::expect_error(line, disagreeing,
                        {"[all_reduce]", "the ranks disagree", "rank 0: all_reduce(0) of f32[1]",
                         "rank 1: all_reduce(0) of f32[2]", "same collectives in the same order"});
}

TEST(Distributed, ErrorsNameTheOperationAndTheFix) {
  const int mean_line = __LINE__ + 1;
  auto mean_of_integers = [] { dist::all_reduce(ones({2}, i32), ReduceOp::mean); };
  testing::expect_error(mean_line, mean_of_integers, {"[all_reduce]", "mean of i32 values", "astype"});
  const int sum_line = __LINE__ + 1;
  auto sum_of_bools = [] { dist::all_reduce(ones({2}, bool_), ReduceOp::sum); };
  testing::expect_error(sum_line, sum_of_bools, {"[all_reduce]", "sum of bool values", "max (any) or min (all)"});
  const int gather_line = __LINE__ + 1;
  auto gather_scalar = [] { dist::all_gather(ones({}), 0); };
  testing::expect_error(gather_line, gather_scalar, {"[all_gather]", "0-d", "reshape it to [1]"});
  if (dist::world_size() == 1) return;
  const int scatter_line = __LINE__ + 1;
  auto uneven = [] { dist::reduce_scatter(ones({dist::world_size() + 1}), 0); };
  testing::expect_error(scatter_line, uneven, {"[reduce_scatter]", "not a multiple of the world's", "pad that axis"});
}

}  // namespace
}  // namespace kiln
