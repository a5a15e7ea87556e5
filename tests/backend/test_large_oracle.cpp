// Compiled f32 reductions and fused chains at real sizes against NumPy in
// float64. Every case states its error bound in one form,
//   |kiln - numpy| <= (k + slices) * 2^-24 * scale,
// where `slices` is the thread count (a reduction to one value is cut into
// that many partial sums, each rounded once) and NumPy computes `scale` from
// the same inputs; k and scale follow from kiln's accumulation (f64 for
// sums, products and cumsum), its vector math (within 4 ulps) and one f32
// rounding per elementwise step:
//   sum              k 1  scale sum|x|   (over leading or middle axes k 8: blocks
//                                        of 8 rows add in f32, then in f64)
//   mean             k 2  scale mean|x|  (k 9 over leading or middle axes)
//   prod             k 2  scale |prod|            (f64 error n*2^-53 < 2^-27)
//   max/min/arg*     exact
//   logsumexp        k 6  scale 1 + range + |log s| + |result|  (s = sum exp(x - max))
//   log_softmax      k 6  the same, per element
//   softmax          k 10 scale (1 + range) * |result|
//   cumsum           k 1  scale running sum of |x|
// Sizes run from 2^20 up to 2^KILN_ORACLE_MAX_LOG2 elements (22 by default,
// 26 in scripts/large-oracle.sh); the fused broadcasts reduce 2^32 values
// that are never stored. The worst measured k of each case is printed.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "runtime/thread_pool.h"
#include "support/numpy_oracle.h"

