// Time to first result, in one run (every first call in a fresh process of
// this binary, with the persistent cache off, repeated; min and median):
//   1. The demo's MLP step (examples/mlp.h, batch 256, Adam): its first call
//      against its steady-state step, in background mode (the first call runs
//      op by op while the optimized code compiles) and in sync mode (it waits
//      for the compile, as before tiers). Goal: background <= 3x.
//      Once in a fresh process, once in one that ran the step op by op before
//      (its eager kernels compiled, as in any process that has run eager code),
//      and once in a fresh process that wrote memory of the step's shapes and
//      ran one product by OpenBLAS first, compiling nothing: what remains of
//      the first call beyond a process's first touches of memory and BLAS.
//      Beside it, libtorch's eager step (the same model, autograd, Adam) in
//      a fresh process: its first step against its steady step, what a
//      fresh process costs with no compiler at all (first use of OpenBLAS,
//      memory touched for the first time).
//   2. A chain of 999 elementwise operations on f32[1024] (tanh, mul, add):
//      its first call against the same chain run op by op eagerly, warm and
//      (in a fresh process of its own) cold. Goal: <= 3x.
//   3. Optimized compile times, cold kernel cache (sync), with their phases
//      (alone with --compile-times):
//      the MLP step (goal <= 40 ms) and bench_kernels' 100-node graph (goal <= 20 ms).
#include <fcntl.h>
#include <kiln/kiln.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backend/llvm/kernel_cache.h"
#include "cache/graph_cache.h"
#include "cache/tiered_compile.h"
#include "mlp.h"
#include "torch_mlp.h"

extern char** environ;

using kiln::Array;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

constexpr int rounds = 5;

struct Spread {
  double min = 0, median = 0;
};
Spread spread(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return {values.front(), values[values.size() / 2]};
}

auto mlp_arguments() { return mlp::example_arguments(); }

auto make_step(kiln::CompileMode mode) {
  return kiln::jit(
      [](const Mlp& p, const Adam& s, const Array& x, const Array& y) { return mlp::train_step(p, s, x, y); },
      {.name = "train_step", .donate_argnums = {0, 1}, .compile_mode = mode});
}

Array chain(const Array& x, const Array& w) {
  Array y = x;
  for (int i = 0; i < 333; ++i) y = kiln::tanh(y) * w + x;  // three operations each
  return y;
}

// ---- in a fresh process ----

int torch_child() {
  torch::manual_seed(0);
  TorchMlp model;
  torch::optim::Adam optimizer(model.parameters(), torch::optim::AdamOptions(mlp::learning_rate));
  torch::Tensor x = torch::randn({mlp::batch_size, mlp::inputs});
  torch::Tensor y = torch::randint(0, mlp::classes, {mlp::batch_size});
  auto step = [&] {
    optimizer.zero_grad();
    torch::Tensor loss = torch::nn::functional::cross_entropy(model.forward(x), y);
    loss.backward();
    optimizer.step();
    return loss.item<float>();
  };
  auto start = Clock::now();
  step();
  double first = seconds_since(start);
  std::vector<double> steady;
  for (int call = 0; call < 15; ++call) {
    start = Clock::now();
    step();
    steady.push_back(seconds_since(start));
  }
  std::printf("child first=%.9f steady=%.9f\n", first, spread(steady).median);
  return 0;
}

