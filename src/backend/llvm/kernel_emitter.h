// The emitter of one fused kernel's loop nest: elementwise kernels (flat or
// by rows, kernel_emitter.cpp) and reductions (kernel_reductions.cpp), with
// the values they compute in kernel_emitter.cpp. Each element's code is the
// primitives' rows' (ops/common/lowering.h) through ElementEmitter.
//
// Every value in a kernel is indexed by one iteration space: the root's shape
// for an elementwise kernel, the reduced input's shape for a reduction. Fused
// nodes only broadcast (NumPy, trailing-aligned), so a node of shape N reads
// space dimension d at its own dimension d - (rank(space) - rank(N)), or at 0
// where its extent is 1. Loads are therefore base + sum(index_d * stride_d)
// with strides fixed for the kernel (0 where broadcast), which LLVM hoists
// and vectorizes. In a symbolic graph an extent or stride that depends on
// the symbols is computed once, on entry, from the symbols' values the
// kernel is passed (a symbolic dimension is never 1, so never broadcast).
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/llvm/codegen.h"
#include "backend/llvm/loops.h"
#include "backend/llvm/scalar_emitter.h"
#include "ops/common/rules.h"

namespace kiln::llvm_backend {

// Literals become kernel parameters, except an exponent of pow, whose value
// LLVM turns into cheaper code (x*x for 2).
bool baked_literal(const ir::Graph& graph, const Kernel& kernel, ir::ValueId literal);
/// The literal's slot among the kernel's parameter literals, or -1 when baked.
int literal_slot(const ir::Graph& graph, const Kernel& kernel, ir::ValueId literal);
/// How many slots the kernel's parameter literals take (its symbols follow).
int parameter_literal_count(const ir::Graph& graph, const Kernel& kernel);

// A prefetching flat loop (Kernel::prefetch) runs in blocks of this many
// elements, each block first prefetching the lines this many elements ahead
// in every array the kernel reads.
inline constexpr int64_t prefetch_block = 256;
inline constexpr int64_t prefetch_distance = 1024;

/// How the innermost loop of a reduction over `extent` elements (a symbolic
/// one taken as long) is vectorized: vectors of `lanes` accumulators of
/// `accumulation` values, `partials` of them per iteration, and a short row
/// `folded` into masked vectors rather than left to a scalar remainder.
struct InnerReductionShape {
  int lanes = 1;
  int partials = 1;
  bool folded = false;
};
InnerReductionShape inner_reduction_shape(int64_t extent, DType accumulation);

class KernelEmitter {
 public:
  KernelEmitter(llvm::Module& module, const ir::Graph& graph, const Kernel& kernel, const std::string& symbol);

  CompiledKernel emit();

  /// Each iteration of the kernel's range runs on a GPU thread of its own: a
  /// reduction over leading axes keeps each output's accumulator in
  /// registers, where a CPU, with vectors across the columns, adds row after
  /// row into the output's memory (a GPU thread would wait on that memory
  /// at every row).
  void accumulate_in_registers() { registers_only_ = true; }

  // Rows combined in the input's own dtype before each f64 addition: the
  // vector width of f32 for most of the work, at an error bound of this many
  // f32 roundings. (Interpreted column sums add in this order too: interpreted_rows.h.)
  static constexpr int64_t widened_block = 8;

 private:
  const ir::Node& node(ir::ValueId id) const { return graph_.nodes[static_cast<size_t>(id)]; }
  static ops::Reduction reduction_of(const ir::Node& root) { return ops::rules(root.op).reduction; }
  // f32 sums and products accumulate in f64, like the reference kernels: an
  // f32 accumulator loses everything past 2^24 (the sum of 2^32 ones would
  // stall at 2^24), an f64 one stays within N * 2^-53 relative before the
  // final rounding to f32, which is the half ulp that dominates.
  static DType accumulation_dtype(const ir::Node& root) {
    ops::Reduction reduction = reduction_of(root);
    bool widened = reduction == ops::Reduction::sum || reduction == ops::Reduction::product;
    if (!widened) return root.type.dtype;
    // f16 and bf16 sum in f32, as XLA does; f32 in f64 (the reference's precision).
    if (is_half(root.type.dtype)) return DType::f32;
    return root.type.dtype == DType::f32 ? DType::f64 : root.type.dtype;
  }

