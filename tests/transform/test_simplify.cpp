// The simplification pass: golden IR before and after each rewrite, the
// guards that keep types exact, and a property test on random elementwise
// graphs (same results bit for bit, idempotent).
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cstring>
#include <limits>
#include <random>
#include <sstream>

#include "backend/interp/interpreter.h"
#include "cache/backend_choice.h"
#include "ir/graph.h"
#include "ops/common/apply.h"
#include "ops/common/graph_text.h"
#include "ops/common/rules.h"
#include "runtime/executable.h"
#include "support/golden.h"
#include "transform/simplify.h"
#include "transform/verify.h"

namespace kiln {
namespace {

using ir::Primitive;

using testing::at_lines;

ir::Graph simplified(const ir::Graph& graph) {
  ir::Graph copy = graph;
  transform::simplify(copy);
  transform::verify(copy);
  return copy;
}

// Same number of outputs, each of the same dtype, shape and weak flag, and
// the same argument and capture counts.
void expect_same_signature(const ir::Graph& before, const ir::Graph& after) {
  ASSERT_EQ(before.outputs.size(), after.outputs.size());
  for (size_t k = 0; k < before.outputs.size(); ++k)
    EXPECT_EQ(before.nodes[static_cast<size_t>(before.outputs[k])].type,
              after.nodes[static_cast<size_t>(after.outputs[k])].type)
        << "output " << k;
  ASSERT_EQ(before.arguments.size(), after.arguments.size());
  ASSERT_EQ(before.captures.size(), after.captures.size());
  for (size_t k = 0; k < before.arguments.size(); ++k)
    EXPECT_EQ(after.nodes[static_cast<size_t>(after.arguments[k])].attrs.ints,
              before.nodes[static_cast<size_t>(before.arguments[k])].attrs.ints);
  for (size_t k = 0; k < before.captures.size(); ++k)
    EXPECT_EQ(after.nodes[static_cast<size_t>(after.captures[k])].attrs.ints,
              before.nodes[static_cast<size_t>(before.captures[k])].attrs.ints);
}

// Empty when both lists hold arrays of one type with the same bytes.
std::string bitwise_difference(const std::vector<Array>& expected, const std::vector<Array>& actual) {
  if (expected.size() != actual.size()) return "different numbers of outputs";
  for (size_t k = 0; k < expected.size(); ++k) {
    const auto& a = *detail::impl(expected[k]);
    const auto& b = *detail::impl(actual[k]);
    if (!(a.type == b.type))
      return "output " + std::to_string(k) + ": " + a.type.to_string() + " vs " + b.type.to_string();
    size_t bytes = static_cast<size_t>(a.type.size()) * dtype_size(a.type.dtype);
    if (bytes && std::memcmp(a.buffer->data(), b.buffer->data(), bytes) != 0) {
      std::ostringstream out;
      out << "output " << k << " differs: " << expected[k] << " vs " << actual[k];
      return out.str();
    }
  }
  return "";
}

// Runs both graphs with the reference interpreter and demands identical bits.
void expect_same_results(const ir::Graph& before, const ir::Graph& after, const std::vector<Array>& arguments,
                         const std::vector<Array>& captures = {}) {
  EXPECT_EQ(bitwise_difference(interp::run(before, arguments, captures), interp::run(after, arguments, captures)), "")
      << ops::graph_text(before) << ops::graph_text(after);
}

// Simplifies, checks the golden texts before and after, types, results and
// that a second run changes nothing.
void check_golden(const Graph& graph, const std::string& before, const std::string& after,
                  const std::vector<Array>& arguments, const std::vector<Array>& captures = {}) {
  EXPECT_EQ(graph.to_string(), before);
  ir::Graph result = simplified(detail::ir_of(graph));
  EXPECT_EQ(ops::graph_text(result), after);
  expect_same_signature(detail::ir_of(graph), result);
  expect_same_results(detail::ir_of(graph), result, arguments, captures);
  EXPECT_EQ(ops::graph_text(simplified(result)), ops::graph_text(result));
}

TEST(Simplify, MergesCommonSubexpressionsAndEqualLiterals) {
  Array x = array({1.0f, 2.0f, 3.0f});
  const int base = __LINE__;
  auto fn = [](const Array& v) {
    Array a = exp(v) * 2.0;  // +2
    Array b = exp(v) * 2.0;  // +3
    return a + b;            // +4
  };
  Graph graph = make_graph("twice", fn, x);  // +6
  check_golden(graph,
               at_lines("graph twice(%0: f32[3]) {\n"
                        "  %0 = input arg 0 : f32[3]                       # test_simplify.cpp:@6\n"
                        "  %1 = exp %0 : f32[3]                            # test_simplify.cpp:@2\n"
                        "  %2 = literal 2.0 : f32[]                        # test_simplify.cpp:@2\n"
                        "  %3 = broadcast[shape=[3]] %2 : f32[3]           # test_simplify.cpp:@2\n"
                        "  %4 = mul %1 %3 : f32[3]                         # test_simplify.cpp:@2\n"
                        "  %5 = exp %0 : f32[3]                            # test_simplify.cpp:@3\n"
                        "  %6 = literal 2.0 : f32[]                        # test_simplify.cpp:@3\n"
                        "  %7 = broadcast[shape=[3]] %6 : f32[3]           # test_simplify.cpp:@3\n"
                        "  %8 = mul %5 %7 : f32[3]                         # test_simplify.cpp:@3\n"
                        "  %9 = add %4 %8 : f32[3]                         # test_simplify.cpp:@4\n"
                        "  return %9\n"
                        "}\n",
                        base),
               at_lines("graph twice(%0: f32[3]) {\n"
                        "  %0 = input arg 0 : f32[3]                       # test_simplify.cpp:@6\n"
                        "  %1 = exp %0 : f32[3]                            # test_simplify.cpp:@2\n"
                        "  %2 = literal 2.0 : f32[]                        # test_simplify.cpp:@2\n"
                        "  %3 = broadcast[shape=[3]] %2 : f32[3]           # test_simplify.cpp:@2\n"
                        "  %4 = mul %1 %3 : f32[3]                         # test_simplify.cpp:@2\n"
                        "  %5 = add %4 %4 : f32[3]                         # test_simplify.cpp:@4\n"
                        "  return %5\n"
                        "}\n",
                        base),
               {x});
}

TEST(Simplify, LiteralsMergeOnlyWithTheSameTypeAndBits) {
  Array x = array({1.0f, 2.0f});
  const int base = __LINE__;
  auto fn = [](const Array& v) {
    Array a = v * 0.0;               // +2
    Array b = v * -0.0;              // +3: another value
    Array c = v * full({}, 0, i32);  // +4: folds into a
    Array d = v * 0.0;               // +5: merged with a
    return std::vector<Array>{a, b, c, d};
  };
  Graph graph = make_graph("zeros", fn, x);  // +8
  check_golden(graph,
               at_lines("graph zeros(%0: f32[2]) {\n"
                        "  %0 = input arg 0 : f32[2]                       # test_simplify.cpp:@8\n"
                        "  %1 = literal 0.0 : f32[]                        # test_simplify.cpp:@2\n"
                        "  %2 = broadcast[shape=[2]] %1 : f32[2]           # test_simplify.cpp:@2\n"
                        "  %3 = mul %0 %2 : f32[2]                         # test_simplify.cpp:@2\n"
                        "  %4 = literal -0.0 : f32[]                       # test_simplify.cpp:@3\n"
                        "  %5 = broadcast[shape=[2]] %4 : f32[2]           # test_simplify.cpp:@3\n"
                        "  %6 = mul %0 %5 : f32[2]                         # test_simplify.cpp:@3\n"
                        "  %7 = literal 0 : i32[]                          # test_simplify.cpp:@4\n"
                        "  %8 = convert[dtype=f32] %7 : f32[]              # test_simplify.cpp:@4\n"
                        "  %9 = broadcast[shape=[2]] %8 : f32[2]           # test_simplify.cpp:@4\n"
                        "  %10 = mul %0 %9 : f32[2]                        # test_simplify.cpp:@4\n"
                        "  %11 = literal 0.0 : f32[]                       # test_simplify.cpp:@5\n"
                        "  %12 = broadcast[shape=[2]] %11 : f32[2]         # test_simplify.cpp:@5\n"
                        "  %13 = mul %0 %12 : f32[2]                       # test_simplify.cpp:@5\n"
                        "  return %3, %6, %10, %13\n"
                        "}\n",
                        base),
               at_lines("graph zeros(%0: f32[2]) {\n"
                        "  %0 = input arg 0 : f32[2]                       # test_simplify.cpp:@8\n"
                        "  %1 = literal 0.0 : f32[]                        # test_simplify.cpp:@2\n"
                        "  %2 = broadcast[shape=[2]] %1 : f32[2]           # test_simplify.cpp:@2\n"
                        "  %3 = mul %0 %2 : f32[2]                         # test_simplify.cpp:@2\n"
                        "  %4 = literal -0.0 : f32[]                       # test_simplify.cpp:@3\n"
                        "  %5 = broadcast[shape=[2]] %4 : f32[2]           # test_simplify.cpp:@3\n"
                        "  %6 = mul %0 %5 : f32[2]                         # test_simplify.cpp:@3\n"
                        "  return %3, %6, %3, %3\n"
                        "}\n",
                        base),
               {x});
}

TEST(Simplify, FoldsLiteralOnlyScalarSubgraphs) {
  Array x = array({1.0f, 2.0f, 3.0f});
  const int base = __LINE__;
  auto fn = [](const Array& v) {
    Array two = full({}, 2.0, f32);                   // +2
    Array c = sqrt(two) * 3.0 - 1.0;                  // +3: one literal
    Array w = -Operand(0.5);                          // +4: stays weak
    Array row = broadcast_to(two, {3});               // +5: not 0-d, kept
    return std::vector<Array>{v * c, row + w, c, w};  // +6
  };
  Graph graph = make_graph("folded", fn, x);  // +8
  check_golden(graph,
               at_lines("graph folded(%0: f32[3]) {\n"
                        "  %0 = input arg 0 : f32[3]                       # test_simplify.cpp:@8\n"
                        "  %1 = literal 2.0 : f32[]                        # test_simplify.cpp:@2\n"
                        "  %2 = sqrt %1 : f32[]                            # test_simplify.cpp:@3\n"
                        "  %3 = literal 3.0 : f32[]                        # test_simplify.cpp:@3\n"
                        "  %4 = mul %2 %3 : f32[]                          # test_simplify.cpp:@3\n"
                        "  %5 = literal 1.0 : f32[]                        # test_simplify.cpp:@3\n"
                        "  %6 = sub %4 %5 : f32[]                          # test_simplify.cpp:@3\n"
                        "  %7 = literal 0.5 : f32[]~                       # test_simplify.cpp:@4\n"
                        "  %8 = neg %7 : f32[]~                            # test_simplify.cpp:@4\n"
                        "  %9 = broadcast[shape=[3]] %1 : f32[3]           # test_simplify.cpp:@5\n"
                        "  %10 = broadcast[shape=[3]] %6 : f32[3]          # test_simplify.cpp:@6\n"
                        "  %11 = mul %0 %10 : f32[3]                       # test_simplify.cpp:@6\n"
                        "  %12 = convert[dtype=f32] %8 : f32[]             # test_simplify.cpp:@6\n"
                        "  %13 = broadcast[shape=[3]] %12 : f32[3]         # test_simplify.cpp:@6\n"
                        "  %14 = add %9 %13 : f32[3]                       # test_simplify.cpp:@6\n"
                        "  return %11, %14, %6, %8\n"
                        "}\n",
                        base),
               at_lines("graph folded(%0: f32[3]) {\n"
                        "  %0 = input arg 0 : f32[3]                       # test_simplify.cpp:@8\n"
                        "  %1 = literal 2.0 : f32[]                        # test_simplify.cpp:@2\n"
                        "  %2 = literal 3.2426405 : f32[]                  # test_simplify.cpp:@3\n"
                        "  %3 = literal -0.5 : f32[]~                      # test_simplify.cpp:@4\n"
                        "  %4 = broadcast[shape=[3]] %1 : f32[3]           # test_simplify.cpp:@5\n"
                        "  %5 = broadcast[shape=[3]] %2 : f32[3]           # test_simplify.cpp:@6\n"
                        "  %6 = mul %0 %5 : f32[3]                         # test_simplify.cpp:@6\n"
                        "  %7 = literal -0.5 : f32[]                       # test_simplify.cpp:@6\n"
                        "  %8 = broadcast[shape=[3]] %7 : f32[3]           # test_simplify.cpp:@6\n"
                        "  %9 = add %4 %8 : f32[3]                         # test_simplify.cpp:@6\n"
                        "  return %6, %9, %2, %3\n"
                        "}\n",
                        base),
               {x});
}

TEST(Simplify, ExactFloatIdentities) {
  Array x = array({-0.0f, 0.0f, 1.5f, std::numeric_limits<float>::quiet_NaN(), -INFINITY});
  const int base = __LINE__;
  auto fn = [](const Array& v) {
    Array a = v * 1.0;   // +2
    Array b = 1.0 * a;   // +3
    Array c = b / 1.0;   // +4
    Array d = c - 0.0;   // +5
    Array e = d + -0.0;  // +6
    Array f = -0.0 + e;  // +7
    Array g = f + 0.0;   // +8: kept, -0.0 + 0.0 is +0.0
    Array h = g - -0.0;  // +9: kept, likewise
    return -(-h);        // +10
  };
  Graph graph = make_graph("float_identities", fn, x);  // +12
  check_golden(graph,
               at_lines("graph float_identities(%0: f32[5]) {\n"
                        "  %0 = input arg 0 : f32[5]                       # test_simplify.cpp:@12\n"
                        "  %1 = literal 1.0 : f32[]                        # test_simplify.cpp:@2\n"
                        "  %2 = broadcast[shape=[5]] %1 : f32[5]           # test_simplify.cpp:@2\n"
                        "  %3 = mul %0 %2 : f32[5]                         # test_simplify.cpp:@2\n"
                        "  %4 = literal 1.0 : f32[]                        # test_simplify.cpp:@3\n"
                        "  %5 = broadcast[shape=[5]] %4 : f32[5]           # test_simplify.cpp:@3\n"
                        "  %6 = mul %5 %3 : f32[5]                         # test_simplify.cpp:@3\n"
                        "  %7 = literal 1.0 : f32[]                        # test_simplify.cpp:@4\n"
                        "  %8 = broadcast[shape=[5]] %7 : f32[5]           # test_simplify.cpp:@4\n"
                        "  %9 = div %6 %8 : f32[5]                         # test_simplify.cpp:@4\n"
                        "  %10 = literal 0.0 : f32[]                       # test_simplify.cpp:@5\n"
                        "  %11 = broadcast[shape=[5]] %10 : f32[5]         # test_simplify.cpp:@5\n"
                        "  %12 = sub %9 %11 : f32[5]                       # test_simplify.cpp:@5\n"
                        "  %13 = literal -0.0 : f32[]                      # test_simplify.cpp:@6\n"
                        "  %14 = broadcast[shape=[5]] %13 : f32[5]         # test_simplify.cpp:@6\n"
                        "  %15 = add %12 %14 : f32[5]                      # test_simplify.cpp:@6\n"
                        "  %16 = literal -0.0 : f32[]                      # test_simplify.cpp:@7\n"
                        "  %17 = broadcast[shape=[5]] %16 : f32[5]         # test_simplify.cpp:@7\n"
                        "  %18 = add %17 %15 : f32[5]                      # test_simplify.cpp:@7\n"
                        "  %19 = literal 0.0 : f32[]                       # test_simplify.cpp:@8\n"
                        "  %20 = broadcast[shape=[5]] %19 : f32[5]         # test_simplify.cpp:@8\n"
                        "  %21 = add %18 %20 : f32[5]                      # test_simplify.cpp:@8\n"
                        "  %22 = literal -0.0 : f32[]                      # test_simplify.cpp:@9\n"
                        "  %23 = broadcast[shape=[5]] %22 : f32[5]         # test_simplify.cpp:@9\n"
                        "  %24 = sub %21 %23 : f32[5]                      # test_simplify.cpp:@9\n"
                        "  %25 = neg %24 : f32[5]                          # test_simplify.cpp:@10\n"
                        "  %26 = neg %25 : f32[5]                          # test_simplify.cpp:@10\n"
                        "  return %26\n"
                        "}\n",
                        base),
               at_lines("graph float_identities(%0: f32[5]) {\n"
                        "  %0 = input arg 0 : f32[5]                       # test_simplify.cpp:@12\n"
                        "  %1 = literal 0.0 : f32[]                        # test_simplify.cpp:@5\n"
                        "  %2 = broadcast[shape=[5]] %1 : f32[5]           # test_simplify.cpp:@5\n"
                        "  %3 = literal -0.0 : f32[]                       # test_simplify.cpp:@6\n"
                        "  %4 = broadcast[shape=[5]] %3 : f32[5]           # test_simplify.cpp:@6\n"
                        "  %5 = add %0 %2 : f32[5]                         # test_simplify.cpp:@8\n"
                        "  %6 = sub %5 %4 : f32[5]                         # test_simplify.cpp:@9\n"
                        "  return %6\n"
                        "}\n",
                        base),
               {x});
}

TEST(Simplify, IntegerAndBoolIdentities) {
  Array x = array({std::numeric_limits<int32_t>::min(), -1, 0, 7});
  Array flags = array({true, false, true, false});
  const int base = __LINE__;
  auto fn = [](const Array& v, const Array& b) {
    Array a = (0 + v + 0 - 0) * 1;           // +2
    Array c = -(-(1 * a));                   // +3: wraps back at INT32_MIN
    Array d = (b * true) + false;            // +4: and with true, or with false
    return std::vector<Array>{c, d, v * 2};  // +5
  };
  Graph graph = make_graph("integer_identities", fn, x, flags);  // +7
  check_golden(graph,
               at_lines("graph integer_identities(%0: i32[4], %1: bool[4]) {\n"
                        "  %0 = input arg 0 : i32[4]                       # test_simplify.cpp:@7\n"
                        "  %1 = input arg 1 : bool[4]                      # test_simplify.cpp:@7\n"
                        "  %2 = literal 0 : i32[]                          # test_simplify.cpp:@2\n"
                        "  %3 = broadcast[shape=[4]] %2 : i32[4]           # test_simplify.cpp:@2\n"
                        "  %4 = add %3 %0 : i32[4]                         # test_simplify.cpp:@2\n"
                        "  %5 = literal 0 : i32[]                          # test_simplify.cpp:@2\n"
                        "  %6 = broadcast[shape=[4]] %5 : i32[4]           # test_simplify.cpp:@2\n"
                        "  %7 = add %4 %6 : i32[4]                         # test_simplify.cpp:@2\n"
                        "  %8 = literal 0 : i32[]                          # test_simplify.cpp:@2\n"
                        "  %9 = broadcast[shape=[4]] %8 : i32[4]           # test_simplify.cpp:@2\n"
                        "  %10 = sub %7 %9 : i32[4]                        # test_simplify.cpp:@2\n"
                        "  %11 = literal 1 : i32[]                         # test_simplify.cpp:@2\n"
                        "  %12 = broadcast[shape=[4]] %11 : i32[4]         # test_simplify.cpp:@2\n"
                        "  %13 = mul %10 %12 : i32[4]                      # test_simplify.cpp:@2\n"
                        "  %14 = literal 1 : i32[]                         # test_simplify.cpp:@3\n"
                        "  %15 = broadcast[shape=[4]] %14 : i32[4]         # test_simplify.cpp:@3\n"
                        "  %16 = mul %15 %13 : i32[4]                      # test_simplify.cpp:@3\n"
                        "  %17 = neg %16 : i32[4]                          # test_simplify.cpp:@3\n"
                        "  %18 = neg %17 : i32[4]                          # test_simplify.cpp:@3\n"
                        "  %19 = literal true : bool[]                     # test_simplify.cpp:@4\n"
                        "  %20 = broadcast[shape=[4]] %19 : bool[4]        # test_simplify.cpp:@4\n"
                        "  %21 = mul %1 %20 : bool[4]                      # test_simplify.cpp:@4\n"
                        "  %22 = literal false : bool[]                    # test_simplify.cpp:@4\n"
                        "  %23 = broadcast[shape=[4]] %22 : bool[4]        # test_simplify.cpp:@4\n"
                        "  %24 = add %21 %23 : bool[4]                     # test_simplify.cpp:@4\n"
                        "  %25 = literal 2 : i32[]                         # test_simplify.cpp:@5\n"
                        "  %26 = broadcast[shape=[4]] %25 : i32[4]         # test_simplify.cpp:@5\n"
                        "  %27 = mul %0 %26 : i32[4]                       # test_simplify.cpp:@5\n"
                        "  return %18, %24, %27\n"
                        "}\n",
                        base),
               at_lines("graph integer_identities(%0: i32[4], %1: bool[4]) {\n"
                        "  %0 = input arg 0 : i32[4]                       # test_simplify.cpp:@7\n"
                        "  %1 = input arg 1 : bool[4]                      # test_simplify.cpp:@7\n"
                        "  %2 = literal 2 : i32[]                          # test_simplify.cpp:@5\n"
                        "  %3 = broadcast[shape=[4]] %2 : i32[4]           # test_simplify.cpp:@5\n"
                        "  %4 = mul %0 %3 : i32[4]                         # test_simplify.cpp:@5\n"
                        "  return %0, %1, %4\n"
                        "}\n",
                        base),
               {x, flags});
}

TEST(Simplify, IdentitiesNeverChangeAWeakFlag) {
  Array x = detail::literal(3.0, f32, true, Location::current());  // weak f32[]
  const int base = __LINE__;
  auto fn = [](const Array& v) {
    ir::Attributes to_strong;
    to_strong.dtype = f32;
    ir::Attributes to_weak = to_strong;
    to_weak.ints = {1};
    Array one = detail::literal(1.0, f32, false, Location::current());                      // +6
    Array product = detail::apply(Primitive::mul, {v, one}, {}, Location::current());       // +7: strong, kept
    Array strong = detail::apply(Primitive::convert, {v}, to_strong, Location::current());  // +8: kept
    Array weak = detail::apply(Primitive::convert, {v}, to_weak, Location::current());      // +9: removed
    return std::vector<Array>{product, strong, weak, v * 1.0};                              // +10
  };
  Graph graph = make_graph("weak", fn, x);  // +12
  check_golden(graph,
               at_lines("graph weak(%0: f32[]~) {\n"
                        "  %0 = input arg 0 : f32[]~                       # test_simplify.cpp:@12\n"
                        "  %1 = literal 1.0 : f32[]                        # test_simplify.cpp:@6\n"
                        "  %2 = mul %0 %1 : f32[]                          # test_simplify.cpp:@7\n"
                        "  %3 = convert[dtype=f32] %0 : f32[]              # test_simplify.cpp:@8\n"
                        "  %4 = convert[dtype=f32] %0 : f32[]~             # test_simplify.cpp:@9\n"
                        "  %5 = literal 1.0 : f32[]~                       # test_simplify.cpp:@10\n"
                        "  %6 = mul %0 %5 : f32[]~                         # test_simplify.cpp:@10\n"
                        "  return %2, %3, %4, %6\n"
                        "}\n",
                        base),
               at_lines("graph weak(%0: f32[]~) {\n"
                        "  %0 = input arg 0 : f32[]~                       # test_simplify.cpp:@12\n"
                        "  %1 = literal 1.0 : f32[]                        # test_simplify.cpp:@6\n"
                        "  %2 = mul %0 %1 : f32[]                          # test_simplify.cpp:@7\n"
                        "  %3 = convert[dtype=f32] %0 : f32[]              # test_simplify.cpp:@8\n"
                        "  return %2, %3, %0, %0\n"
                        "}\n",
                        base),
               {x});
}

TEST(Simplify, MovementIdentitiesAndChains) {
  Array x = array({0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f}, {2, 3});
  const int base = __LINE__;
  auto fn = [](const Array& v) {
    ir::Attributes same;
    same.shape = {2, 3};
    ir::Attributes identity;
    identity.ints = {0, 1};
    Array a = detail::apply(Primitive::reshape, {v}, same, Location::current());        // +6
    Array b = detail::apply(Primitive::broadcast, {a}, same, Location::current());      // +7
    Array c = detail::apply(Primitive::transpose, {b}, identity, Location::current());  // +8
    Array d = reshape(reshape(c, {3, 2}), {6});                                         // +9: one reshape
    Array e = reshape(reshape(c, {6}), {2, 3});                                         // +10: c again
    Array f = transpose(transpose(e, {1, 0}), {1, 0});                                  // +11: identity
    Array g = broadcast_to(broadcast_to(f, {1, 2, 3}), {4, 2, 3});                      // +12: one broadcast
    Array h = transpose(transpose(reshape(f, {1, 2, 3}), {1, 0, 2}), {0, 2, 1});        // +13: unit axes only
    Array s = stop_gradient(stop_gradient(f));                                          // +14: kept
    Array k = transpose(transpose(g, {1, 0, 2}), {0, 2, 1});                            // +15: composed
    return std::vector<Array>{d, g, h, s, k};
  };
  Graph graph = make_graph("movement", fn, x);  // +18
  check_golden(graph,
               at_lines("graph movement(%0: f32[2,3]) {\n"
                        "  %0 = input arg 0 : f32[2,3]                     # test_simplify.cpp:@18\n"
                        "  %1 = reshape[shape=[2,3]] %0 : f32[2,3]         # test_simplify.cpp:@6\n"
                        "  %2 = broadcast[shape=[2,3]] %1 : f32[2,3]       # test_simplify.cpp:@7\n"
                        "  %3 = transpose[perm=[0,1]] %2 : f32[2,3]        # test_simplify.cpp:@8\n"
                        "  %4 = reshape[shape=[3,2]] %3 : f32[3,2]         # test_simplify.cpp:@9\n"
                        "  %5 = reshape[shape=[6]] %4 : f32[6]             # test_simplify.cpp:@9\n"
                        "  %6 = reshape[shape=[6]] %3 : f32[6]             # test_simplify.cpp:@10\n"
                        "  %7 = reshape[shape=[2,3]] %6 : f32[2,3]         # test_simplify.cpp:@10\n"
                        "  %8 = transpose[perm=[1,0]] %7 : f32[3,2]        # test_simplify.cpp:@11\n"
                        "  %9 = transpose[perm=[1,0]] %8 : f32[2,3]        # test_simplify.cpp:@11\n"
                        "  %10 = broadcast[shape=[1,2,3]] %9 : f32[1,2,3]  # test_simplify.cpp:@12\n"
                        "  %11 = broadcast[shape=[4,2,3]] %10 : f32[4,2,3]  # test_simplify.cpp:@12\n"
                        "  %12 = reshape[shape=[1,2,3]] %9 : f32[1,2,3]    # test_simplify.cpp:@13\n"
                        "  %13 = transpose[perm=[1,0,2]] %12 : f32[2,1,3]  # test_simplify.cpp:@13\n"
                        "  %14 = transpose[perm=[0,2,1]] %13 : f32[2,3,1]  # test_simplify.cpp:@13\n"
                        "  %15 = stop_gradient %9 : f32[2,3]               # test_simplify.cpp:@14\n"
                        "  %16 = stop_gradient %15 : f32[2,3]              # test_simplify.cpp:@14\n"
                        "  %17 = transpose[perm=[1,0,2]] %11 : f32[2,4,3]  # test_simplify.cpp:@15\n"
                        "  %18 = transpose[perm=[0,2,1]] %17 : f32[2,3,4]  # test_simplify.cpp:@15\n"
                        "  return %5, %11, %14, %16, %18\n"
                        "}\n",
                        base),
               at_lines("graph movement(%0: f32[2,3]) {\n"
                        "  %0 = input arg 0 : f32[2,3]                     # test_simplify.cpp:@18\n"
                        "  %1 = reshape[shape=[6]] %0 : f32[6]             # test_simplify.cpp:@9\n"
                        "  %2 = broadcast[shape=[4,2,3]] %0 : f32[4,2,3]   # test_simplify.cpp:@12\n"
                        "  %3 = reshape[shape=[2,3,1]] %0 : f32[2,3,1]     # test_simplify.cpp:@13\n"
                        "  %4 = stop_gradient %0 : f32[2,3]                # test_simplify.cpp:@14\n"
                        "  %5 = stop_gradient %4 : f32[2,3]                # test_simplify.cpp:@14\n"
                        "  %6 = transpose[perm=[1,2,0]] %2 : f32[2,3,4]    # test_simplify.cpp:@15\n"
                        "  return %1, %2, %3, %5, %6\n"
                        "}\n",
                        base),
               {x});
}

// A slice that takes every element and a pad that adds none stay nodes
// while tracing (at other sizes of a dynamic dimension they may not) and go here.
TEST(Simplify, AWholeSliceAndAnEmptyPadAreTheirOperand) {
  Array x = array({0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f}, {2, 3});
  auto fn = [](const Array& v) {
    return std::vector<Array>{slice(v, {0, 0}, {2, 3}) * 2.0f, slice(v, {0, 0}, {1, 3}), slice(v, {-9, -9}, {9, 9}),
                              pad(v, {0, 0}, {0, 0}), pad(v, {0, 1}, {0, 0})};
  };
  Graph graph = make_graph("slices", fn, x);
  auto count = [](const ir::Graph& g) {
    return std::count_if(g.nodes.begin(), g.nodes.end(), [](const ir::Node& n) { return n.op == Primitive::slice; });
  };
  auto pads = [](const ir::Graph& g) {
    return std::count_if(g.nodes.begin(), g.nodes.end(), [](const ir::Node& n) { return n.op == Primitive::pad; });
  };
  EXPECT_EQ(count(detail::ir_of(graph)), 3);
  EXPECT_EQ(pads(detail::ir_of(graph)), 2);
  ir::Graph after = simplified(detail::ir_of(graph));
  EXPECT_EQ(count(after), 1);  // the one taking the first row
  EXPECT_EQ(pads(after), 1);   // the one adding a column
  expect_same_results(detail::ir_of(graph), after, {x});
}

// A broadcast that only adds axes of extent 1 copies nothing: it becomes a
// reshape, which the backends run as a view. A broadcast that repeats
// elements, and one of a literal, stay.
TEST(Simplify, ABroadcastAddingOnlyUnitAxesIsAReshape) {
  Array x = array({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}, {2, 3});
  auto fn = [](const Array& v) {
    return std::vector<Array>{broadcast_to(v, {1, 1, 2, 3}), broadcast_to(v, {4, 2, 3}),
                              full(Shape{1, 1}, 7.0, DType::f32)};
  };
  Graph graph = make_graph("unit_axes", fn, x);
  ir::Graph after = simplified(detail::ir_of(graph));
  SCOPED_TRACE(ops::graph_text(after));
  std::vector<Shape> reshapes, broadcasts;
  for (const ir::Node& node : after.nodes) {
    if (node.op == Primitive::reshape) reshapes.push_back(node.type.shape);
    if (node.op == Primitive::broadcast) broadcasts.push_back(node.type.shape);
  }
  EXPECT_EQ(reshapes, (std::vector<Shape>{{1, 1, 2, 3}}));
  EXPECT_EQ(broadcasts, (std::vector<Shape>{{4, 2, 3}, {1, 1}}));
  expect_same_signature(detail::ir_of(graph), after);
  expect_same_results(detail::ir_of(graph), after, {x});
}

// A take, slice or dynamic_slice of an exact elementwise value that nothing
// else reads moves before it: only the gathered elements are computed. The
// gathered operands are merged (x * x gathers x once) and chains move whole.
TEST(Simplify, GathersMoveBeforeTheElementwiseNodesTheyAloneRead) {
  Array x = array({3, -1, 4, -1, 5, -9, 2, -6, 5, 3, -5, 8}, {3, 4});
  Array y = array({2, 7, -1, 8, 2, 8, -1, 8, 2, 8, 4, 5}, {3, 4});
  Array indices = array({3, 0});
  auto fn = [](const Array& a, const Array& b, const Array& indices) {
    Array chain = abs(a * a + 7);  // gathered below, so computed on 6 elements of 12
    Array picked = take(chain, indices, 1);
    Array row = slice(where(a > b, a, b - 1), {1, 0}, {2, 4});
    Array window = dynamic_slice(maximum(a, b), {int64_t{1}, int64_t{1}}, {2, 2});
    return std::vector<Array>{picked, row, window};
  };
  Graph graph = make_graph("gathers", fn, x, y, indices);
  ir::Graph after = simplified(detail::ir_of(graph));
  auto shapes_of = [&](Primitive op) {
    std::vector<Shape> shapes;
    for (const ir::Node& node : after.nodes)
      if (node.op == op) shapes.push_back(node.type.shape);
    return shapes;
  };
  SCOPED_TRACE(ops::graph_text(after));
  EXPECT_EQ(shapes_of(Primitive::mul), (std::vector<Shape>{{3, 2}}));  // computed after the take
  EXPECT_EQ(shapes_of(Primitive::abs), (std::vector<Shape>{{3, 2}}));
  EXPECT_EQ(shapes_of(Primitive::take), (std::vector<Shape>{{3, 2}}));  // one take of x for x * x
  EXPECT_EQ(shapes_of(Primitive::select), (std::vector<Shape>{{1, 4}}));
  EXPECT_EQ(shapes_of(Primitive::max), (std::vector<Shape>{{2, 2}}));
  EXPECT_EQ(shapes_of(Primitive::broadcast).size(), 2u);  // the literals 7 and 1, at the gathered shapes
  for (const ir::Node& node : after.nodes)
    if (node.op == Primitive::broadcast)
      EXPECT_TRUE(node.type.shape == Shape({3, 2}) || node.type.shape == Shape({1, 4}));
  expect_same_signature(detail::ir_of(graph), after);
  expect_same_results(detail::ir_of(graph), after, {x, y, indices});
  EXPECT_EQ(ops::graph_text(simplified(after)), ops::graph_text(after));
}

// Where the elementwise value has another reader, or its native code may
// round an element by where it sits in the loop (vector math), or the gather
// keeps every element, nothing moves.
TEST(Simplify, GathersStayAfterSharedInexactOrEqualSizedValues) {
  Array x = array({0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f});
  Array reversed = array({5, 4, 3, 2, 1, 0});
  auto fn = [](const Array& a, const Array& order) {
    Array shared = a * 3.0f;
    Array inexact = exp(a);
    Array whole = a - 1.0f;
    return std::vector<Array>{slice(shared, {1}, {3}), shared, slice(inexact, {2}, {5}), take(whole, order)};
  };
  Graph graph = make_graph("kept", fn, x, reversed);
  ir::Graph after = simplified(detail::ir_of(graph));
  SCOPED_TRACE(ops::graph_text(after));
  // Each gather still reads the whole value it read.
  std::vector<std::pair<Primitive, Primitive>> gathered;  // (gather, its operand's primitive)
  for (const ir::Node& node : after.nodes)
    if (node.op == Primitive::slice || node.op == Primitive::take)
      gathered.emplace_back(node.op, after.nodes[static_cast<size_t>(node.inputs[0])].op);
  EXPECT_EQ(gathered, (std::vector<std::pair<Primitive, Primitive>>{{Primitive::slice, Primitive::mul},
                                                                    {Primitive::slice, Primitive::exp},
                                                                    {Primitive::take, Primitive::sub}}));
  for (const ir::Node& node : after.nodes)
    if (node.op == Primitive::mul || node.op == Primitive::exp || node.op == Primitive::sub)
      EXPECT_EQ(node.type.shape, Shape({6})) << ir::primitive_name(node.op);
  expect_same_results(detail::ir_of(graph), after, {x, reversed});
}

// Dead nodes left by the rewrites go; inputs stay even when unused, and
// outputs may end up naming one value, an argument or a capture.
TEST(Simplify, KeepsEveryInputBoundAndOutputsMayRepeat) {
  Array x = array({1.0, -2.0});
  Array unused = array({1, 2, 3});
  Array table = array({0.5, 0.25});
  const int base = __LINE__;
  auto fn = [&](const Array& v, const Array&) {
    Array scaled = exp(v) * 1.0;                                         // +2
    return std::vector<Array>{v * 1.0, table * 1.0, scaled, exp(v), v};  // +3
  };
  Graph graph = make_graph("bound", fn, x, unused);  // +5
  check_golden(graph,
               at_lines("graph bound(%0: f64[2], %1: i32[3]) captures(%11: f64[2]) {\n"
                        "  %0 = input arg 0 : f64[2]                       # test_simplify.cpp:@5\n"
                        "  %1 = input arg 1 : i32[3]                       # test_simplify.cpp:@5\n"
                        "  %2 = exp %0 : f64[2]                            # test_simplify.cpp:@2\n"
                        "  %3 = literal 1.0 : f64[]                        # test_simplify.cpp:@2\n"
                        "  %4 = broadcast[shape=[2]] %3 : f64[2]           # test_simplify.cpp:@2\n"
                        "  %5 = mul %2 %4 : f64[2]                         # test_simplify.cpp:@2\n"
                        "  %6 = literal 1.0 : f64[]                        # test_simplify.cpp:@3\n"
                        "  %7 = broadcast[shape=[2]] %6 : f64[2]           # test_simplify.cpp:@3\n"
                        "  %8 = mul %0 %7 : f64[2]                         # test_simplify.cpp:@3\n"
                        "  %9 = literal 1.0 : f64[]                        # test_simplify.cpp:@3\n"
                        "  %10 = broadcast[shape=[2]] %9 : f64[2]          # test_simplify.cpp:@3\n"
                        "  %11 = input capture 0 : f64[2]                  # test_simplify.cpp:@3\n"
                        "  %12 = mul %11 %10 : f64[2]                      # test_simplify.cpp:@3\n"
                        "  %13 = exp %0 : f64[2]                           # test_simplify.cpp:@3\n"
                        "  return %8, %12, %5, %13, %0\n"
                        "}\n",
                        base),
               at_lines("graph bound(%0: f64[2], %1: i32[3]) captures(%3: f64[2]) {\n"
                        "  %0 = input arg 0 : f64[2]                       # test_simplify.cpp:@5\n"
                        "  %1 = input arg 1 : i32[3]                       # test_simplify.cpp:@5\n"
                        "  %2 = exp %0 : f64[2]                            # test_simplify.cpp:@2\n"
                        "  %3 = input capture 0 : f64[2]                   # test_simplify.cpp:@3\n"
                        "  return %0, %3, %2, %2, %0\n"
                        "}\n",
                        base),
               {x, unused}, {table});
}

// The native backend must accept what the pass leaves: outputs that are an
// argument, a capture, a literal or one value twice.
TEST(Simplify, SimplifiedGraphsRunOnEveryBackend) {
  Array x = array({1.5f, -0.0f, 2.0f});
  Array table = array({4.0f, 5.0f, 6.0f});
  auto fn = [&](const Array& v) {
    Array c = sqrt(full({}, 4.0, f32)) * 2.5;  // folds to a literal
    return std::vector<Array>{v * 1.0, table / 1.0, c, v + v, v + v, v * c};
  };
  Graph graph = make_graph("edges", fn, x);
  auto result = std::make_shared<ir::Graph>(simplified(detail::ir_of(graph)));
  ASSERT_EQ(result->outputs[0], result->arguments[0]);
  ASSERT_EQ(result->outputs[1], result->captures[0]);
  ASSERT_EQ(result->nodes[static_cast<size_t>(result->outputs[2])].op, Primitive::literal);
  ASSERT_EQ(result->outputs[3], result->outputs[4]);
  std::vector<Array> expected = interp::run(detail::ir_of(graph), std::vector<Array>{x}, std::vector<Array>{table});
  for (const runtime::Backend* backend : {&cache::default_backend(), &interp::interpreter_backend()}) {
    auto executable = backend->compile(result);
    EXPECT_EQ(bitwise_difference(expected, executable->run(std::vector<Array>{x}, std::vector<Array>{table})), "")
        << backend->name();
  }
}

// Random small elementwise functions of one dtype. A pool of values (the
// arguments, a captured array, 0-d literals and every result so far) grows by
// one operation per step; numbers favour 0, -0.0 and 1 so identities fire,
// and operations among 0-d literals give subgraphs to fold.
class RandomFunction {
 public:
  RandomFunction(uint64_t seed, DType dtype, Array table) : engine_(seed), dtype_(dtype), table_(std::move(table)) {}

