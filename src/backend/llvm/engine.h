// The process-wide LLVM JIT: ORC LLJIT targeting the host CPU (its name and
// features), an O3 pipeline with glibc's vector math library known to the
// vectorizer, and symbol resolution against the process (libm, libmvec).
#pragma once

#include <llvm/ExecutionEngine/Orc/Core.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <memory>
#include <string>
#include <vector>

#include "backend/llvm/object_code.h"

namespace kiln::llvm_backend {

class Engine {
 public:
  static Engine& instance();

  /// Generates code for a small function on the calling thread, unless some
  /// thread generated code before: the code generator's function-local
  /// statics (LLVM's value type tables, its pass-print lists) then exist
  /// before a compile is handed to kiln's compile thread, and their
  /// destructors run after the exit hook that stops that thread, not while
  /// it generates code.
  void make_code_generator_statics();

  /// A fresh module configured for the host target.
  std::unique_ptr<llvm::Module> new_module(const std::string& name, llvm::LLVMContext& context) const;
  struct Linked {
    std::vector<void*> addresses;  // of the object's symbols, in order
    // Keeps the module linked; the last copy's release unlinks it and frees
    // its memory (without this, every module ever compiled stayed mapped:
    // a long-running process ran out of mappings after ~45,000 graphs).
    std::shared_ptr<const void> code;
    std::shared_ptr<const ObjectCode> object;
  };
  /// Optimizes, compiles and links `module`, then returns the addresses of
  /// `symbols`, with machine code of this thread's runtime::code_quality().
  /// Thread-safe. If `dump_prefix` is set, writes its optimized IR (.ll) and
  /// assembly (.s) there.
  /// kernels: loop nests called by the thread pool; native_loop: a loop whose
  /// kernels are inlined into it (native_loop.h), cleaned up further.
  enum class Pipeline : uint8_t { kernels, native_loop };
  Linked compile(std::unique_ptr<llvm::Module> module, std::unique_ptr<llvm::LLVMContext> context,
                 const std::vector<std::string>& symbols, const std::string& dump_prefix = "",
                 Pipeline pipeline = Pipeline::kernels);
  /// Links an object compiled earlier (possibly by another process) without
  /// optimizing or generating code. Thread-safe.
  Linked load(const std::shared_ptr<const ObjectCode>& object);
  /// A prefix for the symbols of a new module, unique to this module and process.
  std::string fresh_symbol_prefix();
  const std::string& cpu() const;
  /// The CPU features code is generated for ("+avx2,+fma,...").
  std::string features() const;
  /// The bytes of the widest vector registers kernels use: 64 with AVX-512
  /// (kernels prefer 512-bit vectors), 32 with AVX, else 16.
  int vector_bytes() const;
  std::string target_triple() const;
  /// Modules linked now (compiled and not yet unlinked).
  size_t linked_modules() const;
  /// Modules optimized and code-generated so far in this process.
  size_t modules_compiled() const;
  /// Of those, the ones with quick machine code (runtime::CodeQuality).
  size_t quick_modules_compiled() const;

 private:
  Engine();
  std::vector<void*> add_object(llvm::orc::JITDylib& library, const llvm::orc::ResourceTrackerSP& tracker,
                                const ObjectCode& object);
  struct State;
  // Shared with every linked module, which must unlink before the JIT goes.
  std::shared_ptr<State> state_;
};

}  // namespace kiln::llvm_backend
