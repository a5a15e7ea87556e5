// Compiled eager operations: an eager operation on a large array is traced
// into a tiny graph and looked up in the process-wide graph cache, so each
// (operation, dtypes, shapes) compiles once — and elementwise kernels, whose
// code does not depend on the shape, once per operation and dtypes. The ops
// layer calls this through the hook installed here (ops/common/apply.h).
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "cache/graph_cache.h"
#include "ops/common/apply.h"

namespace kiln::detail {

namespace {
// Below this, the trace and cache lookup (a few microseconds) would cost more
// than the reference kernel.
constexpr int64_t compiled_threshold = int64_t{1} << 14;

bool native_backend() {
  static const bool native = [] {
    const char* name = std::getenv("KILN_BACKEND");
    return !name || !*name || std::strcmp(name, "interp") != 0;
  }();
  return native;
}

bool wants(int64_t elements, bool native_rounding) {
  return (native_rounding || elements >= compiled_threshold) && native_backend();
}

Array run_compiled(std::span<const Array> inputs, FunctionRef<Array(std::span<const Array>)> build) {
  std::vector<Array> placeholders;
  std::optional<Graph> graph;
  std::vector<Array> captures;
  {
    TraceSession session("eager", Location::current());
    placeholders.reserve(inputs.size());
    for (const Array& input : inputs) placeholders.push_back(session.argument(input));
    Array result = build(placeholders);
    graph = session.finish({result});
    captures = session.captured();
  }
  const auto& shared = graph->shared();
  cache::GraphLookup lookup = cache::get_or_compile(shared, cache::graph_key(*shared));
  return lookup.executable->run(inputs, captures).at(0);
}

constexpr EagerCompiler compiler{&wants, &run_compiled};
}  // namespace

bool connect_compiler() {
  install_eager_compiler(&compiler);
  return true;
}

}  // namespace kiln::detail
