// Asynchronous dispatch in a training loop: the demo's MLP step (784-512-
// 512-10, batch 256, Adam, donated parameters) on a batch the host prepares
// each step, with a preparation calibrated to about half the step's time. With
// queues the host prepares batch i+1 while step i runs; synchronously
// (KILN_DISPATCH=sync's behaviour) it waits for each step first. Both loops
// end by reading the last loss, so both count every step's work. The rows
// alternate so drifting load hits both sides.
// Goal: queued >= 1.3x the steps per second of synchronous.
//
//   bench_async [--steps N] [--repeats N] [--share F]   (F: preparation / step time, 0.5)
#include <kiln/kiln.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/dispatch_queue.h"
#include "mlp.h"
#include "runtime/thread_pool.h"

namespace {
using kiln::Array;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The host's share of a step: decoding and augmenting a batch, here
// arithmetic over it, `work` element updates in all (cycling over the batch).
void prepare_batch(std::vector<float>& host, int step, int64_t work) {
  for (size_t j = 0; j < host.size(); ++j) host[j] = static_cast<float>((step * 31 + j) % 255) / 255.0f;
  for (int64_t done = 0; done < work;) {
    int64_t count = std::min<int64_t>(work - done, static_cast<int64_t>(host.size()));
    for (int64_t j = 0; j < count; ++j) host[j] = std::tanh(host[j] * 1.5f - 0.25f) * 0.5f + 0.5f;
    done += count;
  }
}

auto make_step() {
  return kiln::jit(
      [](const Mlp& p, const Adam& s, const Array& x, const Array& y) { return mlp::train_step(p, s, x, y); },
      {.name = "mlp_step", .donate_argnums = {0, 1}});
}

struct Loop {
  decltype(make_step()) step = make_step();
  Mlp params;
  Adam state;
  Array labels;
  std::vector<float> host = std::vector<float>(mlp::batch_size * mlp::inputs);

  Loop() {
    auto keys = kiln::random::split_keys(kiln::random::key(0), 2);
    params = mlp::init(keys[0]);
    state = mlp::initial_state(params);
    labels = kiln::random::randint(keys[1], {mlp::batch_size}, 0, mlp::classes);
  }

  // Seconds for `steps` steps, each on a freshly prepared batch.
  double run(int steps, int64_t work) {
    auto start = Clock::now();
    Array loss;
    for (int i = 0; i < steps; ++i) {
      prepare_batch(host, i, work);
      Array x = kiln::array(host, {mlp::batch_size, mlp::inputs});
      std::tie(params, state, loss) = step(params, state, x, labels);
    }
    (void)loss.item<float>();
    return seconds_since(start);
  }
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

int argument(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  int steps = argument(argc, argv, "--steps", 100);
  int repeats = argument(argc, argv, "--repeats", 5);
  double share = 0.5;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--share") == 0) share = std::atof(argv[i + 1]);

  Loop loop;
  // One thread's step: the CPU time a step takes, which bounds what
  // overlapping can win where the step already keeps every core busy.
  kiln::detail::set_dispatch_async(false);
  kiln::runtime::set_thread_limit(1);
  loop.run(10, 0);
  double one_thread_step = loop.run(steps, 0) / steps;
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::printf("asynchronous dispatch: MLP step on a host-prepared batch, %d steps per loop, %d repeats\n", steps,
              repeats);
  for (int threads : {kiln::runtime::thread_count(), 1}) {
    kiln::runtime::set_thread_limit(threads);
    // The step alone (its batch filled, no more), then work sized to `share` of it.
    kiln::detail::set_dispatch_async(false);
    loop.run(10, 0);
    double step_seconds = loop.run(steps, 0) / steps;
    const int64_t probe = int64_t{1} << 22;
    auto probe_start = Clock::now();
    prepare_batch(loop.host, 0, probe);
    double element_seconds = seconds_since(probe_start) / static_cast<double>(probe);
    auto work = static_cast<int64_t>(share * step_seconds / element_seconds);
    double preparation_seconds = static_cast<double>(work) * element_seconds;
    std::vector<double> sync_rates, async_rates, ratios;
    for (int r = 0; r < repeats; ++r) {
      kiln::detail::set_dispatch_async(false);
      double sync_seconds = loop.run(steps, work);
      kiln::detail::set_dispatch_async(true);
      double async_seconds = loop.run(steps, work);
      sync_rates.push_back(steps / sync_seconds);
      async_rates.push_back(steps / async_seconds);
      ratios.push_back(sync_seconds / async_seconds);
    }
    double best_ratio = *std::max_element(async_rates.begin(), async_rates.end()) /
                        *std::max_element(sync_rates.begin(), sync_rates.end());
    // Synchronous: step + preparation. Overlapped at best: the longer of the
    // two, and no less than their CPU time spread over the cores.
    double cpu_bound = (std::min<double>(threads, cores) > 1 ? one_thread_step : step_seconds) + preparation_seconds;
    double ideal = (step_seconds + preparation_seconds) /
                   std::max({step_seconds, preparation_seconds, cpu_bound / std::min<double>(cores, threads + 1)});
    std::printf(
        "  %d thread%s: step %.2f ms, preparation %.2f ms (%.2f of the step); the ideal overlap on %u cores: %.2f\n"
        "    synchronous  %6.1f steps/s (best %6.1f)\n"
        "    queued       %6.1f steps/s (best %6.1f)\n"
        "    queued / synchronous steps per second: median of pairs %.2f, best / best %.2f   goal >= 1.30  %s\n",
        threads, threads == 1 ? "" : "s", step_seconds * 1e3, preparation_seconds * 1e3,
        preparation_seconds / step_seconds, cores, ideal, median(sync_rates),
        *std::max_element(sync_rates.begin(), sync_rates.end()), median(async_rates),
        *std::max_element(async_rates.begin(), async_rates.end()), median(ratios), best_ratio,
        median(ratios) >= 1.3 ? "met" : "NOT met");
  }
  return 0;
}
