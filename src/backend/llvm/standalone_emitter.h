// The machinery the standalone kernels share: the kernel function's
// parameters, loops, element loads and stores, and the split of a kernel's
// work into a parallel range. Each family of primitives has its own file
// (standalone_movement.cpp, standalone_indexing.cpp, standalone_compute.cpp).
//
// Elements that are only moved are copied as integers of their width, so
// every bit (NaN payloads, signed zeros) arrives unchanged.
//
// The movement kernels and take serve every size of a symbolic graph: their
// geometry is in Sizes, computed when the kernel runs where it depends on
// symbols (the kernel's constants hold the symbols' values), and their
// parallel range is a formula of the symbols. The other kernels are written
// for static shapes; a symbolic node of theirs runs its reference kernel.
#pragma once

#include <llvm/IR/IRBuilder.h>

#include <vector>

#include "backend/llvm/codegen.h"
#include "backend/llvm/loops.h"
#include "ops/common/lowering.h"

namespace kiln::llvm_backend::standalone {

class Emitter {
 public:
  Emitter(llvm::IRBuilder<>& builder, llvm::Function* function, const ir::Graph& graph, const ir::Node& node);

  llvm::IRBuilder<>& builder;
  llvm::Function* const function;
  const ir::Node& node;

  const ir::Node& input(size_t k) const;
  llvm::Value* input_pointer(size_t k) const { return function->getArg(4 + static_cast<unsigned>(k)); }
  llvm::Value* output_pointer() const { return function->getArg(3); }
  llvm::Value* begin() const { return function->getArg(0); }
  llvm::Value* end() const { return function->getArg(1); }

  llvm::Value* i64(int64_t value) { return builder.getInt64(static_cast<uint64_t>(value)); }
  /// A size as IR: a constant unless it depends on the symbols.
  llvm::Value* value(const Size& size) { return sizes_(size.expression); }
  std::vector<llvm::Value*> values(const std::vector<Size>& sizes) {
    std::vector<llvm::Value*> result;
    for (const Size& size : sizes) result.push_back(value(size));
    return result;
  }
  /// ceil(size / divisor) as IR.
  llvm::Value* pieces_of(const Size& size, int64_t divisor) {
    if (size.is_static()) return i64((size.hint + divisor - 1) / divisor);
    return builder.CreateUDiv(builder.CreateAdd(value(size), i64(divisor - 1)), i64(divisor));
  }
  /// An integer as wide as one element of `dtype` (i8 for bool): exact copies.
  llvm::Type* bits_type(DType dtype);
  /// The arithmetic type of `dtype`: i8 for bool (0 or 1), float, double, i32, i64.
  llvm::Type* value_type(DType dtype);

  llvm::Value* load(llvm::Type* type, llvm::Value* base, llvm::Value* offset);
  void store(llvm::Value* value, llvm::Value* base, llvm::Value* offset);
  /// A 0-d or 1-d integer input element as i64.
  llvm::Value* load_index(size_t input, llvm::Value* offset);

  /// to[to_offset + c] = from[from_offset + c] for c in [0, count).
  void copy(DType dtype, llvm::Value* to, llvm::Value* to_offset, llvm::Value* from, llvm::Value* from_offset,
            llvm::Value* count);
  /// to[offset + c] = value for c in [0, count).
  void fill(llvm::Value* value, llvm::Value* to, llvm::Value* offset, llvm::Value* count);

  llvm::Value* min(llvm::Value* a, llvm::Value* b) { return builder.CreateSelect(builder.CreateICmpSLT(a, b), a, b); }
  llvm::Value* max(llvm::Value* a, llvm::Value* b) { return builder.CreateSelect(builder.CreateICmpSGT(a, b), a, b); }
  llvm::Value* add(llvm::Value* a, llvm::Value* b) { return builder.CreateAdd(a, b); }
  llvm::Value* mul(llvm::Value* a, llvm::Value* b) { return builder.CreateMul(a, b); }
  llvm::Value* mul(llvm::Value* a, int64_t b) { return b == 1 ? a : builder.CreateMul(a, i64(b)); }
  llvm::Value* mul(llvm::Value* a, const Size& b) { return b.is_static() ? mul(a, b.hint) : mul(a, value(b)); }
  llvm::Value* sub(llvm::Value* a, llvm::Value* b) { return builder.CreateSub(a, b); }

  /// A stack array of `count` elements in the entry block (mem2reg/SROA
  /// territory when small; private to the calling thread).
  llvm::Value* stack_array(llvm::Type* type, int64_t count);

  /// for (counter = begin; counter < end; ++counter) body(counter)
  template <class Body>
  void loop(llvm::Value* first, llvm::Value* last, const char* name, Body body) {
    counted_loop(builder, first, last, name, body);
  }

