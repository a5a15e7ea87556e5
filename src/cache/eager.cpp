// Compiled eager operations: an eager operation on a large array is traced
// into a tiny graph and looked up in the process-wide graph cache, so each
// (operation, dtypes, shapes) compiles once — and elementwise kernels, whose
// code does not depend on the shape, once per operation and dtypes. The ops
// layer calls this through the hook installed here (ops/common/apply.h) before main.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "cache/backend_choice.h"
#include "cache/graph_cache.h"
#include "cache/tiered_compile.h"
#include "core/lru_map.h"
#include "ops/common/apply.h"
#include "runtime/compile_profile.h"

namespace kiln::detail {

namespace {
// Below this, the trace and cache lookup (a few microseconds) would cost more
// than the reference kernel.
constexpr int64_t compiled_threshold = int64_t{1} << 14;

bool wants(int64_t elements, bool native_rounding) {
  return (native_rounding || elements >= compiled_threshold) && cache::native_backend_chosen();
}

TracedGraph trace_eager(std::span<const Array> inputs, FunctionRef<Array(std::span<const Array>)> build) {
  auto record = [&](TraceSession& session) {
    std::vector<Array> placeholders;
    placeholders.reserve(inputs.size());
    for (const Array& input : inputs) placeholders.push_back(trace_argument(session, input));
    return std::vector<Array>{build(placeholders)};
  };
  return trace("eager", Location::current(), record);
}

// The eager operations of a graph's first tier (runtime::CodeQuality::quick,
// interp/op_by_op.h) run interpreted code or quick kernels: their executables
// stay here rather than in the graph cache, whose eager entries plain eager
// code runs for good.
class QuickExecutables {
 public:
  std::shared_ptr<const runtime::Executable> get_or_compile(const std::shared_ptr<const ir::Graph>& graph,
                                                            uint64_t key) {
    cache::CachedGraph quick{key, graph};
    {
      std::lock_guard lock(mutex_);
      if (auto* found = executables_.find(quick)) return *found;
    }
    // Kiln's vector math needs no compile here: its code runs interpreted, with the same bits.
    const runtime::Backend& backend = cache::default_backend();
    std::shared_ptr<const runtime::Executable> executable = backend.interpret(graph);
    if (!executable) executable = backend.compile(graph);
    return remember(quick, std::move(executable));
  }

  /// The operation's interpreted code, or null where the backend has none:
  /// no compile, and the work spread over kiln's threads, where its
  /// reference kernel runs on one (a first tier's comparisons and selects),
  /// at any size (an Adam update of f32[784,512]: 0.06-0.14 ms an operation
  /// against 0.1-0.35).
  std::shared_ptr<const runtime::Executable> interpreted(const std::shared_ptr<const ir::Graph>& graph, uint64_t key) {
    cache::CachedGraph quick{key, graph};
    {
      std::lock_guard lock(mutex_);
      if (auto* found = executables_.find(quick)) return *found;
    }
    std::shared_ptr<const runtime::Executable> executable = cache::default_backend().interpret(graph, true);
    return executable ? remember(quick, std::move(executable)) : nullptr;
  }

 private:
  std::shared_ptr<const runtime::Executable> remember(const cache::CachedGraph& quick,
                                                      std::shared_ptr<const runtime::Executable> executable) {
    std::lock_guard lock(mutex_);
    if (auto* found = executables_.find(quick)) return *found;  // compiled by another thread meanwhile
    executables_.insert(quick, executable);
    return executable;
  }

  static constexpr size_t limit = 256;  // single operations: a few first tiers' worth

  std::mutex mutex_;
  LruMap<cache::CachedGraph, std::shared_ptr<const runtime::Executable>, cache::CachedGraphHash, cache::SameGraph>
      executables_{limit};
};

// Never destroyed: a first tier may run on kiln's threads while the process exits.
QuickExecutables& quick_executables() {
  static auto& executables = *new QuickExecutables;
  return executables;
}

// An elementwise operation the backend interprets with its compiled code's
// bits (kiln's vector math at any size, other operations where arrays are
// too large for reference kernels) need not wait for that code: its first
// calls run interpreted while it compiles on kiln's compile thread, as a
// jitted graph's first tier does. Everything else compiles at once.
CompileMode eager_compile_mode(const ir::Graph& graph) {
  if (cache::resolve_compile_mode(CompileMode::Auto) != CompileMode::Background || graph.outputs.size() != 1)
    return CompileMode::Sync;
  const ir::Node& node = graph.nodes[static_cast<size_t>(graph.outputs[0])];
  return cache::default_backend().interprets(graph, node) ? CompileMode::Background : CompileMode::Sync;
}

std::shared_ptr<const runtime::Executable> executable_for(const std::shared_ptr<const ir::Graph>& graph, uint64_t key) {
  if (runtime::code_quality() == runtime::CodeQuality::quick) return quick_executables().get_or_compile(graph, key);
  return cache::get_or_compile(graph, key, eager_compile_mode(*graph)).executable;
}

Array run_compiled(std::span<const Array> inputs, FunctionRef<Array(std::span<const Array>)> build, bool compile,
                   std::span<const char> donated) {
  TracedGraph traced = trace_eager(inputs, build);
  const std::shared_ptr<const ir::Graph>& graph = shared_ir(traced.graph);
  uint64_t key = cache::graph_key(*graph);
  if (!compile) {
    std::shared_ptr<const runtime::Executable> found = cache::find_compiled(graph, key);
    if (!found && runtime::code_quality() == runtime::CodeQuality::quick)
      found = quick_executables().interpreted(graph, key);
    return found ? found->run(inputs, traced.captured, donated).at(0) : Array();
  }
  return executable_for(graph, key)->run(inputs, traced.captured, donated).at(0);
}

CompiledEager prepare_compiled(std::span<const Array> inputs, FunctionRef<Array(std::span<const Array>)> build) {
  TracedGraph traced = trace_eager(inputs, build);
  const std::shared_ptr<const ir::Graph>& graph = shared_ir(traced.graph);
  std::shared_ptr<const runtime::Executable> executable = executable_for(graph, cache::graph_key(*graph));
  AbstractValue type = graph->nodes[static_cast<size_t>(graph->outputs.at(0))].type;
  return {[executable = std::move(executable), captured = std::move(traced.captured)](std::span<const Array> arrays) {
            return executable->run(arrays, captured).at(0);
          },
          std::move(type)};
}

constexpr EagerCompiler compiler{&wants, &run_compiled, &prepare_compiled};
}  // namespace

}  // namespace kiln::detail

// No program calls into this file, so the kiln target has the linker look for
// this symbol (kiln_cache's link options in CMakeLists.txt): that takes the
// file out of the static library into every program linked with kiln, and
// the initializer below installs the compiler before main.
// to_device's copies to a GPU live up here too: connected at the same time.
extern "C" void kiln_connect_eager_compiler() {
  kiln::detail::install_eager_compiler(&kiln::detail::compiler);
  kiln::cache::connect_devices();
}

namespace {
[[maybe_unused]] const bool eager_compiler_connected = (kiln_connect_eager_compiler(), true);
}  // namespace
