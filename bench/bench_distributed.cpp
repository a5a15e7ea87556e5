// Collectives under mpirun: what kiln adds on top of MPI, and what data
// parallelism buys the MLP demo.
//
//   mpirun -np 2 bench_distributed      (alone it is a world of one: it says
//                                        the comparison needs 2 ranks)
//
// 1. all_reduce (sum, f32) of 1, 4, 16 and 64 MB from inside a jitted graph
//    against MPI_Allreduce called directly, out of place into an output made
//    once (kiln's node is out of place too, into a fresh output). The direct
//    call's buffers come from kiln's allocator, so both sides move the same
//    kind of memory; the same call on std::vector buffers runs alongside for
//    information, as does the eager kiln::distributed::all_reduce, which
//    first exchanges a fixed-size intent so disagreeing ranks raise instead
//    of hanging (a jitted graph is compared once, before its first run).
//    Goal: jit <= 1.1x direct.
// 2. The MLP demo's training step (784-512-512-10, Adam, batch 256 per rank)
//    data-parallel over every rank, gradients averaged with
//    average_gradients, against rank 0 running the same per-rank batch alone
//    while the others sleep. Run it with KILN_THREADS=1: on a machine with as
//    many cores as ranks, more threads per rank would make the ranks fight
//    over cores and time the scheduler.
//
// Every sample starts with the ranks leaving a barrier together and is the
// slowest rank's time for that call (a collective finishes when the last rank
// does). Variants alternate round by round so drift hits them equally.
#include <kiln/distributed.h>
#include <kiln/kiln.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "core/allocator.h"
#include "mlp.h"

using kiln::Array;
namespace dist = kiln::distributed;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct Summary {
  double min = 0, median = 0;
};

Summary summarize(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return {samples.front(), samples[samples.size() / 2]};
}

