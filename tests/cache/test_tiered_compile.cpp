// Tiered execution: in background mode a new graph's first calls run op by
// op while its optimized code compiles on kiln's compile thread, with the
// same results bit for bit; the optimized code then serves every later call.
// A gate held in the background compile (the test fault hook) makes "before
// the optimized code is ready" deterministic.
#include <gtest/gtest.h>
#include <kiln/kiln.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <regex>
#include <thread>
#include <tuple>

#include "backend/llvm/backend.h"
#include "backend/llvm/kernel_cache.h"
#include "cache/backend_choice.h"
#include "cache/graph_cache.h"
#include "cache/persistent_cache.h"
#include "cache/tiered_compile.h"
#include "core/allocator.h"
#include "core/array_impl.h"
#include "fresh_cache_fixture.h"
#include "persistent_fixture.h"
#include "support/compile_gate.h"
#include "support/timeline.h"
#include "trace/trace.h"

namespace kiln::testing {
namespace {

class TieredCompile : public FreshCacheTest {
 protected:
  void SetUp() override {
    FreshCacheTest::SetUp();
    if (!cache::native_backend_chosen()) GTEST_SKIP() << "tiers exist for the native backend only";
  }
};

// The execution timeline while `call` runs with the background compile
// held: what a first tier ran, and by what.
std::string first_tier_timeline(const std::function<void()>& call) {
  CompileGate gate;
  return recorded_timeline(call);
}

Array step(const Array& w, const Array& x) {
  Array h = tanh(matmul(x, w) + 0.5f);
  return sum(exp(-h) * h, {1}) + log(sum(h * h) + 1.0f);
}

TEST_F(TieredCompile, FirstCallsRunOpByOpAndMatchTheOptimizedCodeBitForBit) {
  Array w = random::normal(random::key(1), {64, 48}), x = random::normal(random::key(2), {300, 64});
  std::string expected = bytes_of(jit(step, {.compile_mode = CompileMode::Sync})(w, x));
  clear_graph_cache();
  auto tiered = jit(step, {.compile_mode = CompileMode::Background});
  {
    CompileGate gate;
    for (int call = 0; call < 3; ++call) EXPECT_EQ(bytes_of(tiered(w, x)), expected) << "op-by-op call " << call;
    EXPECT_EQ(tiered.stats().calls_before_optimized, 3);
  }
  EXPECT_EQ(bytes_of(tiered(w, x)), expected) << "optimized call";
  CacheStats stats = tiered.stats();
  EXPECT_EQ(stats.calls_before_optimized, 3);
  EXPECT_EQ(stats.compiles, 1);
  EXPECT_EQ(stats.misses, 1);
  EXPECT_GT(stats.compile_seconds, 0) << "the background compile's time is counted once it is ready";
}

TEST_F(TieredCompile, SyncModeNeverRunsOpByOp) {
  Array w = random::normal(random::key(1), {64, 48}), x = random::normal(random::key(2), {300, 64});
  auto sync = jit(step, {.compile_mode = CompileMode::Sync});
  sync(w, x);
  sync(w, x);
  EXPECT_EQ(sync.stats().calls_before_optimized, 0);
  EXPECT_EQ(sync.stats().compiles, 1);
}

TEST_F(TieredCompile, HalfPrecisionChainsCompileBeforeTheirFirstCall) {
  // Fused, f16 intermediates stay in f32; op by op would round each one.
  auto chain =
      jit([](const Array& x) { return tanh(x * 1.5f + 0.25f) * x; }, {.compile_mode = CompileMode::Background});
  CompileGate gate;  // never opened while the call runs: a background compile would hold it
  chain(full({1000}, 0.3f, f16));
  EXPECT_EQ(chain.stats().calls_before_optimized, 0);
  EXPECT_EQ(chain.stats().compiles, 1);
}

TEST_F(TieredCompile, AFailingBackgroundCompileLeavesTheFunctionOnItsFirstTierAndSaysSoOnce) {
  Array w = random::normal(random::key(3), {64, 48}), x = random::normal(random::key(4), {30, 64});
  std::string expected = bytes_of(jit(step, {.compile_mode = CompileMode::Sync})(w, x));
  clear_graph_cache();
  cache::set_background_compile_fault([](const ir::Graph&) { throw std::runtime_error("LLVM ran out of memory"); });
  std::vector<telemetry::Event> ready;
  std::mutex events_mutex;
  auto subscription = telemetry::subscribe([&](const telemetry::Event& event) {
    std::lock_guard lock(events_mutex);
    if (event.kind == telemetry::EventKind::compile_ready) ready.push_back(event);
  });
  auto failing = jit(step, {.name = "failing", .compile_mode = CompileMode::Background});
  EXPECT_EQ(bytes_of(failing(w, x)), expected);
  wait_for_background_compiles();
  cache::set_background_compile_fault(nullptr);
  for (int call = 0; call < 4; ++call) EXPECT_EQ(bytes_of(failing(w, x)), expected);
  EXPECT_EQ(failing.stats().calls_before_optimized, 5);
  EXPECT_EQ(failing.stats().compiles, 1) << "a failed compile is not retried on every call";
  std::lock_guard lock(events_mutex);
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].function, "failing");
  EXPECT_EQ(ready[0].tier, "op by op");
  EXPECT_NE(ready[0].reason.find("LLVM ran out of memory"), std::string::npos);
}

