// gather, the scatter family (assign, add, mul, max, min), put_along_axis and
// x.at(...) against NumPy (fancy indexing and the unbuffered ufunc.at) over
// random shapes with zero-size dims, every dtype, negative, out-of-range and
// repeated indices; traced against eager, under jit; and the user errors.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <functional>
#include <tuple>

#include "ir/graph.h"
#include "support/errors.h"
#include "support/numpy_oracle.h"
#include "support/primitive.h"

namespace kiln {
namespace {

using testing::all_dtypes;
using testing::eager_and_traced;
using testing::NumpyOracle;
using testing::OracleCase;
using testing::RandomArrays;

std::string describe(const Array& x) { return std::string(dtype_name(x.dtype())) + shape_string(x.shape()); }

/// NumPy's coordinates of kiln's positions: b (indices [..., k] into a)
/// wrapped once, as a tuple w[..., d]; m: the positions inside a.
const std::string wrapped_positions =
    "w := np.where(b < 0, b + np.array(a.shape[:b.shape[-1]], dtype=b.dtype), b), "
    "m := np.all((w >= 0) & (w < np.array(a.shape[:b.shape[-1]], dtype=np.int64)), axis=-1), "
    "t := tuple(w[m][:, d] for d in range(b.shape[-1])), ";

/// NumPy's version of scatter in `mode`: the kept positions' updates applied unbuffered.
std::string numpy_scatter(const std::string& mode) {
  std::string apply = mode == "assign" ? "o.__setitem__(t, c[m])" : "np." + mode + ".at(o, t, c[m])";
  return "(o := a.copy(), " + wrapped_positions + apply + ", o)[-1]";
}

TEST(GatherScatter, GatherMatchesNumpyWithClampedIndices) {
  RandomArrays random(31);
  NumpyOracle oracle;
  std::vector<OracleCase> cases;
  for (int trial = 0; trial < 120; ++trial) {
    DType dtype = all_dtypes[static_cast<size_t>(trial) % all_dtypes.size()];
    Shape shape = random.shape(0, 4);
    auto k = random.integer(0, static_cast<int64_t>(shape.size()));
    Shape index_shape = random.shape(0, 2, 4);
    index_shape.push_back(k);
    Array x = random.uniform(shape, dtype);
    Array indices = random.uniform(index_shape, trial % 2 ? DType::i64 : DType::i32, -8, 8);
    std::string context = "gather(" + describe(x) + ", " + describe(indices) + ")";
    bool empty_axis = false;
    for (int64_t d = 0; d < k; ++d) empty_axis = empty_axis || shape[static_cast<size_t>(d)] == 0;
    if (empty_axis && indices.size() > 0) {
      EXPECT_THROW(gather(x, indices), Error) << context;
      continue;
    }
    Array actual = eager_and_traced(
        context, [](const Array& a, const Array& b) { return gather(a, b); }, x, indices);
    std::string expression =
        k == 0 ? "np.broadcast_to(a, b.shape[:-1] + a.shape)"
               : "a[tuple(np.clip(np.where(b[..., d] < 0, b[..., d] + a.shape[d], b[..., d]), 0, a.shape[d] - 1) "
                 "for d in range(b.shape[-1]))]";
    if (empty_axis) expression = "np.zeros(b.shape[:-1] + a.shape[b.shape[-1]:], a.dtype)";
    int id = oracle.add(expression, {x, indices});
    cases.push_back({actual, id, context});
    cases.push_back(
        {jit([](const Array& a, const Array& b) { return gather(a, b); })(x, indices), id, context + " under jit"});
  }
  oracle.run();
  testing::expect_cases_match(oracle, cases);
}

TEST(GatherScatter, EveryScatterModeMatchesNumpyDroppingOutOfRange) {
  RandomArrays random(32);
  NumpyOracle oracle;
  std::vector<OracleCase> cases;
  const std::vector<std::pair<std::string, std::string>> modes = {
      {"assign", "assign"}, {"add", "add"}, {"mul", "multiply"}, {"max", "maximum"}, {"min", "minimum"}};
  for (int trial = 0; trial < 150; ++trial) {
    DType dtype = all_dtypes[static_cast<size_t>(trial) % all_dtypes.size()];
    const auto& [mode, numpy_mode] = modes[static_cast<size_t>(trial / 5) % modes.size()];
    Shape shape = random.shape(1, 4);
    auto k = random.integer(1, static_cast<int64_t>(shape.size()));
    Shape index_shape = random.shape(0, 2, 6);
    index_shape.push_back(k);
    Shape update_shape(index_shape.begin(), index_shape.end() - 1);
    update_shape.insert(update_shape.end(), shape.begin() + k, shape.end());
    Array x = random.uniform(shape, dtype, -4, 4);
    // Few distinct positions: repeats, and ties for max and min.
    Array indices = random.uniform(index_shape, trial % 2 ? DType::i64 : DType::i32, -6, 6);
    Array updates = astype(random.uniform(update_shape, DType::i32, -4, 4), dtype);
    int64_t code = static_cast<int64_t>(trial / 5) % static_cast<int64_t>(modes.size());
    auto fn = [code](const Array& a, const Array& b, const Array& c) {
      return testing::primitive(ir::Primitive::scatter, {a, b, c}, {code});
    };
    std::string context = "scatter " + mode + "(" + describe(x) + ", " + describe(indices) + ")";
    Array actual = eager_and_traced(context, fn, x, indices, updates);
    int id = oracle.add(numpy_scatter(numpy_mode), {x, indices, updates});
    cases.push_back({actual, id, context});
    cases.push_back({jit(fn)(x, indices, updates), id, context + " under jit"});
  }
  oracle.run();
  testing::expect_cases_match(oracle, cases);
}

TEST(GatherScatter, AssignKeepsTheLastOfRepeatedUpdates) {
  Array x = zeros({4}, DType::i32);
  Array result = scatter(x, array<int32_t>({1, 3, 1, -1, 7, -9}), array<int32_t>({10, 20, 30, 40, 50, 60}));
  EXPECT_EQ(result.to_vector<int32_t>(), (std::vector<int32_t>{0, 30, 0, 40}));
}

TEST(GatherScatter, AlongAxisFormsMatchNumpy) {
  RandomArrays random(33);
  NumpyOracle oracle;
  std::vector<OracleCase> cases;
  for (int trial = 0; trial < 100; ++trial) {
    DType dtype = all_dtypes[static_cast<size_t>(trial) % all_dtypes.size()];
    Shape shape = random.shape(1, 3);
    auto rank = static_cast<int64_t>(shape.size());
    int64_t axis = random.integer(-rank, rank - 1), positive = axis < 0 ? axis + rank : axis;
    int64_t extent = shape[static_cast<size_t>(positive)];
    Array x = random.uniform(shape, dtype, -4, 4);
    Array indices = random.uniform(random.shape(0, 2, 5), DType::i32, static_cast<double>(-extent - 2),
                                   static_cast<double>(extent + 2));
    Shape update_shape(shape.begin(), shape.begin() + positive);
    update_shape.insert(update_shape.end(), indices.shape().begin(), indices.shape().end());
    update_shape.insert(update_shape.end(), shape.begin() + positive + 1, shape.end());
    Array updates = astype(random.uniform(update_shape, DType::i32, -4, 4), dtype);
    int r = static_cast<int>(indices.ndim());
    std::string moved = "np.moveaxis(c, list(range(" + std::to_string(positive) + ", " + std::to_string(positive + r) +
                        ")), list(range(" + std::to_string(r) + ")))";
    std::string view = "np.moveaxis(o, " + std::to_string(positive) + ", 0)";
    std::string kept = "w := np.where(b < 0, b + " + std::to_string(extent) + ", b), m := (w >= 0) & (w < " +
                       std::to_string(extent) + "), u := " + moved + ", ";
    auto numpy = [&](const std::string& apply) { return "(o := a.copy(), " + kept + apply + ", o)[-1]"; };
    std::string context = describe(x) + " axis " + std::to_string(axis) + " indices " + describe(indices);
    const std::vector<
        std::tuple<std::string, std::function<Array(const Array&, const Array&, const Array&)>, std::string>>
        forms = {
            {"scatter", [axis](auto& a, auto& b, auto& c) { return scatter(a, b, c, axis); },
             view + ".__setitem__(w[m], u[m])"},
            {"scatter_mul", [axis](auto& a, auto& b, auto& c) { return scatter_mul(a, b, c, axis); },
             "np.multiply.at(" + view + ", w[m], u[m])"},
            {"scatter_max", [axis](auto& a, auto& b, auto& c) { return scatter_max(a, b, c, axis); },
             "np.maximum.at(" + view + ", w[m], u[m])"},
            {"scatter_min", [axis](auto& a, auto& b, auto& c) { return scatter_min(a, b, c, axis); },
             "np.minimum.at(" + view + ", w[m], u[m])"},
        };
    for (const auto& [name, fn, apply] : forms) {
      Array actual = eager_and_traced(name + " " + context, fn, x, indices, updates);
      int id = oracle.add(numpy(apply), {x, indices, updates});
      cases.push_back({actual, id, name + " " + context});
      cases.push_back({jit(fn)(x, indices, updates), id, name + " under jit " + context});
    }
    // put_along_axis: indices of x's rank, values broadcast to them.
    Shape along = shape;
    along[static_cast<size_t>(positive)] = random.integer(0, 4);
    if (random.integer(0, 2) == 0 && rank > 1) along[static_cast<size_t>((positive + 1) % rank)] = 1;
    Array positions =
        random.uniform(along, DType::i64, static_cast<double>(-extent - 2), static_cast<double>(extent + 2));
    Array values = astype(random.uniform({along.back()}, DType::i32, -9, 9), dtype);
    auto put = [axis](const Array& a, const Array& b, const Array& c) { return put_along_axis(a, b, c, axis); };
    Array actual = eager_and_traced("put_along_axis " + context, put, x, positions, values);
    // NumPy raises for out-of-range indices: give it kiln's kept ones and
    // point the dropped ones at a spare slot past the axis.
    std::string expression = "(o := np.concatenate([a, np.zeros(a.shape[:" + std::to_string(positive) +
                             "] + (1,) + a.shape[" + std::to_string(positive + 1) +
                             ":], a.dtype)], axis=" + std::to_string(positive) + "), w := np.where(b < 0, b + " +
                             std::to_string(extent) + ", b), " + "i := np.where((w >= 0) & (w < " +
                             std::to_string(extent) + "), w, " + std::to_string(extent) +
                             "), np.put_along_axis(o, i, c, " + std::to_string(positive) + "), np.take(o, range(" +
                             std::to_string(extent) + "), axis=" + std::to_string(positive) + "))[-1]";
    cases.push_back({actual, oracle.add(expression, {x, positions, values}), "put_along_axis " + context});
  }
  oracle.run();
  testing::expect_cases_match(oracle, cases);
}

TEST(GatherScatter, AtUpdatesMatchNumpy) {
  RandomArrays random(34);
  NumpyOracle oracle;
  std::vector<OracleCase> cases;
  for (int trial = 0; trial < 120; ++trial) {
    DType dtype = trial % 3 == 0 ? DType::i32 : DType::f64;
    Shape shape = random.shape(1, 3, 4, false);
    Array x = random.uniform(shape, dtype, -4, 4);
    std::vector<Index> indices;
    std::vector<Array> arrays;
    std::string python;
    Shape base = random.shape(0, 2, 3, false);
    for (size_t axis = 0; axis < shape.size(); ++axis) {
      int64_t n = shape[axis], pick = random.integer(0, 3);
      std::string text;
      if (pick == 0) {
        int64_t i = random.integer(-n, n - 1);
        indices.push_back(i);
        text = std::to_string(i);
      } else if (pick == 1 && arrays.size() < 2) {
        arrays.push_back(random.uniform(random.broadcastable(base), DType::i32, static_cast<double>(-n),
                                        static_cast<double>(n) - 0.01));
        indices.push_back(arrays.back());
        text = std::string(1, static_cast<char>('c' + arrays.size() - 1));
      } else {
        Slice slice{random.integer(-n, n), std::nullopt, random.integer(1, 2) * (random.integer(0, 1) ? 1 : -1)};
        indices.push_back(slice);
        text = std::to_string(*slice.start) + "::" + std::to_string(slice.step);
      }
      python += (python.empty() ? "" : ", ") + text;
    }
    Shape selected = x.at(indices).get().shape();
    Array values = astype(random.uniform(selected, DType::i32, -5, 5), dtype);
    std::vector<Array> inputs{x, values};
    inputs.insert(inputs.end(), arrays.begin(), arrays.end());
    std::string context = describe(x) + ".at[" + python + "]";
    std::string where = "np.s_[" + python + ",]";
    const std::vector<std::tuple<std::string, Array, std::string>> forms = {
        {"set", x.at(indices).set(values), "o.__setitem__(" + where + ", b)"},
        {"add", x.at(indices).add(values), "np.add.at(o, " + where + ", b)"},
        {"mul", x.at(indices).mul(values), "np.multiply.at(o, " + where + ", b)"},
        {"max", x.at(indices).max(values), "np.maximum.at(o, " + where + ", b)"},
        {"min", x.at(indices).min(values), "np.minimum.at(o, " + where + ", b)"},
    };
    for (const auto& [name, actual, apply] : forms)
      cases.push_back({actual, oracle.add("(o := a.copy(), " + apply + ", o)[-1]", inputs), context + "." + name});
    auto traced = jit([indices](const Array& v, const Array& u) { return v.at(indices).add(u); });
    cases.push_back({traced(x, values), oracle.add("(o := a.copy(), np.add.at(o, " + where + ", b), o)[-1]", inputs),
                     context + ".add under jit"});
    cases.push_back({x.at(indices).set(2),
                     oracle.add("(o := a.copy(), o.__setitem__(" + where + ", 2), o)[-1]", inputs),
                     context + ".set(2)"});
  }
  oracle.run();
  testing::expect_cases_match(oracle, cases);
}

TEST(GatherScatter, AtDropsOutOfRangeEntriesAndGetClamps) {
  Array x = reshape(arange(0, 6, 1, DType::f64), {2, 3});
  Array columns = array<int32_t>({-1, 3, -4, 0});
  Array set = x.at({Slice{}, columns}).set(-1.0);
  EXPECT_EQ(set.to_vector<double>(), (std::vector<double>{-1, 1, -1, -1, 4, -1}));
  Array added = x.at({1, columns}).add(10.0);
  EXPECT_EQ(added.to_vector<double>(), (std::vector<double>{0, 1, 2, 13, 4, 15}));
  // get reads as gather: an out-of-range entry is clamped into the axis.
  EXPECT_EQ(x.at({1, columns}).get().to_vector<double>(), (std::vector<double>{5, 5, 3, 3}));
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{0, 1, 2, 3, 4, 5}));  // x itself is unchanged
}

