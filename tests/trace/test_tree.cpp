// Trees: flatten order and paths, rebuilding with map_arrays, tree_map over
// one or several trees (a KILN_TREE parameter struct), static leaves,
// hashing, mismatch errors and use inside a trace.
#include <gtest/gtest.h>
#include <kiln/kiln.h>
#include <xxhash.h>

#include <array>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "backend/interp/interpreter.h"
#include "core/array_impl.h"

namespace tree_test {

struct Params {
  kiln::Array w1, b1, w2, b2;
};

enum class Activation { relu, tanh };

struct Model {
  Params encoder;
  std::vector<kiln::Array> extra;
  std::string name;
  int steps = 0;
  Activation activation = Activation::relu;
  std::optional<kiln::Array> scale;
};

}  // namespace tree_test

KILN_TREE(tree_test::Params, w1, b1, w2, b2);
KILN_TREE(tree_test::Model, encoder, extra, name, steps, activation, scale);

namespace kiln {
namespace {

using tree_test::Activation;
using tree_test::Model;
using tree_test::Params;

// Compile-time: what is and is not a tree.
struct Opaque {
  int* pointer;
};
static_assert(Tree<Array>);
static_assert(Tree<double> && Tree<int> && Tree<bool> && Tree<Activation> && Tree<std::string>);
static_assert(Tree<std::vector<Array>> && Tree<std::array<Array, 2>> && Tree<std::map<std::string, Array>>);
static_assert(Tree<std::pair<Array, int>> && Tree<std::tuple<Array, std::string, float>>);
static_assert(Tree<std::optional<Array>> && Tree<Params> && Tree<Model> && Tree<const Params&>);
static_assert(!Tree<Opaque> && !Tree<int*> && !Tree<std::map<int, Array>>);

Params make_params(float base) {
  return {full({2, 2}, base), full({2}, base + 1), full({2, 1}, base + 2), full({1}, base + 3)};
}

/// The first element of each leaf: leaves here are filled with distinct values.
std::vector<float> firsts(const std::vector<Array>& leaves) {
  std::vector<float> values;
  for (const Array& leaf : leaves) values.push_back(leaf.size() ? astype(leaf, f32).to_vector<float>()[0] : -1);
  return values;
}

/// Records every visitor event as text.
struct Recorder {
  std::vector<std::string> events;
  std::vector<std::string> path;
  std::vector<uint64_t> static_hashes;
  void array(const Array& a) {
    std::string where;
    for (const std::string& segment : path) where += segment;
    events.push_back("array " + where + " " + shape_string(a.shape()));
  }
  void static_leaf(uint64_t hash, const std::string& text) {
    static_hashes.push_back(hash);
    events.push_back("static " + text);
  }
  void key(uint64_t, const std::string& name) { events.push_back("key " + name); }
  void node(std::string_view kind, size_t size) {
    events.push_back("node " + std::string(kind) + " " + std::to_string(size));
  }
  void enter(const std::string& segment) { path.push_back(segment); }
  void leave() { path.pop_back(); }
};

template <class T>
Recorder record(const T& tree) {
  Recorder recorder;
  TreeTraits<T>::visit(tree, recorder);
  EXPECT_TRUE(recorder.path.empty()) << "unbalanced enter/leave";
  return recorder;
}

TEST(Tree, LeavesOfArraysAndStaticValues) {
  Array x = scalar(1.0f);
  EXPECT_EQ(tree_leaves(x).size(), 1u);
  EXPECT_EQ(detail::impl(tree_leaves(x)[0]), detail::impl(x)) << "leaves share storage, they are not copies";
  EXPECT_TRUE(tree_leaves(3.5).empty());
  EXPECT_TRUE(tree_leaves(std::string("text")).empty());
  EXPECT_TRUE(tree_leaves(Activation::tanh).empty());
  EXPECT_TRUE(tree_leaves(std::vector<Array>{}).empty());
  EXPECT_TRUE(tree_leaves(std::optional<Array>{}).empty());
  EXPECT_TRUE(tree_leaves(std::map<std::string, Array>{}).empty());
}

TEST(Tree, FlattenOrderFollowsContainersAndFields) {
  // Maps flatten in key order, tuples/pairs/arrays/vectors in position order,
  // structs in the order KILN_TREE lists the fields.
  std::map<std::string, Array> by_name = {{"zeta", scalar(3.0f)}, {"alpha", scalar(1.0f)}, {"mid", scalar(2.0f)}};
  EXPECT_EQ(firsts(tree_leaves(by_name)), (std::vector<float>{1, 2, 3}));

  auto mixed =
      std::make_tuple(scalar(10.0f), std::string("s"), std::vector<Array>{scalar(11.0f), scalar(12.0f)},
                      std::pair<Array, int>{scalar(13.0f), 7}, std::array<Array, 2>{scalar(14.0f), scalar(15.0f)},
                      std::optional<Array>(scalar(16.0f)), std::optional<Array>());
  EXPECT_EQ(firsts(tree_leaves(mixed)), (std::vector<float>{10, 11, 12, 13, 14, 15, 16}));

  Params p = make_params(20);
  EXPECT_EQ(firsts(tree_leaves(p)), (std::vector<float>{20, 21, 22, 23}));

  Model m{make_params(0), {scalar(4.0f), scalar(5.0f)}, "net", 3, Activation::tanh, scalar(6.0f)};
  EXPECT_EQ(firsts(tree_leaves(m)), (std::vector<float>{0, 1, 2, 3, 4, 5, 6}));
}

TEST(Tree, VisitorSeesStructurePathsAndStaticLeaves) {
  std::map<std::string, std::vector<Array>> tree = {{"b", {zeros({2})}}, {"a", {zeros({1, 3}), zeros({})}}};
  Recorder r = record(tree);
  EXPECT_EQ(r.events,
            (std::vector<std::string>{"node map 2", "key a", "node vector 2", "array [\"a\"][0] [1,3]",
                                      "array [\"a\"][1] []", "key b", "node vector 1", "array [\"b\"][0] [2]"}));

  Model m{make_params(0), {}, "net", 3, Activation::tanh, std::nullopt};
  Recorder rm = record(m);
  EXPECT_EQ(rm.events, (std::vector<std::string>{"node tree_test::Model 0", "node tree_test::Params 0",
                                                 "array .encoder.w1 [2,2]", "array .encoder.b1 [2]",
                                                 "array .encoder.w2 [2,1]", "array .encoder.b2 [1]", "node vector 0",
                                                 "static \"net\"", "static 3", "static enum 1", "node optional 0"}));

  Recorder rp = record(std::make_tuple(std::pair<double, bool>{0.25, true}, 1.5f));
  EXPECT_EQ(rp.events,
            (std::vector<std::string>{"node tuple 2", "node pair 2", "static 0.25", "static true", "static 1.5"}));
}

TEST(Tree, StaticLeafHashesAreByValue) {
  auto hash_of = [](const auto& value) { return record(value).static_hashes.at(0); };
  EXPECT_EQ(hash_of(0.0), hash_of(-0.0)) << "+0 and -0 must give one cache key";
  EXPECT_EQ(hash_of(0.0f), hash_of(-0.0f));
  EXPECT_NE(hash_of(1.0), hash_of(2.0));
  EXPECT_EQ(hash_of(std::string("lr")), hash_of(std::string("lr")));
  EXPECT_NE(hash_of(std::string("lr")), hash_of(std::string("lR")));
  EXPECT_NE(hash_of(Activation::relu), hash_of(Activation::tanh));
  EXPECT_NE(hash_of(int32_t{1}), hash_of(int64_t{1})) << "the width is part of the key";
  // hash_bytes is XXH3 with the given seed: stable across runs and builds.
  const char bytes[] = "kiln";
  EXPECT_EQ(tree_detail::hash_bytes(bytes, 4, 7), XXH3_64bits_withSeed(bytes, 4, 7));
  EXPECT_NE(tree_detail::hash_bytes(bytes, 4, 7), tree_detail::hash_bytes(bytes, 4, 8));
  EXPECT_EQ(tree_detail::hash_bytes(nullptr, 0, 1), XXH3_64bits_withSeed(nullptr, 0, 1));
}

TEST(Tree, MapRebuildsTheSameTypeKeepingStaticLeaves) {
  Model m{make_params(1), {scalar(7.0f)}, "net", 3, Activation::tanh, scalar(8.0f)};
  Model doubled = tree_map([](const Array& a) { return a * 2; }, m);
  EXPECT_EQ(firsts(tree_leaves(doubled)), (std::vector<float>{2, 4, 6, 8, 14, 16}));
  EXPECT_EQ(doubled.name, "net");
  EXPECT_EQ(doubled.steps, 3);
  EXPECT_EQ(doubled.activation, Activation::tanh);
  EXPECT_EQ(doubled.encoder.w1.shape(), (Shape{2, 2}));
  EXPECT_EQ(doubled.encoder.w2.shape(), (Shape{2, 1}));
  // The input is untouched (arrays are immutable values).
  EXPECT_EQ(firsts(tree_leaves(m)), (std::vector<float>{1, 2, 3, 4, 7, 8}));

  auto tuple = std::make_tuple(scalar(1), std::string("k"), std::optional<Array>(), 2.5);
  auto mapped = tree_map([](const Array& a) { return astype(a, f64); }, tuple);
  static_assert(std::is_same_v<decltype(mapped), decltype(tuple)>);
  EXPECT_EQ(std::get<0>(mapped).dtype(), f64);
  EXPECT_EQ(std::get<1>(mapped), "k");
  EXPECT_FALSE(std::get<2>(mapped).has_value());
  EXPECT_EQ(std::get<3>(mapped), 2.5);

  std::array<Array, 3> fixed = {scalar(1.0f), scalar(2.0f), scalar(3.0f)};
  auto negated = tree_map([](const Array& a) { return -a; }, fixed);
  EXPECT_EQ(firsts({negated.begin(), negated.end()}), (std::vector<float>{-1, -2, -3}));
}

TEST(Tree, MapCallsInLeafOrder) {
  // map_arrays must call fn in the same order tree_leaves lists the leaves:
  // jit rebuilds results by handing out outputs one by one.
  auto tree = std::make_tuple(std::vector<Array>{scalar(0.0f), scalar(0.0f)},
                              std::map<std::string, Array>{{"b", scalar(0.0f)}, {"a", scalar(0.0f)}},
                              std::pair<Array, Array>{scalar(0.0f), scalar(0.0f)},
                              std::array<Array, 2>{scalar(0.0f), scalar(0.0f)},
                              Params{scalar(0.0f), scalar(0.0f), scalar(0.0f), scalar(0.0f)});
  float next = 0;
  auto numbered = tree_map([&](const Array&) { return scalar(next++); }, tree);
  std::vector<float> expected(12);
  for (size_t i = 0; i < expected.size(); ++i) expected[i] = static_cast<float>(i);
  EXPECT_EQ(firsts(tree_leaves(numbered)), expected);
}

TEST(Tree, MapOverSeveralTreesIsAnSgdStep) {
  Params params = make_params(1), grads = make_params(10);
  float lr = 0.5f;
  Params updated = tree_map([&](const Array& p, const Array& g) { return p - lr * g; }, params, grads);
  // p - 0.5 * g with p = base + k, g = 10 + k for field k.
  EXPECT_EQ(updated.w1.to_vector<float>(), std::vector<float>(4, 1 - 5.0f));
  EXPECT_EQ(updated.b1.to_vector<float>(), std::vector<float>(2, 2 - 5.5f));
  EXPECT_EQ(updated.w2.to_vector<float>(), std::vector<float>(2, 3 - 6.0f));
  EXPECT_EQ(updated.b2.to_vector<float>(), std::vector<float>(1, 4 - 6.5f));

  // Three trees: momentum-style update v' = m*v + g, p' = p - lr*v'.
  Params velocity = make_params(0);
  Params new_velocity = tree_map([](const Array& v, const Array& g) { return 0.9f * v + g; }, velocity, grads);
  Params stepped = tree_map([&](const Array& p, const Array& v, const Array& g) { return p - lr * (0.9f * v + g); },
                            params, velocity, grads);
  Params reference = tree_map([&](const Array& p, const Array& v) { return p - lr * v; }, params, new_velocity);
  std::vector<Array> a = tree_leaves(stepped), b = tree_leaves(reference);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].to_vector<float>(), b[i].to_vector<float>()) << i;
}

