// vmap's API: in_axes and out_axes (per argument, per leaf, negative,
// std::nullopt), per-example gradients, nesting, composition with grad, jit
// and control flow, random keys, captures, the Jacobians built on it, and the
// errors. Every primitive against a loop over the lanes is in
// test_vmap_primitives.cpp.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include "ir/graph.h"
#include "support/errors.h"
#include "support/gradient_check.h"
#include "support/numpy_oracle.h"

namespace kiln {
namespace {

struct Mlp {
  Array w1, b1, w2, b2;
};

}  // namespace
}  // namespace kiln

KILN_TREE(kiln::Mlp, w1, b1, w2, b2);

namespace kiln {
namespace {

using testing::all_close;

Array normal_array(uint64_t seed, Shape shape, DType dtype = DType::f64) {
  return random::normal(random::key(seed), std::move(shape), dtype);
}

Mlp make_mlp(int64_t in, int64_t hidden, int64_t out) {
  return {normal_array(1, {in, hidden}) * 0.5, normal_array(2, {hidden}) * 0.1, normal_array(3, {hidden, out}) * 0.5,
          normal_array(4, {out}) * 0.1};
}

// One example: x [in], y [out].
Array example_loss(const Mlp& p, const Array& x, const Array& y) {
  Array h = tanh(matmul(x, p.w1) + p.b1);
  return sum(square(matmul(h, p.w2) + p.b2 - y));
}

constexpr double tight = 1e-12;

TEST(Vmap, PerExampleGradientsEqualALoopOfGrad) {
  Mlp p = make_mlp(5, 8, 3);
  Array xs = normal_array(10, {16, 5}), ys = normal_array(11, {16, 3});
  auto per_example = vmap(grad(example_loss), {std::nullopt, 0, 0});
  Mlp batched = per_example(p, xs, ys);
  ASSERT_EQ(batched.w1.shape(), (Shape{16, 5, 8}));
  ASSERT_EQ(batched.b2.shape(), (Shape{16, 3}));
  auto one = jit(grad(example_loss));
  std::vector<Array> x_rows = unstack(xs), y_rows = unstack(ys);
  std::vector<Array> w1, b1, w2, b2;
  for (size_t i = 0; i < x_rows.size(); ++i) {
    Mlp g = one(p, x_rows[i], y_rows[i]);
    w1.push_back(g.w1), b1.push_back(g.b1), w2.push_back(g.w2), b2.push_back(g.b2);
  }
  EXPECT_TRUE(all_close(batched.w1, stack(w1), tight, tight, "w1"));
  EXPECT_TRUE(all_close(batched.b1, stack(b1), tight, tight, "b1"));
  EXPECT_TRUE(all_close(batched.w2, stack(w2), tight, tight, "w2"));
  EXPECT_TRUE(all_close(batched.b2, stack(b2), tight, tight, "b2"));
  // Called again with the same shapes: compiled once.
  per_example(p, xs, ys);
  EXPECT_EQ(per_example.stats().compiles, 1);
}

TEST(Vmap, NestedVmapOfADotIsAMatmul) {
  auto dot = [](const Array& a, const Array& b) { return sum(a * b); };
  Array a = normal_array(20, {4, 6}), b = normal_array(21, {6, 5});
  // Rows of a against columns of b (b batched along axis 1).
  auto matrix = vmap(vmap(dot, {std::nullopt, 1}), {0, std::nullopt});
  EXPECT_TRUE(all_close(matrix(a, b), matmul(a, b), tight, tight, "vmap(vmap(dot))"));
  auto matrix_vector = vmap(dot, {0, std::nullopt});
  Array v = normal_array(22, {6});
  EXPECT_TRUE(all_close(matrix_vector(a, v), matmul(a, v), tight, tight, "vmap(dot)"));
}

TEST(Vmap, BatchesAlongAnyAxisAndPlacesTheResultsAxis) {
  Array x = normal_array(30, {3, 4, 5});
  auto row_sums = [](const Array& m) { return sum(m, 0); };  // [4, 5] -> [5] per lane
  // Lanes along axis 1: each lane is x[:, j, :].
  Array by_axis_1 = vmap(row_sums, {1})(x);
  EXPECT_TRUE(all_close(by_axis_1, sum(x, 0), tight, tight, "in axis 1"));
  Array negative = vmap(row_sums, {-2})(x);
  EXPECT_TRUE(all_close(negative, sum(x, 0), tight, tight, "in axis -2"));
  // Results with the lanes last.
  Array lanes_last = vmap(row_sums, {1}, -1)(x);
  EXPECT_TRUE(all_close(lanes_last, transpose(sum(x, 0)), tight, tight, "out axis -1"));
  Array lanes_middle = vmap([](const Array& m) { return m * 2.0; }, {2}, 1)(x);
  EXPECT_TRUE(all_close(lanes_middle, moveaxis(x, 2, 1) * 2.0, tight, tight, "out axis 1"));
}

TEST(Vmap, InAxesPerLeafOfATree) {
  auto fn = [](const std::pair<Array, Array>& p, const Array& scale) { return (p.first + p.second) * scale; };
  Array a = normal_array(40, {3, 4}), b = normal_array(41, {4, 3}), s = normal_array(42, {4});
  auto batched = vmap(fn, {BatchAxes::per_leaf({0, 1}), std::nullopt});
  Array result = batched(std::pair{a, b}, s);
  EXPECT_TRUE(all_close(result, (a + transpose(b)) * s, tight, tight, "per leaf"));
  // One axis for every argument.
  auto both = vmap([](const Array& u, const Array& v) { return u * v; }, 1);
  EXPECT_TRUE(all_close(both(a, transpose(b)), transpose(a * transpose(b)), tight, tight, "in_axes 1 for all"));
}

TEST(Vmap, UnbatchedResultsAreBroadcastOrKept) {
  Array x = normal_array(50, {4, 3}), c = normal_array(51, {3});
  auto fn = [](const Array& row, const Array& constant) { return std::pair{row * 2.0, constant + 1.0}; };
  auto [batched, broadcast] = vmap(fn, {0, std::nullopt})(x, c);
  EXPECT_EQ(broadcast.shape(), (Shape{4, 3}));
  EXPECT_TRUE(all_close(broadcast, broadcast_to(c + 1.0, {4, 3}), tight, tight, "broadcast"));
  auto [again, kept] = vmap(fn, {0, std::nullopt}, BatchAxes::per_leaf({0, std::nullopt}))(x, c);
  EXPECT_EQ(kept.shape(), (Shape{3}));
  EXPECT_TRUE(all_close(again, x * 2.0, tight, tight, "batched"));
}

TEST(Vmap, ComposesWithGradJitAndItself) {
  Array x = normal_array(60, {5, 3});
  auto f = [](const Array& v) { return sum(sin(v) * v); };
  auto df = [](const Array& v) { return cos(v) * v + sin(v); };
  EXPECT_TRUE(all_close(vmap(grad(f))(x), df(x), tight, tight, "vmap(grad)"));
  EXPECT_TRUE(all_close(jit(vmap(grad(f)))(x), df(x), tight, tight, "jit(vmap(grad))"));
  // grad of a sum over a vmap: the same per-lane derivative.
  auto total = [&](const Array& xs) { return sum(vmap(f)(xs)); };
  EXPECT_TRUE(all_close(grad(total)(x), df(x), tight, tight, "grad(vmap)"));
  // vmap of a jitted function inlines it.
  EXPECT_TRUE(all_close(vmap(jit(grad(f)))(x), df(x), tight, tight, "vmap(jit(grad))"));
  // jvp through vmap.
  auto [value, tangent] = jvp(vmap(f), std::tuple{x}, std::tuple{ones_like(x)});
  EXPECT_TRUE(all_close(tangent, sum(df(x), 1), tight, tight, "jvp(vmap)"));
  EXPECT_TRUE(all_close(value, sum(sin(x) * x, 1), tight, tight, "jvp(vmap) value"));
}

TEST(Vmap, CapturedArraysStayInputs) {
  Array w = normal_array(70, {3, 2});
  auto fn = [w](const Array& v) { return matmul(v, w); };
  auto batched = jit(vmap(fn));
  Array x = normal_array(71, {6, 3});
  Graph graph = batched.lower(x);
  EXPECT_EQ(graph.num_captures(), 1u) << graph;
  // One matmul for the whole batch, not one per lane.
  size_t matmuls = 0;
  for (const ir::Node& node : detail::ir_of(graph).nodes) matmuls += node.op == ir::Primitive::matmul;
  EXPECT_EQ(matmuls, 1u) << graph;
  EXPECT_TRUE(all_close(batched(x), matmul(x, w), tight, tight, "captured"));
}

TEST(Vmap, ABatchOfKeysGivesEveryLaneItsOwnStream) {
  Array keys = random::split(random::key(5), 4);
  auto draw = [](const Array& key) { return random::normal(key, {3}, DType::f64); };
  Array batched = vmap(draw)(keys);
  std::vector<Array> lanes;
  for (const Array& key : unstack(keys)) lanes.push_back(draw(key));
  EXPECT_TRUE(all_close(batched, stack(lanes), tight, tight, "batched keys"));
  // An unbatched key: the same numbers in every lane (JAX's rule).
  Array key = random::key(6);
  Array x = zeros({4, 3}, DType::f64);
  Array same = vmap([](const Array& k, const Array& v) { return v + random::normal(k, {3}, DType::f64); },
                    {std::nullopt, 0})(key, x);
  EXPECT_TRUE(all_close(same, broadcast_to(draw(key), {4, 3}), tight, tight, "unbatched key"));
}

// ---- control flow ----------------------------------------------------------------

TEST(Vmap, WhileLoopRunsUntilEveryLaneIsDone) {
  // Each lane doubles its value until it passes its own limit.
  auto grow = [](const Array& start, const Array& limit) {
    return while_loop([&](const std::pair<Array, Array>& c) { return c.first < limit; },
                      [](const std::pair<Array, Array>& c) {
                        return std::pair{c.first * 2.0, c.second + 1};
                      },
                      std::pair{start, zeros({}, DType::i32)});
  };
  Array starts = array({1.0, 3.0, 0.5, 10.0}), limits = array({5.0, 4.0, 100.0, 1.0});
  auto [values, steps] = vmap(grow)(starts, limits);
  EXPECT_EQ(values.to_vector<double>(), (std::vector<double>{8.0, 6.0, 128.0, 10.0}));
  EXPECT_EQ(steps.to_vector<int32_t>(), (std::vector<int32_t>{3, 1, 8, 0}));
  // An unbatched predicate (a shared trip count) keeps one loop.
  auto scaled = [](const Array& v) {
    return fori_loop(
        0, 3, [](const Array&, const Array& c) { return c * 2.0; }, v);
  };
  EXPECT_TRUE(all_close(vmap(scaled)(starts), starts * 8.0, tight, tight, "fori_loop"));
}

TEST(Vmap, ScanOverBatchedSequences) {
  // A running sum per lane, and the carries stacked.
  auto running = [](const Array& init, const Array& xs) {
    return scan([](const Array& c, const Array& x) { return std::pair{c + x, c * x}; }, init, xs);
  };
  Array inits = normal_array(80, {3}), xs = normal_array(81, {3, 5});
  auto [finals, stacked] = vmap(running)(inits, xs);
  ASSERT_EQ(stacked.shape(), (Shape{3, 5}));
  std::vector<Array> lane_finals, lane_stacked;
  std::vector<Array> init_rows = unstack(inits), x_rows = unstack(xs);
  for (size_t i = 0; i < 3; ++i) {
    auto [c, ys] = running(init_rows[i], x_rows[i]);
    lane_finals.push_back(c), lane_stacked.push_back(ys);
  }
  EXPECT_TRUE(all_close(finals, stack(lane_finals), tight, tight, "carries"));
  EXPECT_TRUE(all_close(stacked, stack(lane_stacked), tight, tight, "stacked"));
  // Shared sequence, batched initial carry.
  auto [shared_finals, shared_stacked] = vmap(running, {0, std::nullopt})(inits, x_rows[0]);
  EXPECT_TRUE(all_close(shared_finals, inits + sum(x_rows[0]), 1e-12, 1e-12, "shared xs"));
}

TEST(Vmap, DerivativesFlowThroughBatchedLoopsAndBranches) {
  // A scan per lane (a product of running sums), a branch per lane, summed:
  // vjp and jvp through every batched control node against finite differences.
  auto lane = [](const Array& init, const Array& xs) {
    auto [last, stacked] = scan(
        [](const Array& c, const Array& x) {
          return std::pair{c * 0.5 + sin(x), c * x};
        },
        init, xs);
    return cond(
               last > 0.0, [](const Array& v) { return v * v; }, [](const Array& v) { return -v; }, last) +
           sum(stacked);
  };
  testing::ArrayFunction fn = [&](const std::vector<Array>& in) { return sum(vmap(lane)(in[0], in[1])); };
  EXPECT_TRUE(testing::check_derivatives(fn, {normal_array(85, {4}), normal_array(86, {4, 6})}));
  // The pullback of vjp, batched over a batch of cotangents, is the Jacobian's rows.
  Array x = normal_array(87, {3});
  auto [y, pullback] = vjp([](const Array& v) { return exp(v) * 2.0; }, x);
  auto rows = vmap([&](const Array& c) { return std::get<0>(pullback(c)); })(eye(3, std::nullopt, 0, DType::f64));
  EXPECT_TRUE(all_close(rows, eye(3, std::nullopt, 0, DType::f64) * y, tight, tight, "vmap(pullback)"));
}

TEST(Vmap, CondWithABatchedPredicateTakesEachLanesBranch) {
  auto f = [](const Array& v) {
    return cond(
        v > 0.0, [](const Array& u) { return u * 2.0; }, [](const Array& u) { return -u + 1.0; }, v);
  };
  Array x = array({1.5, -2.0, 0.0, 3.0});
  EXPECT_EQ(vmap(f)(x).to_vector<double>(), (std::vector<double>{3.0, 3.0, 1.0, 6.0}));
  // An unbatched predicate keeps one branch for all lanes.
  auto g = [](const Array& flag, const Array& v) {
    return cond(
        flag, [](const Array& u) { return u * 2.0; }, [](const Array& u) { return u; }, v);
  };
  EXPECT_TRUE(all_close(vmap(g, {std::nullopt, 0})(array({true}, Shape{}), x), x * 2.0, tight, tight, "shared"));
  // Derivatives through the batched branches.
  auto dx = vmap(grad([&](const Array& v) { return f(v) * v; }))(x);
  EXPECT_EQ(dx.to_vector<double>(), (std::vector<double>{6.0, 5.0, 1.0, 12.0}));
}

// ---- Jacobians ---------------------------------------------------------------------

// Central differences, column by column: [*f(x).shape, *x.shape].
Array finite_difference_jacobian(const std::function<Array(const Array&)>& f, const Array& x) {
  const double step = 1e-6;
  std::vector<Array> columns;
  Array flat = reshape(x, {x.size()});
  for (int64_t i = 0; i < x.size(); ++i) {
    Array e = reshape(one_hot(array<int32_t>({static_cast<int32_t>(i)}, Shape{}), x.size(), DType::f64), x.shape());
    columns.push_back((f(x + e * step) - f(x - e * step)) / (2 * step));
  }
  Array stacked = stack(columns, -1);  // [*y, n]
  Shape shape = f(x).shape();
  shape.insert(shape.end(), x.shape().begin(), x.shape().end());
  return reshape(stacked, shape);
}

TEST(Vmap, JacobiansAgreeWithFiniteDifferences) {
  Array w = normal_array(90, {4, 6});
  auto f = [w](const Array& v) { return tanh(matmul(w, v)) * sum(v); };  // R^6 -> R^4
  Array x = normal_array(91, {6});
  Array expected = finite_difference_jacobian(f, x);
  Array reverse = jacrev(f)(x), forward = jacfwd(f)(x);
  ASSERT_EQ(reverse.shape(), (Shape{4, 6}));
  ASSERT_EQ(forward.shape(), (Shape{4, 6}));
  EXPECT_TRUE(all_close(reverse, expected, 1e-7, 1e-8, "jacrev"));
  EXPECT_TRUE(all_close(forward, expected, 1e-7, 1e-8, "jacfwd"));
  // Matrix inputs and outputs keep their shapes: [2, 3] -> [3, 2].
  auto g = [](const Array& m) { return transpose(exp(m) * 0.5); };
  Array m = normal_array(92, {2, 3});
  Array matrix_jacobian = jacrev(g)(m);
  ASSERT_EQ(matrix_jacobian.shape(), (Shape{3, 2, 2, 3}));
  EXPECT_TRUE(all_close(matrix_jacobian, finite_difference_jacobian(g, m), 1e-7, 1e-8, "jacrev of a matrix"));
  EXPECT_TRUE(all_close(jacfwd(g)(m), matrix_jacobian, tight, tight, "jacfwd of a matrix"));
}

TEST(Vmap, HessianIsExact) {
  // sum(x^2 sin x) + (sum x)^3 / 6: a diagonal part and a dense part.
  auto g = [](const Array& v) { return sum(square(v) * sin(v)) + pow(sum(v), 3.0) / 6.0; };
  Array x = normal_array(93, {5});
  Array h = hessian(g)(x);
  ASSERT_EQ(h.shape(), (Shape{5, 5}));
  Array diagonal = 2.0 * sin(x) + 4.0 * x * cos(x) - square(x) * sin(x);
  Array expected = eye(5, std::nullopt, 0, DType::f64) * diagonal + sum(x);
  EXPECT_TRUE(all_close(h, expected, 1e-12, 1e-12, "hessian"));
  // Under jit, the same.
  EXPECT_TRUE(all_close(jit(hessian(g))(x), expected, 1e-12, 1e-12, "jit(hessian)"));
}

// ---- errors ---------------------------------------------------------------------------

TEST(Vmap, ErrorsNameTheArgumentsAndSizes) {
  // Each error names the line where vmap was written: the line after `line`.
  auto add_them = [](const Array& a, const Array& b) { return a + b; };
  auto first = [](const std::pair<Array, Array>& p) { return p.first; };
  Array a = zeros({3, 2}), b = zeros({4, 2});
  int line = __LINE__ + 1;
  auto sizes_differ = [&] { vmap(add_them)(a, b); };
  testing::expect_error(
      line, sizes_differ,
      {"batch sizes differ", "argument 0 (f32[3,2]) has 3 lanes", "argument 1 (f32[4,2]) has 4 along axis 0"});
  line = __LINE__ + 1;
  auto none_batched = [&] { vmap(add_them, {std::nullopt, std::nullopt})(a, a); };
  testing::expect_error(line, none_batched, {"no argument is batched", "batch at least one array argument"});
  line = __LINE__ + 1;
  auto too_few = [&] { vmap(add_them, {0})(a, a); };
  testing::expect_error(line, too_few, {"in_axes has 1 entries for 2 arguments"});
  line = __LINE__ + 1;
  auto out_of_range = [&] { vmap(add_them, {2, 0})(a, a); };
  testing::expect_error(line, out_of_range, {"in_axes 2 is out of range for argument 0 (f32[3,2]), which has 2 axes"});
  line = __LINE__ + 1;
  auto out_axis = [&] { vmap(add_them, {0, 0}, 3)(a, a); };
  testing::expect_error(line, out_axis, {"out_axes 3 is out of range for result leaf 0"});
  line = __LINE__ + 1;
  auto not_unbatched = [&] { vmap(add_them, {0, 0}, std::nullopt)(a, a); };
  testing::expect_error(line, not_unbatched, {"out_axes is std::nullopt for result leaf 0", "differs between lanes"});
  line = __LINE__ + 1;
  auto per_leaf = [&] { vmap(first, {BatchAxes::per_leaf({0})})(std::pair{a, a}); };
  testing::expect_error(line, per_leaf, {"in_axes for argument 0 lists 1 axes, but the argument has 2 array leaves"});
}

TEST(Vmap, ReadingALaneInCppIsAnErrorAtTheUsersLine) {
  int line = __LINE__ + 2;  // the read's line
  auto branchy = [](const Array& v) {
    if (sum(v).item<float>() > 0) return v;  // depends on the lane: impossible to batch
    return -v;
  };
  auto call = [&] { vmap(branchy)(zeros({3, 2})); };
  testing::expect_error(line, call,
                        {"cannot read the value of traced array f32[]", "vmap(",
                         "inside vmap every lane has its own value", "kiln::cond"});
}

}  // namespace
}  // namespace kiln