  /// if (condition) body()
  template <class Body>
  void when(llvm::Value* condition, Body body) {
    llvm::LLVMContext& context = builder.getContext();
    auto* then = llvm::BasicBlock::Create(context, "then", function);
    auto* after = llvm::BasicBlock::Create(context, "endif", function);
    builder.CreateCondBr(condition, then, after);
    builder.SetInsertPoint(then);
    body();
    builder.CreateBr(after);
    builder.SetInsertPoint(after);
  }

  std::vector<llvm::Value*> decompose(llvm::Value* flat, const std::vector<int64_t>& extents) {
    return llvm_backend::decompose(builder, flat, extents);
  }
  std::vector<llvm::Value*> decompose_sizes(llvm::Value* flat, const std::vector<Size>& extents) {
    return llvm_backend::decompose(builder, flat, values(extents));
  }

  /// The parallel loop of most kernels: `rows` rows of `width` elements, each
  /// cut into pieces of at most max_piece_width elements so that a few long
  /// rows still spread over threads, and into narrower ones (down to
  /// min_piece_width) while there are fewer than wanted_pieces pieces: a
  /// scatter_add along axis 0 is one row as wide as a matrix row, whose
  /// columns are the only work to share. Calls body(row, column_begin,
  /// column_end).
  ///
  /// With symbolic sizes, the number of pieces is chosen at the hints and
  /// the width of a piece computed when the kernel runs (pieces past the
  /// end of a narrower row are empty); a symbolic size may be 0 at a call.
  template <class Body>
  CompiledKernel for_each_row_piece(const Size& rows, const Size& width, Body body) {
    CompiledKernel result;
    if (rows.is(0) || width.is(0)) return result;
    int64_t row_hint = std::max<int64_t>(rows.hint, 1), width_hint = std::max<int64_t>(width.hint, 1);
    int64_t pieces = (width_hint + max_piece_width - 1) / max_piece_width;
    if (row_hint * pieces < wanted_pieces)
      pieces = std::max(pieces, std::min((wanted_pieces + row_hint - 1) / row_hint, width_hint / min_piece_width));
    int64_t piece_width = (width_hint + pieces - 1) / pieces;
    result.range = rows.hint * pieces;
    result.work_per_iteration = piece_width;
    result.range_count = SymbolicCount(rows.expression * pieces);
    result.work_count = SymbolicCount(width.expression, pieces);
    llvm::Value* width_value = value(width);
    llvm::Value* symbolic_piece_width = width.is_static() ? nullptr : pieces_of(width, pieces);
    loop(begin(), end(), "piece", [&](llvm::Value* iteration) {
      std::vector<llvm::Value*> split = decompose_sizes(iteration, {rows, pieces});
      llvm::Value* column_begin =
          symbolic_piece_width ? mul(split[1], symbolic_piece_width) : mul(split[1], piece_width);
      llvm::Value* column_end =
          pieces == 1
              ? width_value
              : min(add(column_begin, symbolic_piece_width ? symbolic_piece_width : i64(piece_width)), width_value);
      body(split[0], column_begin, column_end);
    });
    return result;
  }

  static constexpr int64_t max_piece_width = 16384;
  static constexpr int64_t min_piece_width = 256;
  static constexpr int64_t wanted_pieces = 16;

 private:
  const ir::Graph& graph_;
  SizeEmitter sizes_;
};

/// An array seen as [outer, extent, inner] around one axis.
struct AxisView {
  int64_t outer = 1, extent = 1, inner = 1;
};
AxisView view_around(const Shape& shape, int64_t axis);

/// The same in sizes, for kernels that serve symbolic graphs.
struct AxisSizes {
  Size outer = 1, extent = 1, inner = 1;
};
AxisSizes sizes_around(const std::vector<Size>& shape, int64_t axis);

/// The emitters of the native kernels a primitive's row may name
/// (ops::NativeKernel); standalone.cpp says which serves which.
using KernelEmitFunction = CompiledKernel (*)(Emitter&);

// standalone_movement.cpp
CompiledKernel emit_transpose(Emitter& e);
CompiledKernel emit_slice(Emitter& e);
CompiledKernel emit_reverse(Emitter& e);
CompiledKernel emit_concatenate(Emitter& e);
CompiledKernel emit_pad(Emitter& e);

// standalone_indexing.cpp
CompiledKernel emit_take(Emitter& e);
CompiledKernel emit_scatter_add(Emitter& e);
CompiledKernel emit_dynamic_slice(Emitter& e);
CompiledKernel emit_dynamic_update_slice(Emitter& e);

// standalone_compute.cpp
CompiledKernel emit_cumsum(Emitter& e);
CompiledKernel emit_argument_reduce(Emitter& e);
CompiledKernel emit_random(Emitter& e);
CompiledKernel emit_integer_matmul(Emitter& e);

}  // namespace kiln::llvm_backend::standalone
