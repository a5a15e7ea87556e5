// NumPy's shape helpers (flatten, swapaxes, moveaxis, atleast_*d, roll,
// split, unstack, tile, repeat, tril, triu, tri, broadcast_arrays, meshgrid)
// against NumPy on random shapes with zero-size dims and negative axes, the
// same under jit, a derivative through them, and errors.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include "support/errors.h"
#include "support/gradient_check.h"
#include "support/numpy_oracle.h"

namespace kiln {
namespace {

using testing::all_close;
using testing::NumpyOracle;
using testing::RandomArrays;

std::string list(const std::vector<int64_t>& values) {
  std::string text = "(";
  for (int64_t v : values) text += std::to_string(v) + ",";
  return text + ")";
}

TEST(ShapeHelpers, MatchNumpyOnRandomShapes) {
  RandomArrays random(41);
  NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  for (int trial = 0; trial < 40; ++trial) {
    Shape shape = random.shape(0, 4, 4);
    Array x = random.uniform(shape, trial % 2 ? DType::f32 : DType::i32);
    std::string context = shape_string(shape);
    int64_t rank = x.ndim();
    auto add = [&](const std::string& expression, const Array& actual, const std::string& what) {
      cases.push_back({actual, oracle.add(expression, {x}), what + " " + context, 0});
    };
    add("a.flatten()", flatten(x), "flatten");
    add("np.ravel(a)", ravel(x), "ravel");
    add("np.atleast_1d(a)", atleast_1d(x), "atleast_1d");
    add("np.atleast_2d(a)", atleast_2d(x), "atleast_2d");
    add("np.atleast_3d(a)", atleast_3d(x), "atleast_3d");
    int64_t shift = random.integer(-7, 7);
    add("np.roll(a, " + std::to_string(shift) + ")", roll(x, shift), "roll flat");
    std::vector<int64_t> reps;
    for (int64_t d = 0, n = random.integer(0, 3); d < n; ++d) reps.push_back(random.integer(0, 3));
    add("np.tile(a, " + list(reps) + ")", tile(x, reps), "tile " + list(reps));
    int64_t repeats = random.integer(0, 3);
    add("np.repeat(a, " + std::to_string(repeats) + ")", repeat(x, repeats), "repeat flat");
    if (rank >= 1) {
      int64_t a = random.integer(-rank, rank - 1), b = random.integer(-rank, rank - 1);
      std::string pair = std::to_string(a) + ", " + std::to_string(b);
      add("np.swapaxes(a, " + pair + ")", swapaxes(x, a, b), "swapaxes " + pair);
      add("np.moveaxis(a, " + pair + ")", moveaxis(x, a, b), "moveaxis " + pair);
      add("np.roll(a, " + std::to_string(shift) + ", axis=" + std::to_string(a) + ")", roll(x, shift, a),
          "roll axis " + std::to_string(a));
      add("np.repeat(a, " + std::to_string(repeats) + ", axis=" + std::to_string(a) + ")", repeat(x, repeats, a),
          "repeat axis " + std::to_string(a));
      std::vector<int64_t> cuts{random.integer(-2, 4), random.integer(0, 5)};
      std::vector<Array> parts = split(x, cuts, a);
      for (size_t k = 0; k < parts.size(); ++k)
        add("np.split(a, " + list(cuts) + ", axis=" + std::to_string(a) + ")[" + std::to_string(k) + "]", parts[k],
            "split part " + std::to_string(k));
      std::vector<Array> rows = unstack(x, a);
      for (size_t k = 0; k < rows.size(); ++k)
        add("np.moveaxis(a, " + std::to_string(a) + ", 0)[" + std::to_string(k) + "]", rows[k],
            "unstack " + std::to_string(k));
    }
    if (rank >= 2) {
      int64_t k = random.integer(-2, 2);
      add("np.tril(a, " + std::to_string(k) + ")", tril(x, k), "tril");
      add("np.triu(a, " + std::to_string(k) + ")", triu(x, k), "triu");
    }
  }
  cases.push_back({tri(3, 5, 1), oracle.add("np.tri(3, 5, 1, dtype=np.float32)", {}), "tri", 0});
  Array u = array({1.0f, 2.0f, 3.0f}), v = array({4.0f, 5.0f});
  std::vector<Array> grid = meshgrid({u, v});
  std::vector<Array> matrix = meshgrid({u, v}, false);
  cases.push_back({grid[0], oracle.add("np.meshgrid(a, b)[0]", {u, v}), "meshgrid xy 0", 0});
  cases.push_back({grid[1], oracle.add("np.meshgrid(a, b)[1]", {u, v}), "meshgrid xy 1", 0});
  cases.push_back({matrix[0], oracle.add("np.meshgrid(a, b, indexing='ij')[0]", {u, v}), "meshgrid ij 0", 0});
  cases.push_back({matrix[1], oracle.add("np.meshgrid(a, b, indexing='ij')[1]", {u, v}), "meshgrid ij 1", 0});
  Array column = reshape(u, {3, 1});
  std::vector<Array> both = broadcast_arrays({column, v});
  cases.push_back({both[0], oracle.add("np.broadcast_arrays(a, b)[0]", {column, v}), "broadcast_arrays 0", 0});
  cases.push_back({both[1], oracle.add("np.broadcast_arrays(a, b)[1]", {column, v}), "broadcast_arrays 1", 0});
  oracle.run();
  testing::expect_cases_match(oracle, cases);
}

TEST(ShapeHelpers, UnderJitAndThroughDerivatives) {
  Array x = reshape(arange(0, 24, 1, DType::f64), {2, 3, 4});
  auto fn = [](const Array& v) {
    Array moved = moveaxis(tile(v, {1, 2, 1}), 0, -1);
    return sum(tril(roll(repeat(moved, 2, 1), 3, 0)) * 0.5) + sum(slice(flatten(triu(swapaxes(v, 0, 2))), {0}, {5}));
  };
  EXPECT_EQ(jit(fn)(x).item<double>(), fn(x).item<double>());
  EXPECT_TRUE(testing::check_derivatives([&](const std::vector<Array>& in) { return fn(in[0]); }, {x * 0.1}));
}

TEST(ShapeHelpers, ErrorsNameTheOperationAndTheFix) {
  const int split_line = __LINE__ + 1;
  auto uneven = [] { split(ones({5}), 2); };
  testing::expect_error(split_line, uneven, {"[split]", "5 elements", "2 sections", "cut indices"});
  const int tril_line = __LINE__ + 1;
  auto vector = [] { tril(ones({3})); };
  testing::expect_error(tril_line, vector, {"[tril]", "at least 2 dimensions", "[3]", "atleast_2d"});
  const int axis_line = __LINE__ + 1;
  auto far_axis = [] { swapaxes(ones({2, 3}), 0, 5); };
  testing::expect_error(axis_line, far_axis, {"[swapaxes]", "axis 5"});
  const int mesh_line = __LINE__ + 1;
  auto matrix = [] { meshgrid({ones({2, 2})}); };
  testing::expect_error(mesh_line, matrix, {"[meshgrid]", "1-d arrays", "[2,2]"});
}

}  // namespace
}  // namespace kiln
