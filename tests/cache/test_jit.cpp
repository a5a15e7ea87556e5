// jit and its cache: exact compile counts, never-stale results, explanations,
// storms, donation, telemetry, threads.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <thread>

#include "backend/interp/interpreter.h"
#include "backend/llvm/kernel_cache.h"
#include "cache/backend_choice.h"
#include "fresh_cache_fixture.h"
#include "support/errors.h"
#include "telemetry/telemetry.h"

namespace kiln {
namespace {

class Jit : public testing::FreshCacheTest {
 protected:
  static int64_t global_compiles() { return global_cache_stats().compiles; }
};

Array sample_batch(int i) {
  std::vector<float> values(16);
  for (size_t k = 0; k < values.size(); ++k) values[k] = static_cast<float>(i) * 0.5f + static_cast<float>(k);
  return array(values, {4, 4});
}

TEST_F(Jit, StatefulLambdaWithFreshCapturedBatchCompilesOnce) {
  Array w = array(std::vector<float>(16, 0.25f), {4, 4});
  Array batch;
  auto loss = [&](const Array& weights) { return sum(matmul(batch, weights) * batch); };
  auto jitted = jit(loss, {.name = "replay"});
  for (int i = 0; i < 1000; ++i) {
    batch = sample_batch(i);  // a fresh array each call, like a replay-buffer sample
    Array got = jitted(w);
    Array expected = loss(w);
    // The compiled matmul runs through BLAS, the eager one through the reference loop.
    ASSERT_NEAR(got.item<float>(), expected.item<float>(), 1e-5 * std::abs(expected.item<float>())) << "call " << i;
  }
  EXPECT_EQ(jitted.stats().compiles, 1);
  EXPECT_EQ(jitted.stats().calls, 1000);
  EXPECT_EQ(jitted.stats().traces, 1000);  // stateful: re-traced every call, looked up by graph
  EXPECT_EQ(jitted.stats().hits, 999);
  EXPECT_EQ(jitted.cache_size(), 1u);
}

Array affine(const Array& x) { return x * 3.0f + 1.0f; }

TEST_F(Jit, JitCreatedInALoopCompilesOnce) {
  int64_t before = global_compiles();
  Array x = array({1.0f, 2.0f});
  for (int i = 0; i < 100; ++i) {
    auto f = jit([](const Array& v) { return exp(v) * 2.0f; });
    EXPECT_EQ(f(x).to_vector<float>(), (exp(x) * 2.0f).to_vector<float>());
  }
  EXPECT_EQ(global_compiles() - before, 1);
  for (int i = 0; i < 10; ++i) jit (&affine)(x);
  EXPECT_EQ(global_compiles() - before, 2);
}

TEST_F(Jit, TwoFunctionsTracingToOneGraphCompileOnce) {
  int64_t before = global_compiles();
  auto f = jit([](const Array& v) { return v * v + 1.0f; });
  auto g = jit([](const Array& u) { return u * u + 1.0f; });
  Array x = array({3.0f});
  EXPECT_EQ(f(x).item<float>(), 10.0f);
  EXPECT_EQ(g(x).item<float>(), 10.0f);
  EXPECT_EQ(global_compiles() - before, 1);
  EXPECT_EQ(f.stats().compiles + g.stats().compiles, 1);
}

TEST_F(Jit, CapturedThresholdIsNeverStaleWithAuto) {
  double threshold = 0.5;
  Array x = array({0.25f, 0.75f, 1.5f});
  auto clip_low = jit([&](const Array& v) { return where(v > threshold, v, 0.0f); });
  for (double t : {0.5, 1.0, 0.1, 2.0, 0.5}) {
    threshold = t;
    EXPECT_EQ(clip_low(x).to_vector<float>(), where(x > t, x, 0.0f).to_vector<float>()) << "threshold " << t;
  }
  EXPECT_LE(clip_low.stats().compiles, 2);
}

TEST_F(Jit, ConstantCapturesReportStaleValuesWithTheirLine) {
  double threshold = 0.5;
  Array x = array({0.25f, 0.75f, 1.5f});
  const int line = __LINE__ + 1;
  auto f = jit([&](const Array& v) { return where(v > threshold, v, 0.0f); },
               {.captures = Captures::Constant, .verify_every = 1});
  f(x);
  threshold = 1.0;
  std::vector<telemetry::Event> storms;
  auto subscription = telemetry::subscribe([&](const telemetry::Event& e) {
    if (e.kind == telemetry::EventKind::storm) storms.push_back(e);
  });
  Array y = f(x);
  ASSERT_EQ(storms.size(), 1u);
  EXPECT_NE(storms[0].reason.find("stale capture"), std::string::npos) << storms[0].reason;
  EXPECT_NE(storms[0].reason.find(testing::test_line(line)), std::string::npos) << storms[0].reason;
  EXPECT_NE(storms[0].reason.find("0.5 -> 1"), std::string::npos) << storms[0].reason;
  EXPECT_NE(f.last_miss_explanation().find("0.5 -> 1"), std::string::npos) << f.last_miss_explanation();
  // The verification re-traced, so this result is already fresh.
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 0, 1.5f}));
}