int child_main(const std::string& what) {
  if (what == "torch-mlp") return torch_child();
  kiln::CompileMode mode = what.ends_with("sync") ? kiln::CompileMode::Sync : kiln::CompileMode::Background;
  if (what.starts_with("mlp")) {
    auto [params, state, x, y] = mlp_arguments();
    if (what.starts_with("mlp-warm")) {
      // The step's eager kernels compiled by running it op by op first, with
      // a fresh copy of the arguments (the step donates them).
      auto [p, s, xx, yy] = mlp_arguments();
      // Its optimized compile is made to fail, so it runs op by op; the
      // warning that failure prints is this child's doing, not news.
      int saved_stderr = ::dup(STDERR_FILENO), null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
      ::dup2(null, STDERR_FILENO);
      kiln::cache::set_background_compile_fault([](const kiln::ir::Graph&) { throw std::runtime_error("warming"); });
      auto warming = make_step(kiln::CompileMode::Background);
      warming(p, s, xx, yy);
      kiln::wait_for_background_compiles();
      kiln::cache::set_background_compile_fault(nullptr);
      kiln::clear_graph_cache();
      ::dup2(saved_stderr, STDERR_FILENO);
      ::close(saved_stderr);
      ::close(null);
    }
    if (what == "mlp-touched") {
      // Memory of the step's shapes written once and freed to kiln's cache,
      // and one product run by OpenBLAS, with no kernel compiled: what a
      // fresh process pays beyond its first touches of memory and of BLAS.
      std::vector<Array> blocks;
      for (auto [shape, count] : {std::pair{kiln::Shape{256, 512}, 12}, std::pair{kiln::Shape{784, 512}, 6},
                                  std::pair{kiln::Shape{512, 512}, 4}, std::pair{kiln::Shape{256, 784}, 3}})
        for (int k = 0; k < count; ++k) blocks.push_back(kiln::full(shape, 1.0f));
      kiln::matmul(blocks[22], blocks[12]).to_vector<float>();  // [256,784] x [784,512]
      blocks.clear();
    }
    auto step = make_step(mode);
    // The arguments' random initialization may still be queued: it is not the call's.
    kiln::synchronize();
    auto start = Clock::now();
    auto [p, s, loss] = step(params, state, x, y);
    loss.item<float>();
    double first = seconds_since(start);
    std::vector<double> steady;
    kiln::wait_for_background_compiles();
    for (int call = 0; call < 15; ++call) {
      start = Clock::now();
      std::tie(p, s, loss) = step(p, s, x, y);
      loss.item<float>();
      steady.push_back(seconds_since(start));
    }
    std::printf("child first=%.9f steady=%.9f\n", first, spread(steady).median);
    return 0;
  }
  Array x = kiln::random::normal(kiln::random::key(1), {1024}), w = kiln::full({1024}, 0.5f);
  kiln::synchronize();
  auto start = Clock::now();
  if (what == "chain-eager") {
    chain(x, w).to_vector<float>();  // its first run compiles eager's kernels (tanh)
  } else {
    auto jitted = kiln::jit(chain, {.name = "chain", .compile_mode = mode});
    jitted(x, w).to_vector<float>();
  }
  double first = seconds_since(start);
  // Eager, op by op, warm: its kernels compiled by the first round. Not
  // while the jitted chain's optimized code still compiles (a core busy for
  // half a second made the reference up to 4x slower).
  kiln::wait_for_background_compiles();
  chain(x, w).to_vector<float>();
  std::vector<double> eager;
  for (int call = 0; call < 5; ++call) {
    start = Clock::now();
    chain(x, w).to_vector<float>();
    eager.push_back(seconds_since(start));
  }
  std::printf("child first=%.9f steady=%.9f\n", first, spread(eager).median);
  return 0;
}

struct ChildReport {
  double first = 0, steady = 0;
};

ChildReport run_child(const std::string& what) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) std::exit(1);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  std::vector<std::string> variables;
  for (char** entry = environ; *entry; ++entry)
    if (!std::string(*entry).starts_with("KILN_CACHE=")) variables.push_back(*entry);
  variables.push_back("KILN_CACHE=off");
  std::vector<char*> envp;
  for (std::string& variable : variables) envp.push_back(variable.data());
  envp.push_back(nullptr);
  std::string program = "bench_first_call", flag = "--child", argument = what;
  char* argv[] = {program.data(), flag.data(), argument.data(), nullptr};
  std::fflush(stdout);
  pid_t pid = 0;
  if (posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv, envp.data()) != 0) std::exit(1);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  std::string output;
  char buffer[4096];
  for (ssize_t got; (got = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;)
    output.append(buffer, static_cast<size_t>(got));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ChildReport report;
  size_t at = output.find("child ");
  if (at == std::string::npos ||
      std::sscanf(output.c_str() + at, "child first=%lf steady=%lf", &report.first, &report.steady) != 2) {
    std::printf("*** child '%s' failed:\n%s\n", what.c_str(), output.c_str());
    std::exit(1);
  }
  return report;
}