TEST_F(TieredCompile, TelemetryTellsWhenACompileStartsAndWhenItsCodeIsReady) {
  std::vector<telemetry::Event> events;
  std::mutex events_mutex;
  auto subscription = telemetry::subscribe([&](const telemetry::Event& event) {
    std::lock_guard lock(events_mutex);
    if (event.kind == telemetry::EventKind::compile || event.kind == telemetry::EventKind::compile_started ||
        event.kind == telemetry::EventKind::compile_ready)
      events.push_back(event);
  });
  Array w = random::normal(random::key(5), {64, 48}), x = random::normal(random::key(6), {30, 64});
  jit(step, {.name = "background", .compile_mode = CompileMode::Background})(w, x);
  wait_for_background_compiles();
  clear_graph_cache();
  jit(step, {.name = "sync", .compile_mode = CompileMode::Sync})(w, x);
  std::lock_guard lock(events_mutex);
  std::vector<std::string> seen;
  for (const auto& event : events)
    seen.push_back(event.function + " " + std::string(telemetry::kind_name(event.kind)) + " " + event.tier);
  std::vector<std::string> expected = {
      "background compile_started optimized", "background compile op by op", "background compile_ready optimized",
      "sync compile_started optimized",       "sync compile optimized",      "sync compile_ready optimized"};
  EXPECT_EQ(seen, expected);
  for (const auto& event : events)
    if (event.kind == telemetry::EventKind::compile_ready) EXPECT_GT(event.seconds, 0);
}

// The first tier's kernels have quick machine code, which serves it alone:
// the optimized code, plain eager code and the persistent cache get
// optimized kernels, compiled anew where only a quick one exists.
TEST_F(TieredCompile, QuickKernelsServeTheFirstTierAlone) {
  llvm_backend::clear_kernel_cache();
  // Shapes no other test uses: a first tier's quick executables outlive a
  // test in the process (all of them run in one under a plain gtest run).
  Array w = random::normal(random::key(9), {64, 48}), x = random::normal(random::key(10), {31, 64});
  std::string expected = bytes_of(jit(step, {.compile_mode = CompileMode::Sync})(w, x));
  clear_graph_cache();
  size_t quick = llvm_backend::quick_modules_compiled();
  auto tiered = jit(step, {.compile_mode = CompileMode::Background});
  {
    CompileGate gate;
    EXPECT_EQ(bytes_of(tiered(w, x)), expected) << "quick kernels round as optimized ones";
    EXPECT_GT(llvm_backend::quick_modules_compiled(), quick);
  }
  EXPECT_EQ(bytes_of(tiered(w, x)), expected);
  wait_for_background_compiles();
  // Plain eager exp compiles its own optimized kernel, once: what the first
  // tier ran (interpreted, or quick code) never serves it.
  quick = llvm_backend::quick_modules_compiled();
  size_t modules = llvm_backend::modules_compiled();
  std::vector<float> first = exp(x).to_vector<float>();
  EXPECT_EQ(llvm_backend::modules_compiled(), modules + 1);
  EXPECT_EQ(exp(x).to_vector<float>(), first);
  EXPECT_EQ(llvm_backend::modules_compiled(), modules + 1);
  EXPECT_EQ(llvm_backend::quick_modules_compiled(), quick);
}

