// Row groups: consecutive kernels run block of rows by block of rows (softmax
// and its relatives read their input from memory once). The plan must form a
// group exactly where every kernel reads only its own rows of what the group
// produces, and compiled results must match the interpreter whatever the
// block boundaries.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <random>
#include <regex>

#include "differential.h"

namespace kiln::testing {
namespace {

Array random_rows(const Shape& shape, uint32_t seed) { return random::normal(random::key(seed), shape) * 3.0f; }

// Row-wise results agree with the interpreter up to the vectorizer's
// reassociation of the row sums and a few ulps of exp/log.
Tolerance row_tolerance(int64_t columns) {
  return {.absolute = 1e-6, .relative = 4e-7 * std::sqrt(double(columns)) + 1e-6};
}

int count_matches(const std::string& text, const std::string& pattern) {
  std::regex expression(pattern);
  return static_cast<int>(
      std::distance(std::sregex_iterator(text.begin(), text.end(), expression), std::sregex_iterator()));
}

int groups_in(const std::string& plan) { return count_matches(plan, "row group of"); }

TEST(RowGroups, SoftmaxRunsAsOneGroupAndStoresItsExponentialsOnce) {
  Array x = random_rows({64, 1024}, 1);
  auto test = trace_case(
      "softmax_rows", [](const Array& v) { return softmax(v, -1); }, x);
  std::string plan = describe_plan(test.graph);
  EXPECT_EQ(groups_in(plan), 1) << plan;
  EXPECT_NE(plan.find("row group of 64 rows, 6 steps"), std::string::npos) << plan;
  // exp is computed in one kernel; the sum and the division read its result.
  EXPECT_EQ(count_matches(plan, "\\bexp\\b"), 1) << plan;
  EXPECT_EQ(run_differential(test, {row_tolerance(1024)}), "");
}

TEST(RowGroups, RowWiseFunctionsMatchTheInterpreterAtAwkwardSizes) {
  // Rows not a multiple of any block, a long odd last axis, and a 3-d input
  // whose kernels split rows into several iterations each.
  const std::vector<Shape> shapes = {{37, 2053}, {300, 257}, {16, 4096}, {40, 7, 300}};
  const std::vector<std::pair<const char*, std::function<std::vector<Array>(const Array&)>>> functions = {
      {"softmax", [](const Array& v) { return std::vector<Array>{softmax(v, -1)}; }},
      {"log_softmax", [](const Array& v) { return std::vector<Array>{log_softmax(v, -1)}; }},
      {"logsumexp and max",
       [](const Array& v) {
         return std::vector<Array>{logsumexp(v, -1), max(v, -1)};
       }},
      {"layer norm",
       [](const Array& v) {
         Array centered = v - mean(v, -1, true);
         return std::vector<Array>{centered * rsqrt(mean(square(centered), -1, true) + 1e-5f)};
       }},
  };
  uint32_t seed = 10;
  for (const Shape& shape : shapes) {
    Array x = random_rows(shape, seed++);
    for (const auto& [name, fn] : functions) {
      auto test = trace_case(name, fn, x);
      std::string plan = describe_plan(test.graph);
      EXPECT_EQ(groups_in(plan), 1) << name << " " << shape_string(shape) << "\n" << plan;
      EXPECT_EQ(run_differential(test, {row_tolerance(shape.back())}), "") << name << " " << shape_string(shape);
    }
  }
}

TEST(RowGroups, KernelsReadingAcrossRowsAreNotGrouped) {
  // s = sum(x, 1) is added to every row as a row vector: each row of the sum
  // needs all of s, so the kernels must not run block by block.
  Array x = random_rows({512, 512}, 3);
  auto across = trace_case(
      "across_rows", [](const Array& v) { return sum(v + sum(v, 1), 1); }, x);
  std::string plan = describe_plan(across.graph);
  EXPECT_EQ(groups_in(plan), 0) << plan;
  EXPECT_EQ(run_differential(across, {row_tolerance(512 * 512)}), "");
  // A reduction over the leading axis reads every row for each output.
  auto columns = trace_case(
      "column_sums", [](const Array& v) { return v / sum(v, 0); }, abs(x) + 0.5f);
  EXPECT_EQ(groups_in(describe_plan(columns.graph)), 0) << describe_plan(columns.graph);
  EXPECT_EQ(run_differential(columns, {row_tolerance(512)}), "");
}

TEST(RowGroups, IndependentKernelsAreNotGrouped) {
  // Updates of separate parameters sharing a leading extent: no kernel reads
  // another's result, so blocking would only cost (each may still write over
  // its own donated input).
  Array a = random_rows({512, 512}, 5), b = random_rows({512, 10}, 6), c = random_rows({512}, 7);
  auto test = trace_case(
      "independent_updates",
      [](const Array& p, const Array& q, const Array& r) {
        return std::vector<Array>{p - 0.1f * sqrt(abs(p)), q - 0.1f * sqrt(abs(q)), r - 0.1f * sqrt(abs(r))};
      },
      a, b, c);
  EXPECT_EQ(groups_in(describe_plan(test.graph)), 0) << describe_plan(test.graph);
  EXPECT_EQ(run_differential(test, {Tolerance{}}), "");
}

TEST(RowGroups, SmallArraysRunKernelByKernel) {
  auto test = trace_case(
      "small_softmax", [](const Array& v) { return softmax(v, -1); }, random_rows({8, 16}, 4));
  EXPECT_EQ(groups_in(describe_plan(test.graph)), 0);
  EXPECT_EQ(run_differential(test, {row_tolerance(16)}), "");
}

}  // namespace
}  // namespace kiln::testing
