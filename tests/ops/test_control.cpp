// Control flow through the public API: while_loop, cond, switch_, fori_loop
// and scan against the same computation written as plain C++ loops and
// branches, eagerly and under jit (both backends: tests/backend/
// test_control_backends.cpp runs the graphs on each), with captured arrays
// and churning literals inside bodies, and every mismatch as an error naming
// the operation, the path in the tree and this file's line.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <utility>
#include <vector>

#include "support/errors.h"
#include "support/numpy_oracle.h"

namespace kiln {
namespace {

using testing::all_close;
using testing::expect_error;

// Bit for bit: eager operations and compiled kernels round alike (eager
// equals compiled), so a loop must give exactly what its unrolled form gives.
void expect_same(const Array& got, const Array& expected, const std::string& context) {
  ASSERT_EQ(got.dtype(), expected.dtype()) << context;
  ASSERT_EQ(got.shape(), expected.shape()) << context;
  EXPECT_TRUE(all_close(got, expected, 0, 0, context)) << context;
}

using Counted = std::pair<Array, Array>;

Counted halve_until_below_one(const Array& x0) {
  return while_loop([](const Counted& c) { return c.first >= 1.0f; },
                    [](const Counted& c) {
                      return Counted{c.first * 0.5f, c.second + 1};
                    },
                    Counted{x0, zeros({}, i32)});
}

TEST(WhileLoop, HalvesUntilBelowOneEagerlyAndCompiled) {
  auto compiled = jit(halve_until_below_one);
  for (float start : {0.5f, 1.0f, 37.0f, 1e6f}) {
    float x = start;
    int32_t count = 0;
    while (x >= 1.0f) x *= 0.5f, ++count;
    for (const Counted& got : {halve_until_below_one(full({}, start, f32)), compiled(full({}, start, f32))}) {
      EXPECT_EQ(got.first.item<float>(), x) << start;
      EXPECT_EQ(got.second.item<int32_t>(), count) << start;
    }
  }
  EXPECT_EQ(compiled.stats().calls, 4);
  EXPECT_EQ(compiled.stats().traces, 1);
}

// Newton's method for sqrt(a), elementwise, until every residual is small.
Array newton_sqrt(const Array& a) {
  using State = std::pair<Array, Array>;  // (x, iterations)
  auto more = [&a](const State& s) { return logical_and(max(abs(s.first * s.first - a)) > 1e-4f, s.second < 50); };
  auto step = [&a](const State& s) { return State{0.5f * (s.first + a / s.first), s.second + 1}; };
  return while_loop(more, step, State{a, zeros({}, i32)}).first;
}

Array newton_sqrt_unrolled(const Array& a) {
  Array x = a;
  for (int i = 0; i < 50 && max(abs(x * x - a)).item<float>() > 1e-4f; ++i) x = 0.5f * (x + a / x);
  return x;
}

TEST(WhileLoop, NewtonIterationMatchesTheUnrolledLoop) {
  Array a = array({2.0f, 9.0f, 0.25f, 100.0f, 1e4f});
  Array expected = newton_sqrt_unrolled(a);
  expect_same(newton_sqrt(a), expected, "eager");
  expect_same(jit(newton_sqrt)(a), expected, "jit");
  EXPECT_TRUE(all_close(expected, sqrt(a), 1e-5, 0));
}

TEST(Cond, TakesEitherBranchFromOneCompile) {
  auto choose = [](const Array& x, const Array& scale) {
    return cond(
        sum(x) > 0,
        [](const Array& v, const Array& s) {
          return std::pair{v * s, sum(v)};
        },
        [](const Array& v, const Array& s) {
          return std::pair{v - s, max(v)};
        },
        x, scale);
  };
  auto compiled = jit(choose);
  Array scale = full({}, 3.0f, f32);
  for (const Array& x : {array({1.0f, 2.0f}), array({-1.0f, -5.0f})}) {
    bool positive = sum(x).item<float>() > 0;
    Array first = positive ? x * scale : x - scale;
    Array second = positive ? sum(x) : max(x);
    for (const auto& [got_first, got_second] : {choose(x, scale), compiled(x, scale)}) {
      expect_same(got_first, first, "first result");
      expect_same(got_second, second, "second result");
    }
  }
  EXPECT_EQ(compiled.stats().compiles, 1);
}

TEST(Switch, ClampsTheIndexAndTakesTupleOrVectorBranches) {
  auto add_one = [](const Array& v) { return v + 1.0f; };
  auto twice = [](const Array& v) { return v * 2.0f; };
  auto square = [](const Array& v) { return v * v; };
  auto by_tuple = [&](const Array& index, const Array& x) {
    return switch_(index, std::tuple{add_one, twice, square}, x);
  };
  std::vector<std::function<Array(const Array&)>> list{add_one, twice, square};
  auto by_vector = [&](const Array& index, const Array& x) { return switch_(index, list, x); };
  Array x = array({1.5f, -2.0f, 3.0f});
  auto compiled = jit(by_tuple);
  for (int64_t index : {-3, 0, 1, 2, 7}) {
    Array expected = list[static_cast<size_t>(std::clamp<int64_t>(index, 0, 2))](x);
    for (DType dtype : {i32, i64}) {
      Array i = full({}, index, dtype);
      expect_same(by_tuple(i, x), expected, "tuple, eager");
      expect_same(by_vector(i, x), expected, "vector, eager");
      expect_same(compiled(i, x), expected, "tuple, jit");
    }
  }
  EXPECT_EQ(compiled.stats().compiles, 2);  // one per index dtype
}

// The RNN step of the tests and the example: h' = tanh(W h + U x + b), y = h'.
struct Rnn {
  Array w, u, b;
  std::pair<Array, Array> operator()(const Array& h, const Array& x) const {
    Array next = tanh(matmul(w, h) + matmul(u, x) + b);
    return {next, next};
  }
};

TEST(Scan, RnnOverOneHundredStepsMatchesTheUnrolledLoop) {
  const int64_t hidden = 8, inputs = 3, steps = 100;
  Rnn rnn{random::normal(random::key(1), {hidden, hidden}) * 0.3f,
          random::normal(random::key(2), {hidden, inputs}) * 0.5f, random::normal(random::key(3), {hidden}) * 0.1f};
  Array xs = random::normal(random::key(4), {steps, inputs});
  Array h0 = zeros({hidden});
  auto unrolled = [&rnn, steps, inputs](const Array& start, const Array& sequence) {
    std::vector<Array> hs;
    Array h = start;
    for (int64_t t = 0; t < steps; ++t) {
      h = rnn(h, reshape(slice(sequence, {t, 0}, {t + 1, inputs}), {inputs})).first;
      hs.push_back(h);
    }
    return std::pair{h, stack(hs)};
  };
  auto run = [&rnn](const Array& start, const Array& sequence) { return scan(rnn, start, sequence); };
  auto compiled = jit(run);
  // Eagerly both run the same operations; compiled, the same kernels. Between
  // the two, matrix products add in another order (BLAS against the reference).
  auto [eager_last, eager_stacked] = run(h0, xs);
  auto [expected_last, expected_stacked] = unrolled(h0, xs);
  expect_same(eager_last, expected_last, "eager final carry");
  expect_same(eager_stacked, expected_stacked, "eager stacked outputs");
  auto [last, stacked] = compiled(h0, xs);
  auto [compiled_last, compiled_stacked] = jit(unrolled)(h0, xs);
  expect_same(last, compiled_last, "compiled final carry");
  expect_same(stacked, compiled_stacked, "compiled stacked outputs");
  EXPECT_TRUE(all_close(stacked, expected_stacked, 1e-5, 1e-6, "compiled against eager"));
  // Reversed: the same as scanning the flipped sequence, outputs in original order.
  auto reversed =
      jit([&rnn](const Array& start, const Array& sequence) { return scan(rnn, start, sequence, std::nullopt, true); });
  auto [last_reversed, stacked_reversed] = reversed(h0, xs);
  auto [last_flipped, stacked_flipped] = compiled(h0, flip(xs, 0));
  expect_same(last_reversed, last_flipped, "reverse final carry");
  expect_same(stacked_reversed, flip(stacked_flipped, 0), "reverse outputs");
}

TEST(Scan, WithoutScannedArraysAndTreeCarries) {
  // Fibonacci pairs, ys a tree of two arrays per step.
  using Pair = std::pair<Array, Array>;
  auto step = [](const Pair& c, const std::tuple<>&) {
    return std::pair{Pair{c.second, c.first + c.second}, std::map<std::string, Array>{{"a", c.first}, {"b", c.second}}};
  };
  auto [last, ys] = scan(step, Pair{zeros({}, i64), full({}, 1, i64)}, no_xs, 10);
  EXPECT_EQ(last.first.item<int64_t>(), 55);
  EXPECT_EQ(ys.at("a").to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1, 2, 3, 5, 8, 13, 21, 34}));
  EXPECT_EQ(ys.at("b").shape(), (Shape{10}));
  auto [empty_last, empty_ys] = scan(step, Pair{zeros({}, i64), full({}, 1, i64)}, no_xs, 0);
  EXPECT_EQ(empty_last.second.item<int64_t>(), 1);
  EXPECT_EQ(empty_ys.at("a").shape(), (Shape{0}));
}