// Kiln's vector math needs no compile in a first tier: its scalar code runs
// interpreted (backend/llvm/scalar_program.h), with the optimized code's bits.
TEST_F(TieredCompile, VectorMathRunsInterpretedAndTheFirstCallCompilesNothing) {
  Array x = random::normal(random::key(11), {1024}), w = full({1024}, 0.5f);
  auto chain = [](const Array& a, const Array& b) {
    Array y = a;
    for (int i = 0; i < 30; ++i) y = (i % 3 == 0 ? exp(-y * y) : i % 3 == 1 ? tanh(y) : log1p(y * y)) * b + a;
    return y;
  };
  std::string expected = bytes_of(jit(chain, {.compile_mode = CompileMode::Sync})(x, w));
  clear_graph_cache();
  llvm_backend::clear_kernel_cache();
  size_t modules = llvm_backend::modules_compiled();
  auto tiered = jit(chain, {.compile_mode = CompileMode::Background});
  {
    CompileGate gate;
    EXPECT_EQ(bytes_of(tiered(x, w)), expected);
    EXPECT_EQ(llvm_backend::modules_compiled(), modules) << "the first call waited for a compile";
    EXPECT_EQ(tiered.stats().calls_before_optimized, 1);
  }
  wait_for_background_compiles();
  EXPECT_EQ(bytes_of(tiered(x, w)), expected);
  EXPECT_EQ(llvm_backend::modules_compiled(), modules + 1) << "the optimized compile, one module";
}

// Sums adding whole rows (over leading axes) run interpreted in a first
// tier (backend/llvm/interpreted_rows.h): each column adds its rows in one
// order at any vector width, so the bits are the optimized (vectorized,
// fused) code's, and the first call compiles nothing.
TEST_F(TieredCompile, ColumnSumsRunInterpretedInAFirstTierAndKeepTheBits) {
  Array a = random::normal(random::key(12), {301, 77});
  Array b = random::normal(random::key(13), {9, 40, 33}, f64);
  auto f = [](const Array& x, const Array& y) {
    return std::tuple<Array, Array>{sum(x, {0}) + sum(exp(x * 0.5f), {0}), sum(y * y, {0, 1})};
  };
  auto bytes_of_both = [](const std::tuple<Array, Array>& results) {
    return bytes_of(std::get<0>(results)) + bytes_of(std::get<1>(results));
  };
  std::string expected = bytes_of_both(jit(f, {.compile_mode = CompileMode::Sync})(a, b));
  clear_graph_cache();
  llvm_backend::clear_kernel_cache();
  size_t modules = llvm_backend::modules_compiled();
  auto tiered = jit(f, {.compile_mode = CompileMode::Background});
  {
    CompileGate gate;
    EXPECT_EQ(bytes_of_both(tiered(a, b)), expected);
    EXPECT_EQ(llvm_backend::modules_compiled(), modules) << "the first call waited for a compile";
  }
  wait_for_background_compiles();
  EXPECT_EQ(bytes_of_both(tiered(a, b)), expected);
}

TEST(KernelCache, QuickCodeServesOnlyWhoAcceptsItAndOptimizedCodeReplacesIt) {
  const std::string key = "test kernel: quick then optimized";
  llvm_backend::CompiledKernel quick, optimized;
  quick.quick = true;
  quick.symbol = "quick";
  optimized.symbol = "optimized";
  EXPECT_EQ(llvm_backend::remember_compiled_kernel(key, quick).symbol, "quick");
  EXPECT_FALSE(llvm_backend::find_compiled_kernel(key, /*accept_quick=*/false));
  EXPECT_EQ(llvm_backend::find_compiled_kernel(key, /*accept_quick=*/true)->symbol, "quick");
  EXPECT_EQ(llvm_backend::remember_compiled_kernel(key, optimized).symbol, "optimized");
  EXPECT_EQ(llvm_backend::find_compiled_kernel(key, false)->symbol, "optimized");
  EXPECT_EQ(llvm_backend::find_compiled_kernel(key, true)->symbol, "optimized")
      << "optimized serves quick compiles too";
  EXPECT_EQ(llvm_backend::remember_compiled_kernel(key, quick).symbol, "optimized") << "quick never replaces optimized";
  llvm_backend::clear_kernel_cache();
}

