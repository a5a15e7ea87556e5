// KILN_BACKEND picks the backend behind jit: the native LLVM backend
// (default) or the reference interpreter. Also the input binding both share.
#include <cstdlib>
#include <cstring>
#include <cstdio>

#include "core/error_format.h"
#include "runtime/executable.h"

namespace kiln::llvm_backend {
const runtime::Backend& llvm_backend();
}

namespace kiln::runtime {

void bind_inputs(std::vector<Array>& values, const ir::Graph& graph, const std::vector<ir::ValueId>& ids,
                 std::span<const Array> arrays, const char* what) {
  if (ids.size() != arrays.size())
    detail::raise("run", "graph '" + graph.name + "' takes " + std::to_string(ids.size()) + " " + what + ", got " +
                             std::to_string(arrays.size()),
                  Location::current());
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto& expected = graph.nodes[static_cast<size_t>(ids[i])].type;
    const auto& impl = detail::impl_of(arrays[i], "run", Location::current());
    if (impl.trace || impl.type.dtype != expected.dtype || impl.type.shape != expected.shape)
      detail::raise("run", std::string(what) + " " + std::to_string(i) + " of graph '" + graph.name +
                               "' must be a concrete " + expected.to_string() + ", got " + impl.type.to_string(),
                    Location::current());
    values[static_cast<size_t>(ids[i])] = arrays[i];
  }
}

const Backend& default_backend() {
  static const Backend& chosen = [] () -> const Backend& {
    const char* name = std::getenv("KILN_BACKEND");
    if (!name || !*name || std::strcmp(name, "llvm") == 0) return llvm_backend::llvm_backend();
    if (std::strcmp(name, "interp") == 0) return interpreter_backend();
    std::fprintf(stderr, "kiln: KILN_BACKEND=%s is unknown (llvm or interp); using llvm\n", name);
    return llvm_backend::llvm_backend();
  }();
  return chosen;
}

}  // namespace kiln::runtime