TEST(ForiLoop, StaticAndTracedBoundsGiveTheSum) {
  auto body = [](const Array& i, const Array& total) { return total + astype(i, f64); };
  auto fixed = [&](const Array& start) { return fori_loop(3, 13, body, start); };
  auto traced = [&](const Array& lo, const Array& hi, const Array& start) { return fori_loop(lo, hi, body, start); };
  double expected = 0.5;
  for (int i = 3; i < 13; ++i) expected += i;
  Array start = full({}, 0.5, f64);
  EXPECT_EQ(fixed(start).item<double>(), expected);
  EXPECT_EQ(jit(fixed)(start).item<double>(), expected);
  auto compiled = jit(traced);
  EXPECT_EQ(compiled(full({}, 3, i32), full({}, 13, i32), start).item<double>(), expected);
  EXPECT_EQ(compiled(full({}, 13, i32), full({}, 3, i32), start).item<double>(), 0.5);  // no iteration
  EXPECT_EQ(traced(full({}, 3, i32), full({}, 13, i64), start).item<double>(), expected);
  EXPECT_EQ(compiled.stats().compiles, 1);
}

TEST(ForiLoop, AMillionIterationsIsAGraphAsSmallAsTen) {
  auto loop = [](int64_t trips) {
    return [trips](const Array& x) {
      return fori_loop(
          0, trips, [](const Array&, const Array& v) { return v * 0.5f + 1.0f; }, x);
    };
  };
  Array x = full({}, 0.0f, f32);
  Graph ten = jit(loop(10)).lower(x), million = jit(loop(1000000)).lower(x);
  EXPECT_EQ(ten.num_nodes(), million.num_nodes());
  EXPECT_LT(ten.num_nodes(), 10u);
  // v -> v/2 + 1 converges to 2; float reaches it exactly.
  EXPECT_EQ(jit(loop(1000000))(x).item<float>(), 2.0f);
}

