// Tracing into a Graph: printed IR with source lines, captured arrays as
// implicit inputs, literals with their lines, leak and concretization
// errors. The graph's hashes are in tests/ir, the verifier in tests/transform.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <array>

#include "backend/interp/interpreter.h"
#include "ir/graph.h"
#include "support/errors.h"
#include "support/golden.h"
#include "transform/verify.h"

namespace kiln {
namespace {

using testing::at_lines;

TEST(Trace, PrintsGraphWithSourceLines) {
  Array x = array({1.0f, 2.0f, 3.0f});
  Array bias = array({0.5f, 0.5f, 0.5f});
  const int base = __LINE__;
  auto fn = [&](const Array& v) {
    Array y = v * 2.0;          // +2: weak literal adopts f32
    return tanh(y + bias) - 1;  // +3: bias is captured
  };
  Graph graph = make_graph("scaled", fn, x);  // +5
  std::string expected = at_lines(
      "graph scaled(%0: f32[3]) captures(%4: f32[3]) {\n"
      "  %0 = input arg 0 : f32[3]                       # test_trace.cpp:@5\n"
      "  %1 = literal 2.0 : f32[]                        # test_trace.cpp:@2\n"
      "  %2 = broadcast[shape=[3]] %1 : f32[3]           # test_trace.cpp:@2\n"
      "  %3 = mul %0 %2 : f32[3]                         # test_trace.cpp:@2\n"
      "  %4 = input capture 0 : f32[3]                   # test_trace.cpp:@3\n"
      "  %5 = add %3 %4 : f32[3]                         # test_trace.cpp:@3\n"
      "  %6 = tanh %5 : f32[3]                           # test_trace.cpp:@3\n"
      "  %7 = literal 1.0 : f32[]                        # test_trace.cpp:@3\n"
      "  %8 = broadcast[shape=[3]] %7 : f32[3]           # test_trace.cpp:@3\n"
      "  %9 = sub %6 %8 : f32[3]                         # test_trace.cpp:@3\n"
      "  return %9\n"
      "}\n",
      base);
  EXPECT_EQ(graph.to_string(), expected);
  transform::verify(detail::ir_of(graph));
}

TEST(Trace, CapturedArrayIsAnImplicitInputNotAConstant) {
  Array x = array({1.0, 2.0});
  Array table = array({10.0, 20.0});
  Graph graph = make_graph(
      "lookup", [&](const Array& v) { return v + table; }, x);
  EXPECT_EQ(graph.num_arguments(), 1u);
  EXPECT_EQ(graph.num_captures(), 1u);
  for (const auto& node : detail::ir_of(graph).nodes) EXPECT_NE(node.op, ir::Primitive::literal);
  // New data for the capture changes the result without a new graph.
  EXPECT_EQ(detail::interpret(graph, {x}, {table})[0].to_vector<double>(), (std::vector<double>{11, 22}));
  EXPECT_EQ(detail::interpret(graph, {x}, {array({1.0, 1.0})})[0].to_vector<double>(), (std::vector<double>{2, 3}));
}

TEST(Trace, SameCaptureUsedTwiceIsOneInput) {
  Array w = array({2.0f});
  Graph graph = make_graph(
      "twice", [&](const Array& v) { return v * w + w; }, array({1.0f}));
  EXPECT_EQ(graph.num_captures(), 1u);
}

TEST(Trace, CreationInsideATraceRecordsNodes) {
  Graph graph = make_graph(
      "made", [](const Array& v) { return v + arange(3); }, array({1, 2, 3}));
  EXPECT_EQ(graph.num_captures(), 0u);
  EXPECT_EQ(detail::interpret(graph, {array({1, 2, 3})}, {})[0].to_vector<int32_t>(), (std::vector<int32_t>{1, 3, 5}));
}

TEST(Trace, EagerMatchesInterpreter) {
  Array x = array({-1.5, 0.25, 2.0, 3.5}, {2, 2});
  auto fn = [](const Array& v) { return where(v > 0, sqrt(v) * 3 + exp(-v), sigmoid(v) - v * v); };
  Graph graph = make_graph("mixed", fn, x);
  transform::verify(detail::ir_of(graph));
  EXPECT_EQ(detail::interpret(graph, {x}, {})[0].to_vector<double>(), fn(x).to_vector<double>());
}

TEST(Trace, TracerReportsItself) {
  Array seen;
  make_graph(
      "peek",
      [&](const Array& v) {
        EXPECT_TRUE(v.is_tracer());
        EXPECT_EQ(v.shape(), (Shape{2}));
        EXPECT_EQ(v.dtype(), f32);
        seen = v;
        return v;
      },
      array({1.0f, 2.0f}));
  EXPECT_TRUE(seen.is_tracer());
}

TEST(Trace, ConcretizationErrorNamesFunctionAndLine) {
  Array x = array({1.0f, 2.0f});
  int line = 0;
  try {
    make_graph(
        "branchy",
        [&](const Array& v) {
          line = __LINE__ + 1;
          if ((v * 1).item<float>() > 0) return v;
          return -v;
        },
        x);
    FAIL() << "expected ConcretizationError";
  } catch (const ConcretizationError& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("[item]"), std::string::npos) << message;
    EXPECT_NE(message.find("'branchy'"), std::string::npos) << message;
    EXPECT_NE(message.find(testing::test_line(line)), std::string::npos) << message;
    EXPECT_NE(message.find("f32[2]"), std::string::npos) << message;
    EXPECT_NE(message.find("kiln::where"), std::string::npos) << message;
  }
}

TEST(Trace, LeakedTracerErrorNamesWhereTheTraceBegan) {
  Array leaked;
  const int traced_at = __LINE__ + 1;
  make_graph(
      "leaky",
      [&](const Array& v) {
        leaked = v * 2;
        return v;
      },
      array({1.0f}));
  const int used_at = __LINE__ + 2;
  try {
    Array y = leaked + 1;
    FAIL() << "expected LeakedTracerError";
  } catch (const LeakedTracerError& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("'leaky'"), std::string::npos) << message;
    EXPECT_NE(message.find("begun at " + testing::test_line(traced_at)), std::string::npos) << message;
    EXPECT_NE(message.find("(at " + testing::test_line(used_at) + ")"), std::string::npos) << message;
    EXPECT_NE(message.find("after that trace ended"), std::string::npos) << message;
  }
  EXPECT_THROW(leaked.item<float>(), LeakedTracerError);
  EXPECT_THROW(exp(leaked), LeakedTracerError);
}

