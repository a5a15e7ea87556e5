// Asynchronous dispatch: jitted calls and eager operations worth a handoff
// return pending arrays at once; reading one waits; work runs in the order it
// was queued; errors of queued work surface at the first wait, as raised,
// with the operation's line; donation and collectives keep their meaning; and
// results are the same bits as with queues off (KILN_DISPATCH=sync).
// A gate queued first holds the dispatch thread, which makes "not run yet"
// deterministic.
#include <gtest/gtest.h>
#include <kiln/kiln.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "core/array_impl.h"
#include "core/dispatch_queue.h"

namespace kiln::testing {
namespace {

// ThreadSanitizer maps terabytes of shadow memory (a capped address space
// leaves it none) and refuses threads in a child forked from threads.
#ifdef __SANITIZE_THREAD__
constexpr bool thread_sanitizer = true;
#else
constexpr bool thread_sanitizer = false;
#endif

bool pending(const Array& array) { return detail::impl(array)->buffer->pending(); }

// Holds the dispatch thread until open() or destruction.
class Gate {
 public:
  Gate() {
    detail::enqueue([opened = opened_.get_future().share()] { opened.wait(); });
  }
  ~Gate() { open(); }
  void open() {
    if (!open_) opened_.set_value();
    open_ = true;
  }

 private:
  std::promise<void> opened_;
  bool open_ = false;
};

class AsyncDispatch : public ::testing::Test {
 protected:
  void SetUp() override { detail::set_dispatch_async(true); }
  void TearDown() override {
    detail::set_dispatch_async(true);
    try {
      synchronize();
    } catch (const Error&) {
    }
  }
};

constexpr int64_t rows = 64, columns = 512;  // 2^15 elements: queued

Array layer(const Array& x, const Array& w) { return tanh(matmul(x, w) * 0.5f) + mean(x, {1}, true); }

TEST_F(AsyncDispatch, QueuedWorkReturnsPendingArraysAndRunsInOrder) {
  Array x = random::normal(random::key(1), {rows, columns});
  Array w = random::normal(random::key(2), {columns, columns}) * 0.05f;
  auto f = jit(layer, {.name = "layer"});
  auto small = jit([](const Array& v) { return v * 2.0f + 1.0f; }, {.name = "small"});
  (void)f(x, w).to_vector<float>();  // compiled before the gate
  (void)small(slice(x, {0, 0}, {1, 4})).to_vector<float>();

  Array y, z, head, doubled, total;
  {
    Gate gate;
    y = f(x, w);
    EXPECT_TRUE(pending(y)) << "a large jitted call is queued";
    EXPECT_EQ(y.shape(), (Shape{rows, columns})) << "its type is known at once";
    z = f(y, w);                      // reads a pending array: after y
    head = slice(z, {0, 0}, {1, 4});  // a small eager operation on a pending input: queued too
    doubled = small(head);            // a small jitted call on a pending input: queued too
    total = sum(doubled);
    for (const Array& array : {z, head, doubled, total}) EXPECT_TRUE(pending(array));
  }
  std::vector<float> queued = total.to_vector<float>();
  std::vector<float> queued_z = z.to_vector<float>();

  detail::set_dispatch_async(false);
  Array sync_z = f(f(x, w), w);
  EXPECT_FALSE(pending(sync_z));
  EXPECT_EQ(queued_z, sync_z.to_vector<float>()) << "the same bits with queues off";
  EXPECT_EQ(queued, sum(small(slice(sync_z, {0, 0}, {1, 4}))).to_vector<float>());
}

TEST_F(AsyncDispatch, SmallWorkOnComputedArraysRunsAtOnce) {
  auto small = jit([](const Array& v) { return v * 2.0f + 1.0f; }, {.name = "small"});
  Array v = array({1.0f, 2.0f, 3.0f});
  Gate gate;  // nothing small may wait for it
  Array r = small(v);
  Array s = r + 1.0f;
  EXPECT_FALSE(pending(r));
  EXPECT_FALSE(pending(s));
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{4.0f, 6.0f, 8.0f}));
}

