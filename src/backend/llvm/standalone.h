// Native kernels for primitives that do not fuse (gathers, scatters,
// movement with general index maps, scans, argument reductions, random
// bits...): each becomes a kernel of its own, computing one node from its
// inputs in memory.
#pragma once

#include <string>
#include <vector>

#include "backend/llvm/codegen.h"

// Declared rather than included, so that planning code and tests can ask
// standalone_supported without LLVM's headers; IRBuilder<> is this type.
namespace llvm {
class Function;
class ConstantFolder;
class IRBuilderDefaultInserter;
template <typename FolderTy, typename InserterTy>
class IRBuilder;
}  // namespace llvm

namespace kiln::llvm_backend {

/// Whether `node` (of `graph`) has a standalone native lowering for its
/// dtypes (and, in a symbolic graph, for every size of its symbols).
bool standalone_supported(const ir::Graph& graph, const ir::Node& node);
/// Whether it would have one in a graph of fixed sizes: a symbolic node of
/// a primitive whose native kernel serves one size runs its reference kernel.
bool standalone_supported_at_fixed_sizes(const ir::Graph& graph, const ir::Node& node);

/// The values of ops::NativeKernel that no file of kernels emits (empty when
/// every row's named kernel can be compiled); the backend's tests check it.
std::vector<std::string> standalone_kernels_missing();

/// Emits the body of `function`, whose parameters are
///   (int64 begin, int64 end, ptr constants, ptr output, ptr input0, ptr input1, ...)
/// with the inputs in node.inputs order (all noalias, contiguous row-major, bool as i8).
/// The builder is positioned in the entry block; the emitter adds the final
/// `ret void`. Returns the parallel range split over [begin, end) and the work
/// per iteration (for the threading decision).
CompiledKernel emit_standalone(llvm::IRBuilder<llvm::ConstantFolder, llvm::IRBuilderDefaultInserter>& builder,
                               llvm::Function* function, const ir::Graph& graph, const ir::Node& node);

}  // namespace kiln::llvm_backend