void first_against(const std::string& label, const std::string& what, const std::string& baseline, double goal) {
  std::vector<double> first, steady, ratio;
  for (int round = 0; round < rounds; ++round) {
    ChildReport report = run_child(what);
    first.push_back(report.first);
    steady.push_back(report.steady);
    ratio.push_back(report.first / report.steady);
  }
  Spread f = spread(first), s = spread(steady), r = spread(ratio);
  std::string verdict =
      goal > 0 ? "goal <= " + std::to_string(static_cast<int>(goal)) + "x  " + (r.median <= goal ? "MET" : "NOT MET")
               : std::string("info");
  std::printf("%-58s first %8.2f ms (min %8.2f)  %s %7.2f ms  ratio %6.2fx (min %6.2fx)  %s\n", label.c_str(),
              f.median * 1e3, f.min * 1e3, baseline.c_str(), s.median * 1e3, r.median, r.min, verdict.c_str());
}

// ---- optimized compile times ----

template <class Build>
void compile_times(const std::string& label, Build build, double goal) {
  std::vector<double> seconds;
  kiln::runtime::CompilePhases phases;
  for (int round = 0; round < rounds + 2; ++round) {
    kiln::clear_graph_cache();
    kiln::llvm_backend::clear_kernel_cache();
    kiln::Graph graph = build(round);
    auto shared = kiln::detail::shared_ir(graph);
    auto start = Clock::now();
    kiln::cache::GraphLookup lookup =
        kiln::cache::get_or_compile(shared, kiln::cache::graph_key(*shared), kiln::CompileMode::Sync);
    seconds.push_back(seconds_since(start));
    if (round == 0 || lookup.phases.total() < phases.total()) phases = lookup.phases;
  }
  Spread t = spread(seconds);
  std::printf("%-58s %8.2f ms (min %8.2f)  goal <= %.0f ms  %s\n  fastest: %s\n", label.c_str(), t.median * 1e3,
              t.min * 1e3, goal * 1e3, t.median <= goal ? "MET" : "NOT MET", phases.describe().c_str());
}

void first_calls() {
  std::printf(
      "== time to first result (fresh processes, %d rounds; ratio: the median of each process's first / steady) ==\n",
      rounds);
  first_against("MLP step, background, fresh process", "mlp", "steady step", 3);
  first_against("MLP step, sync (waits for the compile)", "mlp-sync", "steady step", 0);
  first_against("MLP step, background, eager kernels compiled", "mlp-warm", "steady step", 3);
  first_against("MLP step, background, memory and BLAS touched first", "mlp-touched", "steady step", 0);
  first_against("MLP step in libtorch eager, fresh process (no compiler)", "torch-mlp", "steady step", 0);
  first_against("999-op chain f32[1024], background", "chain", "eager op by op, warm", 3);
  first_against("999-op chain f32[1024], sync", "chain-sync", "eager op by op, warm", 0);
  first_against("999-op chain f32[1024] eager: its first run (cold)", "chain-eager", "eager op by op, warm", 0);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--child") return child_main(argv[2]);
  // Compiles here are timed: the persistent cache would turn them into loads.
  ::setenv("KILN_CACHE", "off", 1);
  // `--compile-times`: only the third part, for work on the compiler.
  bool compile_times_only = argc == 2 && std::string(argv[1]) == "--compile-times";
  if (!compile_times_only) first_calls();
  std::printf("\n== optimized compile, cold kernel cache (sync) ==\n");
  auto [params, state, x, y] = mlp_arguments();
  compile_times(
      "MLP step (271 nodes)",
      [&](int) {
        return kiln::make_graph(
            "train_step",
            [](const Mlp& p, const Adam& s, const Array& a, const Array& b) { return mlp::train_step(p, s, a, b); },
            params, state, x, y);
      },
      40e-3);
  Array v = kiln::random::normal(kiln::random::key(6), {256, 64});
  compile_times(
      "100-node elementwise graph (bench_kernels')",
      [&](int round) {
        float c = 1.0f + 0.001f * static_cast<float>(round);
        return kiln::make_graph(
            "hundred",
            [c](const Array& input) {
              Array h = input;
              for (int i = 0; i < 25; ++i) h = kiln::tanh(h * c + 0.1f * static_cast<float>(i)) - h * 0.5f;
              return kiln::sum(h, -1);
            },
            v);
      },
      20e-3);
}
