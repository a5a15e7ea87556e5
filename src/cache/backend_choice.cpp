// The backend choice (see the header).
#include "cache/backend_choice.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backend/interp/interpreter.h"
#include "backend/llvm/backend.h"

namespace kiln::cache {

const runtime::Backend& default_backend() {
  static const runtime::Backend& chosen = []() -> const runtime::Backend& {
    const char* name = std::getenv("KILN_BACKEND");
    if (!name || !*name || std::strcmp(name, "llvm") == 0) return llvm_backend::llvm_backend();
    if (std::strcmp(name, "interp") == 0) return interp::interpreter_backend();
    std::fprintf(stderr, "kiln: KILN_BACKEND=%s is unknown (llvm or interp); using llvm\n", name);
    return llvm_backend::llvm_backend();
  }();
  return chosen;
}

}  // namespace kiln::cache