TEST(Nesting, CondInsideScanAndLoopsInsideLoops) {
  // Sum of positive entries minus the negatives' squares, row by row.
  auto per_row = [](const Array& total, const Array& row) {
    Array value = cond(
        sum(row) > 0, [](const Array& r) { return sum(r); }, [](const Array& r) { return -sum(r * r); }, row);
    return std::pair{total + value, value};
  };
  Array rows = array({1.0f, 2.0f, -3.0f, -1.0f, 0.5f, 0.25f}, {3, 2});
  auto run = [&](const Array& x) { return scan(per_row, full({}, 0.0f, f32), x); };
  Array expected_values = array({3.0f, -10.0f, 0.75f});
  for (const auto& [total, values] : {run(rows), jit(run)(rows)}) {
    expect_same(values, expected_values, "per row");
    EXPECT_EQ(total.item<float>(), 3.0f - 10.0f + 0.75f);
  }
  // A fori_loop inside a while_loop: triangular numbers until past a bound.
  auto nested = [](const Array& bound) {
    using State = std::pair<Array, Array>;  // (n, T(n))
    return while_loop([&bound](const State& s) { return s.second < bound; },
                      [](const State& s) {
                        Array n = s.first + 1;
                        Array t = fori_loop(
                            full({}, 0, i32), n + 1, [](const Array& i, const Array& acc) { return acc + i; },
                            zeros({}, i32));
                        return State{n, t};
                      },
                      State{zeros({}, i32), zeros({}, i32)});
  };
  for (const auto& [n, t] : {nested(full({}, 100, i32)), jit(nested)(full({}, 100, i32))}) {
    EXPECT_EQ(n.item<int32_t>(), 14);  // T(14) = 105 is the first above 100
    EXPECT_EQ(t.item<int32_t>(), 105);
  }
}

