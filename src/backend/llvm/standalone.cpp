// Standalone native kernels (see the header).
#include "backend/llvm/standalone.h"

#include <stdexcept>

namespace kiln::llvm_backend {

bool standalone_supported(const ir::Node&) { return false; }

CompiledKernel emit_standalone(llvm::IRBuilder<>&, llvm::Function*, const ir::Graph&, const ir::Node& node) {
  throw std::logic_error("kiln LLVM backend: no standalone lowering for " + std::string(ir::primitive_name(node.op)));
}

}  // namespace kiln::llvm_backend