TEST_F(Jit, ConstantWithoutVerificationKeepsFrozenCaptures) {
  double scale = 2.0;
  Array x = array({1.0f});
  auto f = jit([&](const Array& v) { return v * scale; }, {.captures = Captures::Constant});
  EXPECT_EQ(f(x).item<float>(), 2.0f);
  scale = 3.0;
  EXPECT_EQ(f(x).item<float>(), 2.0f);  // documented: Constant freezes what it traced
  EXPECT_EQ(f.stats().traces, 1);
}

TEST_F(Jit, StepCounterIsLiftedAfterItsSecondValue) {
  int step = 0;
  Array x = array({1.0f, 2.0f});
  const int line = __LINE__ + 1;
  auto f = jit([&](const Array& v) { return v * step + 1.0f; }, {.name = "schedule"});
  std::string second_explanation;
  for (step = 0; step < 100; ++step) {
    EXPECT_EQ(f(x).to_vector<float>(), (x * step + 1.0f).to_vector<float>());
    if (step == 1) second_explanation = f.last_miss_explanation();
  }
  EXPECT_EQ(f.stats().compiles, 2);
  EXPECT_NE(second_explanation.find(testing::test_line(line)), std::string::npos) << second_explanation;
  EXPECT_NE(second_explanation.find("0.0 -> 1.0"), std::string::npos) << second_explanation;
  EXPECT_NE(second_explanation.find("lifted"), std::string::npos) << second_explanation;
}

TEST_F(Jit, MissingMapKeyIsNamed) {
  auto f = jit([](const std::map<std::string, Array>& batch) {
    Array total = zeros({2});
    for (const auto& [name, value] : batch) total = total + value;
    return total;
  });
  Array a = array({1.0f, 2.0f});
  f(std::map<std::string, Array>{{"tokens", a}, {"mask", a}});
  f(std::map<std::string, Array>{{"mask", a}});
  std::string explanation = f.last_miss_explanation();
  EXPECT_NE(explanation.find("arg 0[\"tokens\"] is missing"), std::string::npos) << explanation;
  EXPECT_NE(explanation.find("hint:"), std::string::npos) << explanation;
}