TEST(GatherScatter, ErrorsNameTheOperationShapesAndLine) {
  Array x = ones({3, 4});
  const int float_line = __LINE__ + 1;
  auto floats = [&] { gather(x, ones({2, 1})); };
  testing::expect_error(float_line, floats, {"[gather]", "f32[2,1]", "astype(indices, kiln::i32)"});
  const int many_line = __LINE__ + 1;
  auto too_many = [&] { gather(x, zeros({2, 3}, DType::i32)); };
  testing::expect_error(many_line, too_many, {"[gather]", "address 3 axes of f32[3,4]"});
  const int updates_line = __LINE__ + 1;
  auto wrong = [&] { scatter_max(x, array<int32_t>({0, 1}), ones({3, 3}), 1); };
  testing::expect_error(updates_line, wrong, {"[scatter_max]", "updates must be f32[3,2]", "got f32[3,3]"});
  const int dtype_line = __LINE__ + 1;
  auto mixed = [&] { scatter(x, array<int32_t>({0}), ones({1, 4}, DType::f64)); };
  testing::expect_error(dtype_line, mixed, {"[scatter]", "f64[1,4]", "astype(updates, x.dtype())"});
  const int put_line = __LINE__ + 1;
  auto rank = [&] { put_along_axis(x, array<int32_t>({0}), 1.0, 1); };
  testing::expect_error(put_line, rank, {"[put_along_axis]", "i32[1]", "rank of x f32[3,4]"});
  const int at_line = __LINE__ + 1;
  auto mask = [&] { x.at({greater(x, 0)}).set(0.0); };
  // The user called at (x.at(...).set): the error names it, not the index inside.
  testing::expect_error(at_line, mask, {"[at]", "boolean index array", "where(mask, x, fill)"});
}

}  // namespace
}  // namespace kiln