// A refused allocation is the one error compiled code raises while it runs:
// the address space is capped so that the refusal comes whatever the
// machine's overcommit policy (a child process: the cap stays there).
TEST(AsyncDispatchDeathTest, ErrorsSurfaceAtTheFirstWaitAsRaisedWithTheLine) {
  if (thread_sanitizer) GTEST_SKIP() << "ThreadSanitizer needs more address space than the cap leaves";
  auto refused = [] {
    rlimit limit{};
    limit.rlim_cur = limit.rlim_max = rlim_t{64} << 30;
    if (setrlimit(RLIMIT_AS, &limit) != 0) std::_Exit(2);
    auto huge = jit([](const Array& v) { return broadcast_to(v, {int64_t{1} << 38}) * 2.0f; }, {.name = "huge"});
    int huge_line = __LINE__ - 1;
    Array one = array({1.0f});
    std::string sync_message;
    detail::set_dispatch_async(false);
    try {
      huge(one);
      std::_Exit(3);
    } catch (const AllocationError& error) {
      sync_message = error.what();
    }
    // Compiled code names the operation whose result it could not allocate
    // and the line in the traced function, as eager code does.
    if (sync_message.starts_with("[allocate]") || sync_message.find("<unknown>") != std::string::npos ||
        sync_message.find("test_async_dispatch.cpp:" + std::to_string(huge_line)) == std::string::npos) {
      std::fprintf(stderr, "jit: %s\n", sync_message.c_str());
      std::_Exit(11);
    }
    detail::set_dispatch_async(true);
    Array queued;
    Array next;
    try {
      queued = huge(one);           // returns: the work is queued
      next = queued * 3.0f + 1.0f;  // reads what failed: queued, fails alike
    } catch (const std::exception& error) {
      std::fprintf(stderr, "the call raised: %s\n", error.what());
      std::_Exit(4);
    }
    for (const Array* array : {&queued, &next}) {
      try {
        array->block_until_ready();
        std::_Exit(5);
      } catch (const AllocationError& error) {
        if (error.what() != sync_message) {
          std::fprintf(stderr, "queued: %s\nsync: %s\n", error.what(), sync_message.c_str());
          std::_Exit(6);
        }
      }
    }
    // An eager operation's error names it and the user's line.
    Array zeros_made = zeros({int64_t{1} << 38});
    int zeros_line = __LINE__ - 1;
    try {
      zeros_made.block_until_ready();
      std::_Exit(7);
    } catch (const AllocationError& error) {
      std::string text = error.what();
      if (!text.starts_with("[zeros]") ||
          text.find("test_async_dispatch.cpp:" + std::to_string(zeros_line)) == std::string::npos) {
        std::fprintf(stderr, "zeros: %s\n", text.c_str());
        std::_Exit(10);
      }
    }
    // synchronize reports the first error once.
    try {
      synchronize();
      std::_Exit(8);
    } catch (const AllocationError&) {
    }
    try {
      synchronize();
    } catch (...) {
      std::_Exit(9);
    }
    std::_Exit(0);
  };
  EXPECT_EXIT(refused(), ::testing::ExitedWithCode(0), "");
}

std::pair<Array, Array> train(int steps) {
  auto step = jit(
      [](const Array& w, const Array& b, const Array& x) {
        auto loss = [&](const Array& weight, const Array& bias) { return mean(square(layer(x, weight) + bias)); };
        auto [gw, gb] = grad(loss, {0, 1})(w, b);
        return std::pair{w - 0.01f * gw, b - 0.01f * gb};
      },
      {.name = "train", .donate_argnums = {0, 1}});
  Array w = random::normal(random::key(3), {columns, columns}) * 0.05f, b = zeros({rows, columns});
  for (int i = 0; i < steps; ++i) {
    Array x = random::normal(random::key(100 + i), {rows, columns});
    std::tie(w, b) = step(w, b, x);
  }
  return {w, b};
}