namespace kiln {
namespace {

using testing::NumpyOracle;

const double unit = std::ldexp(1.0, -24);

int largest_log2() {
  const char* text = std::getenv("KILN_ORACLE_MAX_LOG2");
  int value = text ? std::atoi(text) : 22;
  return std::clamp(value, 20, 26);
}

// NumPy sees the inputs as float64: A = x, B = y, P = factors near one.
std::string in_f64(const std::string& expression) {
  return "(lambda A, B, P: " + expression + ")(a.astype(np.float64), b.astype(np.float64), c.astype(np.float64))";
}

struct Case {
  std::string name;
  std::function<Array(const Array&, const Array&, const Array&)> compute;
  std::string value;  // NumPy, float64
  std::string scale;  // NumPy, float64, broadcastable to the value
  double k;           // 0: exact
  bool eager_too = true;
};

// Appends the cases of one reduction over all values, the rows (last axis)
// and the columns (axis 0); `reduce(x, axes)` and numpy's `op(X, axis)`.
void add_three_ways(std::vector<Case>& cases, const std::string& name,
                    const std::function<Array(const Array&, Axes)>& reduce, const std::string& value,
                    const std::string& scale, double k, char input = 'A', double columns_k = 0) {
  const std::pair<const char*, const char*> ways[] = {{"all", "None"}, {"rows", "1"}, {"columns", "0"}};
  for (auto [way, axis] : ways) {
    std::string w = way;
    Axes axes = w == "all" ? Axes::all() : w == "rows" ? Axes{1} : Axes{0};
    auto fill = [&](std::string text) {
      for (size_t at; (at = text.find('@')) != std::string::npos;) text.replace(at, 1, axis);
      for (size_t at; (at = text.find('$')) != std::string::npos;) text.replace(at, 1, std::string(1, input));
      return text;
    };
    cases.push_back({name + " " + w,
                     [reduce, axes, input](const Array& x, const Array&, const Array& p) {
                       return reduce(input == 'P' ? p : x, axes);
                     },
                     fill(value), fill(scale), w == "columns" && columns_k > 0 ? columns_k : k});
  }
}

std::vector<Case> reduction_cases() {
  std::vector<Case> cases;
  add_three_ways(
      cases, "sum", [](const Array& x, Axes axes) { return sum(x, axes); }, "np.sum($, axis=@)",
      "np.sum(np.abs($), axis=@)", 1, 'A', 8);
  add_three_ways(
      cases, "mean", [](const Array& x, Axes axes) { return mean(x, axes); }, "np.mean($, axis=@)",
      "np.mean(np.abs($), axis=@)", 2, 'A', 9);
  add_three_ways(
      cases, "prod", [](const Array& x, Axes axes) { return prod(x, axes); }, "np.prod($, axis=@)",
      "np.abs(np.prod($, axis=@))", 2, 'P');
  add_three_ways(
      cases, "max", [](const Array& x, Axes axes) { return max(x, axes); }, "np.max($, axis=@)", "1", 0);
  add_three_ways(
      cases, "min", [](const Array& x, Axes axes) { return min(x, axes); }, "np.min($, axis=@)", "1", 0);
  const std::string log_s = "np.log(np.sum(np.exp($ - np.max($, axis=@, keepdims=True)), axis=@, keepdims=True))";
  const std::string range = "(np.max($, axis=@, keepdims=True) - np.min($, axis=@, keepdims=True))";
  const std::string lse = "(np.max($, axis=@, keepdims=True) + " + log_s + ")";
  add_three_ways(
      cases, "logsumexp", [](const Array& x, Axes axes) { return logsumexp(x, axes, true); }, lse,
      "1 + " + range + " + np.abs(" + log_s + ") + np.abs(" + lse + ")", 6);
  for (int axis : {0, 1}) {
    std::string a = std::to_string(axis);
    auto fill = [&](std::string text) {
      for (size_t at; (at = text.find('@')) != std::string::npos;) text.replace(at, 1, a);
      for (size_t at; (at = text.find('$')) != std::string::npos;) text.replace(at, 1, "A");
      return text;
    };
    cases.push_back({"argmax axis " + a, [axis](const Array& x, const Array&, const Array&) { return argmax(x, axis); },
                     "np.argmax(a, axis=" + a + ")", "1", 0});
    cases.push_back({"argmin axis " + a, [axis](const Array& x, const Array&, const Array&) { return argmin(x, axis); },
                     "np.argmin(a, axis=" + a + ")", "1", 0});
    cases.push_back({"softmax axis " + a,
                     [axis](const Array& x, const Array&, const Array&) { return softmax(x, axis); },
                     fill("np.exp($ - " + lse + ")"), fill("(1 + " + range + ") * np.exp($ - " + lse + ")"), 10});
    cases.push_back(
        {"log_softmax axis " + a, [axis](const Array& x, const Array&, const Array&) { return log_softmax(x, axis); },
         fill("$ - " + lse), fill("1 + " + range + " + np.abs(" + log_s + ") + np.abs($ - " + lse + ")"), 6});
    cases.push_back({"cumsum axis " + a, [axis](const Array& x, const Array&, const Array&) { return cumsum(x, axis); },
                     "np.cumsum(A, axis=" + a + ")", "np.cumsum(np.abs(A), axis=" + a + ")", 1});
  }
  cases.push_back({"cumsum flattened", [](const Array& x, const Array&, const Array&) { return cumsum(x); },
                   "np.cumsum(A)", "np.cumsum(np.abs(A))", 1});
  cases.push_back({"argmax flattened", [](const Array& x, const Array&, const Array&) { return argmax(x); },
                   "np.argmax(a)", "1", 0});
  return cases;
}

// Fused chains: nothing between the elementwise steps and the reduction is stored.
std::vector<Case> chain_cases() {
  auto chain = [](std::string name, std::function<Array(const Array&, const Array&, const Array&)> compute,
                  std::string value, std::string scale, double k) {
    return Case{std::move(name), std::move(compute), std::move(value), std::move(scale), k, false};
  };
  return {
      chain(
          "sum(x*y + 1, rows)", [](const Array& x, const Array& y, const Array&) { return sum(x * y + 1.0f, 1); },
          "np.sum(A*B + 1, axis=1)", "np.sum(np.abs(A*B) + 1, axis=1)", 2),
      chain(
          "mean(exp(x) * 0.5)", [](const Array& x, const Array&, const Array&) { return mean(exp(x) * 0.5f); },
          "np.mean(np.exp(A) * 0.5)", "np.mean(np.exp(A) * 0.5)", 6),
      chain(
          "sqrt(sum(x*x, rows))", [](const Array& x, const Array&, const Array&) { return sqrt(sum(x * x, 1)); },
          "np.sqrt(np.sum(A*A, axis=1))", "np.sqrt(np.sum(A*A, axis=1))", 3),
      chain(
          "max(|x - y|, columns)", [](const Array& x, const Array& y, const Array&) { return max(abs(x - y), 0); },
          "np.max(np.abs(A - B), axis=0)", "np.max(np.abs(A - B), axis=0)", 1),
      chain(
          "variance over rows",
          [](const Array& x, const Array&, const Array&) {
            Array centered = x - mean(x, 1, true);
            return mean(centered * centered, 1);
          },
          "np.var(A, axis=1)", "np.var(A, axis=1)", 5),
      chain(
          "sum(tanh(x) * x)", [](const Array& x, const Array&, const Array&) { return sum(tanh(x) * x); },
          "np.sum(np.tanh(A) * A)", "np.sum(np.abs(np.tanh(A) * A))", 6),
  };
}

struct Pending {
  std::string context;
  std::vector<Array> results;  // compiled, then eager
  int value, scale;
  double k;
};

double worst_measured_k(const Pending& check, const NumpyOracle& oracle) {
  std::vector<double> value = oracle.expected(check.value).to_vector<double>();
  Array scale_array =
      broadcast_to(astype(oracle.expected(check.scale), f64), Shape(oracle.expected(check.value).shape()));
  std::vector<double> scale = scale_array.to_vector<double>();
  double slices = runtime::thread_count(), worst = 0;
  for (const Array& result : check.results) {
    std::vector<double> got = astype(result, f64).to_vector<double>();
    EXPECT_EQ(got.size(), value.size()) << check.context;
    if (got.size() != value.size()) return worst;
    for (size_t i = 0; i < got.size(); ++i) {
      double error = std::abs(got[i] - value[i]);
      if (check.k == 0) {
        EXPECT_EQ(got[i], value[i]) << check.context << ", element " << i;
        if (got[i] != value[i]) return worst;
        continue;
      }
      double bound = (check.k + slices) * unit * scale[i];
      worst = std::max(worst, error / (unit * scale[i]));
      EXPECT_LE(error, bound) << check.context << ", element " << i << ": kiln " << got[i] << ", numpy " << value[i];
      if (error > bound) return worst;
    }
  }
  return worst;
}

void run_cases(const std::vector<Case>& cases, const std::vector<int>& sizes_log2) {
  NumpyOracle oracle;
  std::vector<Pending> pending;
  for (int log2 : sizes_log2) {
    const int64_t columns = 1024, rows = (int64_t{1} << log2) / columns;
    Array x = random::uniform(random::key(log2), {rows, columns}, f32, -1.0, 3.0);
    Array y = random::uniform(random::key(log2 + 100), {rows, columns}, f32, -2.0, 2.0);
    // Products of 2^26 factors stay in range: log of the product wanders ~5.
    Array p = random::uniform(random::key(log2 + 200), {rows, columns}, f32, 1.0 - 1.0 / 1024, 1.0 + 1.0 / 1024);
    for (const Case& c : cases) {
      Pending check{c.name + " of 2^" + std::to_string(log2), {}, 0, 0, c.k};
      auto compiled = jit([&c](const Array& a, const Array& b, const Array& q) { return c.compute(a, b, q); });
      check.results.push_back(compiled(x, y, p));
      if (c.eager_too) check.results.push_back(c.compute(x, y, p));
      check.value = oracle.add(in_f64(c.value), {x, y, p});
      check.scale = oracle.add(in_f64(c.scale), {x, y, p});
      pending.push_back(std::move(check));
    }
  }
  oracle.run();
  for (const Pending& check : pending) {
    double worst = worst_measured_k(check, oracle);
    if (check.k > 0)
      std::printf("  %-40s worst %6.3f of bound %g + %d\n", check.context.c_str(), worst, check.k,
                  runtime::thread_count());
  }
}

std::vector<int> sizes() {
  std::vector<int> result;
  for (int log2 = 20; log2 <= largest_log2(); log2 += 2) result.push_back(log2);
  return result;
}

TEST(LargeOracle, EveryReductionAgreesWithNumpyFloat64) { run_cases(reduction_cases(), sizes()); }

TEST(LargeOracle, FusedChainsAgreeWithNumpyFloat64) { run_cases(chain_cases(), sizes()); }

TEST(LargeOracle, FusedBroadcastsOfTwoToThe32AgreeWithNumpyFloat64) {
  // r varies along the columns, c along the rows; the 2^32 values of
  // r * 0.5 + c and exp(r) exist only inside the fused reduction.
  const int64_t side = int64_t{1} << 16;
  Array r = random::uniform(random::key(32), {1, side}, f32, -1.0, 2.0);
  Array c = random::uniform(random::key(33), {side, 1}, f32, -1.0, 1.0);
  auto shifted_sum = jit([side](const Array& row, const Array& column) {
    return sum(broadcast_to(row, {side, side}) * 0.5f + column);
  });
  auto exp_mean = jit([side](const Array& row) { return mean(exp(broadcast_to(row, {side, side}))); });
  NumpyOracle oracle;
  const std::string n = std::to_string(side) + ".0";
  int sum_value = oracle.add(n + " * (0.5 * np.sum(a.astype(np.float64)) + np.sum(b.astype(np.float64)))", {r, c});
  int sum_scale =
      oracle.add(n + " * (0.5 * np.sum(np.abs(a.astype(np.float64))) + np.sum(np.abs(b.astype(np.float64))))", {r, c});
  int mean_value = oracle.add("np.mean(np.exp(a.astype(np.float64)))", {r});
  oracle.run();
  double slices = runtime::thread_count();
  double got = shifted_sum(r, c).item<float>(), value = oracle.expected(sum_value).item<double>();
  double scale = oracle.expected(sum_scale).item<double>();
  EXPECT_LE(std::abs(got - value), (2 + slices) * unit * scale) << got << " vs " << value;
  std::printf("  sum(r*0.5 + c) over 2^32: worst %.3f of bound %g + %g\n", std::abs(got - value) / (unit * scale), 2.0,
              slices);
  got = exp_mean(r).item<float>(), value = oracle.expected(mean_value).item<double>();
  EXPECT_LE(std::abs(got - value), (6 + slices) * unit * value) << got << " vs " << value;
  std::printf("  mean(exp(r)) over 2^32: worst %.3f of bound %g + %g\n", std::abs(got - value) / (unit * value), 6.0,
              slices);
}

}  // namespace
}  // namespace kiln
