// Graphs with loops and branches on each backend against the interpreter,
// and the passes that rewrite their bodies (lifting literals out of them,
// simplification) run on each backend.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include "backend/interp/interpreter.h"
#include "differential.h"
#include "ir/control.h"
#include "transform/literal_lifting.h"
#include "transform/simplify.h"
#include "transform/verify.h"

namespace kiln {
namespace {

using testing::run_differential;
using testing::trace_case;

std::vector<testing::Tolerance> within(double ulps) { return {testing::ulps(ulps, DType::f32)}; }

const runtime::Backend* const backends[] = {&cache::default_backend(), &interp::interpreter_backend()};

TEST(ControlBackends, WhileLoopWithCapturesRunsAlikeEverywhere) {
  Array limit = full({}, 50.0f, f32);
  Array growth = array({1.5f, 2.0f, 1.1f});
  auto fn = [&](const Array& x) {
    using State = std::pair<Array, Array>;
    return while_loop([&](const State& s) { return sum(s.first) < limit; },
                      [&](const State& s) {
                        return State{s.first * growth + 0.25f, s.second + 1};
                      },
                      State{x, zeros({}, i32)});
  };
  auto test = trace_case("grow", fn, array({1.0f, 2.0f, 3.0f}));
  EXPECT_EQ(test.captures.size(), 2u);  // limit and growth, through the loop's bodies
  for (const runtime::Backend* backend : backends) EXPECT_EQ(run_differential(test, within(8), *backend), "");
}

TEST(ControlBackends, SwitchAndCondRunAlikeEverywhere) {
  auto fn = [](const Array& index, const Array& x) {
    auto a = [](const Array& v) { return exp(v) * 0.5f; };
    auto b = [](const Array& v) { return tanh(v) + v; };
    auto c = [](const Array& v) { return v * v - 1.0f; };
    Array chosen = switch_(index, std::tuple{a, b, c}, x);
    return cond(
        sum(chosen) > 0.0f, [](const Array& v) { return v; }, [](const Array& v) { return -v; }, chosen);
  };
  Array x = array({0.5f, -1.0f, 2.0f});
  for (int32_t index : {-1, 0, 1, 2, 5}) {
    auto test = trace_case("switch", fn, full({}, index, i32), x);
    for (const runtime::Backend* backend : backends)
      EXPECT_EQ(run_differential(test, within(8), *backend), "") << index;
  }
}

TEST(ControlBackends, ScanForwardAndReversedRunAlikeEverywhere) {
  Array w = random::normal(random::key(5), {6, 6}) * 0.4f;
  for (bool reverse : {false, true}) {
    auto fn = [&](const Array& h0, const Array& xs) {
      auto step = [&](const Array& h, const Array& x) {
        Array next = tanh(matmul(w, h) + x);
        return std::pair{next, sum(next)};
      };
      return scan(step, h0, xs, std::nullopt, reverse);
    };
    auto test = trace_case("rnn", fn, zeros({6}), random::normal(random::key(6), {40, 6}));
    // Matrix products add in another order under BLAS; 40 steps of tanh keep that small.
    for (const runtime::Backend* backend : backends)
      EXPECT_EQ(run_differential(test, within(64), *backend), "") << reverse;
  }
}

TEST(ControlBackends, LiteralsLiftedOutOfNestedBodiesBecomeInputs) {
  // A number inside a cond inside a scan: lifted, it is a capture of each
  // body on the way and a lifted input of the graph.
  auto fn = [](const Array& xs) {
    auto step = [](const Array& total, const Array& x) {
      Array value = cond(
          x > 0.0f, [](const Array& v) { return v * 3.0f; }, [](const Array& v) { return v; }, x);
      return std::pair{total + value, value};
    };
    return scan(step, full({}, 0.0f, f32), xs);
  };
  Array xs = array({1.0f, -2.0f, 0.5f});
  auto test = trace_case("nested", fn, xs);
  const ir::Graph& graph = detail::ir_of(test.graph);
  std::vector<Scalar> values = graph.literal_values();
  std::vector<bool> lift(values.size(), false);
  size_t three = static_cast<size_t>(std::find(values.begin(), values.end(), Scalar(3.0f)) - values.begin());
  ASSERT_LT(three, values.size());
  lift[three] = true;
  transform::LiftedGraph lifted = transform::lift_literals(graph, lift);
  transform::verify(*lifted.graph);
  ASSERT_EQ(lifted.values.size(), 1u);
  EXPECT_EQ(lifted.values[0], Scalar(3.0f));
  EXPECT_EQ(lifted.graph->captures.size(), graph.captures.size() + 1);
  EXPECT_EQ(lifted.graph->literal_values().size(), values.size() - 1);
  // Run with the lifted number at 3 (the traced value) and at 5.
  std::vector<Array> captures = test.captures;
  for (float factor : {3.0f, 5.0f}) {
    std::vector<Array> bound = captures;
    bound.push_back(full({}, factor, f32));
    std::vector<Array> expected{full({}, 1.0f * factor - 2.0f + 0.5f * factor, f32),
                                array({factor, -2.0f, 0.5f * factor})};
    for (const runtime::Backend* backend : backends) {
      std::vector<Array> got = backend->compile(lifted.graph)->run(test.arguments, bound);
      ASSERT_EQ(got.size(), 2u);
      EXPECT_EQ(got[0].item<float>(), expected[0].item<float>()) << backend->name();
      EXPECT_EQ(got[1].to_vector<float>(), expected[1].to_vector<float>()) << backend->name();
    }
  }
}

TEST(ControlBackends, SimplifyWorksInsideBodiesAndKeepsTheirInputs) {
  auto fn = [](const Array& x) {
    return fori_loop(
        0, 3, [](const Array&, const Array& v) { return (v + 0.0f) * 1.0f - (-(-v)) + v; }, x);
  };
  auto test = trace_case("simplify", fn, array({1.0f, 2.0f}));
  auto simplified = std::make_shared<ir::Graph>(detail::ir_of(test.graph));
  transform::simplify(*simplified);
  transform::verify(*simplified);
  const ir::Node* loop = nullptr;
  for (const ir::Node& node : simplified->nodes)
    if (ir::is_control(node.op)) loop = &node;
  ASSERT_NE(loop, nullptr);
  const ir::Graph& body = *loop->bodies[0];
  size_t multiplications = 0;
  for (const ir::Node& node : body.nodes) multiplications += node.op == ir::Primitive::mul;
  EXPECT_EQ(multiplications, 0u) << "v * 1.0 inside the body should be gone";
  EXPECT_EQ(body.arguments.size(), 2u);  // the counter and the carry stay, used or not
  for (const runtime::Backend* backend : backends) EXPECT_EQ(run_differential(test, {}, *backend), "");
}

}  // namespace
}  // namespace kiln
