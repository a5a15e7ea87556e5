// Reduction kernels: plain loop nests, rows accumulated into the output,
// and slices of a reduction to one value (see kernel_emitter.h).
#include <limits>

#include "backend/llvm/engine.h"
#include "backend/llvm/kernel_emitter.h"
#include "runtime/compile_profile.h"

namespace kiln::llvm_backend {

CompiledKernel KernelEmitter::emit_reduce(const ir::Node& root) {
  const ir::Node& input = node(root.inputs[0]);
  space_ = input.type.shape;
  space_node_ = &input;
  const std::vector<int64_t>& axes = root.attrs.ints;
  std::vector<char> reduced(space_.size(), 0);
  for (int64_t axis : axes) reduced[static_cast<size_t>(axis)] = 1;
  std::vector<llvm::Value*> kept_extents;
  std::vector<size_t> kept_dims, reduced_dims;
  for (size_t d = 0; d < space_.size(); ++d) {
    if (reduced[d]) {
      reduced_dims.push_back(d);
    } else {
      kept_dims.push_back(d);
      kept_extents.push_back(space_extent(d));
    }
  }
  CompiledKernel result;
  result.range = kernel_range(graph_, kernel_);
  result.range_count = SymbolicCount(kernel_range_size(graph_, kernel_));
  int64_t reduced_size = 1;
  for (size_t d : reduced_dims) reduced_size *= space_[d];
  result.work_per_iteration = std::max<int64_t>(reduced_size, 1);
  ir::DimExpr reduced_count = space_product(reduced_dims);
  result.work_count =
      SymbolicCount(reduced_count.is_constant() ? ir::DimExpr::constant(result.work_per_iteration) : reduced_count);
  if (kernel_.chunked) return emit_chunked_reduction(root, result);
  if (rows_accumulate(root, reduced_dims)) return emit_accumulating_rows(root, reduced_dims, result);

  llvm::AllocaInst* accumulator = start_accumulator(root);
  loop(function_->getArg(0), function_->getArg(1), "out", [&](llvm::Value* out) {
    std::vector<llvm::Value*> kept = decompose(builder_, out, kept_extents);
    index_.assign(space_.size(), nullptr);
    for (size_t k = 0; k < kept_dims.size(); ++k) index_[kept_dims[k]] = kept[k];
    reset_accumulator(root, accumulator);
    emit_reduction_loops(root, reduced_dims, 0, accumulator);
    store(out, accumulated(root, accumulator), root.type.dtype);
  });
  return result;
}

llvm::AllocaInst* KernelEmitter::start_accumulator(const ir::Node& root) {
  DType dtype = root.type.dtype;
  llvm::IRBuilder<> entry(&function_->getEntryBlock(), function_->getEntryBlock().begin());
  ops::Reduction reduction = reduction_of(root);
  bool extreme = is_floating(dtype) && (reduction == ops::Reduction::max || reduction == ops::Reduction::min);
  nan_seen_ = extreme ? entry.CreateAlloca(builder_.getInt1Ty()) : nullptr;
  return entry.CreateAlloca(register_type(accumulation_dtype(root)));
}

void KernelEmitter::reset_accumulator(const ir::Node& root, llvm::AllocaInst* accumulator) {
  builder_.CreateStore(element_.reduction_identity(reduction_of(root), accumulation_dtype(root)), accumulator);
  if (nan_seen_) builder_.CreateStore(builder_.getFalse(), nan_seen_);
}

llvm::Value* KernelEmitter::accumulated(const ir::Node& root, llvm::AllocaInst* accumulator) {
  llvm::Value* sum = builder_.CreateLoad(accumulator->getAllocatedType(), accumulator);
  llvm::Value* result = element_.convert_value(sum, accumulation_dtype(root), root.type.dtype);
  if (!nan_seen_) return result;
  return builder_.CreateSelect(builder_.CreateLoad(builder_.getInt1Ty(), nan_seen_),
                               llvm::ConstantFP::getNaN(result->getType()), result);
}

CompiledKernel KernelEmitter::emit_chunked_reduction(const ir::Node& root, CompiledKernel result) {
  llvm::AllocaInst* accumulator = start_accumulator(root);
  reset_accumulator(root, accumulator);
  flat_ = true;
  loop(function_->getArg(0), function_->getArg(1), "reduce",
       [&](llvm::Value* i) {
         flat_index_ = i;
         accumulate(root, accumulator);
       },
       {.interleave = 4});
  flat_ = false;
  store(builder_.getInt64(0), accumulated(root, accumulator), root.type.dtype);
  result.work_per_iteration = 1;
  result.work_count = SymbolicCount(ir::DimExpr::constant(1));
  return result;
}

bool accumulates_rows(const Shape& shape, const std::vector<size_t>& axes, DType dtype) {
  if (dtype == DType::bool_ || axes.empty()) return false;
  size_t first = axes.front(), last = axes.back();
  if (last - first + 1 != axes.size() || last + 1 == shape.size()) return false;
  int64_t inner = 1;
  for (size_t d = last + 1; d < shape.size(); ++d) inner *= shape[d];
  return inner != 0 && !(first > 0 && inner < 16);
}

bool KernelEmitter::rows_accumulate(const ir::Node& root, const std::vector<size_t>& reduced_dims) const {
  return !registers_only_ && accumulates_rows(space_, reduced_dims, root.type.dtype) &&
         reads_at_flat_index(graph_, kernel_);
}

CompiledKernel KernelEmitter::emit_accumulating_rows(const ir::Node& root, const std::vector<size_t>& reduced_dims,
                                                     CompiledKernel result) {
  // Each output element adds its rows in one order whatever the vector width
  // (vectors run across the columns), so quick code, which serves a first
  // tier once, skips the vectorizer: the same bits for a third of the
  // compile. Not with fused producers: libmvec's vector and scalar functions
  // round differently.
  scalar_loops_ = runtime::code_quality() == runtime::CodeQuality::quick && kernel_.region.size() <= 1;
  if (accumulation_dtype(root) != root.type.dtype) return emit_widened_rows(root, reduced_dims, result);
  DType dtype = root.type.dtype;
  // The output holds the dtype's memory elements: f16/bf16 are 16 bits there
  // and f32 in registers (max and min of them are exact, so each row's store
  // loses nothing).
  llvm::Type* type = memory_type(dtype);
  llvm::Value* rows = size(space_product(reduced_dims));
  llvm::Value* inner_size = size(space_product(dimensions_after(reduced_dims.back())));
  flat_ = true;
  // Output elements [begin, end) cut where the outer index changes.
  segments(function_->getArg(0), function_->getArg(1), inner_size, "outer",
           [&](llvm::Value* outer, llvm::Value* low, llvm::Value* high) {
             loop(low, high, "init",
                  [&](llvm::Value* out) { store(out, element_.reduction_identity(reduction_of(root), dtype), dtype); });
             // Input element (outer, row, i) sits at (outer * rows + row) * inner + i
             // = out + (outer * (rows - 1) + row) * inner for output element out = outer * inner + i.
             llvm::Value* outer_shift = builder_.CreateMul(outer, builder_.CreateSub(rows, builder_.getInt64(1)));
             loop(builder_.getInt64(0), rows, "row", [&](llvm::Value* row) {
               llvm::Value* shift = builder_.CreateMul(builder_.CreateAdd(outer_shift, row), inner_size);
               loop(low, high, "column", [&](llvm::Value* out) {
                 memo_.clear();
                 flat_index_ = builder_.CreateAdd(shift, out);
                 llvm::Value* element = value(root.inputs[0]);
                 llvm::Value* address = builder_.CreateInBoundsGEP(type, output_, out);
                 llvm::Value* current = element_.from_memory(builder_.CreateLoad(type, address), dtype);
                 store(out, element_.combine(reduction_of(root), dtype, current, element), dtype);
               });
             });
           });
  flat_ = false;
  return result;
}

// As emit_accumulating_rows, with f64 accumulators: the output's columns go
// by tiles of widened_tile. For a sum, each block of widened_block rows is
// combined in the input's dtype (at its full vector width), and each block's
// partial sum is added to f64 accumulators, rounded once into the output at
// the end: the error stays that of widened_block terms in f32 (at most
// widened_block * 2^-24 * sum|x|) at any number of rows. A product widens
// every factor.
CompiledKernel KernelEmitter::emit_widened_rows(const ir::Node& root, const std::vector<size_t>& reduced_dims,
                                                CompiledKernel result) {
  DType dtype = root.type.dtype, wide = accumulation_dtype(root);
  llvm::Type* type = register_type(dtype);
  llvm::Type* wide_type = register_type(wide);
  llvm::Value* rows = size(space_product(reduced_dims));
  llvm::Value* inner_size = size(space_product(dimensions_after(reduced_dims.back())));
  auto stack_array = [&](llvm::Type* element) {
    llvm::IRBuilder<> entry(&function_->getEntryBlock(), function_->getEntryBlock().begin());
    return entry.CreateAlloca(element, entry.getInt64(widened_tile));
  };
  llvm::Value* tile_accumulators = stack_array(wide_type);
  llvm::Value* block_partials = stack_array(type);
  ops::Reduction reduction = reduction_of(root);
  flat_ = true;
  segments(
      function_->getArg(0), function_->getArg(1), inner_size, "outer",
      [&](llvm::Value* outer, llvm::Value* low, llvm::Value* high) {
        llvm::Value* outer_shift = builder_.CreateMul(outer, builder_.CreateSub(rows, builder_.getInt64(1)));
        segments(low, high, widened_tile, "tile", [&](llvm::Value*, llvm::Value* first, llvm::Value* last) {
          auto slot = [&](llvm::Value* array, llvm::Type* element, llvm::Value* out) {
            return builder_.CreateInBoundsGEP(element, array, builder_.CreateSub(out, first));
          };
          // Sets [first, last) of `array` to `value`. A sum's zeros are a
          // memset: a call, where a loop the vectorizer copies three times
          // (vector body, vector remainder, scalar remainder) was a third of
          // this kernel's compile time; the stored bits are the same.
          auto fill = [&](llvm::Value* array, llvm::Type* element, llvm::Value* value, const char* name) {
            if (auto* constant = llvm::dyn_cast<llvm::Constant>(value); constant && constant->isNullValue()) {
              uint64_t element_bytes = module_.getDataLayout().getTypeAllocSize(element);
              llvm::Value* bytes =
                  builder_.CreateMul(builder_.CreateSub(last, first), builder_.getInt64(element_bytes));
              builder_.CreateMemSet(array, builder_.getInt8(0), bytes, llvm::MaybeAlign(element_bytes));
              return;
            }
            loop(first, last, name, [&](llvm::Value* out) { builder_.CreateStore(value, slot(array, element, out)); });
          };
          fill(tile_accumulators, wide_type, element_.reduction_identity(reduction, wide), "init");
          // Rows [row_first, row_last) combined into `into`, whose elements are `into_dtype`.
          auto combine_rows = [&](llvm::Value* row_first, llvm::Value* row_last, llvm::Value* into, DType into_dtype) {
            llvm::Type* into_type = register_type(into_dtype);
            loop(row_first, row_last, "row", [&](llvm::Value* row) {
              llvm::Value* shift = builder_.CreateMul(builder_.CreateAdd(outer_shift, row), inner_size);
              loop(first, last, "column", [&](llvm::Value* out) {
                memo_.clear();
                flat_index_ = builder_.CreateAdd(shift, out);
                llvm::Value* element = element_.convert_value(value(root.inputs[0]), dtype, into_dtype);
                llvm::Value* address = slot(into, into_type, out);
                llvm::Value* current = builder_.CreateLoad(into_type, address);
                builder_.CreateStore(element_.combine(reduction, into_dtype, current, element), address);
              });
            });
          };
          auto add_block = [&](llvm::Value*, llvm::Value* block_first, llvm::Value* block_last) {
            fill(block_partials, type, element_.reduction_identity(reduction, dtype), "start");
            combine_rows(block_first, block_last, block_partials, dtype);
            loop(first, last, "widen", [&](llvm::Value* out) {
              llvm::Value* partial = builder_.CreateLoad(type, slot(block_partials, type, out));
              llvm::Value* address = slot(tile_accumulators, wide_type, out);
              llvm::Value* current = builder_.CreateLoad(wide_type, address);
              llvm::Value* widened = element_.convert_value(partial, dtype, wide);
              builder_.CreateStore(element_.combine(reduction, wide, current, widened), address);
            });
          };
          // A product's relative errors would add up block after block: it widens every factor.
          if (reduction == ops::Reduction::sum) segments(builder_.getInt64(0), rows, widened_block, "block", add_block);
          else combine_rows(builder_.getInt64(0), rows, tile_accumulators, wide);
          loop(first, last, "round", [&](llvm::Value* out) {
            llvm::Value* total = builder_.CreateLoad(wide_type, slot(tile_accumulators, wide_type, out));
            store(out, element_.convert_value(total, wide, dtype), dtype);
          });
        });
      });
  flat_ = false;
  return result;
}

void KernelEmitter::accumulate(const ir::Node& root, llvm::AllocaInst* accumulator) {
  memo_.clear();
  llvm::Value* current = builder_.CreateLoad(accumulator->getAllocatedType(), accumulator);
  llvm::Value* element = value(root.inputs[0]);
  if (nan_seen_) {
    llvm::Value* seen = builder_.CreateLoad(builder_.getInt1Ty(), nan_seen_);
    builder_.CreateStore(builder_.CreateOr(seen, builder_.CreateFCmpUNO(element, element)), nan_seen_);
    builder_.CreateStore(element_.fast_extreme(reduction_of(root) == ops::Reduction::max, current, element),
                         accumulator);
    return;
  }
  DType wide = accumulation_dtype(root);
  element = element_.convert_value(element, root.type.dtype, wide);
  builder_.CreateStore(element_.combine(reduction_of(root), wide, current, element), accumulator);
}

InnerReductionShape inner_reduction_shape(int64_t extent, DType accumulation) {
  InnerReductionShape shape;
  shape.lanes =
      std::max(Engine::instance().vector_bytes() / static_cast<int>(std::max<size_t>(dtype_size(accumulation), 1)), 1);
  // Four partial vectors: one chain of vector adds waits on each add's
  // latency, four keep the loads streaming. On a short row fewer: LLVM keeps
  // a requested count even when that many vectors exceed the row, and the
  // vector loop then never runs (a softmax over 16 elements ran its
  // exponentials one by one).
  shape.partials = 4;
  while (shape.partials > 1 && extent < shape.partials * shape.lanes) shape.partials /= 2;
  // Under 16 elements LLVM allows no scalar remainder (its tiny trip count).
  shape.folded = extent < 16;
  return shape;
}

void KernelEmitter::emit_reduction_loops(const ir::Node& root, const std::vector<size_t>& dims, size_t level,
                                         llvm::AllocaInst* accumulator) {
  if (level == dims.size()) return accumulate(root, accumulator);
  size_t dim = dims[level];
  // The innermost loop keeps several partial results (inner_reduction_shape).
  LoopHints hints;
  if (level + 1 == dims.size()) {
    int64_t extent = space_dimension(dim).is_constant() ? space_[dim] : std::numeric_limits<int64_t>::max();
    InnerReductionShape shape = inner_reduction_shape(extent, accumulation_dtype(root));
    hints.interleave = shape.partials;
    // A floating sum or product keeps exactly this shape, which fixes the
    // order of its additions: the first tier then runs it interpreted
    // (interpreted_inner.h) with these bits. These are the vectorizer's own
    // choices for such loops, made explicit.
    // Rows of one or two elements are left to LLVM, which adds them in order
    // in scalar code: any vector order gives the same bits there, and masked
    // vectors made sums over rows of 2 three times slower (a width asked of
    // one element also draws a remark from LLVM).
    ops::Reduction reduction = reduction_of(root);
    bool rounding = reduction == ops::Reduction::sum || reduction == ops::Reduction::product;
    if (is_floating(root.type.dtype) && rounding && extent > 2) {
      hints.width = shape.lanes;
      hints.fold_tail = shape.folded;
    }
  }
  loop(
      builder_.getInt64(0), space_extent(dim), "reduce",
      [&](llvm::Value* counter) {
        index_[dim] = counter;
        emit_reduction_loops(root, dims, level + 1, accumulator);
      },
      hints);
}

}  // namespace kiln::llvm_backend
