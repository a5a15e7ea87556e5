// The graph's identity: a structure hash and structural equality that see
// every node and body but not literal values, and a literal hash and literal
// order that see those values, so the caches can tell a new structure from
// new numbers.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <algorithm>

#include "ir/graph.h"

namespace kiln {
namespace {

TEST(Graph, LiteralsDifferOnlyInValue) {
  Array x = array({1.0f, 2.0f});
  auto with = [&](double threshold) {
    return make_graph(
        "threshold", [&](const Array& v) { return maximum(v, threshold); }, x);
  };
  Graph a = with(0.5), b = with(0.75), c = with(0.5);
  EXPECT_EQ(a.structure_hash(), b.structure_hash());
  EXPECT_NE(a.literal_hash(), b.literal_hash());
  EXPECT_TRUE(detail::ir_of(a).structurally_equal(detail::ir_of(b)));
  EXPECT_FALSE(a == b);
  EXPECT_TRUE(a == c);
  EXPECT_EQ(a.literal_hash(), c.literal_hash());
  Graph other = make_graph(
      "threshold", [&](const Array& v) { return minimum(v, 0.5); }, x);
  EXPECT_NE(a.structure_hash(), other.structure_hash());
  EXPECT_FALSE(detail::ir_of(a).structurally_equal(detail::ir_of(other)));
}

TEST(Graph, BodiesTakePartInHashEqualityAndLiteralOrder) {
  auto loop = [](float factor) {
    return [factor](const Array& x) {
      return fori_loop(
          0, 5, [factor](const Array&, const Array& v) { return v * factor; }, x);
    };
  };
  Array x = zeros({2});
  Graph half = make_graph("loop", loop(0.5f), x), third = make_graph("loop", loop(1.0f / 3), x);
  EXPECT_EQ(half.structure_hash(), third.structure_hash());
  EXPECT_TRUE(detail::ir_of(half).structurally_equal(detail::ir_of(third)));
  EXPECT_NE(half.literal_hash(), third.literal_hash());
  std::vector<Scalar> literals = detail::ir_of(half).literal_values();
  ASSERT_FALSE(literals.empty());
  EXPECT_TRUE(std::find(literals.begin(), literals.end(), Scalar(0.5f)) != literals.end());
  // Another body (an added operation) is another structure.
  Graph other = make_graph(
      "loop",
      [](const Array& v0) {
        return fori_loop(
            0, 5, [](const Array&, const Array& v) { return v * 0.5f + 1.0f; }, v0);
      },
      x);
  EXPECT_NE(half.structure_hash(), other.structure_hash());
  EXPECT_FALSE(detail::ir_of(half).structurally_equal(detail::ir_of(other)));
}

}  // namespace
}  // namespace kiln
