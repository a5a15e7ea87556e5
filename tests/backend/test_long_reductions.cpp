// f32 reductions stay accurate at any length, compiled and eager: sums and
// products accumulate in f64 (as the reference kernels do), so the error is
// the final rounding to f32 (half an ulp) plus, for a reduction to one value
// cut into slices across threads, one rounding per slice. The bound tested:
// |result - exact| <= (slices + 1) * 2^-24 * sum(|x|), with the exact value
// computed in double from the same f32 inputs. Sums over leading or middle
// axes add blocks of 8 rows in f32 before f64, so 7 more roundings there.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "runtime/thread_pool.h"

namespace kiln {
namespace {

double f32_ulp_bound(double magnitude, double block_roundings = 0) {
  double slices = static_cast<double>(runtime::thread_count());
  return (slices + 1 + block_roundings) * std::ldexp(1.0, -24) * magnitude;
}
constexpr double row_block_roundings = 7;

TEST(LongReductions, MeanOfTwoToThe32OnesFusedIsOne) {
  // A fused broadcast: nothing of 2^32 elements is ever stored.
  auto mean_of_ones = jit([](const Array& one) {
    return mean(broadcast_to(one, {int64_t{1} << 16, int64_t{1} << 16}));
  });
  EXPECT_EQ(mean_of_ones(array({1.0f})).item<float>(), 1.0f);
  auto sum_of_ones = jit([](const Array& one) { return sum(broadcast_to(one, {int64_t{1} << 16, int64_t{1} << 16})); });
  EXPECT_EQ(sum_of_ones(array({1.0f})).item<float>(), std::ldexp(1.0f, 32));
}

TEST(LongReductions, SumOfTwoToThe26TenthsIsWithinItsBound) {
  const int64_t n = int64_t{1} << 26;
  double exact = static_cast<double>(0.1f) * static_cast<double>(n);
  auto total = jit([](const Array& x) { return sum(x); });
  Array tenths = full({n}, 0.1f);
  for (const Array& result : {total(tenths), sum(tenths)}) {
    double got = result.item<float>();
    EXPECT_LE(std::abs(got - exact), f32_ulp_bound(exact)) << "got " << got << ", exact " << exact;
  }
}

TEST(LongReductions, EveryReductionPathOfRandomDataIsWithinItsBound) {
  // Rows accumulated into the output (axis 0), rows reduced in registers
  // (last axis), a middle axis, and one value cut into slices.
  const int64_t rows = int64_t{1} << 14, columns = 1024;
  Array x = random::uniform(random::key(7), {rows, columns}, f32, -1.0, 3.0);
  std::vector<float> values = x.to_vector<float>();
  auto column_sums = jit([](const Array& a) { return sum(a, 0); });
  auto row_sums = jit([](const Array& a) { return sum(a, 1); });
  auto middle_sums = jit([](const Array& a) { return sum(reshape(a, {64, 256, 1024}), 1); });
  auto total = jit([](const Array& a) { return sum(a); });

  std::vector<double> exact_columns(columns, 0.0), magnitude_columns(columns, 0.0);
  std::vector<double> exact_rows(rows, 0.0), magnitude_rows(rows, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < columns; ++c) {
      double v = values[static_cast<size_t>(r * columns + c)];
      exact_columns[c] += v, magnitude_columns[c] += std::abs(v);
      exact_rows[r] += v, magnitude_rows[r] += std::abs(v);
    }
  double worst = 0;
  auto check = [&](const std::vector<float>& got, const std::vector<double>& exact, const std::vector<double>& size,
                   const char* path, double block_roundings = 0) {
    ASSERT_EQ(got.size(), exact.size()) << path;
    for (size_t i = 0; i < got.size(); ++i) {
      double error = std::abs(got[i] - exact[i]);
      worst = std::max(worst, error / size[i]);
      ASSERT_LE(error, f32_ulp_bound(size[i], block_roundings)) << path << " element " << i;
    }
  };
  check(column_sums(x).to_vector<float>(), exact_columns, magnitude_columns, "columns (axis 0)", row_block_roundings);
  check(sum(x, 0).to_vector<float>(), exact_columns, magnitude_columns, "columns, eager", row_block_roundings);
  check(row_sums(x).to_vector<float>(), exact_rows, magnitude_rows, "rows (last axis)");
  std::vector<double> exact_middle(64 * 1024, 0.0), magnitude_middle(64 * 1024, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < columns; ++c) {
      double v = values[static_cast<size_t>(r * columns + c)];
      exact_middle[static_cast<size_t>((r / 256) * 1024 + c)] += v;
      magnitude_middle[static_cast<size_t>((r / 256) * 1024 + c)] += std::abs(v);
    }
  check(middle_sums(x).to_vector<float>(), exact_middle, magnitude_middle, "middle axis", row_block_roundings);
  double exact_total = std::accumulate(exact_rows.begin(), exact_rows.end(), 0.0);
  double magnitude_total = std::accumulate(magnitude_rows.begin(), magnitude_rows.end(), 0.0);
  check({total(x).item<float>()}, {exact_total}, {magnitude_total}, "one value, in slices");
  RecordProperty("worst_relative_error", std::to_string(worst));
  std::printf("worst |error| / sum|x|: %.3g (bound %.3g)\n", worst, f32_ulp_bound(1.0));
}

TEST(LongReductions, ProductsAccumulateWide) {
  // 2^20 factors of (1 + 2^-20): exact product e^(1 - 2^-21 + ...) ~ 2.71828.
  const int64_t n = int64_t{1} << 20;
  float factor = 1.0f + std::ldexp(1.0f, -20);
  double exact = std::pow(static_cast<double>(factor), static_cast<double>(n));
  auto product = jit([](const Array& x) { return prod(x); });
  double got = product(full({n}, factor)).item<float>();
  EXPECT_LE(std::abs(got - exact), 2 * std::ldexp(exact, -24)) << got << " vs " << exact;
}

}  // namespace
}  // namespace kiln
