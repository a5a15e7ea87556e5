// Compiled against eager, graph by graph: is a jitted graph ever slower than
// the same operations run eagerly? The corpus is the random-graph fuzzer's
// graphs at realistic sizes (arguments of 2^12 to 2^22 elements) plus a
// chain a new user would write: 250 rounds of
//   h = tanh(h * 0.99 + 0.01) - mean(h, {1}, true) * 0.001   on f32[64,256].
// "Eager" runs every node through eager dispatch (its compiled
// single-operation kernel, BLAS for products), as an eager program would.
// Goal: compiled/eager <= 1.0 on every graph, median <= 0.5.
//
//   bench_corpus [--seeds N] [--repeats N] [--verbose] [--only SEED]
//   (--verbose: recipes and plans of graphs above 1.0, or of the --only graph, which runs alone)
#include <kiln/kiln.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "backend/interp/interpreter.h"
#include "backend/llvm/backend.h"
#include "core/dispatch_queue.h"
#include "differential.h"
#include "ir/control.h"
#include "ops/common/apply.h"
#include "ops/common/rules.h"
#include "random_graph.h"

namespace {
using kiln::Array;
using Clock = std::chrono::steady_clock;

kiln::Array eager_kernel(const kiln::ir::Node& node, std::span<const Array> inputs, std::span<const char>) {
  return kiln::detail::apply(node.op, inputs, node.attrs, node.where);
}

std::vector<kiln::interp::Program::Choice> eager_dispatch(const kiln::ir::Graph& graph) {
  std::vector<kiln::interp::Program::Choice> choices(graph.nodes.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const kiln::ir::Node& node = graph.nodes[i];
    if (node.inputs.empty() || kiln::ir::is_control(node.op)) continue;
    if (kiln::ops::rules(node.op).fusion == kiln::ops::Fusion::collective) continue;
    choices[i].kernel = &eager_kernel;
  }
  return choices;
}

struct Timing {
  double min = 0, median = 0;
};

// Runs `call` until `repeats` samples of at least 2 ms each (or one call) are taken.
template <class Call>
Timing time_calls(Call call, int repeats) {
  call();
  call();
  auto start = Clock::now();
  call();
  double once = std::chrono::duration<double>(Clock::now() - start).count();
  int per_sample = std::max(1, static_cast<int>(2e-3 / std::max(once, 1e-9)));
  std::vector<double> samples;
  for (int r = 0; r < repeats; ++r) {
    start = Clock::now();
    for (int i = 0; i < per_sample; ++i) call();
    samples.push_back(std::chrono::duration<double>(Clock::now() - start).count() / per_sample);
  }
  std::sort(samples.begin(), samples.end());
  return {samples.front(), samples[samples.size() / 2]};
}

struct Row {
  std::string name;
  Timing compiled, eager;
  std::string recipe;  // the generator's, with the plan
  double ratio() const { return compiled.median / eager.median; }
};

Row measure(const std::string& name, const kiln::testing::DifferentialCase& test, int repeats) {
  auto graph = kiln::detail::shared_ir(test.graph);
  auto compiled = kiln::llvm_backend::llvm_backend().compile(graph);
  auto eager = kiln::interp::interpreted_executable(graph, &eager_dispatch, "eager");
  Row row{name, {}, {}};
  row.compiled = time_calls([&] { (void)compiled->run(test.arguments, test.captures); }, repeats);
  row.eager = time_calls([&] { (void)eager->run(test.arguments, test.captures); }, repeats);
  return row;
}

kiln::testing::DifferentialCase user_chain() {
  Array h = kiln::random::normal(kiln::random::key(9), {64, 256});
  return kiln::testing::trace_case(
      "user_chain",
      [](const Array& start) {
        Array x = start;
        for (int round = 0; round < 250; ++round) x = kiln::tanh(x * 0.99f + 0.01f) - kiln::mean(x, {1}, true) * 0.001f;
        return x;
      },
      h);
}

}  // namespace

int main(int argc, char** argv) {
  // Eager operations are timed by their work, not by their queueing.
  kiln::detail::set_dispatch_async(false);
  int seeds = 8, repeats = 5;
  bool verbose = false;
  long only = -1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--seeds") == 0 && i + 1 < argc) seeds = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) repeats = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--verbose") == 0) verbose = true;
    else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = std::atol(argv[++i]);
    else {
      std::fprintf(stderr, "usage: bench_corpus [--seeds N] [--repeats N] [--verbose] [--only SEED]\n");
      return 2;
    }
  }
  std::vector<Row> rows;
  if (only < 0) rows.push_back(measure("user chain f32[64,256] x250", user_chain(), repeats));
  if (only < 0) {
    Array h = kiln::random::normal(kiln::random::key(9), {64, 256});
    Timing t = time_calls(
        [&] {
          Array x = h;
          for (int round = 0; round < 250; ++round)
            x = kiln::tanh(x * 0.99f + 0.01f) - kiln::mean(x, {1}, true) * 0.001f;
          (void)x.shape();
        },
        repeats);
    std::printf("user chain eagerly through the API: %.1f/%.1f us\n", t.min * 1e6, t.median * 1e6);
  }
  for (int log2 = 12; log2 <= 22; log2 += 2) {
    for (int seed = 0; seed < seeds; ++seed) {
      if (only >= 0 && only != 1000 * log2 + seed) continue;
      kiln::testing::RandomGraphOptions options;
      options.elements = int64_t{1} << log2;
      options.special_values_percent = 0;
      options.min_steps = 4;
      options.max_steps = 16;
      auto graph = kiln::testing::make_random_graph(static_cast<uint64_t>(1000 * log2 + seed), options);
      if (!graph.test) continue;
      rows.push_back(
          measure("2^" + std::to_string(log2) + " seed " + std::to_string(1000 * log2 + seed), *graph.test, repeats));
      if (verbose) rows.back().recipe = graph.recipe + kiln::testing::describe_plan(graph.test->graph);
    }
  }
  std::printf("%-32s %22s %22s %8s\n", "graph", "compiled min/median", "eager min/median", "ratio");
  std::vector<double> ratios;
  for (const Row& row : rows) {
    ratios.push_back(row.ratio());
    std::printf("%-32s %9.1f/%-9.1fus %9.1f/%-9.1fus %8.2f%s\n", row.name.c_str(), row.compiled.min * 1e6,
                row.compiled.median * 1e6, row.eager.min * 1e6, row.eager.median * 1e6, row.ratio(),
                row.ratio() > 1.0 ? "  SLOWER" : "");
  }
  for (const Row& row : rows)
    if ((row.ratio() > 1.0 || only >= 0) && !row.recipe.empty())
      std::printf("\n%s\n%s\n", row.name.c_str(), row.recipe.c_str());
  if (rows.empty()) return 0;
  std::vector<double> sorted = ratios;
  std::sort(sorted.begin(), sorted.end());
  double worst = sorted.back(), median = sorted[sorted.size() / 2];
  size_t above = static_cast<size_t>(std::count_if(sorted.begin(), sorted.end(), [](double r) { return r > 1.0; }));
  std::printf("\n%zu graphs: compiled/eager worst %.2f (goal <= 1.0) %s, median %.2f (goal <= 0.5) %s, %zu above 1.0\n",
              rows.size(), worst, worst <= 1.0 ? "met" : "NOT MET", median, median <= 0.5 ? "met" : "NOT MET", above);
  return 0;
}