TEST(Tree, NestedContainers) {
  using Layer = std::pair<Array, std::optional<Array>>;
  std::vector<std::map<std::string, Layer>> nested = {
      {{"dense", {scalar(1.0f), scalar(2.0f)}}, {"norm", {scalar(3.0f), std::nullopt}}},
      {{"out", {scalar(4.0f), scalar(5.0f)}}},
  };
  EXPECT_EQ(firsts(tree_leaves(nested)), (std::vector<float>{1, 2, 3, 4, 5}));
  auto plus = tree_map([](const Array& a, const Array& b) { return a + b; }, nested, nested);
  EXPECT_EQ(firsts(tree_leaves(plus)), (std::vector<float>{2, 4, 6, 8, 10}));
  EXPECT_FALSE(plus[0].at("norm").second.has_value());
  EXPECT_EQ(plus[1].count("out"), 1u);
}

TEST(Tree, MismatchedTreesAreAnError) {
  std::vector<Array> three = {scalar(1.0f), scalar(2.0f), scalar(3.0f)}, two = {scalar(1.0f), scalar(2.0f)};
  auto add = [](const Array& a, const Array& b) { return a + b; };
  try {
    tree_map(add, three, two);
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    std::string text = error.what();
    EXPECT_EQ(text.rfind("[tree_map]", 0), 0u) << text;
    EXPECT_NE(text.find("tree 2 has 2 array leaves"), std::string::npos) << text;
    EXPECT_NE(text.find("tree 1 has 3"), std::string::npos) << text;
    EXPECT_NE(text.find("hint:"), std::string::npos) << text;
  }
  auto add3 = [](const Array& a, const Array& b, const Array& c) { return a + b + c; };
  try {
    tree_map(add3, three, three, two);
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("tree 3 has 2"), std::string::npos) << error.what();
  }
  Params p = make_params(0);
  std::optional<Array> none;
  EXPECT_THROW(tree_map([](const Array& a, const Array&) { return a; }, p, std::vector<Array>{scalar(1.0f)}), Error);
  EXPECT_THROW(tree_map([](const Array& a, const Array&) { return a; }, std::optional<Array>(scalar(1.0f)), none),
               Error);
}

TEST(Tree, StructsWorkInsideATrace) {
  Params params = make_params(1), grads = make_params(2);
  auto step = [](const Params& p, const Params& g) {
    return tree_map([](const Array& a, const Array& b) { return a - 0.1f * b; }, p, g);
  };
  Graph graph = make_graph("sgd", step, params, grads);
  EXPECT_EQ(graph.num_arguments(), 8u);
  std::vector<Array> arguments = tree_leaves(std::make_pair(params, grads));
  std::vector<Array> traced = detail::interpret(graph, arguments, {});
  std::vector<Array> eager = tree_leaves(step(params, grads));
  ASSERT_EQ(traced.size(), eager.size());
  for (size_t i = 0; i < traced.size(); ++i) {
    EXPECT_EQ(traced[i].shape(), eager[i].shape()) << i;
    EXPECT_EQ(traced[i].to_vector<float>(), eager[i].to_vector<float>()) << i;
  }
}

}  // namespace
}  // namespace kiln