  std::vector<Array> operator()(const Array& x, const Array& y) {
    std::vector<Array> pool = {x, y, full({}, number(), dtype_)};
    int steps = static_cast<int>(pick(4, 12));
    for (int step = 0; step < steps; ++step) pool.push_back(next(pool));
    // Tracing keeps only what the outputs need, so return a good share of the pool.
    std::vector<Array> outputs = {pool.back()};
    for (size_t k = 2; k + 1 < pool.size(); ++k)
      if (pick(0, 2) == 0) outputs.push_back(pool[k]);
    return outputs;
  }

 private:
  int64_t pick(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(engine_); }
  const Array& any(const std::vector<Array>& pool) { return pool[static_cast<size_t>(pick(0, pool.size() - 1))]; }

  Scalar number() {
    if (is_floating(dtype_)) {
      static const double values[] = {0.0, -0.0, 1.0, 1.0, 2.0, 0.5, -1.0, 3.0};
      return values[pick(0, 7)];
    }
    static const int values[] = {0, 0, 1, 1, 2, -1, 3};
    return values[pick(0, 6)];
  }

  // An array or a number, in either position.
  Operand operand(const std::vector<Array>& pool) {
    if (pick(0, 2) == 0) {
      Scalar value = number();
      if (value.kind() == Scalar::Kind::floating) return Operand(value.as_double());
      return Operand(static_cast<int>(value.as_int()));
    }
    return Operand(any(pool));
  }