// An array a function builds from host data while tracing is a constant of
// its graph (compared by its contents), not state it reads: a captureless
// function with one traces once per signature.
TEST_F(Jit, ArraysBuiltInsideAreConstantsNotCaptures) {
  static int captureless_traces = 0;  // static: a capture would make the function stateful
  auto g = jit([](const Array& x) {
    ++captureless_traces;
    return x + array({2.0f, 3.0f});
  });
  captureless_traces = 0;
  for (int i = 0; i < 5; ++i) EXPECT_EQ(g(array({1.0f, 1.0f})).to_vector<float>(), (std::vector<float>{3.0f, 4.0f}));
  EXPECT_EQ(captureless_traces, 1);
  EXPECT_EQ(g.stats().compiles, 1);
  Graph graph = g.lower(array({1.0f, 1.0f}));
  EXPECT_NE(graph.to_string().find("input constant 0"), std::string::npos) << graph.to_string();
  EXPECT_EQ(graph.num_captures(), 1u);
  // Constants with other contents are other graphs.
  static float offset = 2.0f;
  auto h = jit([](const Array& x) { return x + array({offset, offset}); }, {.captures = Captures::Retrace});
  EXPECT_EQ(h(array({1.0f, 1.0f})).to_vector<float>()[0], 3.0f);
  offset = 5.0f;
  EXPECT_EQ(h(array({1.0f, 1.0f})).to_vector<float>()[0], 6.0f);
  EXPECT_EQ(h.stats().compiles, 2);
  // An array made outside the trace and read inside stays a capture.
  Array outside = array({2.0f, 3.0f});
  auto k = jit([&outside](const Array& x) { return x + outside; });
  EXPECT_NE(k.lower(array({1.0f, 1.0f})).to_string().find("input capture 0"), std::string::npos);
}

TEST_F(Jit, ExplanationComparesWithTheClosestEntry) {
  auto f = jit([](const Array& x) { return x + 1; });
  f(array({1, 2}));
  f(array({1, 2, 3, 4}));
  f(array({1.0f, 2.0f}));  // differs from i32[2] in its dtype alone, from i32[4] in dtype and length
  std::string explanation = f.last_miss_explanation();
  EXPECT_NE(explanation.find("dtype changed: i32[2] -> f32[2]"), std::string::npos) << explanation;
  EXPECT_EQ(explanation.find("i32[4]"), std::string::npos) << explanation;
}

TEST_F(Jit, ShapeChangeNamesArgumentPathDimensionOldAndNew) {
  auto f = jit([](const Array& w, const std::map<std::string, Array>& batch) { return sum(batch.at("tokens")) * w; });
  Array w = array({1.0f});
  f(w, std::map<std::string, Array>{{"tokens", zeros({32, 128})}});
  f(w, std::map<std::string, Array>{{"tokens", zeros({48, 128})}});
  std::string explanation = f.last_miss_explanation();
  EXPECT_NE(explanation.find("arg 1[\"tokens\"] dimension 0 changed: 32 -> 48"), std::string::npos) << explanation;
  EXPECT_NE(explanation.find("f32[32,128] -> f32[48,128]"), std::string::npos) << explanation;
  EXPECT_NE(explanation.find("dynamic_dims"), std::string::npos) << explanation;
  EXPECT_EQ(f.stats().compiles, 2);
}

TEST_F(Jit, StaticArgumentsArePartOfTheKey) {
  auto f = jit([](const Array& x, int power) {
    Array result = x;
    for (int i = 1; i < power; ++i) result = result * x;
    return result;
  });
  Array x = array({2.0f});
  EXPECT_EQ(f(x, 3).item<float>(), 8.0f);
  EXPECT_EQ(f(x, 3).item<float>(), 8.0f);
  EXPECT_EQ(f(x, 4).item<float>(), 16.0f);
  EXPECT_EQ(f.stats().compiles, 2);
  EXPECT_EQ(f.stats().hits, 1);
  EXPECT_NE(f.last_miss_explanation().find("arg 1 static value changed: 3 -> 4"), std::string::npos)
      << f.last_miss_explanation();
}

TEST_F(Jit, NumberForAnArrayParameterIsAWeakDynamicScalar) {
  auto f = jit([](const Array& x, Array scale) { return x * scale; });
  Array x = array({1.0f, 2.0f});
  EXPECT_EQ(f(x, 2.0).to_vector<float>(), (std::vector<float>{2, 4}));
  EXPECT_EQ(f(x, 3.5).to_vector<float>(), (std::vector<float>{3.5f, 7}));
  EXPECT_EQ(f(x, 3.5).dtype(), f32);  // weak: adopts x's dtype
  EXPECT_EQ(f.stats().compiles, 1);
}

