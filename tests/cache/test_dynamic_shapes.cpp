// Dynamic dimensions: one executable for every size of a marked or churning
// dimension, equal to eager at every size, never stale when C++ reads a
// size, with explanations that name the dimension and the line.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <atomic>
#include <cmath>
#include <thread>

#include "cache/backend_choice.h"
#include "fresh_cache_fixture.h"
#include "support/errors.h"
#include "telemetry/telemetry.h"

namespace kiln {
namespace {

class DynamicShapes : public testing::FreshCacheTest {};

Array random_array(Shape shape, uint32_t seed, double scale = 1.0) {
  return random::normal(random::key(seed), std::move(shape)) * scale;
}

void expect_close(const Array& got, const Array& expected, double tolerance, const std::string& what) {
  ASSERT_EQ(got.shape(), expected.shape()) << what;
  std::vector<float> a = astype(got, DType::f32).to_vector<float>();
  std::vector<float> b = astype(expected, DType::f32).to_vector<float>();
  for (size_t k = 0; k < a.size(); ++k)
    ASSERT_NEAR(a[k], b[k], tolerance * (1.0 + std::abs(b[k]))) << what << " element " << k;
}

// One attention block over a sequence x[s, 64]: projections, scores over
// the dynamic length, softmax, output projection and a residual.
struct Attention {
  Array wq = random_array({64, 64}, 1, 0.125), wk = random_array({64, 64}, 2, 0.125),
        wv = random_array({64, 64}, 3, 0.125), wo = random_array({64, 64}, 4, 0.125);
  Array operator()(const Array& x, const Array& q_weight, const Array& k_weight, const Array& v_weight,
                   const Array& o_weight) const {
    Array q = matmul(x, q_weight), k = matmul(x, k_weight), v = matmul(x, v_weight);
    Array scores = matmul(q, transpose(k)) * (1.0 / 8.0);
    Array mixed = matmul(softmax(scores, -1), v);
    return x + matmul(mixed, o_weight);
  }
};

Array attention_block(const Array& x, const Array& wq, const Array& wk, const Array& wv, const Array& wo) {
  return Attention{}(x, wq, wk, wv, wo);
}

TEST_F(DynamicShapes, MarkedAttentionOverFortyLengthsCompilesOnce) {
  Attention weights;
  auto f = jit(&attention_block, {.name = "attention", .dynamic_dims = {{0, 0}}});
  for (int64_t length = 2; length < 42; ++length) {
    Array x = random_array({length, 64}, static_cast<uint32_t>(length));
    Array got = f(x, weights.wq, weights.wk, weights.wv, weights.wo);
    expect_close(got, attention_block(x, weights.wq, weights.wk, weights.wv, weights.wo), 1e-4,
                 "length " + std::to_string(length));
  }
  EXPECT_EQ(f.stats().compiles, 1);
  EXPECT_EQ(f.stats().calls, 40);
  EXPECT_EQ(f.stats().hits, 39);
}

TEST_F(DynamicShapes, UnmarkedAttentionBecomesDynamicOnTheSecondCompile) {
  Attention weights;
  auto f = jit(&attention_block, {.name = "attention"});
  for (int64_t length = 3; length < 43; ++length) {
    Array x = random_array({length, 64}, static_cast<uint32_t>(length));
    Array got = f(x, weights.wq, weights.wk, weights.wv, weights.wo);
    expect_close(got, attention_block(x, weights.wq, weights.wk, weights.wv, weights.wo), 1e-4,
                 "length " + std::to_string(length));
    if (length == 4) {
      std::string why = f.last_miss_explanation();
      EXPECT_NE(why.find("arg 0 dimension 0 becomes dynamic"), std::string::npos) << why;
      EXPECT_NE(why.find("f32[s0,64]"), std::string::npos) << why;
    }
  }
  EXPECT_EQ(f.stats().compiles, 2);
}

TEST_F(DynamicShapes, AutomaticDynamicCanBeTurnedOff) {
  auto f = jit([](const Array& x) { return exp(x) * 2.0f; }, {.automatic_dynamic = false});
  for (int64_t n = 2; n < 6; ++n) f(ones({n}));
  EXPECT_EQ(f.stats().compiles, 4);
}

// A training step of a two-layer MLP; the loss is a mean over the batch.
struct Parameters {
  Array w1, b1, w2;
};

std::pair<Array, Parameters> train_step(const Parameters& p, const Array& x, const Array& y) {
  auto loss = [&](const Array& w1, const Array& b1, const Array& w2) {
    Array hidden = relu(matmul(x, w1) + b1);
    return mean(square(matmul(hidden, w2) - y));
  };
  auto [value, grads] = value_and_grad(loss, {0, 1, 2})(p.w1, p.b1, p.w2);
  Parameters next{p.w1 - std::get<0>(grads) * 0.1f, p.b1 - std::get<1>(grads) * 0.1f, p.w2 - std::get<2>(grads) * 0.1f};
  return {value, next};
}

TEST_F(DynamicShapes, TrainingStepWithASmallerLastBatchCompilesAtMostTwice) {
  auto step = jit([](const Array& w1, const Array& b1, const Array& w2, const Array& x, const Array& y) {
    auto [loss, next] = train_step({w1, b1, w2}, x, y);
    return std::vector<Array>{loss, next.w1, next.b1, next.w2};
  });
  Parameters eager{random_array({16, 32}, 7, 0.3), zeros({32}), random_array({32, 1}, 8, 0.3)};
  Parameters compiled = eager;
  // Two epochs of 100 examples in batches of 32: 32, 32, 32, 4, then again.
  for (int epoch = 0; epoch < 2; ++epoch)
    for (int64_t first = 0; first < 100; first += 32) {
      int64_t rows = std::min<int64_t>(32, 100 - first);
      Array x = random_array({rows, 16}, static_cast<uint32_t>(100 + first));
      Array y = random_array({rows, 1}, static_cast<uint32_t>(200 + first));
      auto out = step(compiled.w1, compiled.b1, compiled.w2, x, y);
      auto [loss, next] = train_step(eager, x, y);
      expect_close(out[0], loss, 1e-4, "loss");
      compiled = {out[1], out[2], out[3]};
      eager = next;
      expect_close(compiled.w1, eager.w1, 1e-4, "w1");
    }
  EXPECT_LE(step.stats().compiles, 2);
}

Array total_over_rows(const Array& x) { return sum(x, 0) / static_cast<double>(x.shape()[0]); }

TEST_F(DynamicShapes, DividingByASizeReadInCppIsRightAtEveryLength) {
  auto f = jit(&total_over_rows, {.dynamic_dims = {{0, 0}}});
  for (int64_t n = 2; n < 20; ++n) {
    Array x = random_array({n, 3}, static_cast<uint32_t>(n));
    expect_close(f(x), mean(x, 0), 1e-5, "n = " + std::to_string(n));
  }
  EXPECT_EQ(f.stats().compiles, 1);
}

// A C++ loop over a dynamic size changes the graph's structure with it.
Array unrolled_sum(const Array& x) {
  Array total = zeros({x.shape()[1]});
  for (int64_t row = 0; row < x.shape()[0]; ++row)
    total = total + reshape(take(x, array<int32_t>({static_cast<int32_t>(row)}), 0), {x.shape()[1]});
  return total;
}

TEST_F(DynamicShapes, ALoopBoundReadInCppGuardsTheSizeAndNamesTheLine) {
  auto f = jit(&unrolled_sum);
  for (int64_t n = 2; n < 6; ++n) {
    Array x = random_array({n, 3}, static_cast<uint32_t>(n));
    expect_close(f(x), sum(x, 0), 1e-5, "n = " + std::to_string(n));
  }
  std::string why = f.last_miss_explanation();
  EXPECT_NE(why.find("guarded"), std::string::npos) << why;
  EXPECT_NE(why.find("test_dynamic_shapes.cpp"), std::string::npos) << why;
  EXPECT_EQ(f.stats().compiles, 4);  // every size compiles: never a stale unrolled loop
}

TEST_F(DynamicShapes, GradThroughDynamicDims) {
  auto loss = [](const Array& w, const Array& x) { return sum(square(tanh(matmul(x, w)))) / 3.0; };
  auto g = jit(grad(loss), {.dynamic_dims = {{1, 0}}});
  Array w = random_array({4, 2}, 11);
  for (int64_t n : {2, 5, 9, 30}) {
    Array x = random_array({n, 4}, static_cast<uint32_t>(n));
    expect_close(g(w, x), grad(loss)(w, x), 1e-4, "n = " + std::to_string(n));
  }
  EXPECT_EQ(g.stats().compiles, 1);
}

TEST_F(DynamicShapes, SizesZeroAndOneAreSpecialized) {
  auto f = jit([](const Array& x, const Array& y) { return sum(x * y, 0); }, {.dynamic_dims = {{0, 0}}});
  Array y = random_array({1, 3}, 5);
  for (int64_t n : {4, 1, 0, 7, 1}) {
    Array x = random_array({n, 3}, static_cast<uint32_t>(n + 1));
    expect_close(f(x, y), sum(x * y, 0), 1e-5, "n = " + std::to_string(n));
    if (n == 0) {
      std::string why = f.last_miss_explanation();
      EXPECT_NE(why.find("sizes 0 and 1"), std::string::npos) << why;
    }
  }
  EXPECT_EQ(f.stats().compiles, 3);  // sizes >= 2, 1 and 0
}

TEST_F(DynamicShapes, DimensionsThatCannotBeUnifiedNameBothShapes) {
  int line = __LINE__ + 1;
  auto f = jit([](const Array& x, const Array& y) { return x + y; }, {.dynamic_dims = {{0, 0}}});
  testing::expect_error(line, [&] { f(ones({6}), ones({6})); },
                        {"s0", "f32[s0], f32[6]", "cannot be unified", "dynamic_dims"});
}

TEST_F(DynamicShapes, EqualMarkedSizesShareOneSymbolGuardedEqual) {
  auto f = jit([](const Array& x, const Array& y) { return x * y + 1.0f; }, {.dynamic_dims = {{0, 0}, {1, 0}}});
  for (int64_t n : {3, 8, 20}) {
    Array x = random_array({n}, 1), y = random_array({n}, 2);
    expect_close(f(x, y), x * y + 1.0f, 1e-6, "n = " + std::to_string(n));
  }
  EXPECT_EQ(f.stats().compiles, 1);
  // The entry is guarded on their equality: unequal sizes miss it, and fail as eager code does.
  EXPECT_THROW(f(ones({5}), ones({6})), Error);
  EXPECT_EQ(f.stats().compiles, 1);
}

TEST_F(DynamicShapes, ScanOverADynamicLength) {
  auto f = jit(
      [](const Array& h0, const Array& xs) {
        return scan([](const Array& h, const Array& x) { return std::pair{tanh(h * 0.5f + x), h}; }, h0, xs);
      },
      {.dynamic_dims = {{1, 0}}});
  Array h0 = random_array({4}, 3);
  for (int64_t n : {2, 7, 16}) {
    Array xs = random_array({n, 4}, static_cast<uint32_t>(n));
    auto [h, hs] = f(h0, xs);
    auto [eh, ehs] = scan([](const Array& c, const Array& x) { return std::pair{tanh(c * 0.5f + x), c}; }, h0, xs);
    expect_close(h, eh, 1e-5, "carry");
    expect_close(hs, ehs, 1e-5, "stacked");
  }
  EXPECT_EQ(f.stats().compiles, 1);
}

TEST_F(DynamicShapes, StatefulFunctionsHitTheSymbolicEntryByTheirTrace) {
  Array scale = array({2.0f});
  auto f = jit([&](const Array& x) { return x * scale; }, {.dynamic_dims = {{0, 0}}});
  for (int64_t n : {3, 4, 9}) {
    Array x = random_array({n}, static_cast<uint32_t>(n));
    expect_close(f(x), x * 2.0f, 1e-6, "n");
  }
  EXPECT_EQ(f.stats().compiles, 1);
  EXPECT_EQ(f.stats().hits, 2);
}

TEST_F(DynamicShapes, AStaticBoundOnADynamicDimensionHoldsOnlyWhereItFits) {
  auto f = jit([](const Array& x) { return slice(x, {0}, {4}) * 2.0f; }, {.dynamic_dims = {{0, 0}}});
  expect_close(f(ones({6})), full({4}, 2.0f), 0, "6");
  expect_close(f(ones({9})), full({4}, 2.0f), 0, "9");
  EXPECT_EQ(f.stats().compiles, 1);
  // Below 4 the slice clamps (as NumPy's x[:4]): the symbolic entry serves 4 and up only.
  expect_close(f(ones({3})), full({3}, 2.0f), 0, "3");
  EXPECT_EQ(f.stats().misses, 2);
  EXPECT_NE(f.last_miss_explanation().find("outside"), std::string::npos) << f.last_miss_explanation();
  expect_close(f(ones({40})), full({4}, 2.0f), 0, "40");
  EXPECT_EQ(f.stats().misses, 2);
}

TEST_F(DynamicShapes, SymbolicKeysDoNotHoldTheSizesTracedAt) {
  auto body = [](const Array& x) { return softmax(x, -1) * 3.0f; };
  auto first = jit(body, {.dynamic_dims = {{0, 0}}});
  auto second = jit(body, {.dynamic_dims = {{0, 0}}});
  first(ones({5, 8}));
  second(ones({12, 8}));
  EXPECT_EQ(first.stats().compiles, 1);
  EXPECT_EQ(second.stats().compiles, 0);  // the process-wide cache held the same symbolic graph
  // Printed IR shows the symbols.
  std::string text = first.lower(ones({5, 8})).to_string();
  EXPECT_NE(text.find("f32[s0,8]"), std::string::npos) << text;
}

TEST_F(DynamicShapes, GeneralizeOnAStormMakesChurningSizesDynamic) {
  auto f = jit([](const Array& x) { return x * 2.0f; },
               {.recompile_limit = 2, .on_storm = OnStorm::Generalize, .automatic_dynamic = false});
  for (int64_t n = 2; n < 12; ++n) f(ones({n}));
  EXPECT_EQ(f.stats().compiles, 3);
}

// Every family of shape rule the issue of symbolic shapes touches, on x[s0, 6]:
// broadcasting, reductions over and along s0, a matmul contracting s0,
// concatenation along it, reshapes merging and splitting it, slices and pads
// with static bounds, take along it, softmax over it, transposes.
std::vector<Array> every_rule(const Array& x, const Array& w) {
  Array merged = reshape(x, {-1});                                // [6*s0]
  Array split = reshape(merged, {x.shape()[0], 2, 3});            // [s0, 2, 3]
  Array joined = concatenate({x, x * 2.0f}, 0);                   // [2*s0, 6]
  Array gram = matmul(transpose(x), x);                           // [6, 6]: contracts s0
  Array padded = pad(x, {1, 0}, {2, 0}, 0.5f);                    // [s0 + 3, 6]
  Array window = slice(padded, {1, 2}, {x.shape()[0] + 1, 5});    // [s0, 3]
  Array picked = take(x, array<int32_t>({0, 1}), 0);              // [2, 6]
  Array over_length = softmax(transpose(x), -1);                  // [6, s0]
  Array normalized = (x - mean(x, 0)) / (max(abs(x), 0) + 1.0f);  // reductions over s0, broadcast back
  Array projected = matmul(x, w) + sum(split, {1, 2}, true);      // [s0, 4]
  return {merged, split, joined, gram, window, picked, over_length, normalized, projected};
}

TEST_F(DynamicShapes, EveryShapeRuleFamilyFollowsItsSymbols) {
  auto f = jit(&every_rule, {.dynamic_dims = {{0, 0}}});
  Array w = random_array({6, 4}, 9);
  for (int64_t n : {2, 3, 10, 33}) {
    Array x = random_array({n, 6}, static_cast<uint32_t>(n));
    std::vector<Array> got = f(x, w), expected = every_rule(x, w);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t k = 0; k < got.size(); ++k)
      expect_close(got[k], expected[k], 1e-5, "output " + std::to_string(k) + ", n = " + std::to_string(n));
  }
  EXPECT_EQ(f.stats().compiles, 1);
  std::string text = f.lower(random_array({5, 6}, 1), w).to_string();
  for (const char* symbolic : {"f32[6*s0]", "f32[s0,2,3]", "f32[2*s0,6]", "f32[s0 + 3,6]", "f32[6,s0]"})
    EXPECT_NE(text.find(symbolic), std::string::npos) << symbolic << "\n" << text;
}

// x[1:-1] is empty at length 2, where the function is first traced: the
// executable planned there still serves every length.
Array interior(const Array& x) { return slice(x, {1}, {x.shape()[0] - 1}) * 2.0f + sum(x); }

TEST_F(DynamicShapes, ADerivedDimensionEmptyWhereFirstTracedServesEveryLength) {
  auto f = jit(&interior, {.dynamic_dims = {{0, 0}}});
  for (int64_t n : {2, 6, 3, 2, 11}) {
    Array x = random_array({n}, static_cast<uint32_t>(n));
    expect_close(f(x), interior(x), 1e-5, "n = " + std::to_string(n));
  }
  EXPECT_EQ(f.stats().compiles, 1);
}

// Static nodes with kernels of their own beside symbolic ones, and a row
// group (softmax) with no rows at some lengths.
TEST_F(DynamicShapes, StaticKernelsAndEmptyRowGroupsBesideSymbolicNodes) {
  auto f = jit(
      [](const Array& x, const Array& y) {
        return std::vector<Array>{x * 2.0f, argmax(y), cumsum(y)};
      },
      {.dynamic_dims = {{0, 0}}});
  Array y = array({1.0f, 5.0f, 2.0f, 0.5f});
  for (int64_t n : {4, 7, 2}) {
    std::vector<Array> out = f(ones({n}), y);
    EXPECT_EQ(out[1].item<int32_t>(), 1);
    EXPECT_EQ(out[2].to_vector<float>(), (std::vector<float>{1, 6, 8, 8.5}));
  }
  auto g = jit(
      [](const Array& x) {
        return softmax(slice(x, {1, 0}, {x.shape()[0] - 1, 5}), 1);
      },
      {.dynamic_dims = {{0, 0}}});
  for (int64_t n : {6, 2, 3, 9})
    expect_close(g(ones({n, 5})), full({n - 2, 5}, 0.2f), 1e-6, "n = " + std::to_string(n));
  EXPECT_EQ(f.stats().compiles, 1);
  EXPECT_EQ(g.stats().compiles, 1);
}

TEST_F(DynamicShapes, ManyThreadsManySizesCompileOnce) {
  auto f = jit([](const Array& x) { return exp(x) * 2.0f + 1.0f; }, {.name = "threads", .dynamic_dims = {{0, 0}}});
  f(arange(2) * 0.01f);  // the one compile; the threads then hit it at every size
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 300; ++i) {
        int64_t n = 2 + (i * 7 + t) % 40;
        Array x = arange(n) * 0.01f;
        std::vector<float> got = f(x).to_vector<float>(), expected = (exp(x) * 2.0f + 1.0f).to_vector<float>();
        for (size_t k = 0; k < got.size(); ++k)
          if (std::abs(got[k] - expected[k]) > 1e-5f * expected[k]) wrong.fetch_add(1);
      }
    });
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(f.stats().compiles, 1);
}

TEST_F(DynamicShapes, MarkingADimensionOutOfRangeIsAnError) {
  int line = __LINE__ + 1;
  auto f = jit([](const Array& x) { return x + 1.0f; }, {.dynamic_dims = {{0, 2}}});
  testing::expect_error(line, [&] { f(ones({3, 3})); }, {"dynamic_dims", "dimension 2", "[3,3]"});
}

}  // namespace
}  // namespace kiln
