// The persistent compilation cache: what a first call costs when the
// executables it needs were compiled by an earlier run.
//
// 1-3. The MLP training step (examples/mlp.h, batch 256), a chain of 999
//    elementwise operations on f32[1024], and an RNN of 100 steps under scan:
//    the cold first call (empty cache directory, empty in-memory caches:
//    trace + compile + run) against the warm one (a fresh jitted object, the
//    in-memory caches emptied, the directory holding the entries: trace +
//    load + run), over several rounds.
//    Goals: warm >= 20x faster than cold; <= 5 ms loading each executable.
// 4. A fresh process (this binary again, with KILN_CACHE_DIR naming the
//    directory filled with the MLP step): its first call of the step against
//    the step's steady state. Goal: <= 10 ms more.
// 5. Shipping a warm cache: the MLP step's entries exported to a bundle and
//    imported into a clean directory (a fresh machine of the same kind): the
//    first call there against the cold one. Goals: >= 20x faster; <= 2 ms
//    loading each executable.
//
// Every warm call must compile nothing, load at least one executable and give
// the cold call's results bit for bit; anything else fails the run.
#include <fcntl.h>
#include <kiln/kiln.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "backend/llvm/kernel_cache.h"
#include "cache/persistent_cache.h"
#include "kiln/cache.h"
#include "mlp.h"
#include "runtime/thread_pool.h"
#include "spread.h"

extern char** environ;

using kiln::Array;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The private cache directory; every exit, failures included, removes it.
std::filesystem::path scratch;