TEST_F(Jit, StructuredResults) {
  auto f = jit([](const Array& x) { return std::make_tuple(x + 1, std::vector<Array>{x * 2, x * 3}, 7); });
  auto [a, list, seven] = f(array({1, 2}));
  EXPECT_EQ(a.to_vector<int32_t>(), (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(list[1].to_vector<int32_t>(), (std::vector<int32_t>{3, 6}));
  EXPECT_EQ(seven, 7);
}

TEST_F(Jit, LowerReturnsTheGraphWithSourceLines) {
  auto f = jit([](const Array& x) { return tanh(x) * 2.0f; }, {.name = "scaled_tanh"});
  const int line = __LINE__ - 1;
  Graph graph = f.lower(array({1.0f, 2.0f}));
  EXPECT_NE(graph.to_string().find("graph scaled_tanh("), std::string::npos);
  EXPECT_NE(graph.to_string().find(testing::test_line(line)), std::string::npos) << graph;
  EXPECT_EQ(f.stats().compiles, 0);
}

TEST_F(Jit, DefaultNameIsTheCallSite) {
  auto f = jit([](const Array& x) { return x; });
  EXPECT_EQ(f.name(), testing::test_line(__LINE__ - 1));
}

TEST_F(Jit, DonatedArraysCannotBeUsedAgain) {
  auto step = jit([](const Array& params, const Array& grads) { return params - grads * 0.1f; },
                  {.name = "sgd", .donate_argnums = {0}});
  Array params = array({1.0f, 2.0f});
  Array grads = array({1.0f, 1.0f});
  Array updated = step(params, grads);
  EXPECT_NO_THROW(grads + 1);  // not donated
  try {
    Array again = params * 2;
    FAIL() << "expected DonatedArrayError";
  } catch (const DonatedArrayError& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("'sgd'"), std::string::npos) << message;
    EXPECT_NE(message.find("f32[2]"), std::string::npos) << message;
    EXPECT_NE(message.find(testing::test_line(__LINE__ - 6)), std::string::npos) << message;
  }
  EXPECT_THROW(step(params, grads), DonatedArrayError);
  std::vector<float> twice = step(updated, grads).to_vector<float>();
  EXPECT_NEAR(twice[0], 0.8f, 1e-6);
  EXPECT_NEAR(twice[1], 1.8f, 1e-6);
}

TEST_F(Jit, StormWarnsOnceForTheSameSignature) {
  bool flag = false;
  auto f = jit([&](const Array& x) { return flag ? exp(x) : log(x); }, {.name = "flaky"});
  std::vector<telemetry::Event> storms;
  auto subscription = telemetry::subscribe([&](const telemetry::Event& e) {
    if (e.kind == telemetry::EventKind::storm) storms.push_back(e);
  });
  Array x = array({1.0f});
  f(x);
  flag = true;
  f(x);
  ASSERT_EQ(storms.size(), 1u);
  EXPECT_NE(storms[0].reason.find("same argument signature"), std::string::npos) << storms[0].reason;
  EXPECT_NE(storms[0].reason.find("different path"), std::string::npos) << storms[0].reason;
  EXPECT_EQ(storms[0].function, "flaky");
}

TEST_F(Jit, StormErrorPastTheRecompileLimit) {
  auto f = jit([](const Array& x) { return x + 1; },
               {.recompile_limit = 3, .on_storm = OnStorm::Error, .automatic_dynamic = false});
  for (int n = 1; n <= 3; ++n) f(zeros({n}));
  EXPECT_THROW(f(zeros({4})), StormError);
}

TEST_F(Jit, GeneralizeLiftsEveryLiteral) {
  int a = 1;
  auto f = jit([&](const Array& x) { return x * a; }, {.recompile_limit = 1, .on_storm = OnStorm::Generalize});
  Array x = array({1.0f});
  for (a = 1; a < 10; ++a) EXPECT_EQ(f(x).item<float>(), static_cast<float>(a));
  EXPECT_EQ(f.stats().compiles, 2);
}

TEST_F(Jit, EvictedEntryIsExplainedAsAnEviction) {
  set_cache_limits(CacheLimits{.per_function = 2, .graphs = 1024});
  auto f = jit([](const Array& x) { return x * 2; }, {.automatic_dynamic = false});
  f(zeros({1}));
  f(zeros({2}));
  f(zeros({3}));  // evicts the entry for [1]
  EXPECT_EQ(f.cache_size(), 2u);
  f(zeros({1}));
  EXPECT_NE(f.last_miss_explanation().find("evicted"), std::string::npos) << f.last_miss_explanation();
  EXPECT_EQ(f.stats().compiles, 3);  // the process-wide cache still held [1]'s executable
}

TEST_F(Jit, ProcessWideCacheIsBounded) {
  set_cache_limits(CacheLimits{.per_function = 64, .graphs = 2});
  auto f = jit([](const Array& x) { return x * 2; }, {.automatic_dynamic = false});
  for (int n = 1; n <= 5; ++n) f(zeros({n}));
  auto g = jit([](const Array& x) { return x * 2; });
  g(zeros({1}));  // evicted process-wide: compiles again
  EXPECT_EQ(g.stats().compiles, 1);
}

TEST_F(Jit, KernelCacheIsBounded) {
  if (cache::default_backend().name() != "llvm") GTEST_SKIP() << "the kernel cache belongs to the native backend";
  set_cache_limits(CacheLimits{.per_function = 64, .graphs = 1024, .kernels = 2});
  // Five graphs with five different fused loops (the operation differs, so the code does).
  std::vector<std::function<Array(const Array&)>> bodies = {
      [](const Array& x) { return exp(x) + 1; }, [](const Array& x) { return tanh(x) * 3; },
      [](const Array& x) { return sin(x) - 2; }, [](const Array& x) { return cos(x) / 4; },
      [](const Array& x) { return sqrt(x) + x; }};
  Array x = array({0.5f, 1.0f, 2.0f});
  std::vector<Jitted<std::function<Array(const Array&)>>> functions;
  std::vector<std::vector<float>> first;
  for (auto& body : bodies) {
    functions.push_back(jit(body));
    first.push_back(functions.back()(x).to_vector<float>());
    EXPECT_LE(llvm_backend::kernel_cache_size(), 2u);
  }
  // Executables whose kernels were evicted still run them.
  for (size_t k = 0; k < functions.size(); ++k) EXPECT_EQ(functions[k](x).to_vector<float>(), first[k]);
  // A new graph needing an evicted kernel compiles it again, to the same result.
  auto again = jit(bodies[0]);
  EXPECT_EQ(again(x).to_vector<float>(), first[0]);
  EXPECT_LE(llvm_backend::kernel_cache_size(), 2u);
  set_cache_limits(CacheLimits{.kernels = 0});
  EXPECT_EQ(llvm_backend::kernel_cache_size(), 0u);
}

// Found by the fuzzer (seeds 57342 then 57746): two merged kernels with the
// same operations, inputs and second output, one writing abs(x) + 2 first and
// the other abs(x). With the first value out of the kernel's key, the second
// graph ran the first one's code and returned abs(x) + 2 for abs(x).
TEST_F(Jit, KernelsThatDifferOnlyInWhichValueTheyWriteFirstAreDifferentCode) {
  if (cache::default_backend().name() != "llvm") GTEST_SKIP() << "the kernel cache belongs to the native backend";
  Array x = array({-0.5f, 2.0f, -3.0f, 0.25f});
  auto shifted_first = jit([](const Array& v) {
    Array shifted = abs(v) + 2.0f;
    return std::pair{shifted, log(shifted)};
  });
  auto absolute_first = jit([](const Array& v) {
    Array magnitude = abs(v);
    return std::pair{reshape(magnitude, {1, 4}), log(magnitude + 2.0f)};
  });
  auto [shifted, log_shifted] = shifted_first(x);
  auto [magnitude, log_magnitude] = absolute_first(x);
  EXPECT_EQ(shifted.to_vector<float>(), (abs(x) + 2.0f).to_vector<float>());
  EXPECT_EQ(magnitude.to_vector<float>(), abs(x).to_vector<float>());
  EXPECT_EQ(log_magnitude.to_vector<float>(), log_shifted.to_vector<float>());
}

// A kernel's key follows what it computes, not the order its operations were
// traced in: the MLP step's Adam update of one bias came in another order
// than the other parameters' and compiled a kernel of its own.
TEST_F(Jit, KernelsTracedInAnotherOrderShareTheirCode) {
  if (cache::default_backend().name() != "llvm") GTEST_SKIP() << "the kernel cache belongs to the native backend";
  Array a = array({0.5f, -1.0f, 2.0f, 3.5f, 7.0f}), b = array({1.5f, 0.25f, -2.0f, 4.0f, -0.5f});
  auto update = jit([](const Array& x, const Array& y) {
    Array scaled = x * 1.25f;
    Array shifted = y - 0.75f;
    return scaled * shifted + scaled;
  });
  auto update_traced_backwards = jit([](const Array& x, const Array& y) {
    Array shifted = y - 0.75f;
    Array scaled = x * 1.25f;
    return scaled * shifted + scaled;
  });
  std::vector<float> expected = (a * 1.25f * (b - 0.75f) + a * 1.25f).to_vector<float>();
  EXPECT_EQ(update(a, b).to_vector<float>(), expected);
  size_t kernels = llvm_backend::kernel_cache_size();
  EXPECT_EQ(update_traced_backwards(a, b).to_vector<float>(), expected);
  EXPECT_EQ(llvm_backend::kernel_cache_size(), kernels) << "the same loop compiled again";
}

TEST_F(Jit, TelemetryEvents) {
  std::vector<telemetry::Event> events;
  auto subscription = telemetry::subscribe([&](const telemetry::Event& e) { events.push_back(e); });
  auto f = jit([](const Array& x) { return x + 1; }, {.name = "events"});
  f(array({1.0f}));
  f(array({2.0f}));
  std::vector<telemetry::EventKind> kinds;
  for (const auto& e : events) kinds.push_back(e.kind);
  using K = telemetry::EventKind;
  // Sync compiles (the suites' mode): the optimized code is ready before the first run.
  EXPECT_EQ(kinds, (std::vector<K>{K::trace, K::compile_started, K::compile, K::compile_ready, K::execute, K::cache_hit,
                                   K::execute}));
  EXPECT_EQ(events[2].function, "events");
  EXPECT_EQ(events[2].reason, "first call");
  EXPECT_EQ(events[2].key.size(), 16u);
  EXPECT_EQ(events[2].tier, "optimized");
  subscription.reset();
  f(array({3.0f}));
  EXPECT_EQ(events.size(), 7u);
}

TEST_F(Jit, RecompileLogExplains) {
  telemetry::set_log_mask(telemetry::log_recompiles);
  auto f = jit([](const Array& x) { return x + 1; }, {.name = "logged"});
  f(zeros({2}));
  ::testing::internal::CaptureStderr();
  f(zeros({3}));
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("kiln: 'logged' compiles again (2nd compile): arg 0 dimension 0 changed: 2 -> 3"),
            std::string::npos)
      << log;
}

