// KILN_BACKEND picks the backend behind jit: the native LLVM backend
// (default) or the reference interpreter.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime/executable.h"

namespace kiln::llvm_backend {
const runtime::Backend& llvm_backend();
}

namespace kiln::runtime {

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