void remove_scratch() {
  kiln::cache::reset_persistent_cache(kiln::cache::PersistentOptions{.enabled = false});
  if (scratch.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(scratch, ignored);
  scratch.clear();
}

[[noreturn]] void fail(const std::string& what) {
  std::printf("\n*** FAILED: %s ***\n", what.c_str());
  std::fflush(stdout);
  remove_scratch();
  std::exit(1);
}

using kiln::bench::Spread;
using kiln::bench::spread;

// Bytes, not values: "equal" must hold for NaNs and signed zeros too.
template <class T>
std::vector<std::string> bytes_of(const T& result) {
  std::vector<std::string> bytes;
  for (const Array& leaf : kiln::tree_leaves(result)) {
    if (leaf.dtype() != kiln::f32) fail("an output is not f32; bytes_of reads f32 only");
    std::vector<float> values = leaf.to_vector<float>();
    bytes.emplace_back(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  }
  return bytes;
}

// FNV-1a: the child process reports its results as one number.
uint64_t digest(const std::vector<std::string>& bytes) {
  uint64_t hash = 14695981039346656037ull;
  for (const std::string& leaf : bytes)
    for (unsigned char c : leaf) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

void empty_memory_caches() {
  kiln::clear_graph_cache();
  kiln::llvm_backend::clear_kernel_cache();
}

struct FirstCall {
  double seconds = 0;
  kiln::CacheStats stats;
  std::vector<std::string> results;
  double run_seconds = 0;  // a second call: the run alone, what no cache can remove
};

// The first call of a jitted object made for it, then a second. The object
// and the calls' outputs die before this returns, so nothing of theirs keeps
// code linked.
template <class Make, class Arguments>
FirstCall first_call(const Make& make, Arguments arguments, Arguments again) {
  FirstCall call;
  auto fn = make();
  auto start = Clock::now();
  auto result = std::apply(fn, arguments);
  call.seconds = seconds_since(start);
  call.stats = fn.stats();
  call.results = bytes_of(result);
  start = Clock::now();
  std::apply(fn, again);
  call.run_seconds = seconds_since(start);
  return call;
}

// ---- the workloads ----

auto make_mlp_step() {
  // As examples/train_mlp.cpp makes it: donation changes the graph, so the
  // same options give the same cache entry.
  return kiln::jit(
      [](const Mlp& p, const Adam& s, const Array& x, const Array& y) { return mlp::train_step(p, s, x, y); },
      {.name = "train_step", .donate_argnums = {0, 1}});
}

// Fresh arrays for every call: the step consumes the parameters and state.
auto mlp_arguments() { return mlp::example_arguments(); }

constexpr int chain_links = 333;  // three operations each
constexpr int64_t chain_size = 1024;

auto make_chain() {
  return kiln::jit(
      [](const Array& x0, const Array& y, const Array& z) {
        Array x = x0;
        // Alternating functions so that no rewrite shortens the chain; tanh
        // and sin keep it bounded.
        for (int i = 0; i < chain_links; ++i) x = (i % 2 ? kiln::sin(x) : kiln::tanh(x)) * y + z;
        return x;
      },
      {.name = "elementwise_chain"});
}

auto chain_arguments() {
  auto keys = kiln::random::split_keys(kiln::random::key(5), 3);
  return std::tuple{kiln::random::normal(keys[0], {chain_size}), kiln::random::normal(keys[1], {chain_size}),
                    kiln::random::normal(keys[2], {chain_size}) * 0.1f};
}

constexpr int64_t rnn_hidden = 32, rnn_inputs = 8, rnn_steps = 100;

struct RnnWeights {
  Array w, u, b;
};

auto make_rnn(const RnnWeights& p) {
  return kiln::jit(
      [p](const Array& h0, const Array& xs) {
        auto step = [&p](const Array& h, const Array& x) {
          return std::pair{kiln::tanh(kiln::matmul(p.w, h) + kiln::matmul(p.u, x) + p.b), std::tuple<>{}};
        };
        return kiln::scan(step, h0, xs).first;
      },
      {.name = "rnn_scan"});
}

auto rnn_arguments() {
  return std::tuple{kiln::zeros({rnn_hidden}), kiln::random::normal(kiln::random::key(3), {rnn_steps, rnn_inputs})};
}

// ---- cold against warm in one process ----

template <class Make, class Arguments>
void cold_and_warm(const std::string& name, const Make& make, const Arguments& arguments, int rounds) {
  size_t nodes = std::apply([&](const auto&... a) { return make().lower(a...).num_nodes(); }, arguments());
  std::vector<double> cold, warm, run, load_per_executable, cold_compile, warm_trace;
  int64_t executables = 0;
  for (int round = 0; round < rounds; ++round) {
    // Made before the baseline: the eager operations making them may leave
    // code linked that is not the workload's.
    auto cold_arguments = arguments(), cold_again = arguments();
    auto warm_arguments = arguments(), warm_again = arguments();
    kiln::cache::persistent_cache()->clear();
    empty_memory_caches();
    size_t linked_before = kiln::llvm_backend::linked_modules();

    FirstCall first = first_call(make, cold_arguments, cold_again);
    if (first.stats.compiles < 1 || first.stats.persistent_hits != 0)
      fail(name + ": the cold call compiled " + std::to_string(first.stats.compiles) + " and loaded " +
           std::to_string(first.stats.persistent_hits) + " executable(s); expected >= 1 and 0");
    if (kiln::cache::persistent_cache()->entries(false).empty()) fail(name + ": the cold call saved nothing");

    // A loaded object still linked would be shared rather than linked again:
    // the warm call must find nothing of the cold one's in the process.
    empty_memory_caches();
    size_t linked_after = kiln::llvm_backend::linked_modules();
    if (linked_after != linked_before)
      fail(name + ": " + std::to_string(linked_after) + " module(s) linked after the cold call's code was dropped, " +
           std::to_string(linked_before) + " before it: the warm call would share code instead of loading it");

    FirstCall second = first_call(make, warm_arguments, warm_again);
    if (second.stats.compiles != 0 || second.stats.persistent_hits < 1)
      fail(name + ": the warm call compiled " + std::to_string(second.stats.compiles) + " and loaded " +
           std::to_string(second.stats.persistent_hits) + " executable(s); expected 0 and >= 1");
    if (second.results != first.results) fail(name + ": the warm call's results differ from the cold call's");

    cold.push_back(first.seconds);
    warm.push_back(second.seconds);
    run.push_back(first.run_seconds);
    run.push_back(second.run_seconds);
    cold_compile.push_back(first.stats.compile_seconds);
    warm_trace.push_back(second.stats.trace_seconds);
    load_per_executable.push_back(second.stats.load_seconds / static_cast<double>(second.stats.persistent_hits));
    executables = second.stats.persistent_hits;
  }
  Spread c = spread(cold), w = spread(warm), load = spread(load_per_executable), compile = spread(cold_compile),
         trace = spread(warm_trace), alone = spread(run);
  double ratio = c.median / w.median;
  std::printf("%s (%zu nodes, %lld executable(s), %d rounds)\n", name.c_str(), nodes,
              static_cast<long long>(executables), rounds);
  std::printf(
      "  cold first call %9.2f ms (min %9.2f; compiling %9.2f)   warm first call %7.3f ms (min %7.3f; tracing %7.3f)\n",
      1e3 * c.median, 1e3 * c.min, 1e3 * compile.median, 1e3 * w.median, 1e3 * w.min, 1e3 * trace.median);
  std::printf("  cold / warm %7.1fx (min / min %7.1fx)  goal >= 20x  %s\n", ratio, c.min / w.min,
              ratio >= 20 ? "MET" : "NOT MET");
  // The run is in both first calls and no cache shortens it: what the
  // cache saves shows better without it.
  std::printf("  the run alone (a second call) %.3f ms; first call less the run: cold %.2f ms, warm %.3f ms, %.1fx\n",
              1e3 * alone.median, 1e3 * (c.median - alone.median), 1e3 * (w.median - alone.median),
              (c.median - alone.median) / (w.median - alone.median));
  std::printf("  warm load per executable %7.3f ms (min %7.3f)  goal <= 5 ms  %s\n", 1e3 * load.median, 1e3 * load.min,
              load.median <= 5e-3 ? "MET" : "NOT MET");
}

// ---- a fresh process ----

constexpr int steady_calls = 20;

// Runs in the re-executed binary: the cache comes from the environment, as
// any program's would.
int child_main(const std::string& directory) {
  auto cache = kiln::cache::persistent_cache();
  if (!cache->options().enabled || cache->options().directory != directory || !cache->usable()) {
    std::printf("child: the persistent cache from the environment is not %s, or not usable\n", directory.c_str());
    return 1;
  }
  auto [params, state, x, y] = mlp_arguments();
  auto step = make_mlp_step();
  auto start = Clock::now();
  auto [next_params, next_state, loss] = step(params, state, x, y);
  double first = seconds_since(start);
  kiln::CacheStats stats = step.stats();
  uint64_t results = digest(bytes_of(std::tuple{next_params, next_state, loss}));

  std::vector<double> steady;
  for (int call = 0; call < steady_calls; ++call) {
    start = Clock::now();
    std::tie(next_params, next_state, loss) = step(next_params, next_state, x, y);
    steady.push_back(seconds_since(start));
  }
  std::printf("child first=%.9f steady=%.9f compiles=%lld hits=%lld load=%.9f trace=%.9f saved=%.9f digest=%llu\n",
              first, spread(steady).median, static_cast<long long>(stats.compiles),
              static_cast<long long>(stats.persistent_hits), stats.load_seconds, stats.trace_seconds,
              stats.saved_compile_seconds, static_cast<unsigned long long>(results));
  return 0;
}

struct ChildReport {
  double first = 0, steady = 0, load = 0, trace = 0, saved = 0, wall = 0;
  long long compiles = -1, hits = -1;
  unsigned long long digest = 0;
};

ChildReport run_child(const std::string& directory) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) fail("pipe2: " + std::string(std::strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 clears close-on-exec on the copy: the child's stdout is the pipe.
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);

  // The environment decides the child's cache; whatever this process was
  // given for it would compete.
  std::vector<std::string> variables;
  for (char** entry = environ; *entry; ++entry) {
    std::string variable = *entry;
    if (variable.starts_with("KILN_CACHE=") || variable.starts_with("KILN_CACHE_DIR=") ||
        variable.starts_with("KILN_CACHE_MAX_BYTES="))
      continue;
    variables.push_back(std::move(variable));
  }
  variables.push_back("KILN_CACHE=on");
  variables.push_back("KILN_CACHE_DIR=" + directory);
  std::vector<char*> envp;
  for (std::string& variable : variables) envp.push_back(variable.data());
  envp.push_back(nullptr);
  std::string program = "bench_persistent", flag = "--child", where = directory;
  char* argv[] = {program.data(), flag.data(), where.data(), nullptr};

  std::fflush(stdout);
  auto start = Clock::now();
  pid_t pid = 0;
  int spawned = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (spawned != 0) fail("posix_spawn: " + std::string(std::strerror(spawned)));
  std::string output;
  char buffer[4096];
  for (ssize_t got; (got = ::read(pipe_fds[0], buffer, sizeof buffer)) != 0;) {
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) break;
    output.append(buffer, static_cast<size_t>(got));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ChildReport report;
  report.wall = seconds_since(start);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail("the child process failed; it printed: " + output);
  size_t at = output.find("child first=");
  if (at == std::string::npos ||
      std::sscanf(output.c_str() + at,
                  "child first=%lf steady=%lf compiles=%lld hits=%lld load=%lf trace=%lf saved=%lf digest=%llu",
                  &report.first, &report.steady, &report.compiles, &report.hits, &report.load, &report.trace,
                  &report.saved, &report.digest) != 8)
    fail("the child process's report is unreadable: " + output);
  return report;
}

void fresh_process() {
  kiln::cache::persistent_cache()->clear();
  empty_memory_caches();
  FirstCall fill = first_call(make_mlp_step, mlp_arguments(), mlp_arguments());
  empty_memory_caches();
  ChildReport child = run_child(scratch.string());
  double difference = child.first - child.steady;
  std::printf("mlp training step in a fresh process (the parent's cold call took %.2f ms)\n", 1e3 * fill.seconds);
  std::printf(
      "  child stats: %lld compile(s), %lld persistent hit(s), loading %.3f ms, tracing %.3f ms (compiling took %.2f "
      "ms when saved); process wall time %.1f ms\n",
      child.compiles, child.hits, 1e3 * child.load, 1e3 * child.trace, 1e3 * child.saved, 1e3 * child.wall);
  std::printf("  warm process: first call %.3f ms, steady state %.3f ms, difference %.3f ms, goal <= 10 ms  %s\n",
              1e3 * child.first, 1e3 * child.steady, 1e3 * difference, difference <= 10e-3 ? "MET" : "NOT MET");
  if (child.compiles != 0 || child.hits < 1)
    fail("the fresh process compiled " + std::to_string(child.compiles) + " and loaded " + std::to_string(child.hits) +
         " executable(s); expected 0 and >= 1");
  if (child.digest != digest(fill.results)) fail("the fresh process's results differ from the parent's cold call's");
}

// ---- a bundle imported into a clean directory ----

void imported_bundle(int rounds) {
  std::vector<double> cold, warm, load, import, run;
  int64_t executables = 0;
  std::filesystem::path bundle = scratch / "warm.kilnbundle";
  for (int round = 0; round < rounds; ++round) {
    auto cold_arguments = mlp_arguments(), warm_arguments = mlp_arguments();
    std::filesystem::path machine = scratch / ("machine-" + std::to_string(round));
    std::filesystem::path fresh = scratch / ("fresh-" + std::to_string(round));
    for (const auto& directory : {machine, fresh}) std::filesystem::create_directory(directory);
    std::filesystem::permissions(machine, std::filesystem::perms::owner_all);
    std::filesystem::permissions(fresh, std::filesystem::perms::owner_all);
    kiln::cache::reset_persistent_cache(kiln::cache::PersistentOptions{.directory = machine.string()});
    empty_memory_caches();
    FirstCall first = first_call(make_mlp_step, cold_arguments, mlp_arguments());
    if (first.stats.compiles < 1) fail("bundle: the cold call compiled nothing");
    kiln::cache::BundleReport exported = kiln::cache::export_entries(bundle.string());

    kiln::cache::reset_persistent_cache(kiln::cache::PersistentOptions{.directory = fresh.string()});
    empty_memory_caches();
    auto start = Clock::now();
    kiln::cache::BundleReport imported = kiln::cache::import_entries(bundle.string());
    import.push_back(seconds_since(start));
    if (imported.imported != exported.entries || imported.refused != 0)
      fail("bundle: imported " + std::to_string(imported.imported) + " of " + std::to_string(exported.entries) +
           " entries, refused " + std::to_string(imported.refused));
    FirstCall second = first_call(make_mlp_step, warm_arguments, mlp_arguments());
    if (second.stats.compiles != 0 || second.stats.persistent_hits < 1)
      fail("bundle: the first call after the import compiled " + std::to_string(second.stats.compiles) +
           " executable(s); expected 0");
    if (second.results != first.results) fail("bundle: the imported code's results differ from the cold call's");
    cold.push_back(first.seconds);
    warm.push_back(second.seconds);
    run.push_back(second.run_seconds);
    executables = second.stats.persistent_hits;
    load.push_back(second.stats.load_seconds / static_cast<double>(executables));
  }
  kiln::cache::reset_persistent_cache(kiln::cache::PersistentOptions{.directory = scratch.string()});
  Spread c = spread(cold), w = spread(warm), l = spread(load), i = spread(import), r = spread(run);
  std::printf("mlp training step, first call after importing a bundle into a clean directory (%d rounds)\n", rounds);
  std::printf("  cold first call %9.2f ms (min %9.2f)   imported first call %7.3f ms (min %7.3f); import %.3f ms\n",
              1e3 * c.median, 1e3 * c.min, 1e3 * w.median, 1e3 * w.min, 1e3 * i.median);
  std::printf("  cold / imported %7.1fx (min / min %7.1fx)  goal >= 20x  %s\n", c.median / w.median, c.min / w.min,
              c.median / w.median >= 20 ? "MET" : "NOT MET");
  // The step's own run bounds the ratio: what the cache removes is the rest.
  std::printf(
      "  the run alone (a second call) %.3f ms; first call less the run: cold %.2f ms, imported %.3f ms, %.1fx\n",
      1e3 * r.median, 1e3 * (c.median - r.median), 1e3 * (w.median - r.median),
      (c.median - r.median) / (w.median - r.median));
  std::printf("  load per executable %7.3f ms (min %7.3f, %lld executable(s))  goal <= 2 ms  %s\n", 1e3 * l.median,
              1e3 * l.min, static_cast<long long>(executables), l.median <= 2e-3 ? "MET" : "NOT MET");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--child") return child_main(argv[2]);

  // mkdtemp makes it 0700: the cache refuses a directory others can write.
  std::string pattern = (std::filesystem::temp_directory_path() / "kiln_bench_persistent.XXXXXX").string();
  if (!::mkdtemp(pattern.data())) fail("mkdtemp: " + std::string(std::strerror(errno)));
  scratch = pattern;
  kiln::cache::reset_persistent_cache(
      kiln::cache::PersistentOptions{.enabled = true, .directory = scratch.string(), .max_bytes = uint64_t{1} << 30});
  if (!kiln::cache::persistent_cache()->usable()) fail("the persistent cache refuses its private directory");

  const char* threads = std::getenv("KILN_THREADS");
  std::printf("== persistent compilation cache: cold vs warm first calls (%d thread(s), KILN_THREADS=%s) ==\n",
              kiln::runtime::thread_count(), threads ? threads : "unset");
  constexpr int rounds = 5;
  cold_and_warm("mlp training step, batch 256", make_mlp_step, mlp_arguments, rounds);
  cold_and_warm("elementwise chain, 999 ops on f32[1024]", make_chain, chain_arguments, rounds);
  RnnWeights weights{kiln::random::normal(kiln::random::key(1), {rnn_hidden, rnn_hidden}) * 0.2f,
                     kiln::random::normal(kiln::random::key(2), {rnn_hidden, rnn_inputs}) * 0.3f,
                     kiln::zeros({rnn_hidden})};
  cold_and_warm(
      "rnn scan, hidden 32, 100 steps", [&] { return make_rnn(weights); }, rnn_arguments, rounds);
  fresh_process();
  imported_bundle(rounds);
  remove_scratch();
  return 0;
}
