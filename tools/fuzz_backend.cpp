// fuzz_backend: runs many random graphs (tests/backend/random_graph.h)
// through the native backend and the reference interpreter and reports every
// graph whose outputs disagree beyond the generator's error bound, by seed.
// With --dynamic, random shape-generic functions instead
// (tests/backend/dynamic_random_graph.h): each fitted to one symbolic graph,
// compiled once and run at several sizes of its dynamic dimensions.
//
//   fuzz_backend [--graphs N] [--seed S] [--max-steps K] [--large-percent P] [--verbose] [--stop]
//                [--dynamic [--runs R] [--max-size M] [--interpreter]] [--gpu]
//
// Seeds S, S+1, ..., S+N-1 are run; a failing seed reproduces alone with
// --seed it --graphs 1 --verbose (and --dynamic). Exit status 1 when any
// graph failed.
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "backend/interp/interpreter.h"
#include "backend/llvm/plan.h"
#include "cache/backend_choice.h"
#include "dynamic_random_graph.h"
#include "random_graph.h"

namespace {

// A crash (a miscompiled kernel writing out of bounds, an empty buffer read)
// still names its seed: the handler writes it and re-raises the signal.
volatile std::sig_atomic_t running_seed_high = 0, running_seed_low = 0;

void report_crash(int signal_number) {
  char text[96] = "\nfuzz_backend: crashed (signal ";
  size_t length = std::strlen(text);
  auto append_number = [&](uint64_t value) {
    char digits[24];
    int count = 0;
    do {
      digits[count++] = static_cast<char>('0' + value % 10);
      value /= 10;
    } while (value && count < 24);
    while (count > 0 && length + 1 < sizeof text) text[length++] = digits[--count];
  };
  append_number(static_cast<uint64_t>(signal_number));
  const char* middle = ") while running seed ";
  for (const char* c = middle; *c && length + 1 < sizeof text; ++c) text[length++] = *c;
  append_number((static_cast<uint64_t>(static_cast<uint32_t>(running_seed_high)) << 32) |
                static_cast<uint32_t>(running_seed_low));
  if (length + 1 < sizeof text) text[length++] = '\n';
  [[maybe_unused]] ssize_t written = write(STDERR_FILENO, text, length);
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

struct Arguments {
  uint64_t graphs = 1000;
  uint64_t seed = 1;
  int max_steps = 12;
  int large_percent = 3;
  bool verbose = false;
  bool stop = false;
  bool dynamic = false;
  int runs = 5;
  int max_size = 300;
  bool interpreter = false;
  bool gpu = false;
};

[[noreturn]] void usage(const char* problem) {
  std::fprintf(stderr,
               "fuzz_backend: %s\n"
               "usage: fuzz_backend [--graphs N] [--seed S] [--max-steps K] [--large-percent P] [--verbose] [--stop]\n"
               "  --graphs N     number of random graphs (default 1000)\n"
               "  --seed S       seed of the first graph; graph i uses S + i (default 1)\n"
               "  --max-steps K  steps per graph, at most (default 12)\n"
               "  --large-percent P  per cent of graphs with large arrays: threads, row groups (default 3)\n"
               "  --verbose      print every graph's recipe and plan\n"
               "  --stop         stop at the first failure\n"
               "  --dynamic      shape-generic functions: one symbolic graph compiled once, run at several sizes\n"
               "  --runs R       with --dynamic: sizes each function runs at (default 5)\n"
               "  --max-size M   with --dynamic: largest size of a dynamic dimension (default 300)\n"
               "  --gpu          the cuda device's backend in place of the native one: an NVIDIA GPU, or the\n"
               "                 emulated device under KILN_CUDA_EMULATE=1\n"
               "  --interpreter  with --dynamic: the interpreter backend in place of the native one, which\n"
               "                 checks the generator, tracing and fitting alone\n",
               problem);
  std::exit(2);
}

uint64_t number(const char* text, const char* option) {
  char* end = nullptr;
  unsigned long long value = std::strtoull(text, &end, 10);
  if (!*text || *end) usage((std::string(option) + " needs a number, got '" + text + "'").c_str());
  return value;
}

Arguments parse(int argc, char** argv) {
  Arguments arguments;
  for (int i = 1; i < argc; ++i) {
    std::string option = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage((option + " needs a value").c_str());
      return argv[++i];
    };
    if (option == "--graphs") arguments.graphs = number(value(), "--graphs");
    else if (option == "--seed") arguments.seed = number(value(), "--seed");
    else if (option == "--max-steps") arguments.max_steps = static_cast<int>(number(value(), "--max-steps"));
    else if (option == "--large-percent")
      arguments.large_percent = static_cast<int>(number(value(), "--large-percent"));
    else if (option == "--verbose") arguments.verbose = true;
    else if (option == "--stop") arguments.stop = true;
    else if (option == "--dynamic") arguments.dynamic = true;
    else if (option == "--runs") arguments.runs = static_cast<int>(number(value(), "--runs"));
    else if (option == "--max-size") arguments.max_size = static_cast<int>(number(value(), "--max-size"));
    else if (option == "--interpreter") arguments.interpreter = true;
    else if (option == "--gpu") arguments.gpu = true;
    else if (option == "--help" || option == "-h")
      usage("runs random graphs through the LLVM backend and the interpreter");
    else usage(("unknown option " + option).c_str());
  }
  if (arguments.max_steps < 2) usage("--max-steps must be at least 2");
  if (arguments.large_percent < 0 || arguments.large_percent > 100) usage("--large-percent must be in [0, 100]");
  if (arguments.runs < 1) usage("--runs must be at least 1");
  if (arguments.max_size < 2) usage("--max-size must be at least 2");
  if (arguments.interpreter && !arguments.dynamic) usage("--interpreter needs --dynamic");
  if (arguments.gpu && arguments.interpreter) usage("--gpu and --interpreter each name the backend: give one");
  return arguments;
}

void set_running_seed(uint64_t seed) {
  running_seed_high = static_cast<std::sig_atomic_t>(seed >> 32);
  running_seed_low = static_cast<std::sig_atomic_t>(seed & 0xffffffffu);
}

std::string seed_list(const std::vector<uint64_t>& seeds) {
  std::string text;
  for (uint64_t seed : seeds) text += " " + std::to_string(seed);
  return text;
}

int fuzz_dynamic(const Arguments& arguments, const kiln::runtime::Backend* gpu_backend) {
  using namespace kiln;
  testing::DynamicGraphOptions options;
  options.max_steps = arguments.max_steps;
  options.min_steps = std::min(options.min_steps, options.max_steps);
  options.runs = arguments.runs;
  options.max_size = arguments.max_size;
  const runtime::Backend& backend = gpu_backend             ? *gpu_backend
                                    : arguments.interpreter ? interp::interpreter_backend()
                                                            : cache::default_backend();

  auto start = std::chrono::steady_clock::now();
  std::vector<uint64_t> failing, invalid;
  int64_t nodes = 0, symbolic_nodes = 0, runs = 0, two_symbols = 0, outputs = 0, exact_outputs = 0;
  std::map<std::string, int64_t> operations;  // primitives of nodes whose numbers follow the symbols
  for (uint64_t i = 0; i < arguments.graphs; ++i) {
    uint64_t seed = arguments.seed + i;
    set_running_seed(seed);
    std::optional<testing::DynamicRandomGraph> graph;
    try {
      graph.emplace(testing::make_dynamic_random_graph(seed, options));
    } catch (const std::exception& error) {
      invalid.push_back(seed);
      std::cout << "GENERATOR ERROR, seed " << seed << ": " << error.what() << "\n";
      if (arguments.stop) break;
      continue;
    }
    if (graph->graph) {
      const ir::Graph& ir = detail::ir_of(*graph->graph);
      nodes += static_cast<int64_t>(ir.nodes.size());
      for (const ir::Node& node : ir.nodes)
        if (node.symbolic) {
          ++symbolic_nodes;
          ++operations[std::string(ir::primitive_name(node.op))];
        }
      two_symbols += ir.symbols > 1;
    }
    runs += static_cast<int64_t>(graph->runs.size());
    for (const testing::DynamicRun& run : graph->runs)
      for (const testing::Tolerance& tolerance : run.tolerances) {
        ++outputs;
        exact_outputs += tolerance.exact();
      }
    if (arguments.verbose) {
      std::cout << graph->recipe;
      if (graph->graph) std::cout << graph->graph->to_string();
      std::cout << std::flush;
    }
    std::string report = testing::check_dynamic_random_graph(*graph, backend);
    if (!report.empty()) {
      failing.push_back(seed);
      std::cout << "FAILURE\n" << report << std::endl;
      if (arguments.stop) break;
    } else if (arguments.verbose) {
      std::cout << "ok\n\n";
    }
    if ((i + 1) % 500 == 0)
      std::cerr << (i + 1) << " functions, " << failing.size() << " failing, " << invalid.size()
                << " generator errors\n";
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "fuzz_backend --dynamic: " << arguments.graphs << " functions from seed " << arguments.seed << " in "
            << seconds << " s against the " << backend.name() << " backend; " << runs << " runs, " << outputs
            << " outputs compared (" << exact_outputs << " exactly); " << two_symbols << " functions of two symbols; "
            << nodes << " nodes, " << symbolic_nodes << " of them symbolic:\n";
  for (const auto& [name, count] : operations) std::cout << "  " << count << " " << name << "\n";
  if (!invalid.empty()) std::cout << invalid.size() << " generator errors, seeds:" << seed_list(invalid) << "\n";
  if (failing.empty() && invalid.empty()) {
    std::cout << "no failures\n";
    return 0;
  }
  if (!failing.empty()) std::cout << failing.size() << " failing functions, seeds:" << seed_list(failing) << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kiln;
  Arguments arguments = parse(argc, argv);
  for (int signal_number : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(signal_number, report_crash);
  // The backend jit's device "cuda" gets (cache/backend_choice.h).
  const runtime::Backend* gpu_backend = nullptr;
  if (arguments.gpu) {
    try {
      gpu_backend = cache::device_backend("cuda", "fuzz_backend", Location());
    } catch (const Error& error) {
      std::cerr << "fuzz_backend: " << error.what() << "\n";
      return 2;
    }
  }
  if (arguments.dynamic) return fuzz_dynamic(arguments, gpu_backend);
  testing::RandomGraphOptions options;
  options.max_steps = arguments.max_steps;
  options.large_percent = arguments.large_percent;
  options.min_steps = std::min(options.min_steps, options.max_steps);

  auto start = std::chrono::steady_clock::now();
  std::vector<uint64_t> failing, invalid;
  // What the graphs exercised, so a run shows it covered the backend.
  std::map<std::string, int64_t> steps;
  int64_t nodes = 0, outputs = 0, exact_outputs = 0;
  for (uint64_t i = 0; i < arguments.graphs; ++i) {
    uint64_t seed = arguments.seed + i;
    set_running_seed(seed);
    std::optional<testing::RandomGraph> graph;
    try {
      graph.emplace(testing::make_random_graph(seed, options));
    } catch (const std::exception& error) {
      invalid.push_back(seed);
      std::cout << "GENERATOR ERROR, seed " << seed << ": " << error.what() << "\n";
      if (arguments.stop) break;
      continue;
    }
    const ir::Graph& ir = detail::ir_of(graph->test->graph);
    nodes += static_cast<int64_t>(ir.nodes.size());
    for (const testing::Tolerance& tolerance : graph->tolerances) {
      ++outputs;
      exact_outputs += tolerance.exact();
    }
    llvm_backend::Plan plan = llvm_backend::plan_graph(ir);
    if (!plan.row_groups.empty()) steps["row groups"] += static_cast<int64_t>(plan.row_groups.size());
    for (const llvm_backend::Step& step : plan.steps) {
      switch (step.kind) {
        case llvm_backend::Step::Kind::kernel: {
          const llvm_backend::Kernel& kernel = plan.kernels[static_cast<size_t>(step.kernel)];
          if (kernel.kind == llvm_backend::Kernel::Kind::elementwise) ++steps["elementwise kernels"];
          else if (kernel.chunked) ++steps["reduce kernels in slices across threads"];
          else if (kernel.kind == llvm_backend::Kernel::Kind::reduce) ++steps["reduce kernels"];
          else ++steps["kernels of " + std::string(ir::primitive_name(ir.nodes[static_cast<size_t>(kernel.root)].op))];
          break;
        }
        case llvm_backend::Step::Kind::matmul:
          ++steps[step.transpose_a || step.transpose_b ? "matmuls, transposed" : "matmuls"];
          break;
        case llvm_backend::Step::Kind::view: ++steps["views"]; break;
        case llvm_backend::Step::Kind::reference:
          ++steps["reference " + std::string(ir::primitive_name(ir.nodes[static_cast<size_t>(step.value)].op))];
          break;
        default: ++steps["other steps (folded constants)"]; break;
      }
    }
    if (arguments.verbose) {
      std::cout << graph->recipe << graph->test->graph.to_string() << "plan:\n"
                << testing::describe_plan(graph->test->graph) << std::flush;
    }
    std::string report =
        arguments.gpu ? testing::check_random_graph(*graph, *gpu_backend) : testing::check_random_graph(*graph);
    if (!report.empty()) {
      failing.push_back(seed);
      std::cout << "FAILURE\n" << report << std::endl;
      if (arguments.stop) break;
    } else if (arguments.verbose) {
      std::cout << "ok\n\n";
    }
    if ((i + 1) % 500 == 0)
      std::cerr << (i + 1) << " graphs, " << failing.size() << " failing, " << invalid.size() << " generator errors\n";
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::cout << "fuzz_backend: " << arguments.graphs << " graphs from seed " << arguments.seed << " in " << seconds
            << " s; " << nodes << " nodes, " << outputs << " outputs (" << exact_outputs << " compared exactly)\n";
  for (const auto& [name, count] : steps) std::cout << "  " << count << " " << name << "\n";
  if (!invalid.empty()) std::cout << invalid.size() << " generator errors, seeds:" << seed_list(invalid) << "\n";
  if (failing.empty() && invalid.empty()) {
    std::cout << "no failures\n";
    return 0;
  }
  if (!failing.empty()) std::cout << failing.size() << " failing graphs, seeds:" << seed_list(failing) << "\n";
  return 1;
}