TEST_F(Jit, RetraceCostIsReportedOnce) {
  telemetry::set_log_mask(telemetry::log_cache);
  Array weight = array({2.0f});
  auto f = jit(
      [&](const Array& x) {
        // Tracing that takes milliseconds against a run of microseconds: the
        // share of call time spent re-tracing is near 1 however noisy the machine.
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        return x * weight + 1.0f;
      },
      {.name = "heavy"});
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 30; ++i) f(array({1.0f}));
  std::string log = ::testing::internal::GetCapturedStderr();
  size_t first = log.find("'heavy' is re-traced on every call");
  ASSERT_NE(first, std::string::npos) << log;
  EXPECT_EQ(log.find("'heavy' is re-traced on every call", first + 1), std::string::npos) << log;
  EXPECT_NE(log.find("Captures::Constant"), std::string::npos) << log;
}

TEST_F(Jit, ManyThreadsFewSignaturesCompileExactlyOncePerSignature) {
  auto f = jit([](const Array& x) { return x * 2.0f + 1.0f; }, {.name = "threads", .automatic_dynamic = false});
  std::vector<Array> inputs;
  for (int n = 1; n <= 4; ++n) inputs.push_back(arange(n) * 1.0f);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        const Array& x = inputs[static_cast<size_t>((i + t) % 4)];
        std::vector<float> got = f(x).to_vector<float>();
        std::vector<float> in = x.to_vector<float>();
        for (size_t k = 0; k < in.size(); ++k)
          if (got[k] != in[k] * 2.0f + 1.0f) wrong.fetch_add(1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(f.stats().compiles, 4);
  EXPECT_EQ(f.stats().calls, 16000);
}

// Runs `call(t)` on `count` threads released together, so their first calls miss at once.
void on_threads_at_once(int count, const std::function<void(int)>& call) {
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < count; ++t)
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < count) std::this_thread::yield();
      call(t);
    });
  for (auto& thread : threads) thread.join();
}

