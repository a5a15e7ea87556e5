// Standalone kernels for the movement primitives: transpose, slice and
// reverse (strided gathers), concatenate and pad. Each writes the output in
// row-major order, so the innermost loop stores contiguously and, where the
// source is contiguous too, is a plain copy.
#include <algorithm>

#include "backend/llvm/standalone_emitter.h"

namespace kiln::llvm_backend::standalone {

using ir::Primitive;

namespace {

/// Output element at multi-index i is the input's element at
/// base + sum(i[a] * steps[a]), as in the reference's strided gather.
struct StridedGather {
  Shape shape;
  std::vector<int64_t> steps;
  int64_t base = 0;
};

/// Fewer, longer dimensions for the same gather: extents of 1 dropped, and
/// neighbours merged where the outer one steps over exactly the inner one.
StridedGather simplified(const StridedGather& gather) {
  StridedGather result;
  result.base = gather.base;
  for (size_t a = 0; a < gather.shape.size(); ++a) {
    if (gather.shape[a] == 1) continue;
    if (!result.shape.empty() && result.steps.back() == gather.steps[a] * gather.shape[a]) {
      result.shape.back() *= gather.shape[a];
      result.steps.back() = gather.steps[a];
      continue;
    }
    result.shape.push_back(gather.shape[a]);
    result.steps.push_back(gather.steps[a]);
  }
  if (result.shape.empty()) {
    result.shape = {1};
    result.steps = {0};
  }
  return result;
}

// Large enough matrices are transposed tile by tile, so the strided reads of
// one tile share cache lines instead of each touching a line of its own.
constexpr int64_t transpose_tile = 32;

bool tiled(const StridedGather& gather) {
  size_t rank = gather.shape.size();
  return rank >= 2 && gather.steps[rank - 2] == 1 && gather.shape[rank - 2] >= transpose_tile &&
         gather.shape[rank - 1] >= transpose_tile;
}

CompiledKernel emit_tiled_gather(Emitter& e, const StridedGather& gather, DType dtype) {
  size_t rank = gather.shape.size();
  Shape batch_shape(gather.shape.begin(), gather.shape.end() - 2);
  int64_t batch = shape_size(batch_shape);
  int64_t rows = gather.shape[rank - 2], columns = gather.shape[rank - 1];
  int64_t column_step = gather.steps[rank - 1];
  int64_t row_tiles = (rows + transpose_tile - 1) / transpose_tile;
  int64_t column_tiles = (columns + transpose_tile - 1) / transpose_tile;
  CompiledKernel result;
  result.range = batch * row_tiles * column_tiles;
  result.work_per_iteration = transpose_tile * transpose_tile;
  llvm::Type* type = e.bits_type(dtype);
  e.loop(e.begin(), e.end(), "tile", [&](llvm::Value* tile) {
    std::vector<llvm::Value*> split = e.decompose(tile, {batch, row_tiles, column_tiles});
    std::vector<llvm::Value*> batch_index = e.decompose(split[0], batch_shape);
    llvm::Value* source = e.i64(gather.base);
    for (size_t a = 0; a < batch_index.size(); ++a) source = e.add(source, e.mul(batch_index[a], gather.steps[a]));
    llvm::Value* row_begin = e.mul(split[1], transpose_tile);
    llvm::Value* row_end = e.min(e.add(row_begin, e.i64(transpose_tile)), e.i64(rows));
    llvm::Value* column_begin = e.mul(split[2], transpose_tile);
    llvm::Value* column_end = e.min(e.add(column_begin, e.i64(transpose_tile)), e.i64(columns));
    llvm::Value* matrix = e.mul(split[0], rows * columns);
    e.loop(row_begin, row_end, "row", [&](llvm::Value* row) {
      llvm::Value* target = e.add(matrix, e.mul(row, columns));
      llvm::Value* source_row = e.add(source, row);  // rows step by 1 (see tiled)
      e.loop(column_begin, column_end, "column", [&](llvm::Value* column) {
        llvm::Value* value = e.load(type, e.input_pointer(0), e.add(source_row, e.mul(column, column_step)));
        e.store(value, e.output_pointer(), e.add(target, column));
      });
    });
  });
  return result;
}

CompiledKernel emit_gather(Emitter& e, const StridedGather& original) {
  DType dtype = e.node.type.dtype;
  if (shape_size(original.shape) == 0) return {};
  StridedGather gather = simplified(original);
  if (tiled(gather)) return emit_tiled_gather(e, gather, dtype);
  Shape outer_shape(gather.shape.begin(), gather.shape.end() - 1);
  int64_t width = gather.shape.back();
  int64_t step = gather.steps.back();
  llvm::Type* type = e.bits_type(dtype);
  return e.for_each_row_piece(
      shape_size(outer_shape), width, [&](llvm::Value* row, llvm::Value* begin, llvm::Value* end) {
        std::vector<llvm::Value*> outer = e.decompose(row, outer_shape);
        llvm::Value* source = e.i64(gather.base);
        for (size_t a = 0; a < outer.size(); ++a) source = e.add(source, e.mul(outer[a], gather.steps[a]));
        llvm::Value* target = e.mul(row, width);
        e.loop(begin, end, "column", [&](llvm::Value* column) {
          llvm::Value* value = e.load(type, e.input_pointer(0), e.add(source, e.mul(column, step)));
          e.store(value, e.output_pointer(), e.add(target, column));
        });
      });
}

CompiledKernel emit_transpose(Emitter& e) {
  std::vector<int64_t> strides = row_major_strides(e.input(0).type.shape);
  StridedGather gather{e.node.type.shape, {}, 0};
  for (int64_t axis : e.node.attrs.ints) gather.steps.push_back(strides[static_cast<size_t>(axis)]);
  return emit_gather(e, gather);
}

CompiledKernel emit_slice(Emitter& e) {
  std::vector<int64_t> strides = row_major_strides(e.input(0).type.shape);
  const std::vector<int64_t>& ints = e.node.attrs.ints;
  size_t rank = strides.size();
  StridedGather gather{e.node.type.shape, std::vector<int64_t>(rank), 0};
  for (size_t a = 0; a < rank; ++a) {
    gather.base += ints[a] * strides[a];
    gather.steps[a] = ints[2 * rank + a] * strides[a];
  }
  return emit_gather(e, gather);
}

CompiledKernel emit_reverse(Emitter& e) {
  const Shape& shape = e.node.type.shape;
  StridedGather gather{shape, row_major_strides(shape), 0};
  if (shape_size(shape) == 0) return {};
  for (int64_t axis : e.node.attrs.ints) {
    auto a = static_cast<size_t>(axis);
    gather.base += (shape[a] - 1) * gather.steps[a];
    gather.steps[a] = -gather.steps[a];
  }
  return emit_gather(e, gather);
}

// Row-major, the output is `outer` rows, each the inputs' blocks one after
// another; a piece of a row copies the part of each block it overlaps.
CompiledKernel emit_concatenate(Emitter& e) {
  const Shape& shape = e.node.type.shape;
  auto axis = static_cast<size_t>(e.node.attrs.ints[0]);
  int64_t outer = 1, inner = 1;
  for (size_t a = 0; a < axis; ++a) outer *= shape[a];
  for (size_t a = axis + 1; a < shape.size(); ++a) inner *= shape[a];
  int64_t width = shape[axis] * inner;
  DType dtype = e.node.type.dtype;
  return e.for_each_row_piece(outer, width, [&](llvm::Value* row, llvm::Value* begin, llvm::Value* end) {
    int64_t offset = 0;
    for (size_t k = 0; k < e.node.inputs.size(); ++k) {
      int64_t block = e.input(k).type.shape[axis] * inner;
      if (block == 0) continue;
      llvm::Value* first = e.max(begin, e.i64(offset));
      llvm::Value* last = e.min(end, e.i64(offset + block));
      llvm::Value* source = e.builder.CreateSub(e.add(e.mul(row, block), first), e.i64(offset));
      e.copy(dtype, e.output_pointer(), e.add(e.mul(row, width), first), e.input_pointer(k), source,
             e.builder.CreateSub(last, first));
      offset += block;
    }
  });
}

/// Pad's geometry with neighbouring axes merged where the inner one has no
/// padding (its rows are whole, so the pair is contiguous in both arrays).
struct Padding {
  Shape input, output;
  std::vector<int64_t> lo;
};

Padding simplified_padding(const Shape& input, const std::vector<int64_t>& ints) {
  size_t rank = input.size();
  Padding result;
  for (size_t a = 0; a < rank; ++a) {
    int64_t lo = ints[a], hi = ints[rank + a];
    int64_t out = input[a] + lo + hi;
    if (!result.input.empty() && lo == 0 && hi == 0) {
      result.input.back() *= input[a];
      result.output.back() *= out;
      result.lo.back() *= out;
      continue;
    }
    result.input.push_back(input[a]);
    result.output.push_back(out);
    result.lo.push_back(lo);
  }
  if (result.input.empty()) result = {{1}, {1}, {0}};
  return result;
}

// Each output row is either all padding, or padding, a row of x, padding.
CompiledKernel emit_pad(Emitter& e) {
  DType dtype = e.node.type.dtype;
  Padding padding = simplified_padding(e.input(0).type.shape, e.node.attrs.ints);
  bool empty_input = shape_size(padding.input) == 0;
  size_t last = padding.output.size() - 1;
  Shape outer_shape(padding.output.begin(), padding.output.end() - 1);
  std::vector<int64_t> input_strides = row_major_strides(padding.input);
  int64_t width = padding.output[last];
  int64_t lo = padding.lo[last], row_end = lo + padding.input[last];
  llvm::Value* value = e.load(e.bits_type(dtype), e.input_pointer(1), e.i64(0));
  return e.for_each_row_piece(
      shape_size(outer_shape), width, [&](llvm::Value* row, llvm::Value* begin, llvm::Value* end) {
        llvm::Value* target = e.mul(row, width);
        std::vector<llvm::Value*> outer = e.decompose(row, outer_shape);
        llvm::Value* inside = e.builder.getInt1(!empty_input);
        llvm::Value* source = e.i64(-lo);
        for (size_t a = 0; a < outer.size(); ++a) {
          llvm::Value* position = e.builder.CreateSub(outer[a], e.i64(padding.lo[a]));
          // Unsigned: a row of the lo padding has a negative position.
          inside = e.builder.CreateAnd(inside, e.builder.CreateICmpULT(position, e.i64(padding.input[a])));
          source = e.add(source, e.mul(position, input_strides[a]));
        }
        e.when(e.builder.CreateNot(inside),
               [&] { e.fill(value, e.output_pointer(), e.add(target, begin), e.builder.CreateSub(end, begin)); });
        e.when(inside, [&] {
          llvm::Value* copy_begin = e.max(begin, e.i64(lo));
          llvm::Value* copy_end = e.min(end, e.i64(row_end));
          e.fill(value, e.output_pointer(), e.add(target, begin), e.builder.CreateSub(e.min(end, e.i64(lo)), begin));
          e.copy(dtype, e.output_pointer(), e.add(target, copy_begin), e.input_pointer(0), e.add(source, copy_begin),
                 e.builder.CreateSub(copy_end, copy_begin));
          llvm::Value* after = e.max(begin, e.i64(row_end));
          e.fill(value, e.output_pointer(), e.add(target, after), e.builder.CreateSub(end, after));
        });
      });
}

}  // namespace

void add_movement_kernels(KernelTable& table) {
  table[static_cast<size_t>(ops::NativeKernel::transpose)] = emit_transpose;
  table[static_cast<size_t>(ops::NativeKernel::slice)] = emit_slice;
  table[static_cast<size_t>(ops::NativeKernel::reverse)] = emit_reverse;
  table[static_cast<size_t>(ops::NativeKernel::concatenate)] = emit_concatenate;
  table[static_cast<size_t>(ops::NativeKernel::pad)] = emit_pad;
}

}  // namespace kiln::llvm_backend::standalone