TEST(ControlCache, CapturedArraysInBodiesAreInputsNeverStale) {
  Array offset = array({1.0f, 2.0f});
  auto add_offset_three_times = jit([&offset](const Array& x) {
    return fori_loop(
        0, 3, [&offset](const Array&, const Array& v) { return v + offset; }, x);
  });
  Array x = zeros({2});
  EXPECT_EQ(add_offset_three_times(x).to_vector<float>(), (std::vector<float>{3.0f, 6.0f}));
  offset = array({10.0f, 20.0f});  // same type: the same executable, the new values
  EXPECT_EQ(add_offset_three_times(x).to_vector<float>(), (std::vector<float>{30.0f, 60.0f}));
  EXPECT_EQ(add_offset_three_times.stats().compiles, 1);
}

TEST(ControlCache, ANumberChurningInsideABodyIsLiftedAndNamed) {
  float rate = 0.5f;
  auto decay = jit([&rate](const Array& x) {
    return fori_loop(
        0, 4, [&rate](const Array&, const Array& v) { return v * rate; }, x);  // the body's line
  });
  const int body_line = __LINE__ - 2;
  Array x = full({}, 16.0f, f32);
  EXPECT_EQ(decay(x).item<float>(), 1.0f);
  rate = 0.25f;
  EXPECT_EQ(decay(x).item<float>(), 16.0f / 256.0f);
  EXPECT_NE(decay.last_miss_explanation().find(testing::test_line(body_line)), std::string::npos)
      << decay.last_miss_explanation();
  EXPECT_NE(decay.last_miss_explanation().find("0.5 -> 0.25"), std::string::npos) << decay.last_miss_explanation();
  rate = 2.0f;
  EXPECT_EQ(decay(x).item<float>(), 256.0f);
  EXPECT_EQ(decay.stats().compiles, 2);  // the second value lifts the number to an input
}

TEST(ControlPrinting, BodiesPrintIndentedUnderTheirNodeWithTheirLines) {
  auto fn = [](const Array& x) {
    return while_loop([](const Array& v) { return sum(v) < 100.0f; }, [](const Array& v) { return v * 2.0f; }, x);
  };
  const int line = __LINE__ - 2;
  std::string text = jit(fn).lower(zeros({3})).to_string();
  EXPECT_NE(text.find("while_loop"), std::string::npos) << text;
  EXPECT_NE(text.find("    graph while_loop condition("), std::string::npos) << text;
  EXPECT_NE(text.find("    graph while_loop body("), std::string::npos) << text;
  EXPECT_NE(text.find(testing::test_line(line)), std::string::npos) << text;
}

