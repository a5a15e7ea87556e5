// Standalone kernels for the movement primitives: transpose, slice and
// reverse (strided gathers), concatenate and pad. Each writes the output in
// row-major order, so the innermost loop stores contiguously and, where the
// source is contiguous too, is a plain copy. Each serves every size of a
// symbolic graph (see standalone_emitter.h).
#include <algorithm>

#include "backend/llvm/standalone_emitter.h"

namespace kiln::llvm_backend::standalone {

using ir::Primitive;

namespace {

/// Output element at multi-index i is the input's element at
/// base + sum(i[a] * steps[a]), as in the reference's strided gather.
struct StridedGather {
  std::vector<Size> shape;
  std::vector<Size> steps;
  Size base = 0;
};

/// Fewer, longer dimensions for the same gather: extents of 1 dropped, and
/// neighbours merged where the outer one steps over exactly the inner one
/// (at every size: the sizes are compared as polynomials).
StridedGather simplified(const StridedGather& gather) {
  StridedGather result;
  result.base = gather.base;
  for (size_t a = 0; a < gather.shape.size(); ++a) {
    if (gather.shape[a].is(1)) continue;
    if (!result.shape.empty() && result.steps.back() == gather.steps[a] * gather.shape[a]) {
      result.shape.back() = result.shape.back() * gather.shape[a];
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
  return rank >= 2 && gather.steps[rank - 2].is(1) && gather.shape[rank - 2].hint >= transpose_tile &&
         gather.shape[rank - 1].hint >= transpose_tile;
}

CompiledKernel emit_tiled_gather(Emitter& e, const StridedGather& gather, DType dtype) {
  size_t rank = gather.shape.size();
  std::vector<Size> batch_shape(gather.shape.begin(), gather.shape.end() - 2);
  Size batch = product(batch_shape);
  const Size& rows = gather.shape[rank - 2];
  const Size& columns = gather.shape[rank - 1];
  const Size& column_step = gather.steps[rank - 1];
  int64_t row_tiles = (rows.hint + transpose_tile - 1) / transpose_tile;
  int64_t column_tiles = (columns.hint + transpose_tile - 1) / transpose_tile;
  CompiledKernel result;
  result.range = batch.hint * row_tiles * column_tiles;
  result.work_per_iteration = transpose_tile * transpose_tile;
  result.range_count = SymbolicCount(batch.expression) * SymbolicCount(rows.expression, transpose_tile) *
                       SymbolicCount(columns.expression, transpose_tile);
  result.work_count = SymbolicCount(ir::DimExpr::constant(transpose_tile * transpose_tile));
  llvm::Type* type = e.bits_type(dtype);
  llvm::Value* row_tile_count = e.pieces_of(rows, transpose_tile);
  llvm::Value* column_tile_count = e.pieces_of(columns, transpose_tile);
  e.loop(e.begin(), e.end(), "tile", [&](llvm::Value* tile) {
    std::vector<llvm::Value*> split = llvm_backend::decompose(
        e.builder, tile, std::vector<llvm::Value*>{e.value(batch), row_tile_count, column_tile_count});
    std::vector<llvm::Value*> batch_index = e.decompose_sizes(split[0], batch_shape);
    llvm::Value* source = e.value(gather.base);
    for (size_t a = 0; a < batch_index.size(); ++a) source = e.add(source, e.mul(batch_index[a], gather.steps[a]));
    llvm::Value* row_begin = e.mul(split[1], transpose_tile);
    llvm::Value* row_end = e.min(e.add(row_begin, e.i64(transpose_tile)), e.value(rows));
    llvm::Value* column_begin = e.mul(split[2], transpose_tile);
    llvm::Value* column_end = e.min(e.add(column_begin, e.i64(transpose_tile)), e.value(columns));
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
  if (product(original.shape).is(0)) return {};
  StridedGather gather = simplified(original);
  if (tiled(gather)) return emit_tiled_gather(e, gather, dtype);
  std::vector<Size> outer_shape(gather.shape.begin(), gather.shape.end() - 1);
  const Size& width = gather.shape.back();
  const Size& step = gather.steps.back();
  llvm::Type* type = e.bits_type(dtype);
  return e.for_each_row_piece(product(outer_shape), width, [&](llvm::Value* row, llvm::Value* begin, llvm::Value* end) {
    std::vector<llvm::Value*> outer = e.decompose_sizes(row, outer_shape);
    llvm::Value* source = e.value(gather.base);
    for (size_t a = 0; a < outer.size(); ++a) source = e.add(source, e.mul(outer[a], gather.steps[a]));
    llvm::Value* target = e.mul(row, width);
    e.loop(begin, end, "column", [&](llvm::Value* column) {
      llvm::Value* value = e.load(type, e.input_pointer(0), e.add(source, e.mul(column, step)));
      e.store(value, e.output_pointer(), e.add(target, column));
    });
  });
}

}  // namespace

CompiledKernel emit_transpose(Emitter& e) {
  std::vector<Size> strides = row_major_strides(shape_sizes(e.input(0)));
  StridedGather gather{shape_sizes(e.node), {}, 0};
  for (int64_t axis : e.node.attrs.ints) gather.steps.push_back(strides[static_cast<size_t>(axis)]);
  return emit_gather(e, gather);
}

CompiledKernel emit_slice(Emitter& e) {
  std::vector<Size> strides = row_major_strides(shape_sizes(e.input(0)));
  size_t rank = strides.size();
  StridedGather gather{shape_sizes(e.node), std::vector<Size>(rank), 0};
  for (size_t a = 0; a < rank; ++a) {
    gather.base = gather.base + int_size(e.node, a) * strides[a];
    gather.steps[a] = int_size(e.node, 2 * rank + a) * strides[a];
  }
  return emit_gather(e, gather);
}

CompiledKernel emit_reverse(Emitter& e) {
  std::vector<Size> shape = shape_sizes(e.node);
  StridedGather gather{shape, row_major_strides(shape), 0};
  if (product(shape).is(0)) return {};
  for (int64_t axis : e.node.attrs.ints) {
    auto a = static_cast<size_t>(axis);
    gather.base = gather.base + (shape[a] - 1) * gather.steps[a];
    gather.steps[a] = -gather.steps[a];
  }
  return emit_gather(e, gather);
}

// Row-major, the output is `outer` rows, each the inputs' blocks one after
// another; a piece of a row copies the part of each block it overlaps.
CompiledKernel emit_concatenate(Emitter& e) {
  std::vector<Size> shape = shape_sizes(e.node);
  auto axis = static_cast<size_t>(e.node.attrs.ints[0]);
  Size outer = 1, inner = 1;
  for (size_t a = 0; a < axis; ++a) outer = outer * shape[a];
  for (size_t a = axis + 1; a < shape.size(); ++a) inner = inner * shape[a];
  Size width = shape[axis] * inner;
  DType dtype = e.node.type.dtype;
  return e.for_each_row_piece(outer, width, [&](llvm::Value* row, llvm::Value* begin, llvm::Value* end) {
    Size offset = 0;
    for (size_t k = 0; k < e.node.inputs.size(); ++k) {
      Size block = shape_sizes(e.input(k))[axis] * inner;
      if (block.is(0)) continue;
      llvm::Value* first = e.max(begin, e.value(offset));
      llvm::Value* last = e.min(end, e.value(offset + block));
      llvm::Value* source = e.sub(e.add(e.mul(row, block), first), e.value(offset));
      e.copy(dtype, e.output_pointer(), e.add(e.mul(row, width), first), e.input_pointer(k), source,
             e.sub(last, first));
      offset = offset + block;
    }
  });
}

namespace {

/// Pad's geometry with neighbouring axes merged where the inner one has no
/// padding (its rows are whole, so the pair is contiguous in both arrays).
struct Padding {
  std::vector<Size> input, output, lo;
};

Padding simplified_padding(const ir::Node& node, const std::vector<Size>& input) {
  size_t rank = input.size();
  Padding result;
  for (size_t a = 0; a < rank; ++a) {
    Size lo = int_size(node, a), hi = int_size(node, rank + a);
    Size out = input[a] + lo + hi;
    if (!result.input.empty() && lo.is(0) && hi.is(0)) {
      result.input.back() = result.input.back() * input[a];
      result.output.back() = result.output.back() * out;
      result.lo.back() = result.lo.back() * out;
      continue;
    }
    result.input.push_back(input[a]);
    result.output.push_back(out);
    result.lo.push_back(lo);
  }
  if (result.input.empty()) result = {{1}, {1}, {0}};
  return result;
}

}  // namespace

// Each output row is either all padding, or padding, a row of x, padding.
CompiledKernel emit_pad(Emitter& e) {
  DType dtype = e.node.type.dtype;
  Padding padding = simplified_padding(e.node, shape_sizes(e.input(0)));
  bool empty_input = product(padding.input).is(0);
  size_t last = padding.output.size() - 1;
  std::vector<Size> outer_shape(padding.output.begin(), padding.output.end() - 1);
  std::vector<Size> input_strides = row_major_strides(padding.input);
  const Size& width = padding.output[last];
  const Size& lo = padding.lo[last];
  Size row_end = lo + padding.input[last];
  llvm::Value* value = e.load(e.bits_type(dtype), e.input_pointer(1), e.i64(0));
  return e.for_each_row_piece(product(outer_shape), width, [&](llvm::Value* row, llvm::Value* begin, llvm::Value* end) {
    llvm::Value* target = e.mul(row, width);
    std::vector<llvm::Value*> outer = e.decompose_sizes(row, outer_shape);
    llvm::Value* inside = e.builder.getInt1(!empty_input);
    llvm::Value* source = e.value(-lo);
    for (size_t a = 0; a < outer.size(); ++a) {
      llvm::Value* position = e.sub(outer[a], e.value(padding.lo[a]));
      // Unsigned: a row of the lo padding has a negative position.
      inside = e.builder.CreateAnd(inside, e.builder.CreateICmpULT(position, e.value(padding.input[a])));
      source = e.add(source, e.mul(position, input_strides[a]));
    }
    e.when(e.builder.CreateNot(inside),
           [&] { e.fill(value, e.output_pointer(), e.add(target, begin), e.sub(end, begin)); });
    e.when(inside, [&] {
      llvm::Value* copy_begin = e.max(begin, e.value(lo));
      llvm::Value* copy_end = e.min(end, e.value(row_end));
      e.fill(value, e.output_pointer(), e.add(target, begin), e.sub(e.min(end, e.value(lo)), begin));
      e.copy(dtype, e.output_pointer(), e.add(target, copy_begin), e.input_pointer(0), e.add(source, copy_begin),
             e.sub(copy_end, copy_begin));
      llvm::Value* after = e.max(begin, e.value(row_end));
      e.fill(value, e.output_pointer(), e.add(target, after), e.sub(end, after));
    });
  });
}

}  // namespace kiln::llvm_backend::standalone
