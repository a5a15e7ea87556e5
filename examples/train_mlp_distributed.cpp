// The demo's MLP trained data-parallel over MPI:
//   mpirun -np 2 train_mlp_distributed [steps]     (or alone: a world of one)
// Every rank holds the same parameters and reads its own shard of each
// batch; the jitted step averages the gradients across ranks (a few large
// all_reduces, bucketed) before Adam, so the parameters stay identical on
// every rank. Rank 0 reports the loss and the steps per second.
#include <kiln/distributed.h>
#include <kiln/kiln.h>

#include <chrono>
#include <cstdio>

#include "mlp.h"

using kiln::Array;
using namespace mlp;
namespace distributed = kiln::distributed;

int main(int argc, char** argv) {
  distributed::init();
  const int rank = distributed::rank(), world = distributed::world_size();
  int steps = argc > 1 ? std::atoi(argv[1]) : 200;
  // The same generated data set on every rank; each reads its own rows.
  Array prototypes = kiln::random::normal(kiln::random::key(2024), {classes, inputs}) * 0.3f;
  auto data_keys = kiln::random::split_keys(kiln::random::key(1), 2);
  const int64_t count = 16384;
  Array labels = kiln::random::randint(data_keys[0], {count}, 0, classes);
  Array data =
      kiln::tanh(kiln::take(prototypes, labels, 0) + kiln::random::normal(data_keys[1], {count, inputs}) * 3.0f);

  Mlp params = init(kiln::random::key(0));
  Adam state = initial_state(params);
  auto train_step = kiln::jit(
      [](const Mlp& p, const Adam& s, const Array& x, const Array& y) {
        auto [value, grads] = kiln::value_and_grad(loss)(p, x, y);
        auto [updated, next] = adam_update(p, s, distributed::average_gradients(grads));
        return std::tuple{updated, next, distributed::all_reduce(value, distributed::ReduceOp::mean)};
      },
      {.name = "train_step_distributed", .donate_argnums = {0, 1}});

  if (rank == 0)
    std::printf("MLP %lld-%lld-%lld-%lld on %d rank(s), batch %lld per rank (%lld in all), Adam, %d steps\n",
                static_cast<long long>(inputs), static_cast<long long>(hidden), static_cast<long long>(hidden),
                static_cast<long long>(classes), world, static_cast<long long>(batch_size),
                static_cast<long long>(batch_size * world), steps);
  Array key = kiln::random::key(3);
  Array value;
  auto start = std::chrono::steady_clock::now();
  for (int step = 1; step <= steps; ++step) {
    auto keys = kiln::random::split_keys(key);
    key = keys[0];
    // One batch of batch_size * world rows, the same on every rank; this rank's share.
    Array rows = kiln::random::randint(keys[1], {batch_size * world}, 0, count);
    Array mine = kiln::slice(rows, {rank * batch_size}, {(rank + 1) * batch_size});
    std::tie(params, state, value) = train_step(params, state, kiln::take(data, mine, 0), kiln::take(labels, mine, 0));
    if (rank == 0 && (step == 1 || step % 50 == 0 || step == steps)) {
      double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf("step %4d  loss %.4f  %.1f steps/s  %.0f examples/s\n", step, value.item<float>(), step / seconds,
                  step * static_cast<double>(batch_size * world) / seconds);
    }
  }
  // Every rank must hold the same parameters: compare against rank 0's.
  float drift = 0;
  for (const Array& leaf : kiln::tree_leaves(params))
    drift = std::max(drift, kiln::max(kiln::abs(distributed::broadcast(leaf, 0) - leaf)).item<float>());
  float worst = distributed::all_reduce(kiln::scalar(drift), distributed::ReduceOp::max).item<float>();
  if (rank == 0)
    std::printf("parameters identical on every rank: %s (largest difference %g)\n", worst == 0 ? "yes" : "no",
                static_cast<double>(worst));
  kiln::CacheStats stats = train_step.stats();
  if (rank == 0)
    std::printf("train_step cache: %lld compile(s), %lld loaded from the persistent cache, %lld hits\n",
                static_cast<long long>(stats.compiles), static_cast<long long>(stats.persistent_hits),
                static_cast<long long>(stats.hits));
  return worst == 0 ? 0 : 1;
}