// Concurrent first calls compile what one thread would: a miss that a
// pending compile will serve (the same signature, the same graph, or the
// symbolic entry being fitted) waits for it instead of compiling again.
TEST_F(Jit, ConcurrentFirstCallsCompileWhatOneThreadWould) {
  auto check = [](float factor, const Array& x, const Array& got) {
    std::vector<float> in = x.to_vector<float>(), out = got.to_vector<float>();
    for (size_t k = 0; k < in.size(); ++k)
      if (std::abs(out[k] - std::exp(in[k]) * factor) > 1e-5f * std::exp(in[k]) * factor) return false;
    return true;
  };
  for (int round = 0; round < 10; ++round) {
    // Each round is another graph, so nothing comes from the process-wide cache.
    float factor = 2.0f + static_cast<float>(round);
    auto single = jit([factor](const Array& x) { return exp(x) * factor; }, {.name = "single"});
    for (int n = 2; n <= 5; ++n) single(arange(n) * 0.25f);
    clear_graph_cache();
    auto dynamic = jit([factor](const Array& x) { return exp(x) * factor; }, {.name = "dynamic"});
    auto fixed =
        jit([factor](const Array& x) { return exp(x) * factor; }, {.name = "static", .automatic_dynamic = false});
    auto marked = jit([factor](const Array& x) { return exp(x) * factor; }, {.dynamic_dims = {{0, 0}}});
    std::atomic<int> wrong{0};
    on_threads_at_once(4, [&](int t) {
      Array x = arange(2 + t) * 0.25f;
      wrong += !check(factor, x, dynamic(x));
    });
    clear_graph_cache();
    on_threads_at_once(4, [&](int t) {
      Array x = arange(1 + t % 2) * 0.25f;  // two signatures, twice each
      wrong += !check(factor, x, fixed(x));
    });
    clear_graph_cache();
    on_threads_at_once(4, [&](int t) {
      Array x = arange(2 + t) * 0.25f;
      wrong += !check(factor, x, marked(x));
    });
    EXPECT_EQ(wrong.load(), 0);
    // One thread: a static compile, then one symbolic compile for every later size.
    EXPECT_EQ(single.stats().compiles, 2);
    EXPECT_EQ(dynamic.stats().compiles, 2) << "round " << round;
    EXPECT_EQ(fixed.stats().compiles, 2) << "round " << round;
    EXPECT_EQ(marked.stats().compiles, 1) << "round " << round;
    EXPECT_EQ(dynamic.stats().calls, 4);
  }
}

