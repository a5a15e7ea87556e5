// The thread pool: every index runs once, in parts whose bounds never depend
// on who ran them; loops inside parts and loops from several threads run; and
// a loop of small kernels finishes while other processes keep every core busy.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <future>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/thread_pool.h"
#include "support/busy_processes.h"

namespace kiln {
namespace {

using Bounds = std::set<std::pair<int64_t, int64_t>>;

// Runs a loop and returns the bounds of its parts, checking each index ran once.
Bounds run_loop(int64_t range, int64_t cost) {
  std::vector<std::atomic<int>> visits(static_cast<size_t>(range));
  std::mutex mutex;
  Bounds bounds;
  runtime::parallel_for(range, cost, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) visits[static_cast<size_t>(i)].fetch_add(1);
    std::lock_guard lock(mutex);
    bounds.insert({begin, end});
  });
  for (int64_t i = 0; i < range; ++i) EXPECT_EQ(visits[static_cast<size_t>(i)].load(), 1) << "index " << i;
  return bounds;
}

class RestoreThreadLimit {
 public:
  ~RestoreThreadLimit() { runtime::set_thread_limit(runtime::thread_count()); }
};

TEST(ThreadPool, EveryIndexRunsOnceInContiguousParts) {
  for (int64_t range : {int64_t{1}, int64_t{7}, int64_t{1000}, int64_t{1} << 20})
    for (int64_t cost : {int64_t{1}, int64_t{64}, int64_t{4096}}) {
      Bounds bounds = run_loop(range, cost);
      int64_t next = 0;
      for (auto [begin, end] : bounds) {  // ordered by begin: the parts tile [0, range)
        EXPECT_EQ(begin, next);
        next = end;
      }
      EXPECT_EQ(next, range);
    }
}

TEST(ThreadPool, PartBoundsDoNotDependOnTheThreadsUsed) {
  RestoreThreadLimit restore;
  int64_t range = 1 << 20;
  Bounds all_threads;
  for (int round = 0; round < 20; ++round) {  // rounds split and run alone as the pool learns
    Bounds bounds = run_loop(range, 16);
    if (round == 0) all_threads = bounds;
    EXPECT_EQ(bounds, all_threads);
  }
  runtime::set_thread_limit(1);
  EXPECT_EQ(run_loop(range, 16), all_threads);
}

TEST(ThreadPool, CompiledResultsAreTheSameWithOneThread) {
  RestoreThreadLimit restore;
  // sin's vector body and scalar remainder may round differently: equal
  // results need equal part bounds.
  auto f = jit([](const Array& x) { return sin(x * 1.7f) * cos(x) + exp(-x * x); }, {.name = "pool_bounds"});
  Array x = random::normal(random::key(4), {(1 << 20) + 13});
  std::vector<float> default_threads = f(x).to_vector<float>();
  runtime::set_thread_limit(1);
  std::vector<float> one_thread = f(x).to_vector<float>();
  EXPECT_EQ(0, std::memcmp(default_threads.data(), one_thread.data(), default_threads.size() * sizeof(float)));
}

TEST(ThreadPool, LoopsInsidePartsAndFromSeveralThreads) {
  std::atomic<int64_t> total{0};
  auto outer = [&] {
    runtime::parallel_for(64, 1 << 14, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        runtime::parallel_for(1 << 12, 64, [&](int64_t b, int64_t e) { total.fetch_add(e - b); });
    });
  };
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) callers.emplace_back(outer);
  for (auto& caller : callers) caller.join();
  EXPECT_EQ(total.load(), int64_t{4} * 64 * (1 << 12));
}

TEST(ThreadPool, APartThatThrowsReachesTheCallerAndThePoolGoesOn) {
  for (int round = 0; round < 20; ++round) {
    int64_t range = 1 << 20;
    int64_t thrower = range / 2 + round;  // in a part the caller or a worker may run
    EXPECT_THROW(runtime::parallel_for(range, 16,
                                       [&](int64_t begin, int64_t end) {
                                         if (begin <= thrower && thrower < end) throw std::runtime_error("part failed");
                                       }),
                 std::runtime_error);
    run_loop(range, 16);  // the next loop runs every index once
  }
}

TEST(ThreadPool, SmallKernelLoopFinishesOnABusyMachine) {
  int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  Array weight = random::normal(random::key(1), {64, 64}) * 0.1f;
  Array batch;
  auto step =
      jit([&](const Array& w) { return tanh(w + 0.01f * mean(matmul(batch, w))); }, {.name = "busy_machine_step"});
  testing::BusyProcesses busy(2 * cores);
  // Before parts were claimed, this loop took minutes with two busy
  // processes on two cores; the bound only catches a hang.
  auto loop = std::async(std::launch::async, [&] {
    for (int i = 0; i < 3000; ++i) {
      batch = full({32, 64}, 0.001f * static_cast<float>(i % 7));
      weight = step(weight);
    }
    return weight.to_vector<float>()[0];
  });
  if (loop.wait_for(std::chrono::seconds(240)) != std::future_status::ready) {
    std::fprintf(stderr, "a loop of 3000 small steps did not finish in 240 s beside %d busy processes\n", 2 * cores);
    busy.stop();
    std::abort();  // the pool is stuck: the future's thread would never join
  }
  EXPECT_TRUE(std::isfinite(loop.get()));
}

}  // namespace
}  // namespace kiln
