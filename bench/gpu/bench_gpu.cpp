// The cuda device measured in one run, each ratio beside its goal:
//   W1 fused chain (y = tanh(a*x + b) * sigmoid(x) - 0.5*x*x) over 2^26 f32
//     on device-resident data, against the device-to-device copy bandwidth
//     (bytes read and written per second)                        goal >= 70%
//   the MLP training step (examples/mlp.h) on device-resident parameters,
//     against PyTorch's on the same GPU (torch_mlp_step.py, whose median the
//     bundle's run.sh passes in KILN_TORCH_STEP_MS)                 goal <= 1.2x
//   the MLP step's cold compile for "cuda" (this process's first call, no
//     persistent cache)                                             reported
//   the MLP step's first call from the persistent cache (a fresh function,
//     the in-memory caches emptied: PTX loaded, nothing generated)  reported
// Each timing is repeated; min and median are printed.
//   bench_gpu [--elements N] [--steps N]   (small sizes run on KILN_CUDA_EMULATE=1)
#include <kiln/kiln.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "backend/cuda/cuda_device.h"
#include "backend/cuda/emulated_device.h"
#include "cache/persistent_cache.h"
#include "mlp.h"
#include "spread.h"

namespace {

using Clock = std::chrono::steady_clock;

using kiln::bench::Spread;
using kiln::bench::spread;

template <class F>
Spread time_repeats(int repeats, F&& run) {
  std::vector<double> seconds;
  for (int r = 0; r < repeats; ++r) {
    auto start = Clock::now();
    run();
    seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  return spread(seconds);
}

kiln::Array w1(const kiln::Array& x) { return kiln::tanh(x * 1.5f + 0.25f) * kiln::sigmoid(x) - 0.5f * x * x; }

}  // namespace

int main(int argc, char** argv) {
  int64_t elements = int64_t{1} << 26;
  int steps = 100;
  for (int k = 1; k + 1 < argc; k += 2) {
    if (std::strcmp(argv[k], "--elements") == 0) elements = std::atoll(argv[k + 1]);
    if (std::strcmp(argv[k], "--steps") == 0) steps = std::atoi(argv[k + 1]);
  }
  const char* emulate = std::getenv("KILN_CUDA_EMULATE");
  std::shared_ptr<kiln::cuda_backend::Device> device;
  try {
    device = emulate && std::strcmp(emulate, "1") == 0 ? nullptr : kiln::cuda_backend::cuda_device();
  } catch (const kiln::Error& error) {
    std::printf("bench_gpu: %s\n", error.what());
    return 1;
  }
  std::printf("device: %s\n", device ? device->name().c_str() : "emulated GPU (KILN_CUDA_EMULATE=1)");

  // ---- W1 against the copy bandwidth ----
  kiln::Array x = kiln::to_device(kiln::random::normal(kiln::random::key(1), {elements}), "cuda");
  auto chain = kiln::jit(w1, {.device = "cuda"});
  chain(x).block_until_ready();
  double bytes = 2.0 * static_cast<double>(elements) * sizeof(float);  // read x, write y
  int calls = 20;
  Spread chain_time = time_repeats(7, [&] {
    kiln::Array y;
    for (int c = 0; c < calls; ++c) y = chain(x);
    y.block_until_ready();
  });
  Spread copy_time{};
  if (device) {
    auto source = device->allocate(static_cast<size_t>(elements) * sizeof(float), "bench");
    auto target = device->allocate(static_cast<size_t>(elements) * sizeof(float), "bench");
    device->copy_on_device(target->address(), source->address(), static_cast<size_t>(elements) * sizeof(float));
    device->synchronize();
    copy_time = time_repeats(7, [&] {
      for (int c = 0; c < calls; ++c)
        device->copy_on_device(target->address(), source->address(), static_cast<size_t>(elements) * sizeof(float));
      device->synchronize();
    });
  }
  auto bandwidth = [&](double seconds) { return bytes * calls / seconds / 1e9; };
  std::printf("W1 %lld f32, device-resident: %.1f GB/s (min time), %.1f GB/s (median)\n",
              static_cast<long long>(elements), bandwidth(chain_time.min), bandwidth(chain_time.median));
  if (device) {
    std::printf("device-to-device copy, same bytes: %.1f GB/s (min time), %.1f GB/s (median)\n",
                bandwidth(copy_time.min), bandwidth(copy_time.median));
    std::printf("W1 / copy bandwidth: %.0f%% (best of each), %.0f%% (medians)   goal >= 70%%\n",
                100 * copy_time.min / chain_time.min, 100 * copy_time.median / chain_time.median);
  }

  // ---- the MLP step, cold compile and steady state ----
  auto [params, state, batch, labels] = mlp::example_arguments();
  auto on_device = [](const kiln::Array& a) { return kiln::to_device(a, "cuda"); };
  Mlp p = kiln::tree_map(on_device, params);
  Adam s{kiln::tree_map(on_device, state.mean), kiln::tree_map(on_device, state.variance), on_device(state.step)};
  kiln::Array inputs = on_device(batch), targets = on_device(labels);
  auto train_step = kiln::jit(mlp::train_step, {.device = "cuda"});
  auto first_start = Clock::now();
  auto [p1, s1, loss1] = train_step(p, s, inputs, targets);
  loss1.block_until_ready();
  double first = std::chrono::duration<double>(Clock::now() - first_start).count();
  std::printf("MLP step cold (trace, plan, PTX, load, run): %.1f ms; compile %.1f ms\n", first * 1e3,
              train_step.stats().compile_seconds * 1e3);
  p = p1;
  s = s1;
  Spread step_time = time_repeats(7, [&] {
    kiln::Array loss;
    for (int k = 0; k < steps; ++k) {
      auto [next_p, next_s, value] = train_step(p, s, inputs, targets);
      p = next_p;
      s = next_s;
      loss = value;
    }
    loss.block_until_ready();
  });
  double min_ms = step_time.min / steps * 1e3, median_ms = step_time.median / steps * 1e3;
  std::printf("MLP step kiln: min %.4f ms, median %.4f ms (%d steps a repeat; %lld compiles)\n", min_ms, median_ms,
              steps, static_cast<long long>(train_step.stats().compiles));
  if (const char* torch_ms = std::getenv("KILN_TORCH_STEP_MS"); torch_ms && *torch_ms) {
    double torch_median = std::atof(torch_ms);
    std::printf("MLP step kiln / PyTorch (medians): %.2fx   goal <= 1.2x\n", median_ms / torch_median);
  }

  // ---- the MLP step's first call from the persistent cache ----
  // A private cache directory: one function compiles and saves the step;
  // after the in-memory caches are emptied (as in a new process), another
  // loads it. The driver compiles the PTX again unless its own cache has it.
  std::string directory = (std::filesystem::temp_directory_path() / "kiln-bench-gpu-XXXXXX").string();
  if (!::mkdtemp(directory.data())) return 0;
  kiln::cache::reset_persistent_cache(kiln::cache::PersistentOptions{.enabled = true, .directory = directory});
  auto first_call = [&] {
    kiln::clear_graph_cache();
    auto fresh = kiln::jit(mlp::train_step, {.device = "cuda"});
    auto start = Clock::now();
    std::get<2>(fresh(p, s, inputs, targets)).block_until_ready();
    return std::pair{std::chrono::duration<double>(Clock::now() - start).count(), fresh.stats()};
  };
  auto [saving, saving_stats] = first_call();
  std::vector<double> loads;
  int64_t hits = 0;
  for (int r = 0; r < 5; ++r) {
    auto [seconds, stats] = first_call();
    loads.push_back(seconds);
    hits += stats.persistent_hits;
  }
  Spread load_time = spread(loads);
  std::printf(
      "MLP step first call from the persistent cache: min %.1f ms, median %.1f ms (%lld of 5 loaded); "
      "compiling and saving: %.1f ms (%lld compiles); cold / loaded medians: %.1fx\n",
      load_time.min * 1e3, load_time.median * 1e3, static_cast<long long>(hits), saving * 1e3,
      static_cast<long long>(saving_stats.compiles), first / load_time.median);
  kiln::cache::reset_persistent_cache(kiln::cache::PersistentOptions{.enabled = false});
  std::error_code ignored;
  std::filesystem::remove_all(directory, ignored);
  return 0;
}