// Stateful functions are re-traced every call and looked up by graph: four
// threads tracing one graph at once compile it once.
TEST_F(Jit, ConcurrentRetracedCallsOfOneGraphCompileOnce) {
  for (int round = 0; round < 10; ++round) {
    // Each round is another graph (another literal), so nothing comes from the process-wide cache.
    float scale = 0.5f + static_cast<float>(round);
    Array weight = full({3}, 0.25f);
    auto f = jit([&](const Array& x) { return tanh(x * weight * scale); }, {.name = "stateful"});
    std::atomic<int> wrong{0};
    on_threads_at_once(4, [&](int) {
      Array x = arange(3) * 1.0f;
      std::vector<float> got = f(x).to_vector<float>(), expected = tanh(x * weight * scale).to_vector<float>();
      for (size_t k = 0; k < got.size(); ++k) wrong += std::abs(got[k] - expected[k]) > 1e-6f;
    });
    EXPECT_EQ(wrong.load(), 0);
    EXPECT_EQ(f.stats().compiles, 1) << "round " << round;
    EXPECT_EQ(f.stats().traces, 4);
  }
}

TEST_F(Jit, DevicesAreCheckedWhenTheFunctionIsMade) {
  auto identity = [](const Array& x) { return x; };
  ::unsetenv("KILN_CUDA_EMULATE");  // the real device
  testing::expect_error(__LINE__, [&] { jit(identity, {.device = "gpu"}); },
                        {"[jit]", "asks for device 'gpu', which kiln does not know", "use \"cpu\" or \"cuda\""});
  if (void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    ::dlclose(driver);
    GTEST_SKIP() << "this machine has a CUDA driver";
  }
  testing::expect_error(__LINE__, [&] { jit(identity, {.device = "cuda"}); },
                        {"[jit]", "asks for device 'cuda', which is not available here", "libcuda.so.1",
                         "use device \"cpu\" on a machine without an NVIDIA GPU"});
}