  Array next(const std::vector<Array>& pool) {
    const Array& a = any(pool);
    switch (pick(0, 13)) {
      case 0: return operand(pool) + operand(pool);
      case 1: return operand(pool) - operand(pool);
      case 2: return operand(pool) * operand(pool);
      case 3: return is_floating(a.dtype()) ? a / operand(pool) : a * operand(pool);
      case 4: return pick(0, 1) ? maximum(a, operand(pool)) : minimum(operand(pool), a);
      case 5: return pick(0, 1) ? -a : -(-a);
      case 6: return abs(a);
      case 7: return is_floating(a.dtype()) ? exp(a) : astype(a, dtype_);
      case 8: {
        static const DType targets[] = {DType::f32, DType::f64, DType::i32, DType::i64};
        return astype(a, targets[pick(0, 3)]);
      }
      case 9: return a.ndim() == 0 ? a : reshape(reshape(a, {-1}), a.shape());
      case 10: return a.ndim() == 2 ? transpose(transpose(a)) : stop_gradient(a);
      case 11: return kiln::where(a > operand(pool), a, operand(pool));
      case 12: return full({}, number(), dtype_);
      default: return a * table_;
    }
  }

  std::mt19937_64 engine_;
  DType dtype_;
  Array table_;
};

Array special_values(std::mt19937_64& engine, DType dtype, const Shape& shape) {
  int64_t size = shape_size(shape);
  std::vector<double> values(static_cast<size_t>(size));
  static const double floats[] = {-0.0, 0.0, 1.0, -1.5, 2.0, 3.25, NAN, INFINITY, -INFINITY, 1e-40};
  static const double integers[] = {-2147483648.0, 2147483647.0, -1, 0, 1, 7, -3};
  for (double& value : values)
    value = is_floating(dtype) ? floats[engine() % std::size(floats)] : integers[engine() % std::size(integers)];
  return astype(array(values, shape), dtype);
}

// Nodes computing a 0-d value from literals alone.
// Vector math is left unfolded on purpose (its reference kernel rounds otherwise).
size_t foldable_nodes(const ir::Graph& graph) {
  size_t count = 0;
  for (const ir::Node& node : graph.nodes) {
    if (node.op == Primitive::literal || node.inputs.empty() || !node.type.shape.empty()) continue;
    if (ops::native_differs_from_reference(ops::rules(node.op), node.type.dtype)) continue;
    bool literals_only = true;
    for (ir::ValueId input : node.inputs)
      literals_only = literals_only && graph.nodes[static_cast<size_t>(input)].op == Primitive::literal;
    count += literals_only;
  }
  return count;
}

TEST(Simplify, RandomGraphsKeepTheirResultsBitForBit) {
  std::mt19937_64 engine(20240611);
  static const DType dtypes[] = {DType::f32, DType::f64, DType::i32, DType::i64};
  static const Shape shapes[] = {{}, {4}, {2, 3}};
  size_t removed = 0, folded = 0;
  for (int trial = 0; trial < 200; ++trial) {
    DType dtype = dtypes[engine() % std::size(dtypes)];
    Shape shape = shapes[engine() % std::size(shapes)];
    Array x = special_values(engine, dtype, shape);
    Array y = special_values(engine, dtype, shape);
    Array table = special_values(engine, dtype, shape);
    Graph graph = make_graph("random", RandomFunction(engine(), dtype, table), x, y);
    SCOPED_TRACE("trial " + std::to_string(trial) + "\n" + graph.to_string());
    std::vector<Array> captures;
    if (graph.num_captures()) captures.push_back(table);

    ir::Graph result = simplified(detail::ir_of(graph));
    expect_same_signature(detail::ir_of(graph), result);
    expect_same_results(detail::ir_of(graph), result, {x, y}, captures);
    std::string once = ops::graph_text(result);
    ir::Graph twice = simplified(result);
    EXPECT_EQ(ops::graph_text(twice), once);
    EXPECT_TRUE(twice.structurally_equal(result) && twice.same_literals(result));
    EXPECT_EQ(ops::graph_text(simplified(detail::ir_of(graph))), once);  // deterministic

    removed += detail::ir_of(graph).nodes.size() - result.nodes.size();
    folded += foldable_nodes(detail::ir_of(graph));
    EXPECT_EQ(foldable_nodes(result), 0u);
  }
  // The rules must actually fire on these graphs for the test to mean anything.
  EXPECT_GT(removed, 300u);
  EXPECT_GT(folded, 75u);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// In the test build (KILN_VERIFY, on in scripts/test.sh) every transform's
// result is verified, and a malformed graph is a loud failure naming the
// transform; elsewhere the check costs nothing.
TEST(Verifier, RunsAfterEveryTransformInTheTestBuild) {
  Graph graph = make_graph(
      "f", [](const Array& x) { return exp(x) + 1.0f; }, array({1.0f, 2.0f}));
  ir::Graph broken = detail::ir_of(graph);
  broken.nodes.back().type.shape = {3};  // add of f32[2] operands claims f32[3]
  EXPECT_THROW(transform::verify(broken), std::logic_error);
#ifdef KILN_VERIFY
  try {
    transform::verify_after("simplify", broken);
    ADD_FAILURE() << "verify_after accepted a malformed graph";
  } catch (const std::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("the result of simplify"), std::string::npos) << error.what();
  }
#else
  EXPECT_NO_THROW(transform::verify_after("simplify", broken));
#endif
}

}  // namespace
}  // namespace kiln