// Many threads make the first calls while the optimized code compiles, and
// go on calling as it replaces the first tier (run under --thread too).
// A first tier writes a result over an input read for the last time when
// the call owns its memory (a value it computed, a donated argument), as the
// optimized code does: fresh memory costs a page fault per 4 KiB at its
// first write. Both with the reference kernels (no eager kernel compiled)
// and with eager's compiled ones; never over an argument the caller keeps.
TEST_F(TieredCompile, FirstTiersWriteOverValuesReadForTheLastTime) {
  auto update = [](const Array& w, const Array& g) { return ((w + g) * g - g) * w; };
  Array g = random::normal(random::key(14), {256, 300});
  auto fresh_weights = [&] { return g * 0.5f + 1.0f; };
  std::string expected = bytes_of(jit(update, {.compile_mode = CompileMode::Sync})(fresh_weights(), g));
  auto allocations = [] {
    detail::allocator::Stats stats = detail::allocator::stats();
    return stats.hits + stats.misses;
  };
  for (bool eager_kernels_compiled : {false, true}) {
    SCOPED_TRACE(eager_kernels_compiled ? "eager's compiled kernels" : "interpreted code, nothing compiled");
    clear_graph_cache();
    if (eager_kernels_compiled) {
      ASSERT_EQ(bytes_of(update(fresh_weights(), g)), expected) << "eager code";
    }
    auto donating = jit(update, {.donate_argnums = {0}, .compile_mode = CompileMode::Background});
    auto keeping = jit(update, {.compile_mode = CompileMode::Background});
    CompileGate gate;
    Array w = fresh_weights(), kept = fresh_weights();
    std::string before = bytes_of(kept);
    uint64_t allocated = allocations();
    EXPECT_EQ(bytes_of(donating(w, g)), expected);
    // w + g into fresh memory or over w; each later step over its first input.
    EXPECT_LE(allocations() - allocated, 1u) << "four steps, one fresh array at most";
    allocated = allocations();
    EXPECT_EQ(bytes_of(keeping(kept, g)), expected);
    EXPECT_LE(allocations() - allocated, 1u);
    EXPECT_EQ(bytes_of(kept), before) << "an argument not donated is left as it was";
    EXPECT_EQ(donating.stats().calls_before_optimized, 1);
  }
}