double slowest_rank(double seconds) {
  double slowest = 0;
  MPI_Allreduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

// Barrier, then the slowest rank's time for body.
double timed_together(const std::function<void()>& body) {
  MPI_Barrier(MPI_COMM_WORLD);
  double start = now();
  body();
  return slowest_rank(now() - start);
}

// A barrier that sleeps between polls: MPI_Barrier spins, and a rank
// spinning while rank 0 trains "alone" would take a core from it on a
// machine with no spare one.
void sleeping_barrier() {
  MPI_Request request;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  for (int done = 0;;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// A buffer from kiln's own allocator: blocks of 2 MiB and more are mapped
// 2 MiB-aligned and advised for transparent huge pages, which MPI's
// single-copy path (process_vm_readv) walks far faster than 4 KiB pages.
class KilnBuffer {
 public:
  explicit KilnBuffer(int64_t count, float value)
      : bytes_(static_cast<size_t>(count) * sizeof(float)),
        data_(static_cast<float*>(kiln::detail::allocator::allocate(bytes_))) {
    std::fill(data_, data_ + count, value);
  }
  ~KilnBuffer() { kiln::detail::allocator::deallocate(data_, bytes_); }
  KilnBuffer(const KilnBuffer&) = delete;
  KilnBuffer& operator=(const KilnBuffer&) = delete;
  float* data() const { return data_; }

 private:
  size_t bytes_;
  float* data_;
};

void all_reduce_section(int world) {
  const bool lead = dist::rank() == 0;
  if (lead)
    std::printf(
        "\n== all_reduce sum f32, %d ranks: jitted graph vs MPI_Allreduce called directly, out of place into an "
        "output made once (kiln's node is out of place too, into a fresh output from its allocator) ==\n",
        world);
  auto jitted = kiln::jit([](const Array& x) { return dist::all_reduce(x); }, {.name = "all_reduce"});
  // 4 KiB has no goal: it shows the fixed costs (dispatch, the eager
  // intent exchange) that the large sizes hide.
  struct Size {
    int64_t kilobytes;
    int rounds;
    bool goal;
  };
  for (Size size : {Size{4, 1000, false}, Size{1024, 200, true}, Size{4096, 100, true}, Size{16384, 40, true},
                    Size{65536, 20, true}}) {
    const int64_t count = size.kilobytes * 1024 / int64_t{sizeof(float)};
    Array x = kiln::random::normal(kiln::random::key(static_cast<uint64_t>(dist::rank())), {count});
    KilnBuffer in(count, 1.0f), out(count, 0.0f);
    std::vector<float> plain_in(static_cast<size_t>(count), 1.0f), plain_out(static_cast<size_t>(count), 0.0f);
    struct Variant {
      std::function<void()> run;
      std::vector<double> samples;
    };
    Variant variants[] = {
        {[&] { jitted(x); }, {}},
        {[&] { MPI_Allreduce(in.data(), out.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); },
         {}},
        {[&] {
           MPI_Allreduce(plain_in.data(), plain_out.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                         MPI_COMM_WORLD);
         },
         {}},
        {[&] { dist::all_reduce(x); }, {}},
    };
    constexpr int variant_count = std::size(variants);
    // Compiles the graph, compares it across ranks, and warms the
    // allocator's cache and MPI's shared-memory segments for this size.
    for (int warm = 0; warm < 3; ++warm)
      for (Variant& variant : variants) variant.run();
    for (int round = 0; round < size.rounds; ++round)
      for (int k = 0; k < variant_count; ++k) {
        Variant& variant = variants[(round + k) % variant_count];
        // Buffers of a few MB stay in the last-level cache, and the jitted
        // and eager calls share their input and their output's block: timed
        // right after one another they would find them warm where the direct
        // call would not (4 MB ran 1.6-1.8x faster under jit for that alone). An
        // untimed call first gives every variant its own data warm.
        variant.run();
        variant.samples.push_back(timed_together(variant.run));
      }
    Summary j = summarize(variants[0].samples), d = summarize(variants[1].samples), v = summarize(variants[2].samples),
            e = summarize(variants[3].samples);
    if (!lead) continue;
    const std::string label =
        size.kilobytes < 1024 ? std::to_string(size.kilobytes) + " KB" : std::to_string(size.kilobytes / 1024) + " MB";
    std::printf("%s, %d rounds, slowest rank per call, median (min):\n", label.c_str(), size.rounds);
    std::printf("  jit all_reduce                               %9.4f ms (%9.4f)\n", 1e3 * j.median, 1e3 * j.min);
    std::printf("  MPI_Allreduce, kiln-allocator buffers        %9.4f ms (%9.4f)\n", 1e3 * d.median, 1e3 * d.min);
    std::printf("  MPI_Allreduce, std::vector buffers (info)    %9.4f ms (%9.4f)\n", 1e3 * v.median, 1e3 * v.min);
    std::printf("  eager all_reduce + intent exchange (info)    %9.4f ms (%9.4f)\n", 1e3 * e.median, 1e3 * e.min);
    std::printf("  jit / direct (same allocator): median %.3f  min %.3f  %s\n", j.median / d.median, j.min / d.min,
                !size.goal                   ? "(info, no goal)"
                : j.median <= 1.1 * d.median ? "goal <= 1.1x  MET"
                                             : "goal <= 1.1x  NOT MET");
    std::printf("  (info) jit / direct on std::vector %.3f   eager / jit %.3f   (medians)\n", j.median / v.median,
                e.median / j.median);
  }
}

// Adam as in examples/mlp.h, on gradients computed outside it, so the
// data-parallel step can average them in between.
std::pair<Mlp, Adam> adam_update(const Mlp& p, const Adam& s, const Mlp& grads) {
  using namespace mlp;
  Array t = s.step + 1.0f;
  Mlp mean = kiln::tree_map([](const Array& m, const Array& g) { return beta1 * m + (1 - beta1) * g; }, s.mean, grads);
  Mlp variance =
      kiln::tree_map([](const Array& v, const Array& g) { return beta2 * v + (1 - beta2) * g * g; }, s.variance, grads);
  Array step_size = learning_rate / (1.0f - kiln::exp(t * std::log(beta1)));
  Array scale = 1.0f / kiln::sqrt(1.0f - kiln::exp(t * std::log(beta2)));
  Mlp updated = kiln::tree_map([&](const Array& w, const Array& m,
                                   const Array& v) { return w - step_size * m / (kiln::sqrt(v) * scale + epsilon); },
                               p, mean, variance);
  return {updated, Adam{mean, variance, t}};
}

std::tuple<Mlp, Adam, Array> parallel_step(const Mlp& p, const Adam& s, const Array& x, const Array& y) {
  auto [value, grads] = kiln::value_and_grad(mlp::loss)(p, x, y);
  auto [updated, next] = adam_update(p, s, dist::average_gradients(grads));
  return {updated, next, value};
}

std::tuple<Mlp, Adam, Array> alone_step(const Mlp& p, const Adam& s, const Array& x, const Array& y) {
  auto [value, grads] = kiln::value_and_grad(mlp::loss)(p, x, y);
  auto [updated, next] = adam_update(p, s, grads);
  return {updated, next, value};
}

struct Batch {
  Array x, y;
};

// A fixed batch per rank: the step is timed, not a data pipeline.
Batch batch_for(int rank) {
  auto keys = kiln::random::split_keys(kiln::random::key(static_cast<uint64_t>(100 + rank)), 2);
  return {kiln::tanh(kiln::random::normal(keys[0], {mlp::batch_size, mlp::inputs})),
          kiln::random::randint(keys[1], {mlp::batch_size}, 0, mlp::classes)};
}

void print_threads(bool lead) {
  if (!lead) return;
  const char* threads = std::getenv("KILN_THREADS");
  std::printf("KILN_THREADS=%s per rank%s\n", threads ? threads : "(unset: every core)",
              threads && std::atoi(threads) == 1 ? "" : "  (run with KILN_THREADS=1: ranks share the cores)");
}

void training_section(int world) {
  const int me = dist::rank();
  const bool lead = me == 0;
  const unsigned cores = std::thread::hardware_concurrency();
  if (lead) {
    std::printf("\n== MLP %lld-%lld-%lld-%lld training step (forward, backward, Adam), batch %lld per rank ==\n",
                static_cast<long long>(mlp::inputs), static_cast<long long>(mlp::hidden),
                static_cast<long long>(mlp::hidden), static_cast<long long>(mlp::classes),
                static_cast<long long>(mlp::batch_size));
    std::printf("%d ranks on %u hardware threads; %s\n", world, cores,
                static_cast<unsigned>(world) >= cores
                    ? "the ranks share every core (and memory bandwidth and cache): not separate machines"
                    : "the ranks share one machine's memory bandwidth and cache");
  }
  print_threads(lead);
  auto parallel = kiln::jit(parallel_step, {.name = "parallel_step", .donate_argnums = {0, 1}});
  auto alone = kiln::jit(alone_step, {.name = "alone_step", .donate_argnums = {0, 1}});
  Batch batch = batch_for(me);
  Mlp shared = mlp::init(kiln::random::key(0));
  Adam shared_state = mlp::initial_state(shared);
  Mlp own = mlp::init(kiln::random::key(0));
  Adam own_state = mlp::initial_state(own);
  Array value;
  auto run_parallel = [&] { std::tie(shared, shared_state, value) = parallel(shared, shared_state, batch.x, batch.y); };
  auto run_alone = [&] { std::tie(own, own_state, value) = alone(own, own_state, batch.x, batch.y); };
  // Rank 0 alone: the others sleep at a barrier until it is done.
  auto time_alone = [&] {
    MPI_Barrier(MPI_COMM_WORLD);
    double seconds = 0;
    if (lead) {
      double start = now();
      run_alone();
      seconds = now() - start;
    }
    sleeping_barrier();
    return seconds;
  };
  // Every rank stepping alone at once, nothing averaged: what sharing the
  // machine costs, apart from the all_reduce.
  struct Variant {
    std::function<double()> time;
    std::vector<double> samples;
  };
  Variant variants[] = {
      {[&] { return timed_together(run_parallel); }, {}},
      {time_alone, {}},
      {[&] { return timed_together(run_alone); }, {}},
  };
  constexpr int variant_count = std::size(variants);
  for (int warm = 0; warm < 3; ++warm)
    for (Variant& variant : variants) variant.time();
  const int rounds = 40;
  for (int round = 0; round < rounds; ++round)
    for (int k = 0; k < variant_count; ++k) {
      Variant& variant = variants[(round + k) % variant_count];
      variant.samples.push_back(variant.time());
    }
  if (!lead) return;
  Summary p = summarize(variants[0].samples), a = summarize(variants[1].samples), c = summarize(variants[2].samples);
  const double batch_size = static_cast<double>(mlp::batch_size);
  std::printf("%d rounds, interleaved; median (min) per step\n", rounds);
  std::printf("rank 0 alone (others asleep), batch %lld:        %8.3f ms (%8.3f)  %8.0f examples/s\n",
              static_cast<long long>(mlp::batch_size), 1e3 * a.median, 1e3 * a.min, batch_size / a.median);
  std::printf("%d ranks data-parallel, batch %lld per rank:    %8.3f ms (%8.3f)  %8.0f examples/s\n", world,
              static_cast<long long>(mlp::batch_size), 1e3 * p.median, 1e3 * p.min, world * batch_size / p.median);
  std::printf("(info) %d ranks each alone at once, no averaging: %8.3f ms (%8.3f)  %8.0f examples/s\n", world,
              1e3 * c.median, 1e3 * c.min, world * batch_size / c.median);
  std::printf("step time %d ranks / alone: median %.3f  min %.3f  (1.0 would be free parallelism)\n", world,
              p.median / a.median, p.min / a.min);
  std::printf("throughput %d ranks / 1 rank: %.2fx  (ideal %dx)\n", world, world * a.median / p.median, world);
  std::printf("of the extra %.3f ms a step, roughly: %.3f ms sharing the machine, %.3f ms averaging the gradients\n",
              1e3 * (p.median - a.median), 1e3 * (c.median - a.median), 1e3 * (p.median - c.median));
}

// A world of one has nothing to compare. It still times the step alone (the
// figure rank 0's "alone" row should match) and the data-parallel step, whose
// all_reduce is a copy here: the difference is what packing the gradients
// into a bucket and splitting it back costs, with no communication.
void lone() {
  std::printf("bench_distributed: a world of one; the comparisons need 2 ranks (mpirun -np 2 bench_distributed)\n");
  print_threads(true);
  auto parallel = kiln::jit(parallel_step, {.name = "parallel_step", .donate_argnums = {0, 1}});
  auto alone = kiln::jit(alone_step, {.name = "alone_step", .donate_argnums = {0, 1}});
  Batch batch = batch_for(0);
  // Separate arrays: each step donates its parameters.
  Mlp own = mlp::init(kiln::random::key(0)), shared = mlp::init(kiln::random::key(0));
  Adam own_state = mlp::initial_state(own), shared_state = mlp::initial_state(shared);
  Array value;
  auto time = [](const std::function<void()>& body) {
    double start = now();
    body();
    return now() - start;
  };
  auto run_alone = [&] { std::tie(own, own_state, value) = alone(own, own_state, batch.x, batch.y); };
  auto run_parallel = [&] { std::tie(shared, shared_state, value) = parallel(shared, shared_state, batch.x, batch.y); };
  for (int warm = 0; warm < 3; ++warm) {
    run_alone();
    run_parallel();
  }
  std::vector<double> alone_times, parallel_times;
  for (int round = 0; round < 40; ++round) {
    alone_times.push_back(time(run_alone));
    parallel_times.push_back(time(run_parallel));
  }
  Summary a = summarize(alone_times), p = summarize(parallel_times);
  std::printf("MLP training step alone, batch %lld:                       %8.3f ms (%8.3f)  %8.0f examples/s\n",
              static_cast<long long>(mlp::batch_size), 1e3 * a.median, 1e3 * a.min,
              static_cast<double>(mlp::batch_size) / a.median);
  std::printf("(info) the data-parallel step in a world of one (no MPI):  %8.3f ms (%8.3f)  +%.3f ms for the bucket\n",
              1e3 * p.median, 1e3 * p.min, 1e3 * (p.median - a.median));
}

}  // namespace

int main() {
  dist::init();
  const int world = dist::world_size();
  if (world < 2) {
    lone();
    return 0;
  }
  all_reduce_section(world);
  training_section(world);
  return 0;
}