  llvm::Type* memory_type(DType dtype) { return element_.memory_type(dtype); }
  llvm::Type* register_type(DType dtype) { return element_.register_type(dtype); }

  // ---- loops ------------------------------------------------------------------------

  // What a loop asks of the vectorizer. interleave > 1: that many vectors per
  // iteration (it otherwise interleaves nothing, see the pass pipeline).
  // fold_tail: the last partial vector runs masked in the vector body instead
  // of in a scalar copy of the loop (and a narrower vector copy before it),
  // so a long loop body is compiled once rather than three times.
  // width > 0: that many lanes, which spares the vectorizer comparing
  // widths (half of optimizing a long body: 17 -> 9 ms for 25 tanh rounds).
  struct LoopHints {
    int interleave = 1;
    bool fold_tail = false;
    int width = 0;
  };

  // for (counter = begin; counter < end; ++counter) body(counter)
  template <class Body>
  void loop(llvm::Value* begin, llvm::Value* end, const char* name, Body body, LoopHints hints = {}) {
    llvm::BranchInst* latch = counted_loop(builder_, begin, end, name, body);
    std::vector<llvm::Metadata*> properties{nullptr};
    auto property = [&](const char* key, llvm::Constant* value) {
      llvm::Metadata* pair[] = {llvm::MDString::get(context_, key), llvm::ConstantAsMetadata::get(value)};
      properties.push_back(llvm::MDNode::get(context_, pair));
    };
    if (hints.interleave > 1) property("llvm.loop.interleave.count", builder_.getInt32(hints.interleave));
    if (hints.fold_tail) property("llvm.loop.vectorize.predicate.enable", builder_.getTrue());
    if (hints.width > 0) property("llvm.loop.vectorize.width", builder_.getInt32(hints.width));
    if (scalar_loops_) property("llvm.loop.vectorize.enable", builder_.getFalse());
    if (properties.size() > 1) {
      llvm::MDNode* loop_id = llvm::MDNode::getDistinct(context_, properties);
      loop_id->replaceOperandWith(0, loop_id);
      latch->setMetadata(llvm::LLVMContext::MD_loop, loop_id);
    }
  }

  // Runs body(segment, low, high) for each segment of [begin, end) cut at
  // multiples of `size`: [low, high) is the part of [segment * size,
  // (segment + 1) * size) inside [begin, end).
  template <class Body>
  void segments(llvm::Value* begin, llvm::Value* end, int64_t size, const char* name, Body body) {
    segments(begin, end, builder_.getInt64(size), name, body);
  }

