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
  struct Linked {
    std::vector<void*> addresses;  // of the symbols asked for, in order
    // Keeps the module linked; the last copy's release unlinks it and frees
    // its memory (without this, every module ever compiled stayed mapped:
    // a long-running process ran out of mappings after ~45,000 graphs).
    std::shared_ptr<const void> code;
  };
  /// Optimizes, compiles and links `module`, then returns the addresses of
  /// `symbols`. Thread-safe. If `dump_prefix` is set, writes its optimized IR
  /// (.ll) and assembly (.s) there.
  /// kernels: loop nests called by the thread pool; native_loop: a loop whose
  /// kernels are inlined into it (native_loop.h), cleaned up further.
  enum class Pipeline : uint8_t { kernels, native_loop };
  Linked compile(std::unique_ptr<llvm::Module> module, std::unique_ptr<llvm::LLVMContext> context,
                 const std::vector<std::string>& symbols, const std::string& dump_prefix = "",
                 Pipeline pipeline = Pipeline::kernels);
  const std::string& cpu() const;
  /// Modules linked now (compiled and not yet unlinked).
  size_t linked_modules() const;

 private:
  Engine();
  struct State;
  // Shared with every linked module, which must unlink before the JIT goes.
  std::shared_ptr<State> state_;
};

}  // namespace kiln::llvm_backend