TEST_F(Jit, JitInsideATraceIsInlined) {
  auto inner = jit([](const Array& x) { return x * 2; });
  Graph graph = make_graph(
      "outer", [&](const Array& x) { return inner(x) + 1; }, array({1, 2}));
  EXPECT_EQ(inner.stats().calls, 0);
  EXPECT_EQ(detail::interpret(graph, {array({1, 2})}, {})[0].to_vector<int32_t>(), (std::vector<int32_t>{3, 5}));
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// Compiled code is freed with the last executable or cache entry holding it:
// a process that compiles graph after graph, with bounded caches, keeps a
// bounded number of linked modules (before, every module stayed linked and a
// long fuzzing run ran out of memory mappings after ~45,000 graphs).
TEST(CompiledCode, IsFreedWhenNoCacheOrExecutableHoldsIt) {
  if (cache::default_backend().name() != "llvm") GTEST_SKIP() << "the interpreter compiles nothing";
  set_cache_limits(CacheLimits{.per_function = 2, .graphs = 4, .kernels = 4});
  auto distinct = [](int steps) {
    // Each length is other code.
    return jit([steps](const Array& x) {
      Array y = x;
      for (int s = 0; s < steps; ++s) y = y * 0.5f + x;
      return y;
    });
  };
  Array x = full({64}, 0.25f);
  for (int steps = 1; steps <= 20; ++steps) distinct(steps)(x);
  size_t settled = llvm_backend::linked_modules();
  for (int steps = 21; steps <= 120; ++steps) distinct(steps)(x);
  size_t after = llvm_backend::linked_modules();
  set_cache_limits(CacheLimits{});
  // Only what the bounded caches hold stays linked, not the 100 more compiled.
  EXPECT_LE(after, settled + 10) << "linked modules: " << settled << " -> " << after;
}

}  // namespace
}  // namespace kiln