TEST(Trace, LeakedTracerInsideAnotherTrace) {
  Array leaked;
  make_graph(
      "first",
      [&](const Array& v) {
        leaked = v;
        return v;
      },
      array({1.0f}));
  EXPECT_THROW(make_graph(
                   "second", [&](const Array& v) { return v + leaked; }, array({1.0f})),
               LeakedTracerError);
}

TEST(Trace, NestedTraceLiftsOuterTracer) {
  Array x = array({1.0f, 2.0f});
  std::optional<Graph> inner;
  Graph outer = make_graph(
      "outer",
      [&](const Array& v) {
        inner = make_graph(
            "inner", [&](const Array& u) { return u * v; }, x);
        return v;
      },
      x);
  EXPECT_EQ(inner->num_captures(), 1u);
  EXPECT_EQ(outer.num_captures(), 0u);
}

TEST(Trace, StructuredArgumentsAndResults) {
  std::map<std::string, Array> batch{{"x", array({1.0f, 2.0f})}, {"y", array({3.0f, 4.0f})}};
  Graph graph = make_graph(
      "structured",
      [](const std::map<std::string, Array>& b) {
        return std::make_pair(b.at("x") + b.at("y"), b.at("x") * b.at("y"));
      },
      batch);
  EXPECT_EQ(graph.num_arguments(), 2u);
  EXPECT_EQ(detail::ir_of(graph).outputs.size(), 2u);
  auto outputs = detail::interpret(graph, {batch["x"], batch["y"]}, {});
  EXPECT_EQ(outputs[1].to_vector<float>(), (std::vector<float>{3, 8}));
}

// A trace reuses the node, input and shape storage of the graph destroyed
// before it (ir::take_node_storage): graphs of other sizes, ranks and arities
// traced in turn on one thread must come out as if each were traced fresh.
TEST(Trace, GraphsTracedOnStorageLeftByEarlierGraphsAreUnchanged) {
  auto chain = [](int steps, const Array& x, const Array& w) {
    Array y = x;
    for (int i = 0; i < steps; ++i) y = i % 3 == 0 ? where(y > w, y * w, sum(y, {0}, true)) : y * w + x;
    return y;
  };
  Array vector = array({1.0f, 2.0f, 3.0f}), matrix = full({2, 3}, 0.5f);
  auto trace_of = [&](int steps, const Array& x) {
    return make_graph(
        "chain", [&](const Array& v, const Array& w) { return chain(steps, v, w); }, x, x);
  };
  std::vector<std::string> fresh;
  for (int steps : {400, 120, 700}) fresh.push_back(trace_of(steps, steps == 120 ? matrix : vector).to_string());
  for (int round = 0; round < 3; ++round) {
    for (int k = 0; k < 3; ++k) {
      int steps = std::array{400, 120, 700}[static_cast<size_t>(k)];
      Graph graph = trace_of(steps, steps == 120 ? matrix : vector);
      EXPECT_EQ(graph.to_string(), fresh[static_cast<size_t>(k)]) << "round " << round << ", " << steps << " steps";
      EXPECT_NO_THROW(transform::verify(detail::ir_of(graph)));
    }
  }
}

}  // namespace
}  // namespace kiln