TEST_F(AsyncDispatch, DonationKeepsItsMeaningAndResultsEqualSyncBitForBit) {
  auto [queued_w, queued_b] = train(12);
  std::vector<float> queued = queued_w.to_vector<float>();
  std::vector<float> queued_bias = queued_b.to_vector<float>();
  detail::set_dispatch_async(false);
  auto [sync_w, sync_b] = train(12);
  EXPECT_EQ(queued, sync_w.to_vector<float>());
  EXPECT_EQ(queued_bias, sync_b.to_vector<float>());
  detail::set_dispatch_async(true);

  // Work queued before a donating call reads the donated array as it was.
  auto scale = jit([](const Array& v) { return v * 0.5f; }, {.name = "scale", .donate_argnums = {0}});
  Array v = full({rows, columns}, 4.0f);
  Array before, after;
  {
    Gate gate;
    before = v + 1.0f;  // queued: large
    Array held = v;     // a second handle of the donated array
    after = scale(v);
    EXPECT_THROW(held + 1.0f, DonatedArrayError);
  }
  EXPECT_EQ(before.to_vector<float>(), std::vector<float>(rows * columns, 5.0f));
  EXPECT_EQ(after.to_vector<float>(), std::vector<float>(rows * columns, 2.0f));
  EXPECT_THROW(v.to_vector<float>(), DonatedArrayError);
}

TEST_F(AsyncDispatch, ArgumentsReturnedAsTheyAreStayTheSameArray) {
  auto pass = jit(
      [](const Array& a, const Array& b) {
        return std::pair{a, b * 2.0f};
      },
      {.name = "pass", .donate_argnums = {0}});
  Array a = full({rows, columns}, 1.0f), b = full({rows, columns}, 3.0f);
  auto [same, doubled] = pass(a, b);
  EXPECT_EQ(same.to_vector<float>(), a.to_vector<float>()) << "a returned donated argument stays usable";
  EXPECT_EQ(doubled.to_vector<float>(), std::vector<float>(rows * columns, 6.0f));
}

TEST_F(AsyncDispatch, ManyThreadsQueueAndReadTheirOwnResults) {
  Array w = random::normal(random::key(5), {columns, columns}) * 0.05f;
  auto f = jit(layer, {.name = "shared"});
  std::vector<Array> inputs, expected;
  detail::set_dispatch_async(false);
  for (int t = 0; t < 4; ++t) {
    inputs.push_back(random::normal(random::key(10 + t), {rows, columns}));
    expected.push_back(f(f(inputs.back(), w), w) + 1.0f);
  }
  detail::set_dispatch_async(true);
  std::vector<std::thread> threads;
  std::vector<int> equal(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 5; ++round) {
        Array r = f(f(inputs[static_cast<size_t>(t)], w), w) + 1.0f;
        equal[static_cast<size_t>(t)] += r.to_vector<float>() == expected[static_cast<size_t>(t)].to_vector<float>();
      }
    });
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(equal, (std::vector<int>(4, 5)));
}

TEST_F(AsyncDispatch, AForkedChildQueuesOnADispatchThreadOfItsOwn) {
  if (thread_sanitizer) GTEST_SKIP() << "ThreadSanitizer refuses new threads in a child forked from threads";
  Array x = random::normal(random::key(8), {rows, columns});
  Array w = random::normal(random::key(9), {columns, columns}) * 0.05f;
  auto f = jit(layer, {.name = "before_fork"});
  std::vector<float> expected = f(x, w).to_vector<float>();  // the parent's dispatch thread runs
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(60);  // a child waiting for a thread it does not have would hang the test
    Array y = f(f(x, w) * 1.0f, w);
    std::_Exit(f(x, w).to_vector<float>() == expected && y.to_vector<float>().size() == expected.size() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
}

TEST(AsyncDispatchDeathTest, ExitWithQueuedWorkRunsItAndExitsCleanly) {
  auto exits = [] {
    auto f = jit(layer, {.name = "at_exit"});
    Array x = random::normal(random::key(6), {rows, columns});
    Array w = random::normal(random::key(7), {columns, columns});
    Array y = f(x, w);
    y.block_until_ready();
    // The queue is busy for a while: what follows is still queued at exit.
    detail::enqueue([] { std::this_thread::sleep_for(std::chrono::milliseconds(300)); });
    for (int i = 0; i < 8; ++i) y = f(y, w);
    if (!pending(y)) std::_Exit(3);
    std::exit(0);  // the exit hook runs the queued work first
  };
  EXPECT_EXIT(exits(), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace kiln::testing
