// The process-wide LLVM JIT: ORC LLJIT targeting the host CPU (its name and
// features), an O3 pipeline with glibc's vector math library known to the
// vectorizer, and symbol resolution against the process (libm, libmvec).
#pragma once

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <memory>
#include <string>
#include <vector>

namespace kiln::llvm_backend {

class Engine {
 public:
  static Engine& instance();

  /// A fresh module configured for the host target.
  std::unique_ptr<llvm::Module> new_module(const std::string& name, llvm::LLVMContext& context) const;
  /// Optimizes, compiles and links `module`, then returns the addresses of
  /// `symbols`. Thread-safe. If `dump_prefix` is set, writes its optimized IR
  /// (.ll) and assembly (.s) there.
  std::vector<void*> compile(std::unique_ptr<llvm::Module> module, std::unique_ptr<llvm::LLVMContext> context,
                             const std::vector<std::string>& symbols, const std::string& dump_prefix = "");
  const std::string& cpu() const;

 private:
  Engine();
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace kiln::llvm_backend
