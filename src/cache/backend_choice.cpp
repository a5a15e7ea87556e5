// The backend choice (see the header).
#include "cache/backend_choice.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backend/interp/interpreter.h"
#include "backend/llvm/backend.h"

namespace kiln::cache {

namespace {
bool interpreter_chosen() {
  static const bool interpreter = [] {
    const char* name = std::getenv("KILN_BACKEND");
    if (!name || !*name || std::strcmp(name, "llvm") == 0) return false;
    if (std::strcmp(name, "interp") == 0) return true;
    std::fprintf(stderr, "kiln: KILN_BACKEND=%s is unknown (llvm or interp); using llvm\n", name);
    return false;
  }();
  return interpreter;
}
}  // namespace

const runtime::Backend& default_backend() {
  return interpreter_chosen() ? interp::interpreter_backend() : llvm_backend::llvm_backend();
}

bool native_backend_chosen() { return !interpreter_chosen(); }

}  // namespace kiln::cache