  template <class Body>
  void segments(llvm::Value* begin, llvm::Value* end, llvm::Value* size_value, const char* name, Body body) {
    llvm::Value* first = builder_.CreateUDiv(begin, size_value);
    llvm::Value* last =
        builder_.CreateUDiv(builder_.CreateAdd(end, builder_.CreateSub(size_value, builder_.getInt64(1))), size_value);
    loop(first, last, name, [&](llvm::Value* segment) {
      llvm::Value* start = builder_.CreateMul(segment, size_value);
      llvm::Value* low = builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, start, begin);
      llvm::Value* high =
          builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, builder_.CreateAdd(start, size_value), end);
      body(segment, low, high);
    });
  }

  // Runs body(begin, end) over the kernel's range: in one piece, or when
  // prefetching, cut at multiples of prefetch_block, each piece preceded by
  // prefetches of the lines prefetch_distance elements ahead in every array
  // the kernel reads. Addresses past an array's end are harmless: a prefetch
  // never faults. Outputs are not prefetched: for writing, that measured 9%
  // slower (W1, 2^24, 2 threads) than leaving them to the store.
  template <class Body>
  void flat_blocks(Body body) {
    llvm::Value* begin = function_->getArg(0);
    llvm::Value* end = function_->getArg(1);
    if (!kernel_.prefetch) return body(begin, end);
    prefetching_blocks(begin, end, body);
  }

  template <class Body>
  void prefetching_blocks(llvm::Value* begin, llvm::Value* end, Body body) {
    segments(begin, end, prefetch_block, "block", [&](llvm::Value* block, llvm::Value* first, llvm::Value* last) {
      llvm::Value* ahead = builder_.CreateAdd(builder_.CreateMul(block, builder_.getInt64(prefetch_block)),
                                              builder_.getInt64(prefetch_distance));
      for (ir::ValueId leaf : kernel_.leaves) {
        if (node(leaf).type.size() <= 1) continue;
        int64_t size = static_cast<int64_t>(dtype_size(node(leaf).type.dtype));
        llvm::Value* address = builder_.CreateGEP(builder_.getInt8Ty(), leaf_pointer_.at(leaf),
                                                  builder_.CreateMul(ahead, builder_.getInt64(size)));
        for (int64_t line = 0; line < std::max<int64_t>(1, prefetch_block * size / 64); ++line)
          builder_.CreateIntrinsic(llvm::Intrinsic::prefetch, {builder_.getPtrTy()},
                                   {builder_.CreateGEP(builder_.getInt8Ty(), address, builder_.getInt64(line * 64)),
                                    builder_.getInt32(0), builder_.getInt32(3), builder_.getInt32(1)});
      }
      body(first, last);
    });
  }

  // ---- kernels ----------------------------------------------------------------------

  CompiledKernel emit_elementwise(const ir::Node& root);
  // Lanes of the widest vectors for the kernel's widest element (in registers).
  int full_width_lanes();

  CompiledKernel emit_reduce(const ir::Node& root);

  // Columns of a widened (f64) row accumulation handled at once: their
  // accumulators (8 KiB) and block partials (4 KiB for f32) stay in L1 while
  // the rows stream through in runs of 4 KiB.
  static constexpr int64_t widened_tile = 1024;
  // The accumulator lives in a stack slot; mem2reg turns it into registers.
  // Floating max/min track "a NaN was seen" separately, so the comparison
  // itself can be a plain, vectorizable max/min reduction.
  llvm::AllocaInst* start_accumulator(const ir::Node& root);

  void reset_accumulator(const ir::Node& root, llvm::AllocaInst* accumulator);

  llvm::Value* accumulated(const ir::Node& root, llvm::AllocaInst* accumulator);

  // A chunked reduction (Kernel::chunked): each call reduces the input
  // elements [begin, end) and writes its one result to the output's first
  // element; the runtime gives each slice its own output slot and combines
  // the slices' results in order.
  CompiledKernel emit_chunked_reduction(const ir::Node& root, CompiledKernel result);

  // A reduction over one block of consecutive axes with kept axes after it
  // (a bias gradient summed over the batch; a maximum down the columns; a
  // mean over the sequence of [batch, sequence, features]): the input seen as
  // [outer, reduced, inner] is accumulated one row of `inner` elements after
  // another into the output, so every access is contiguous and the loop over
  // the output vectorizes, instead of striding down each column. Each output
  // element still combines the rows in the reference's order. The leaves
  // must be read at the input's flat index; with outer axes, rows shorter
  // than a cache line gain nothing over striding.
  bool rows_accumulate(const ir::Node& root, const std::vector<size_t>& reduced_dims) const;

  CompiledKernel emit_accumulating_rows(const ir::Node& root, const std::vector<size_t>& reduced_dims,
                                        CompiledKernel result);

  CompiledKernel emit_widened_rows(const ir::Node& root, const std::vector<size_t>& reduced_dims,
                                   CompiledKernel result);

  void accumulate(const ir::Node& root, llvm::AllocaInst* accumulator);

  void emit_reduction_loops(const ir::Node& root, const std::vector<size_t>& dims, size_t level,
                            llvm::AllocaInst* accumulator);

  // ---- sizes ------------------------------------------------------------------------

  /// A number of the kernel's geometry as IR: a constant unless it depends on symbols.
  llvm::Value* size(const ir::DimExpr& number) { return (*sizes_)(number); }
  /// Dimension d of the iteration space, as a polynomial and as IR.
  ir::DimExpr space_dimension(size_t d) const;
  llvm::Value* space_extent(size_t d) { return size(space_dimension(d)); }
  /// The product of the space's dimensions `dims`.
  ir::DimExpr space_product(const std::vector<size_t>& dims) const;
  /// The dimensions of the space after `dim`.
  std::vector<size_t> dimensions_after(size_t dim) const {
    std::vector<size_t> dims;
    for (size_t d = dim + 1; d < space_.size(); ++d) dims.push_back(d);
    return dims;
  }

  // ---- values -----------------------------------------------------------------------

  llvm::Value* offset_of(ir::ValueId id);

  llvm::Value* load(ir::ValueId id);

  void store(llvm::Value* offset, llvm::Value* value, DType dtype) { store_to(output_, offset, value, dtype); }
  void store_to(llvm::Value* base, llvm::Value* offset, llvm::Value* value, DType dtype);

  llvm::Value* value(ir::ValueId id);

  // A literal is read from the kernel's constants (slot = its ordinal among
  // parameter literals), so kernels differing only in numbers share code.
  llvm::Value* literal(const ir::Node& n);

  llvm::Value* constant(const Scalar& scalar, DType dtype);

  // The row's code for one element (ops/common/lowering.h), fed its operands' values.
  llvm::Value* compute(const ir::Node& n);

  // The position along an iota node's axis of the element being computed.
  llvm::Value* iota(const ir::Node& n);

  // Literals and positions depend on the kernel; every other instruction is the scalar emitter's.
  class ElementEmitter final : public LlvmScalarEmitter {
   public:
    ElementEmitter(llvm::IRBuilder<>& builder, KernelEmitter& kernel) : LlvmScalarEmitter(builder), kernel_(kernel) {}
    ops::ScalarValue literal(const ir::Node& node) override { return wrap(kernel_.literal(node)); }
    ops::ScalarValue iota(const ir::Node& node) override { return wrap(kernel_.iota(node)); }

   private:
    KernelEmitter& kernel_;
  };

  llvm::LLVMContext& context_;
  llvm::Module& module_;
  llvm::IRBuilder<> builder_;
  ElementEmitter element_{builder_, *this};
  const ir::Graph& graph_;
  const Kernel& kernel_;
  llvm::Function* function_ = nullptr;  // the body
  llvm::Function* entry_ = nullptr;
  llvm::Value* constants_ = nullptr;
  llvm::Value* output_ = nullptr;
  std::vector<llvm::Value*> extra_outputs_;
  std::unordered_map<ir::ValueId, llvm::Value*> leaf_pointer_;
  std::unordered_map<ir::ValueId, bool> in_region_;
  std::unordered_map<ir::ValueId, llvm::Value*> memo_;
  Shape space_;                           // at the hints, which decisions read
  const ir::Node* space_node_ = nullptr;  // the node whose shape is the space
  std::optional<SizeEmitter> sizes_;
  std::vector<llvm::Value*> index_;
  bool flat_ = false;
  // Loops left unvectorized: quick code of sums whose order does not depend
  // on the vector width (emit_accumulating_rows).
  bool scalar_loops_ = false;
  bool registers_only_ = false;  // accumulate_in_registers
  llvm::Value* flat_index_ = nullptr;
  llvm::AllocaInst* nan_seen_ = nullptr;  // floating max/min reductions
};

}  // namespace kiln::llvm_backend
