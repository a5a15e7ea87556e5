// The public autodiff API: result types, argnums, has_aux, composition with
// jit, higher order, captures as constants, and the errors.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <sstream>

#include "ir/graph.h"
#include "support/errors.h"
#include "support/numpy_oracle.h"

namespace kiln {
namespace {

struct Layer {
  Array w, b;
  int id = 0;  // a static leaf: kept, never differentiated
};

}  // namespace
}  // namespace kiln

KILN_TREE(kiln::Layer, w, b, id);

namespace kiln {
namespace {

Array layer_loss(const Layer& layer, const Array& x) { return sum(square(matmul(x, layer.w) + layer.b)); }

Layer make_layer() { return {array({0.5, -1.0, 2.0, 0.25}, {2, 2}), array({0.1, -0.2}), 7}; }
const Array inputs = array({1.0, 2.0, -1.0, 0.5, 3.0, -2.0}, {3, 2});

TEST(AutodiffApi, GradientsHaveTheArgumentsType) {
  auto [value, grads] = value_and_grad(layer_loss)(make_layer(), inputs);
  static_assert(std::is_same_v<decltype(grads), Layer>);
  EXPECT_EQ(grads.id, 7);
  // d/dw sum((xw+b)^2) = 2 x^T (xw+b); d/db = 2 sum_rows (xw+b)
  Array residual = matmul(inputs, make_layer().w) + make_layer().b;
  EXPECT_TRUE(testing::all_close(grads.w, 2.0 * matmul(transpose(inputs), residual), 1e-12, 1e-12, "w"));
  EXPECT_TRUE(testing::all_close(grads.b, 2.0 * sum(residual, 0), 1e-12, 1e-12, "b"));
  EXPECT_TRUE(testing::all_close(value, sum(square(residual)), 1e-12, 1e-12, "value"));
  Layer only = grad(layer_loss)(make_layer(), inputs);
  EXPECT_TRUE(testing::all_close(only.w, grads.w, 0, 0, "grad == value_and_grad"));
}

TEST(AutodiffApi, ArgnumsGiveATupleOverAllArguments) {
  auto loss = [](const Array& w, const Array& x, const Array& labels) { return sum(take(w, labels, 0) * x); };
  Array w = array({1.0, 2.0, 3.0});
  Array x = array({0.5, 0.25});
  Array labels = array({2, 0});
  auto [gw, gx, glabels] = grad(loss, {0, 1})(w, x, labels);
  EXPECT_EQ(gw.to_vector<double>(), (std::vector<double>{0.25, 0, 0.5}));
  EXPECT_EQ(gx.to_vector<double>(), (std::vector<double>{3, 1}));
  EXPECT_FALSE(glabels.defined());  // not asked for
  auto [value, both] = value_and_grad(loss, {1})(w, x, labels);
  EXPECT_FALSE(std::get<0>(both).defined());
  EXPECT_EQ(std::get<1>(both).to_vector<double>(), (std::vector<double>{3, 1}));
}

TEST(AutodiffApi, HasAux) {
  auto loss = [](const Array& x) { return std::make_pair(sum(x * x), x * 2.0); };
  auto [value, grads] = value_and_grad_with_aux(loss)(array({1.0, 3.0}));
  EXPECT_EQ(value.first.item<double>(), 10.0);
  EXPECT_EQ(value.second.to_vector<double>(), (std::vector<double>{2, 6}));
  EXPECT_EQ(grads.to_vector<double>(), (std::vector<double>{2, 6}));
  auto [value2, grads2] = value_and_grad(loss, {0}, /*has_aux=*/true)(array({1.0, 3.0}));
  EXPECT_EQ(std::get<0>(grads2).to_vector<double>(), (std::vector<double>{2, 6}));
}

TEST(AutodiffApi, ComposesWithJitBothWays) {
  Layer layer = make_layer();
  auto [v1, g1] = value_and_grad(layer_loss)(layer, inputs);
  auto jitted = jit(value_and_grad(layer_loss));
  auto [v2, g2] = jitted(layer, inputs);
  auto [v3, g3] = value_and_grad(jit(layer_loss))(layer, inputs);
  EXPECT_TRUE(testing::all_close(g2.w, g1.w, 1e-12, 1e-12, "jit(value_and_grad)"));
  EXPECT_TRUE(testing::all_close(g3.w, g1.w, 1e-12, 1e-12, "value_and_grad(jit)"));
  // Forward and backward are one graph: its outputs are the value and both gradients.
  Graph graph = jitted.lower(layer, inputs);
  EXPECT_EQ(detail::ir_of(graph).outputs.size(), 3u);
  int matmuls = 0;
  for (const auto& node : detail::ir_of(graph).nodes) matmuls += node.op == ir::Primitive::matmul;
  EXPECT_EQ(matmuls, 2) << graph;  // x @ w forward, x^T @ ct backward (no gradient for x is asked)
}

TEST(AutodiffApi, SecondDerivatives) {
  auto cube = [](const Array& x) { return sum(x * x * x); };
  auto second = grad([&](const Array& x) { return sum(grad(cube)(x)); });
  EXPECT_EQ(second(array({1.0, -2.0})).to_vector<double>(), (std::vector<double>{6, -12}));
  auto quadratic = [](const Array& x) {
    Array a = array({2.0, 1.0, 1.0, 3.0}, {2, 2});
    return sum(matmul(a, x) * x);  // x^T A x, Hessian A + A^T
  };
  auto second_quadratic = grad([&](const Array& x) { return sum(grad(quadratic)(x) * array({1.0, 0.0})); });
  EXPECT_EQ(second_quadratic(array({0.3, -0.7})).to_vector<double>(), (std::vector<double>{4, 2}));
}

TEST(AutodiffApi, CapturedArraysAreConstantsAndStayInputs) {
  Array scale = array({3.0, 4.0});
  auto f = [&](const Array& x) { return sum(x * scale); };
  auto [value, pullback] = vjp(f, array({1.0, 1.0}));
  auto [dx] = pullback(scalar(1.0));
  EXPECT_EQ(dx.to_vector<double>(), (std::vector<double>{3, 4}));
  auto g = jit(grad(f));
  Graph graph = g.lower(array({1.0, 1.0}));
  EXPECT_EQ(graph.num_captures(), 1u) << graph;
  for (const auto& node : detail::ir_of(graph).nodes)
    EXPECT_TRUE(node.op != ir::Primitive::literal || node.type.shape.empty());
  scale = array({5.0, 6.0});
  EXPECT_EQ(g(array({1.0, 1.0})).to_vector<double>(), (std::vector<double>{5, 6}));  // never stale
}

TEST(AutodiffApi, Jvp) {
  auto f = [](const Array& x) { return sin(x) * x; };
  Array x = array({0.5, 1.5});
  auto [y, dy] = jvp(f, std::tuple{x}, std::tuple{array({1.0, 2.0})});
  std::vector<double> xs = x.to_vector<double>(), got = dy.to_vector<double>();
  for (size_t i = 0; i < xs.size(); ++i)
    EXPECT_NEAR(got[i], (std::cos(xs[i]) * xs[i] + std::sin(xs[i])) * (i == 0 ? 1.0 : 2.0), 1e-12);
}

TEST(AutodiffApi, Errors) {
  const int line = __LINE__ + 1;
  auto vector_valued = grad([](const Array& x) { return x * 2.0; });
  try {
    vector_valued(array({1.0, 2.0}));
    FAIL();
  } catch (const Error& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("floating scalar"), std::string::npos) << message;
    EXPECT_NE(message.find("f64[2]"), std::string::npos) << message;
    EXPECT_NE(message.find("test_autodiff_api.cpp:" + std::to_string(line)), std::string::npos) << message;
  }
  auto of_integers = grad([](const Array& x) { return sum(astype(x, f32)); });
  EXPECT_THROW(of_integers(array({1, 2})), Error);
  auto with_pair = value_and_grad([](const Array& x) { return std::make_pair(sum(x), x); });
  EXPECT_THROW(with_pair(array({1.0})), Error);
  auto [value, pullback] = vjp([](const Array& x) { return x * 2.0; }, array({1.0, 2.0}));
  EXPECT_THROW(pullback(array({1.0})), Error);  // wrong cotangent shape
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// Derivatives traced inside a graph name the user's lines: the caller of
// vjp/jvp/grad for the traced function's arguments, and the differentiated
// operation's line for each derivative node — never a kiln header or source file.
TEST(AutodiffApi, DerivativeNodesNameTheUsersLines) {
  auto inside = [](const Array& x) {
    auto [y, pullback] = vjp([](const Array& v) { return tanh(v) * v; }, x);
    auto [dx] = pullback(ones_like(y));
    auto [value, tangent] = jvp([](const Array& v) { return exp(v); }, std::tuple{x}, std::tuple{ones_like(x)});
    Array g = grad([](const Array& v) { return sum(sin(v)); })(x);
    return dx + tangent + value + g;
  };
  Graph graph = make_graph("derivatives", inside, array({0.5, 1.0}));
  std::ostringstream text;
  text << graph;
  std::string printed = text.str();
  EXPECT_EQ(printed.find(".h:"), std::string::npos) << printed;
  for (const char* internal : {"autodiff.cpp", "differentiate.cpp", "unary.cpp", "binary.cpp", "reduce.cpp"})
    EXPECT_EQ(printed.find(internal), std::string::npos) << internal << "\n" << printed;
  EXPECT_NE(printed.find("test_autodiff_api.cpp"), std::string::npos) << printed;
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

using testing::expect_error;

Array two_argument_loss(const Array& a, const Array& b) { return sum(a * b); }

TEST(AutodiffApi, ArgnumsAreValidatedAndNegativeOnesCountFromTheEnd) {
  Array a = array({1.0, 2.0}), b = array({3.0, 4.0});
  auto [ga, gb] = grad(two_argument_loss, {-1})(a, b);
  EXPECT_FALSE(ga.defined());
  EXPECT_EQ(gb.to_vector<double>(), (std::vector<double>{1.0, 2.0}));
  auto out_of_range = grad(two_argument_loss, {2});
  expect_error(__LINE__ - 1, [&] { out_of_range(a, b); },
               {"[grad]", "argnums {2}", "with 2 arguments", "2 is out of range"});
  auto too_negative = value_and_grad(two_argument_loss, {-3});
  expect_error(__LINE__ - 1, [&] { too_negative(a, b); }, {"-3 is out of range"});
  auto repeated = grad(two_argument_loss, {1, -1});
  expect_error(__LINE__ - 1, [&] { repeated(a, b); }, {"argnums {1, -1}", "names argument 1 twice"});
  auto empty = grad(two_argument_loss, std::initializer_list<int>{});
  expect_error(__LINE__ - 1, [&] { empty(a, b); }, {"names no argument"});
}

TEST(AutodiffApi, TangentsMustMatchTheirPrimals) {
  auto f = [](const Array& x, const Array& n) { return x * astype(n, f64); };
  Array x = array({1.0, 2.0}), n = array({3, 4});
  auto primals = std::tuple{x, n};
  auto long_tangent = std::tuple{array({1.0, 1.0, 1.0}), Array()};
  auto float_tangent = std::tuple{ones_like(x), array({0.0})};
  expect_error(__LINE__, [&] { jvp(f, primals, long_tangent); },
               {"[jvp]", "tangent 0 is f64[3] but its primal is f64[2]"});
  expect_error(__LINE__, [&] { jvp(f, primals, float_tangent); },
               {"tangent 1 is f64[1] for the primal i32[2]", "no derivative", "empty Array()"});
  auto [value, tangent] = jvp(f, primals, std::tuple{ones_like(x), Array()});
  EXPECT_EQ(tangent.to_vector<double>(), (std::vector<double>{3.0, 4.0}));
}

// An integer or bool primal has no derivative: a tangent for it, even zeros
// of its own type, is refused (as JAX and MLX do), where it was once ignored.
TEST(AutodiffApi, IntegerPrimalsTakeNoTangent) {
  Array x = array({1.0, 2.0, 3.0}), index = array({2, 0}), flags = array({true, false});
  auto gather = [](const Array& v, const Array& i) { return take(v, i); };
  auto masked = [](const Array& v, const Array& m) { return v * astype(m, f64); };
  auto primals = std::tuple{x, index};
  auto ones_tangent = std::tuple{ones_like(x), ones_like(index)};
  auto zeros_tangent = std::tuple{ones_like(x), zeros_like(index)};
  expect_error(__LINE__, [&] { jvp(gather, primals, ones_tangent); },
               {"[jvp]", "tangent 1 is i32[2] for the primal i32[2]", "no derivative"});
  expect_error(__LINE__, [&] { jvp(gather, primals, zeros_tangent); }, {"tangent 1 is i32[2]"});
  auto mask_primals = std::tuple{array({1.0, 2.0}), flags};
  auto mask_tangent = std::tuple{array({1.0, 1.0}), flags};
  expect_error(__LINE__, [&] { jvp(masked, mask_primals, mask_tangent); },
               {"tangent 1 is bool[2] for the primal bool[2]"});
  auto [value, tangent] = jvp(gather, primals, std::tuple{array({10.0, 20.0, 30.0}), Array()});
  EXPECT_EQ(tangent.to_vector<double>(), (std::vector<double>{30.0, 10.0}));
}

TEST(AutodiffApi, PullbackErrorsNameTheVjpLine) {
  auto [y, pullback] = vjp([](const Array& v) { return v * 2.0; }, array({1.0, 2.0}));
  expect_error(__LINE__ - 1, [&] { pullback(array({1.0})); },
               {"[vjp]", "cotangent 0 is f64[1] but the value is f64[2]"});
}

}  // namespace
}  // namespace kiln
