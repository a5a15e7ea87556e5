// Derivatives through loops and branches against the same computation
// unrolled into straight-line code (whose derivatives the other suites check
// against PyTorch and finite differences), eagerly and under jit. In f64: the
// reverse scan adds the steps' contributions in another order than the
// unrolled graph, so results agree to rounding, not bit for bit.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <vector>

#include "support/errors.h"
#include "support/numpy_oracle.h"

namespace kiln {
namespace {

using testing::all_close;

constexpr double rtol = 1e-12, atol = 1e-13;

struct RnnParameters {
  Array w, u, b;
};

std::pair<Array, Array> rnn_step(const RnnParameters& p, const Array& h, const Array& x) {
  Array next = tanh(matmul(p.w, h) + matmul(p.u, x) + p.b);
  return {next, next};
}

Array rnn_loss_scan(const Array& w, const Array& u, const Array& b, const Array& h0, const Array& xs) {
  RnnParameters p{w, u, b};
  auto [last, hs] = scan([&p](const Array& h, const Array& x) { return rnn_step(p, h, x); }, h0, xs);
  return sum(hs * hs) + sum(last);
}

Array rnn_loss_unrolled(const Array& w, const Array& u, const Array& b, const Array& h0, const Array& xs) {
  RnnParameters p{w, u, b};
  Array h = h0, total = full({}, 0.0, f64);
  int64_t steps = xs.shape()[0], inputs = xs.shape()[1];
  for (int64_t t = 0; t < steps; ++t) {
    h = rnn_step(p, h, reshape(slice(xs, {t, 0}, {t + 1, inputs}), {inputs})).first;
    total = total + sum(h * h);
  }
  return total + sum(h);
}

TEST(ControlDerivatives, ScanGradientsMatchTheUnrolledLoop) {
  const int64_t hidden = 5, inputs = 3, steps = 30;
  Array w = random::normal(random::key(11), {hidden, hidden}, f64) * 0.4;
  Array u = random::normal(random::key(12), {hidden, inputs}, f64) * 0.5;
  Array b = random::normal(random::key(13), {hidden}, f64) * 0.1;
  Array h0 = random::normal(random::key(14), {hidden}, f64) * 0.2;
  Array xs = random::normal(random::key(15), {steps, inputs}, f64);
  Argnums all{0, 1, 2, 3, 4};
  auto expected = grad(rnn_loss_unrolled, all)(w, u, b, h0, xs);
  auto eager = grad(rnn_loss_scan, all)(w, u, b, h0, xs);
  auto compiled_fn = jit(grad(rnn_loss_scan, all));
  auto compiled = compiled_fn(w, u, b, h0, xs);
  const char* names[] = {"w", "u", "b", "h0", "xs"};
  auto check = [&](const auto& got, const char* how) {
    std::vector<Array> want = tree_leaves(expected), have = tree_leaves(got);
    ASSERT_EQ(have.size(), want.size());
    for (size_t k = 0; k < want.size(); ++k)
      EXPECT_TRUE(all_close(have[k], want[k], rtol, atol, std::string(how) + " d/d" + names[k]));
  };
  check(eager, "eager");
  check(compiled, "jit");
  compiled_fn(w * 0.5, u, b, h0, xs);
  CacheStats stats = compiled_fn.stats();
  EXPECT_EQ(stats.traces, 1) << stats.calls << " calls, " << stats.misses << " misses, " << stats.compiles
                             << " compiles";
}

TEST(ControlDerivatives, ScanJvpMatchesTheUnrolledLoop) {
  const int64_t hidden = 4, inputs = 2, steps = 12;
  Array w = random::normal(random::key(21), {hidden, hidden}, f64) * 0.4;
  Array u = random::normal(random::key(22), {hidden, inputs}, f64);
  Array b = zeros({hidden}, f64), h0 = zeros({hidden}, f64);
  Array xs = random::normal(random::key(23), {steps, inputs}, f64);
  Array dw = random::normal(random::key(24), {hidden, hidden}, f64);
  Array dxs = random::normal(random::key(25), {steps, inputs}, f64);
  auto of_w_and_xs = [&](auto loss) {
    return [&, loss](const Array& wv, const Array& xv) { return loss(wv, u, b, h0, xv); };
  };
  auto [value, tangent] = jvp(of_w_and_xs(rnn_loss_scan), std::tuple{w, xs}, std::tuple{dw, dxs});
  auto [expected_value, expected_tangent] = jvp(of_w_and_xs(rnn_loss_unrolled), std::tuple{w, xs}, std::tuple{dw, dxs});
  EXPECT_TRUE(all_close(value, expected_value, rtol, atol, "value"));
  EXPECT_TRUE(all_close(tangent, expected_tangent, rtol, atol, "tangent"));
  auto compiled = jit([&](const Array& wv, const Array& xv) {
    return jvp(of_w_and_xs(rnn_loss_scan), std::tuple{wv, xv}, std::tuple{dw, dxs});
  });
  EXPECT_TRUE(all_close(compiled(w, xs).second, expected_tangent, rtol, atol, "jit tangent"));
}

TEST(ControlDerivatives, ForiLoopWithStaticBoundsDifferentiatesBothWays) {
  // v <- sin(v) * a + v for 6 steps, a captured by the body.
  auto looped = [](const Array& x, const Array& a) {
    return sum(fori_loop(
        0, 6, [&a](const Array&, const Array& v) { return sin(v) * a + v; }, x));
  };
  auto unrolled = [](const Array& x, const Array& a) {
    Array v = x;
    for (int i = 0; i < 6; ++i) v = sin(v) * a + v;
    return sum(v);
  };
  Array x = array({0.3, -1.2, 2.0}), a = full({}, 0.7, f64);
  auto expected = grad(unrolled, Argnums{0, 1})(x, a);
  for (const auto& got : {grad(looped, Argnums{0, 1})(x, a), jit(grad(looped, Argnums{0, 1}))(x, a)}) {
    EXPECT_TRUE(all_close(std::get<0>(got), std::get<0>(expected), rtol, atol, "d/dx"));
    EXPECT_TRUE(all_close(std::get<1>(got), std::get<1>(expected), rtol, atol, "d/da"));
  }
  auto [value, tangent] = jvp(looped, std::tuple{x, a}, std::tuple{ones_like(x), full({}, 0.5, f64)});
  auto [expected_value, expected_tangent] =
      jvp(unrolled, std::tuple{x, a}, std::tuple{ones_like(x), full({}, 0.5, f64)});
  EXPECT_TRUE(all_close(value, expected_value, rtol, atol, "value"));
  EXPECT_TRUE(all_close(tangent, expected_tangent, rtol, atol, "tangent"));
}

TEST(ControlDerivatives, CondDifferentiatesTheBranchTaken) {
  auto branchy = [](const Array& x, const Array& s) {
    return cond(
        sum(x) > 0.0, [](const Array& v, const Array& k) { return sum(v * k * v); },
        [](const Array& v, const Array& k) { return sum(exp(v)) - k; }, x, s);
  };
  Array s = full({}, 1.5, f64);
  for (const Array& x : {array({1.0, 2.0}), array({-1.0, -0.5})}) {
    bool positive = sum(x).item<double>() > 0;
    Array dx = positive ? 2.0 * 1.5 * x : exp(x);
    Array ds = positive ? sum(x * x) : full({}, -1.0, f64);
    for (const auto& got : {grad(branchy, Argnums{0, 1})(x, s), jit(grad(branchy, Argnums{0, 1}))(x, s)}) {
      EXPECT_TRUE(all_close(std::get<0>(got), dx, rtol, atol, "d/dx"));
      EXPECT_TRUE(all_close(std::get<1>(got), ds, rtol, atol, "d/ds"));
    }
    auto [value, tangent] = jvp(branchy, std::tuple{x, s}, std::tuple{ones_like(x), full({}, 2.0, f64)});
    EXPECT_TRUE(all_close(tangent, sum(dx) + 2.0 * ds, rtol, atol, "jvp"));
  }
}

TEST(ControlDerivatives, CondInsideScanDifferentiates) {
  // A leaky clamp per step: the branch taken changes along the sequence.
  auto looped = [](const Array& xs, const Array& gain) {
    auto step = [&gain](const Array& total, const Array& x) {
      Array value = cond(
          x > 0.0, [&gain](const Array& v) { return v * gain; }, [](const Array& v) { return v * 0.1; }, x);
      return std::pair{total + value * value, value};
    };
    auto [total, values] = scan(step, full({}, 0.0, f64), xs);
    return total + sum(values);
  };
  Array xs = array({0.5, -2.0, 1.5, -0.25, 3.0}), gain = full({}, 1.3, f64);
  // The branches are decided by the data, read here: unrolled code cannot read traced values.
  std::vector<double> host = xs.to_vector<double>();
  auto unrolled = [&host](const Array&, const Array& gain_value) {
    const Array& gain = gain_value;
    Array total = full({}, 0.0, f64), values_sum = full({}, 0.0, f64);
    for (double x : host) {
      Array v = full({}, x, f64);
      Array value = x > 0 ? v * gain : v * 0.1;
      total = total + value * value;
      values_sum = values_sum + value;
    }
    return total + values_sum;
  };
  Array expected = std::get<1>(grad(unrolled, Argnums{1})(xs, gain));
  for (const auto& got : {grad(looped, Argnums{1})(xs, gain), jit(grad(looped, Argnums{1}))(xs, gain)})
    EXPECT_TRUE(all_close(std::get<1>(got), expected, rtol, atol, "d/dgain"));
}

// Newton's iteration for sqrt(a), and how many steps it took; the
// derivative of sqrt(a) is 1 / (2 sqrt(a)).
const int newton_line = __LINE__ + 5;
std::pair<Array, Array> newton_sqrt_counted(const Array& a) {
  using State = std::pair<Array, Array>;
  auto more = [&a](const State& s) { return logical_and(max(abs(s.first * s.first - a)) > 1e-12, s.second < 60); };
  auto step = [&a](const State& s) { return State{0.5 * (s.first + a / s.first), s.second + 1}; };
  return while_loop(more, step, State{a, zeros({}, i32)});
}
Array newton_sqrt(const Array& a) { return newton_sqrt_counted(a).first; }

TEST(ControlDerivatives, WhileLoopForwardModeMatchesTheUnrolledIteration) {
  Array a = array({2.0, 9.0, 0.25});
  int steps = newton_sqrt_counted(a).second.item<int32_t>();
  auto unrolled = [steps](const Array& av) {
    Array x = av;
    for (int i = 0; i < steps; ++i) x = 0.5 * (x + av / x);
    return x;
  };
  auto [value, tangent] = jvp(newton_sqrt, std::tuple{a}, std::tuple{ones_like(a)});
  auto [expected_value, expected_tangent] = jvp(unrolled, std::tuple{a}, std::tuple{ones_like(a)});
  EXPECT_TRUE(all_close(value, expected_value, 0, 0, "value"));
  EXPECT_TRUE(all_close(tangent, expected_tangent, rtol, atol, "tangent"));
  EXPECT_TRUE(all_close(tangent, 0.5 / sqrt(a), 1e-9, 0, "1 / (2 sqrt a)"));
  auto compiled = jit([](const Array& av) { return jvp(newton_sqrt, std::tuple{av}, std::tuple{ones_like(av)}); });
  EXPECT_TRUE(all_close(compiled(a).second, expected_tangent, rtol, atol, "jit tangent"));
}

TEST(ControlDerivatives, ReverseModeThroughAWhileLoopSuggestsAStaticLoop) {
  auto loss = [](const Array& a) { return sum(newton_sqrt(a)); };
  testing::expect_error(
      newton_line, [&] { grad(loss)(array({2.0})); },
      {"while_loop", "reverse-mode derivatives need the trip count", "use fori_loop with C++ integer bounds, or scan"});
}

}  // namespace
}  // namespace kiln