// A first tier runs the comparisons and selects of a ReLU's derivative by
// their interpreted code, on every thread, when no compiled kernel is at hand:
// not by single-threaded reference kernels, nor by compiling one.
TEST_F(TieredCompile, FirstTiersInterpretComparisonsAndSelects) {
  auto relu_gradient = [](const Array& x, const Array& g) {
    return where(logical_or(isnan(x), x > 0.0f), g, zeros_like(g));
  };
  Array x = random::normal(random::key(21), {256, 320}), g = random::normal(random::key(22), {256, 320});
  std::string expected = bytes_of(relu_gradient(x, g));
  clear_graph_cache();
  auto jitted = jit(relu_gradient, {.compile_mode = CompileMode::Background});
  std::string events = first_tier_timeline([&] { EXPECT_EQ(bytes_of(jitted(x, g)), expected); });
  for (const char* operation : {"gt", "is_nan", "logical_or", "select"}) {
    // Alone or in a fused tree ("is_nan·gt·logical_or·select").
    std::regex interpreted(
        std::string(R"re(\{"args":\{[^}]*"graph":"eager \(interpreted\)"\},"cat":"kernel","name":"(?:[^"]*·)?)re") +
        operation + "(?:·[^\"]*)?\"");
    EXPECT_TRUE(std::regex_search(events, interpreted)) << operation << " did not run interpreted";
    std::regex reference(std::string(R"re(\{"args":\{[^}]*"graph":"reference"\},"cat":"kernel","name":")re") +
                         operation + "\"");
    EXPECT_FALSE(std::regex_search(events, reference)) << operation << " ran its reference kernel";
  }
}

// A first tier runs each tree of elementwise operations (an Adam update with
// its scalars and a bias row broadcast) as one interpreted operation, as the
// optimized code fuses it: no broadcast materialized, no memory for the
// values inside a tree, the optimized code's bits. A tree of a dtype the
// interpreter lacks (i32) runs node by node, with the same bits.
TEST_F(TieredCompile, FirstTiersFuseElementwiseTrees) {
  using Update = std::tuple<Array, Array, Array, Array>;
  auto adam = [](const Array& w, const Array& m, const Array& v, const Array& g, const Array& b, const Array& rate,
                 const Array& counts) -> Update {
    Array m2 = m * 0.9f + g * 0.1f;
    Array v2 = v * 0.999f + g * g * 0.001f;
    Array w2 = w - rate * m2 / (sqrt(v2) + 1e-8f) + b;
    return {w2, m2, v2, counts * 3 + 1};
  };
  Shape shape = {256, 300};
  auto arguments = [&] {
    return std::make_tuple(random::normal(random::key(31), shape), random::normal(random::key(32), shape),
                           abs(random::normal(random::key(33), shape)), random::normal(random::key(34), shape),
                           random::normal(random::key(35), {300}), full({}, 0.01f),
                           astype(random::uniform(random::key(36), shape, f32, 0.0, 50.0), i32));
  };
  auto bytes_of_all = [](const Update& update) {
    return bytes_of(std::get<0>(update)) + bytes_of(std::get<1>(update)) + bytes_of(std::get<2>(update)) +
           bytes_of(std::get<3>(update));
  };
  std::string expected = bytes_of_all(std::apply(jit(adam, {.compile_mode = CompileMode::Sync}), arguments()));
  clear_graph_cache();
  auto jitted = jit(adam, {.donate_argnums = {0, 1, 2}, .compile_mode = CompileMode::Background});
  std::string events = first_tier_timeline([&] {
    auto operands = arguments();
    synchronize();  // the arguments' random values are computed, not the call's
    detail::allocator::Stats before = detail::allocator::stats();
    EXPECT_EQ(bytes_of_all(std::apply(jitted, operands)), expected);
    detail::allocator::Stats after = detail::allocator::stats();
    // w, m and v donated: the f32 trees' results take their memory, and the
    // values inside them (g * g among them) take none. The i32 tree, node by
    // node, takes four arrays: two broadcasts and two results.
    EXPECT_LE((after.hits + after.misses) - (before.hits + before.misses), 4u);
    EXPECT_EQ(jitted.stats().calls_before_optimized, 1);
  });
  std::regex fused(
      R"re(\{"args":\{[^}]*"graph":"eager \(interpreted\)"\},"cat":"kernel","name":"[a-z_]+(·[a-z_]+)+")re");
  EXPECT_GE(count_matches(events, fused), 3) << "the updates of m, v and w each run as one fused operation";
  std::regex broadcast(R"re("graph":"reference"\},"cat":"kernel","name":"broadcast")re");
  EXPECT_EQ(count_matches(events, broadcast), 2) << "only the i32 tree's broadcasts are materialized";
}

// A first tier's products read a transpose of their operand's last two axes
// as a flag to BLAS, as the optimized code does, rather than materializing it
// (a backward pass's products read several); a transpose something else
// reads is materialized.
TEST_F(TieredCompile, FirstTiersReadTransposesAsBlasFlags) {
  auto products = [](const Array& a, const Array& b, const Array& c) {
    Array kept = transpose(c);
    return std::make_tuple(matmul(transpose(a), b) + matmul(kept, b), kept * 2.0f);
  };
  Array a = random::normal(random::key(41), {96, 80}), b = random::normal(random::key(42), {96, 80});
  Array c = random::normal(random::key(43), {96, 80});
  auto bytes_of_both = [](const std::tuple<Array, Array>& results) {
    return bytes_of(std::get<0>(results)) + bytes_of(std::get<1>(results));
  };
  std::string expected = bytes_of_both(jit(products, {.compile_mode = CompileMode::Sync})(a, b, c));
  clear_graph_cache();
  auto jitted = jit(products, {.compile_mode = CompileMode::Background});
  std::string events = first_tier_timeline([&] { EXPECT_EQ(bytes_of_both(jitted(a, b, c)), expected); });
  std::regex transpose_kernel(R"re("cat":"kernel","name":"transpose")re");
  EXPECT_EQ(count_matches(events, transpose_kernel), 1) << "only the transpose another operation reads is materialized";
}

// Many threads call a new graph at once while it compiles: op by op, and at
// 400 rows (2^14 elements and more) with fused interpreted trees
// (tanh(x w + 0.5), exp(-h) * h), every result the optimized code's.
TEST_F(TieredCompile, FirstCallsRaceTheBackgroundCompileFromManyThreads) {
  for (int64_t rows : {100, 400}) {
    SCOPED_TRACE(std::to_string(rows) + " rows");
    Array w = random::normal(random::key(7), {64, 48}), x = random::normal(random::key(8), {rows, 64});
    std::string expected = bytes_of(jit(step, {.compile_mode = CompileMode::Sync})(w, x));
    clear_graph_cache();
    auto shared = jit(step, {.compile_mode = CompileMode::Background});
    constexpr int threads = 8, calls = 20;
    std::atomic<int> wrong{0}, started{0};
    std::vector<std::thread> callers;
    {
      CompileGate gate;
      for (int t = 0; t < threads; ++t)
        callers.emplace_back([&] {
          for (int call = 0; call < calls; ++call) {
            if (bytes_of(shared(w, x)) != expected) wrong.fetch_add(1);
            if (call == 0) started.fetch_add(1);
          }
        });
      while (started.load() < threads) std::this_thread::yield();
    }
    for (auto& caller : callers) caller.join();
    EXPECT_EQ(wrong.load(), 0);
    CacheStats stats = shared.stats();
    EXPECT_EQ(stats.compiles, 1);
    EXPECT_EQ(stats.calls, threads * calls);
    EXPECT_GE(stats.calls_before_optimized, threads);
  }
}

TEST(TieredCompileExit, AProcessExitingDuringABackgroundCompileExitsCleanlyAndSavesNothingOfIt) {
  std::string pattern = (std::filesystem::temp_directory_path() / "kiln-exit-XXXXXX").string();
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  auto [status, output] = run("KILN_CACHE=on KILN_CACHE_DIR='" + pattern + "' " KILN_EXIT_DURING_COMPILE " 2>&1");
  EXPECT_EQ(status, 0) << output;
  EXPECT_NE(output.find("first "), std::string::npos) << output;
  bool abandoned = output.find("compiling at exit") != std::string::npos;
  {
    cache::PersistentCache directory(cache::PersistentOptions{.enabled = true, .directory = pattern});
    for (const cache::EntryInfo& entry : directory.entries(true)) {
      EXPECT_TRUE(entry.problem.empty()) << entry.path << ": " << entry.problem;
      if (abandoned) EXPECT_NE(entry.function, "long_chain") << "the abandoned compile was saved";
    }
    for (const auto& file : std::filesystem::directory_iterator(pattern))
      EXPECT_EQ(file.path().filename().string().find(".tmp-"), std::string::npos) << file.path();
  }
  std::filesystem::remove_all(pattern);
  if (!abandoned) GTEST_SKIP() << "the compile finished before the program ended: nothing was abandoned";
}

// Work still queued on the dispatch thread at exit runs before the process
// ends, on a thread pool that is still there: the program exits at once.
TEST(TieredCompileExit, AProcessExitingWithCallsStillQueuedRunsThemAndExits) {
  for (int round = 0; round < 5; ++round) {
    auto [status, output] = run("KILN_CACHE=off timeout 60 " KILN_EXIT_DURING_COMPILE " queued 2>&1");
    ASSERT_EQ(status, 0) << "round " << round << " (124: it hung at exit): " << output;
    EXPECT_NE(output.find("queued 40 calls"), std::string::npos) << output;
  }
}

// Plain eager vector math in background mode: its first calls run
// interpreted while its kernels compile, then the kernels serve, with the
// same bits (a program of its own: the suites run in sync mode).
TEST(TieredCompileEager, FirstCallsOfVectorMathRunInterpretedWhileTheirKernelsCompile) {
  auto [status, output] = run("KILN_CACHE=off KILN_COMPILE=background " KILN_EAGER_FIRST_CALLS " 2>&1");
  EXPECT_EQ(status, 0) << output;
  EXPECT_NE(output.find("eager first calls ok"), std::string::npos) << output;
}

// The background compile is the process's first code generation; exits
// swept across its length land in every phase, code generation included.
// Each must exit cleanly (a crash in LLVM's destroyed statics showed as a
// segmentation fault in about one exit of five inside the code generator).
TEST(TieredCompileExit, ExitsAnywhereInTheProcesssFirstCompileAreClean) {
  auto [status, output] = run("KILN_CACHE=off KILN_LOG=compiles " KILN_EXIT_DURING_COMPILE " plain 1000000 2>&1");
  ASSERT_EQ(status, 0) << output;
  // The compile's length here, from its log line ("... in the background in 41.0 ms"),
  // bounds the sweep: machines differ by several times.
  size_t at = output.find(" in the background in ");
  ASSERT_NE(at, std::string::npos) << output;
  double milliseconds = std::stod(output.substr(at + std::strlen(" in the background in ")));
  int steps = 40;
  for (int step = 0; step <= steps; ++step) {
    int microseconds = static_cast<int>(milliseconds * 1500 * step / steps);  // to 1.5x its length
    auto [exit_status, exit_output] =
        run("KILN_CACHE=off " KILN_EXIT_DURING_COMPILE " plain " + std::to_string(microseconds) + " 2>&1");
    EXPECT_EQ(exit_status, 0) << "exit " << microseconds << " us after the first call: " << exit_output;
    EXPECT_NE(exit_output.find("first 1.99999976"), std::string::npos) << exit_output;
  }
}

}  // namespace
}  // namespace kiln::testing