TEST(ControlErrors, CarryMismatchesNameThePathBothTypesAndTheLine) {
  using Pair = std::pair<Array, Array>;
  Pair init{zeros({2}), zeros({}, i32)};
  auto keep = [](const Pair&) { return full({}, false, bool_); };
  auto to_float = [](const Pair& c) { return Pair{c.first, astype(c.second, f32)}; };
  auto resized = [](const Pair& c) { return Pair{zeros({3}), c.second}; };
  auto first_only = [](const Pair& c) { return c.first; };
  auto plus_number = [](const Pair& c) { return Pair{c.first, c.second + 1.5}; };
  auto widened = [](const Array& c, const Array& x) { return std::pair{astype(c, f64) + x, x}; };
  expect_error(__LINE__, [&] { while_loop(keep, to_float, init); },
               {"while_loop", "the body's result at .second is f32[]", "the initial carry there is i32[]"});
  expect_error(__LINE__, [&] { while_loop(keep, resized, init); }, {"while_loop", "at .first is f32[3]", "f32[2]"});
  expect_error(__LINE__, [&] { while_loop(keep, first_only, init); },
               {"while_loop", "another structure", "array vs pair(2);array;array"});
  expect_error(__LINE__, [&] { while_loop(keep, plus_number, init); }, {"while_loop", ".second is f32[]~"});
  expect_error(__LINE__, [&] { scan(widened, zeros({}), zeros({4})); },
               {"scan", "the carry the body returns at (the whole value) is f64[]", "f32[]"});
}

TEST(ControlErrors, PredicatesIndicesAndLengthsAreChecked) {
  Array x = zeros({3});
  auto same = [](const Array& v) { return v; };
  auto elementwise = [](const Array& v) { return v > 0.0f; };
  auto total = [](const Array& v) { return sum(v); };
  auto pair_row = [](const Array& c, const std::pair<Array, Array>& p) { return std::pair{c, p.first}; };
  auto unscanned = [](const Array& c, const std::tuple<>&) { return std::pair{c, c}; };
  auto each = [](const Array& c, const Array& e) { return std::pair{c, e}; };
  auto keep_value = [](const Array&, const Array& v) { return v; };
  Array float_zero = full({}, 0.0f, f32), three = full({}, 3, i32);
  expect_error(__LINE__, [&] { while_loop(elementwise, same, x); },
               {"while_loop", "must be a 0-d bool or integer array, got bool[3]"});
  expect_error(__LINE__, [&] { while_loop(total, same, x); }, {"while_loop", "got f32[]"});
  expect_error(__LINE__, [&] { cond(x, same, same, x); }, {"cond", "the predicate", "f32[3]"});
  expect_error(__LINE__, [&] { cond(sum(x) > 0, same, total, x); },
               {"cond", "the true branch's result", "f32[3]", "f32[]"});
  expect_error(__LINE__, [&] { switch_(float_zero, std::tuple{same}, x); }, {"switch_", "the branch index", "f32[]"});
  std::pair<Array, Array> uneven{zeros({4}), zeros({5})};
  expect_error(__LINE__, [&] { scan(pair_row, x, uneven); }, {"scan", ".second has leading extent 5", ".first says 4"});
  expect_error(__LINE__, [&] { scan(unscanned, x, no_xs); }, {"scan", "no length"});
  expect_error(__LINE__, [&] { scan(each, x, zeros({4}), 3); },
               {"scan", "leading extent 4", "the length argument says 3"});
  expect_error(__LINE__, [&] { fori_loop(float_zero, three, keep_value, x); },
               {"fori_loop", "lo must be a 0-d integer array, got f32[]"});
}

}  // namespace
}  // namespace kiln
