// kiln::index against NumPy's x[...]: random integers, slices with omitted,
// negative and out-of-range bounds and negative steps, newaxis, ellipsis and
// up to three index arrays broadcasting together (adjacent or apart), on
// random shapes with zero-size dims; under jit; through a derivative; errors.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include "support/errors.h"
#include "support/gradient_check.h"
#include "support/numpy_oracle.h"

namespace kiln {
namespace {

using testing::RandomArrays;

TEST(BasicIndexing, MatchesNumpy) {
  RandomArrays random(91);
  testing::NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  for (int trial = 0; trial < 200; ++trial) {
    Shape shape = random.shape(1, 4, 5);
    Array x = random.uniform(shape, DType::f32);
    std::vector<Index> indices;
    std::string python;
    std::vector<Array> arrays;
    Shape array_base = random.shape(0, 2, 3, false);
    bool used_ellipsis = false;
    int64_t axis = 0;
    while (axis < static_cast<int64_t>(shape.size())) {
      int64_t n = shape[static_cast<size_t>(axis)], pick = random.integer(0, 9);
      std::string text;
      if (pick == 0) {
        indices.push_back(newaxis);
        text = "None";
      } else if (pick == 1 && !used_ellipsis) {
        used_ellipsis = true;
        indices.push_back(ellipsis);
        text = "...";
        axis = static_cast<int64_t>(shape.size()) - random.integer(0, static_cast<int64_t>(shape.size()) - axis);
      } else if (pick == 2 && n > 0) {
        int64_t i = random.integer(-n, n - 1);
        indices.push_back(i);
        text = std::to_string(i);
        ++axis;
      } else if ((pick == 3 || pick == 4) && n > 0 && arrays.size() < 3) {
        // NumPy raises for out-of-range entries: draw them in [-n, n).
        DType dtype = random.integer(0, 1) ? DType::i32 : DType::i64;
        arrays.push_back(random.uniform(random.broadcastable(array_base), dtype, static_cast<double>(-n),
                                        static_cast<double>(n) - 0.01));
        indices.push_back(arrays.back());
        text = std::string(1, static_cast<char>('b' + arrays.size() - 1));
        ++axis;
      } else {
        Slice s;
        auto bound = [&]() -> std::optional<int64_t> {
          if (random.integer(0, 2) == 0) return std::nullopt;
          return random.integer(-n - 2, n + 2);
        };
        s.start = bound();
        s.stop = bound();
        s.step = random.integer(1, 3) * (random.integer(0, 1) ? 1 : -1);
        indices.push_back(s);
        text = (s.start ? std::to_string(*s.start) : "") + ":" + (s.stop ? std::to_string(*s.stop) : "") + ":" +
               std::to_string(s.step);
        ++axis;
      }
      python += (python.empty() ? "" : ", ") + text;
    }
    std::string context = shape_string(shape) + "[" + python + "]";
    std::string expression = "a[" + python + "]";
    std::vector<Array> inputs{x};
    inputs.insert(inputs.end(), arrays.begin(), arrays.end());
    int id = oracle.add("np.array(" + expression + ")", inputs);
    cases.push_back({index(x, indices), id, context, 0});
    // The arrays as arguments, so the gather reads traced indices.
    auto traced = jit([indices](const Array& v, const std::vector<Array>& positions) {
      std::vector<Index> entries = indices;
      size_t next = 0;
      for (Index& entry : entries)
        if (entry.kind() == Index::Kind::array) entry = positions[next++];
      return index(v, entries);
    });
    cases.push_back({traced(x, arrays), id, context + " under jit", 0});
  }
  oracle.run();
  testing::expect_cases_match(oracle, cases);
}

TEST(BasicIndexing, DifferentiatesAsTheViewItIs) {
  RandomArrays random(92);
  testing::ArrayFunction fn = [](const std::vector<Array>& in) {
    Array picked = index(in[0], {Slice{std::nullopt, std::nullopt, -2}, newaxis, 1, ellipsis});
    return sum(square(picked)) + sum(index(in[0], {array<int32_t>({2, 0, 2}), Slice{1, std::nullopt, 1}}));
  };
  EXPECT_TRUE(testing::check_derivatives(fn, {random.uniform({5, 3, 2}, DType::f64)}));
}

TEST(BasicIndexing, ErrorsNameTheIndexAndTheShape) {
  Array x = ones({3, 4});
  const int bounds_line = __LINE__ + 1;
  auto out_of_bounds = [&] { index(x, {1, -5}); };
  testing::expect_error(bounds_line, out_of_bounds,
                        {"[index]", "index -5 is out of bounds for axis 1 with size 4", "f32[3,4]"});
  const int step_line = __LINE__ + 1;
  auto zero_step = [&] { index(x, {Slice{0, 2, 0}}); };
  testing::expect_error(step_line, zero_step, {"[index]", "step 0"});
  const int many_line = __LINE__ + 1;
  auto too_many = [&] { index(x, {0, 1, 2}); };
  testing::expect_error(many_line, too_many, {"[index]", "3 indices for 2 dimensions"});
  const int ellipsis_line = __LINE__ + 1;
  auto two = [&] { index(x, {ellipsis, ellipsis}); };
  testing::expect_error(ellipsis_line, two, {"[index]", "more than one ellipsis"});
  const int mask_line = __LINE__ + 1;
  auto mask = [&] { index(x, {greater(x, 0.5)}); };
  testing::expect_error(mask_line, mask, {"[index]", "boolean index array bool[3,4]", "where(mask, x, fill)"});
  const int broadcast_line = __LINE__ + 1;
  auto apart = [&] { index(x, {array<int32_t>({0, 1}), array<int32_t>({0, 1, 2})}); };
  testing::expect_error(broadcast_line, apart, {"[index]", "[2]", "[3]"});
}

TEST(BasicIndexing, SeveralArraysDifferentiateThroughTheGather) {
  RandomArrays random(93);
  Array rows = array<int32_t>({2, 0, 2, -1}, {2, 2}), columns = array<int64_t>({1, 0});
  testing::ArrayFunction fn = [=](const std::vector<Array>& in) {
    return sum(square(index(in[0], {rows, Slice{}, columns}))) + sum(index(in[0], {1, rows, columns}));
  };
  EXPECT_TRUE(testing::check_derivatives(fn, {random.uniform({3, 4, 2}, DType::f64)}));
}

}  // namespace
}  // namespace kiln
