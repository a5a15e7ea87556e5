// The kernels of a plan compiled as one module: each kernel's key, the
// process-wide kernel cache, and the constants each use passes (see the
// header). The loop nests themselves are kernel_emitter.h's.
#include "backend/llvm/codegen.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <thread>
#include <unordered_map>

#include "backend/llvm/engine.h"
#include "backend/llvm/kernel_cache.h"
#include "backend/llvm/kernel_emitter.h"
#include "runtime/compile_profile.h"
#include "runtime/thread_pool.h"
#include "telemetry/timeline.h"

namespace kiln::llvm_backend {

using ir::Primitive;

namespace {

// Kernels weighing less than this in all (compile_weight: six simple ones)
// compile in one module: a second module's fixed cost (a few milliseconds)
// would eat what the second core saves. Four sums weigh more: the first
// tier of the MLP step compiled them in one 14 ms module.
constexpr int parallel_minimum_weight = 12;

std::string ops_text(const ir::Node& node) {
  std::string text;
  for (size_t k = 0; k < node.attrs.ints.size(); ++k)
    text += (node.symbolic ? symbolic_int(node, k).to_string() : std::to_string(node.attrs.ints[k])) + ",";
  if (node.op == Primitive::literal) {
    // Exact bits: printed digits could make two different values one key.
    double value = node.attrs.scalar.as_double();
    uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    text += "=" + std::to_string(node.attrs.scalar.as_int()) + "/" + std::to_string(bits);
  }
  if (node.op == Primitive::convert) text += std::string(dtype_name(node.attrs.dtype));
  return text;
}

// Everything the generated code depends on, so equal kernels compile once per
// process: operations, dtypes, attributes, literal values, wiring, and the
// shapes — except for flat kernels, whose code is the same for every shape.
// Symbolic dimensions are named by their polynomials ("[s0,64]"): such a
// kernel reads them from its constants, so it serves every size.
std::string kernel_key(const ir::Graph& graph, const Kernel& kernel) {
  bool flat = is_flat(graph, kernel);
  std::string key = kernel.chunked                            ? "reduce chunked"
                    : kernel.kind == Kernel::Kind::reduce     ? "reduce"
                    : kernel.kind == Kernel::Kind::standalone ? "standalone"
                    : kernel.prefetch                         ? "flat prefetching"
                    : flat                                    ? "flat"
                                                              : "rows";
  auto shape_text = [&](const ir::Node& node) {
    if (!flat)
      return node.symbolic ? ir::symbolic_shape_string(ir::symbolic_shape(node)) : shape_string(node.type.shape);
    return std::string(is_single_value(node) ? "1" : "n");
  };
  auto local = [&](ir::ValueId id) {
    for (size_t k = 0; k < kernel.leaves.size(); ++k)
      if (kernel.leaves[k] == id) return "L" + std::to_string(k);
    for (size_t k = 0; k < kernel.region.size(); ++k)
      if (kernel.region[k] == id) return "R" + std::to_string(k);
    return std::string("?");
  };
  for (ir::ValueId leaf : kernel.leaves) {
    const ir::Node& node = graph.nodes[static_cast<size_t>(leaf)];
    key += "|leaf " + std::string(dtype_name(node.type.dtype)) + shape_text(node);
  }
  // Which values it writes: kernels merged from siblings or consumers can
  // share every operation and differ only in which value goes to the first output.
  key += "|root " + local(kernel.root);
  for (ir::ValueId extra : kernel.extra_roots) key += "|out " + local(extra);
  for (ir::ValueId id : kernel.region) {
    const ir::Node& node = graph.nodes[static_cast<size_t>(id)];
    bool parameter = node.op == Primitive::literal && !baked_literal(graph, kernel, id);
    key += "|" + std::string(ir::primitive_name(node.op)) + " " + std::string(dtype_name(node.type.dtype)) +
           shape_text(node) + " " + (parameter ? std::string("param") : ops_text(node));
    for (ir::ValueId input : node.inputs) key += " " + local(input);
  }
  return key;
}

// Roughly how long a kernel takes to optimize and generate code for, in
// units of the simplest kernel's share of a module, so that two modules
// compiled at once take about as long as each other. Measured on the MLP
// step's kernels (3-4 ms for a simple one, alone in a module): a reduction
// adding whole rows (its tiles and widened accumulators make several
// vectorized loops) and a standalone kernel cost about five simple ones, a
// transcendental function about one more each.
int compile_weight(const ir::Graph& graph, const Kernel& kernel) {
  int weight = 2;
  const ir::Node& root = graph.nodes[static_cast<size_t>(kernel.root)];
  if (kernel.kind == Kernel::Kind::standalone) weight += 8;
  if (kernel.kind == Kernel::Kind::reduce && !root.inputs.empty()) {
    const ir::Node& input = graph.nodes[static_cast<size_t>(root.inputs[0])];
    std::vector<size_t> axes(root.attrs.ints.begin(), root.attrs.ints.end());
    std::sort(axes.begin(), axes.end());
    weight += accumulates_rows(input.type.shape, axes, root.type.dtype) ? 8 : 2;
  }
  for (ir::ValueId id : kernel.region) weight += operation_cost(graph.nodes[static_cast<size_t>(id)].op) / 8;
  return weight;
}

// The kernels split into `count` groups of about equal weight: heaviest first,
// each to the lightest group so far.
std::vector<std::vector<size_t>> weighted_groups(const ir::Graph& graph, const Plan& plan, std::vector<size_t> kernels,
                                                 size_t count) {
  std::vector<int> weights(plan.kernels.size(), 0);
  for (size_t k : kernels) weights[k] = compile_weight(graph, plan.kernels[k]);
  std::stable_sort(kernels.begin(), kernels.end(), [&](size_t a, size_t b) { return weights[a] > weights[b]; });
  std::vector<std::vector<size_t>> groups(count);
  std::vector<int> totals(count, 0);
  for (size_t k : kernels) {
    size_t lightest = static_cast<size_t>(std::min_element(totals.begin(), totals.end()) - totals.begin());
    groups[lightest].push_back(k);
    totals[lightest] += weights[k];
  }
  return groups;
}

}  // namespace

std::vector<uint64_t> kernel_constants(const ir::Graph& graph, const Kernel& kernel, std::span<const int64_t> values) {
  std::vector<uint64_t> constants;
  for (ir::ValueId id : kernel.region) {
    const ir::Node& node = graph.nodes[static_cast<size_t>(id)];
    if (node.op != Primitive::literal || baked_literal(graph, kernel, id)) continue;
    Scalar scalar = literal_at(node, values);
    uint64_t bits = 0;
    if (is_floating(node.type.dtype)) {
      double value = scalar.as_double();
      std::memcpy(&bits, &value, sizeof bits);
    } else {
      bits = static_cast<uint64_t>(scalar.as_int());
    }
    constants.push_back(bits);
  }
  // Exactly the graph's symbols (a loop's body is passed its enclosing graph's values).
  if (!values.empty())
    for (size_t id = 0; id < static_cast<size_t>(graph.symbols); ++id)
      constants.push_back(static_cast<uint64_t>(id < values.size() ? values[id] : 0));
  return constants;
}

std::vector<CompiledKernel> compile_kernels(const ir::Graph& graph, const Plan& plan, const std::string& name,
                                            const std::string& dump_prefix) {
  std::vector<CompiledKernel> kernels(plan.kernels.size());
  std::vector<std::string> keys(plan.kernels.size());
  std::vector<size_t> source(plan.kernels.size());  // the use whose code each use runs: itself or an earlier twin
  std::vector<size_t> missing;
  std::unordered_map<std::string, size_t> first_of;
  const runtime::CodeQuality quality = runtime::code_quality();
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    keys[k] = kernel_key(graph, plan.kernels[k]);
    source[k] = k;
    if (std::optional<CompiledKernel> found = find_compiled_kernel(keys[k], quality == runtime::CodeQuality::quick)) {
      kernels[k] = *found;
    } else if (auto [first, fresh] = first_of.emplace(keys[k], k); fresh) {
      missing.push_back(k);
    } else {
      source[k] = first->second;
    }
  }
  if (runtime::CompileProfile* profile = runtime::current_compile_profile())
    profile->count_kernels(static_cast<int>(missing.size()), static_cast<int>(plan.kernels.size() - missing.size()));
  // Two modules compiled at once where there are cores for it: optimizing
  // and generating code is most of a cold compile, and modules share nothing.
  // A background compile keeps to its own thread unless kiln has cores to
  // spare: the calls it serves meanwhile run op by op on the others (on 2
  // cores a helper thread made the MLP step's first call 3x slower).
  runtime::CompileProfile* profile = runtime::current_compile_profile();
  bool background = profile && profile->abandonable();
  int cores_needed = background ? 4 : 2;
  int total_weight = 0;
  for (size_t k : missing) total_weight += compile_weight(graph, plan.kernels[k]);
  bool parallel = missing.size() >= 2 && total_weight >= parallel_minimum_weight;
  std::vector<std::vector<size_t>> groups =
      weighted_groups(graph, plan, missing, parallel && runtime::thread_count() >= cores_needed ? 2 : 1);
  auto compile_group = [&](const std::vector<size_t>& group) {
    if (group.empty()) return;
    auto context = std::make_unique<llvm::LLVMContext>();
    Engine& engine = Engine::instance();
    std::unique_ptr<llvm::Module> module = engine.new_module(name, *context);
    std::string prefix = engine.fresh_symbol_prefix() + "kernel_";
    std::vector<std::string> symbols;
    {
      runtime::PhaseTimer timer(runtime::CompilePhase::generate);
      for (size_t k : group) {
        symbols.push_back(prefix + std::to_string(k));
        KernelEmitter emitter(*module, graph, plan.kernels[k], symbols.back());
        kernels[k] = emitter.emit();
      }
    }
    std::string dump = dump_prefix.empty() || &group == &groups.front() ? dump_prefix : dump_prefix + "-part2";
    Engine::Linked linked = engine.compile(std::move(module), std::move(context), symbols, dump);
    for (size_t m = 0; m < group.size(); ++m) {
      size_t k = group[m];
      kernels[k].function = reinterpret_cast<KernelFunction>(linked.addresses[m]);
      kernels[k].code = linked.code;
      kernels[k].object = linked.object;
      kernels[k].symbol = symbols[m];
      kernels[k].quick = quality == runtime::CodeQuality::quick;
      kernels[k] = remember_compiled_kernel(keys[k], kernels[k]);
    }
  };
  if (groups.size() == 2) {
    std::exception_ptr failed;
    std::thread helper([&] {
      runtime::CompileProfileScope scope(profile);
      runtime::CodeQualityScope same_quality(quality);
      telemetry::timeline::name_this_thread("kiln compile helper");
      try {
        compile_group(groups[1]);
      } catch (...) {
        failed = std::current_exception();
      }
    });
    try {
      compile_group(groups[0]);
    } catch (...) {
      helper.join();
      throw;
    }
    helper.join();
    if (failed) std::rethrow_exception(failed);
  } else {
    compile_group(groups[0]);
  }
  // Duplicates within this graph, and the parallel range of each use (a flat
  // kernel's range depends on this graph's shapes, not the cached one's).
  // Read from this call's copies: the bounded cache may already have evicted them.
  const std::vector<CompiledKernel> compiled = kernels;
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    const CompiledKernel& cached = compiled[source[k]];
    kernels[k].function = cached.function;
    kernels[k].code = cached.code;
    kernels[k].object = cached.object;
    kernels[k].symbol = cached.symbol;
    kernels[k].quick = cached.quick;
    kernels[k].constants = kernel_constants(graph, plan.kernels[k]);
    if (is_flat(graph, plan.kernels[k])) {
      kernels[k].range = kernel_range(graph, plan.kernels[k]);
      kernels[k].work_per_iteration = 1;
      kernels[k].range_count = SymbolicCount(kernel_range_size(graph, plan.kernels[k]));
      kernels[k].work_count = SymbolicCount(ir::DimExpr::constant(1));
    } else {
      kernels[k].range = cached.range;
      kernels[k].work_per_iteration = cached.work_per_iteration;
      kernels[k].range_count = cached.range_count;
      kernels[k].work_count = cached.work_count;
    }
  }
  return kernels;
}

}  // namespace kiln::llvm_backend
