// Compiled code as an object file: what the JIT links, and what a
// persistent cache entry keeps so a later process links it again without
// running LLVM's optimizer or code generator.
#pragma once

#include <string>
#include <vector>

namespace kiln::llvm_backend {

struct ObjectCode {
  std::string bytes;                 // an ELF relocatable object for this machine
  std::vector<std::string> symbols;  // the functions looked up in it, in order
};

}  // namespace kiln::llvm_backend
