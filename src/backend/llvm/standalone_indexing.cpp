// Standalone kernels for the indexing primitives: take, scatter_add,
// dynamic_slice and dynamic_update_slice. Indices and starts are normalized
// exactly as the reference kernels in src/ops/indexing/indexing.cpp do: a negative
// value counts from the end once, then it is clamped (an index into the
// axis, a start so that the whole window fits).
#include "backend/llvm/standalone_emitter.h"

namespace kiln::llvm_backend::standalone {

using ir::Primitive;

namespace {

llvm::Value* wrapped(Emitter& e, llvm::Value* index, llvm::Value* extent) {
  llvm::Value* negative = e.builder.CreateICmpSLT(index, e.i64(0));
  return e.builder.CreateSelect(negative, e.add(index, extent), index);
}

llvm::Value* wrapped(Emitter& e, llvm::Value* index, int64_t extent) { return wrapped(e, index, e.i64(extent)); }

llvm::Value* clamped(Emitter& e, llvm::Value* value, int64_t lowest, llvm::Value* highest) {
  return e.min(e.max(value, e.i64(lowest)), highest);
}

llvm::Value* clamped(Emitter& e, llvm::Value* value, int64_t lowest, int64_t highest) {
  return clamped(e, value, lowest, e.i64(highest));
}

}  // namespace

// One output row [o, j, :] per index: a copy of x's row [o, index j, :]. It
// serves every size of a symbolic graph (see standalone_emitter.h).
CompiledKernel emit_take(Emitter& e) {
  if (product(shape_sizes(e.node)).is(0)) return {};
  AxisSizes view = sizes_around(shape_sizes(e.input(0)), e.node.attrs.ints[0]);
  Size count = product(shape_sizes(e.input(1)));
  DType dtype = e.node.type.dtype;
  return e.for_each_row_piece(
      view.outer * count, view.inner, [&](llvm::Value* row, llvm::Value* begin, llvm::Value* end) {
        std::vector<llvm::Value*> split = e.decompose_sizes(row, {view.outer, count});
        llvm::Value* index =
            clamped(e, wrapped(e, e.load_index(1, split[1]), e.value(view.extent)), 0, e.value(view.extent - 1));
        llvm::Value* source = e.mul(e.add(e.mul(split[0], view.extent), index), view.inner);
        e.copy(dtype, e.output_pointer(), e.add(e.mul(row, view.inner), begin), e.input_pointer(0),
               e.add(source, begin), e.sub(end, begin));
      });
}

namespace {

llvm::Value* accumulate(Emitter& e, DType dtype, llvm::Value* a, llvm::Value* b) {
  switch (dtype) {
    case DType::bool_: {
      llvm::Value* either = e.builder.CreateICmpNE(e.builder.CreateOr(a, b), e.builder.getInt8(0));
      return e.builder.CreateZExt(either, e.builder.getInt8Ty());
    }
    case DType::f32:
    case DType::f64: return e.builder.CreateFAdd(a, b);
    default: return e.builder.CreateAdd(a, b);  // wraps, like the reference's unsigned sum
  }
}

}  // namespace

// Parallel over the slabs [o, :, columns] of the output, which no two
// iterations share; within one, updates are added in the reference's order.
CompiledKernel emit_scatter_add(Emitter& e) {
  if (shape_size(e.node.type.shape) == 0) return {};
  AxisView view = view_around(e.input(0).type.shape, e.node.attrs.ints[0]);
  int64_t count = shape_size(e.input(1).type.shape);
  DType dtype = e.node.type.dtype;
  llvm::Type* type = e.value_type(dtype);
  CompiledKernel result =
      e.for_each_row_piece(view.outer, view.inner, [&](llvm::Value* outer, llvm::Value* begin, llvm::Value* end) {
        llvm::Value* slab = e.mul(outer, view.extent * view.inner);
        e.loop(e.i64(0), e.i64(view.extent), "row", [&](llvm::Value* row) {
          llvm::Value* offset = e.add(e.add(slab, e.mul(row, view.inner)), begin);
          e.copy(dtype, e.output_pointer(), offset, e.input_pointer(0), offset, e.builder.CreateSub(end, begin));
        });
        e.loop(e.i64(0), e.i64(count), "update", [&](llvm::Value* j) {
          llvm::Value* index = clamped(e, wrapped(e, e.load_index(1, j), view.extent), 0, view.extent - 1);
          llvm::Value* target = e.add(slab, e.mul(index, view.inner));
          llvm::Value* source = e.mul(e.add(e.mul(outer, count), j), view.inner);
          e.loop(begin, end, "column", [&](llvm::Value* column) {
            llvm::Value* at = e.add(target, column);
            llvm::Value* sum = accumulate(e, dtype, e.load(type, e.output_pointer(), at),
                                          e.load(type, e.input_pointer(2), e.add(source, column)));
            e.store(sum, e.output_pointer(), at);
          });
        });
      });
  result.work_per_iteration *= view.extent + count;
  return result;
}

namespace {

/// Start input `first + a` for each axis a, normalized for a window of `window`.
std::vector<llvm::Value*> window_starts(Emitter& e, size_t first, const Shape& shape, const Shape& window) {
  std::vector<llvm::Value*> starts;
  for (size_t a = 0; a < shape.size(); ++a) {
    llvm::Value* start = wrapped(e, e.load_index(first + a, e.i64(0)), shape[a]);
    starts.push_back(clamped(e, start, 0, shape[a] - window[a]));
  }
  // A 0-d array is one row of one element.
  if (starts.empty()) starts.push_back(e.i64(0));
  return starts;
}

Shape at_least_1d(const Shape& shape) { return shape.empty() ? Shape{1} : shape; }

}  // namespace

CompiledKernel emit_dynamic_slice(Emitter& e) {
  if (shape_size(e.node.type.shape) == 0) return {};
  const Shape& x_shape = e.input(0).type.shape;
  std::vector<llvm::Value*> starts = window_starts(e, 1, x_shape, e.node.type.shape);
  Shape shape = at_least_1d(x_shape), window = at_least_1d(e.node.type.shape);
  std::vector<int64_t> strides = row_major_strides(shape);
  size_t last = shape.size() - 1;
  Shape outer_shape(window.begin(), window.end() - 1);
  int64_t width = window[last];
  DType dtype = e.node.type.dtype;
  return e.for_each_row_piece(shape_size(outer_shape), width,
                              [&](llvm::Value* row, llvm::Value* begin, llvm::Value* end) {
                                std::vector<llvm::Value*> outer = e.decompose(row, outer_shape);
                                llvm::Value* source = starts[last];
                                for (size_t a = 0; a < last; ++a)
                                  source = e.add(source, e.mul(e.add(starts[a], outer[a]), strides[a]));
                                e.copy(dtype, e.output_pointer(), e.add(e.mul(row, width), begin), e.input_pointer(0),
                                       e.add(source, begin), e.builder.CreateSub(end, begin));
                              });
}

// Each output row is x's row with, where the window crosses it, the
// update's row written over it.
CompiledKernel emit_dynamic_update_slice(Emitter& e) {
  if (shape_size(e.node.type.shape) == 0) return {};
  const Shape& update_shape = e.input(1).type.shape;
  std::vector<llvm::Value*> starts = window_starts(e, 2, e.node.type.shape, update_shape);
  Shape shape = at_least_1d(e.node.type.shape), window = at_least_1d(update_shape);
  bool empty_update = shape_size(window) == 0;
  std::vector<int64_t> update_strides = row_major_strides(window);
  size_t last = shape.size() - 1;
  Shape outer_shape(shape.begin(), shape.end() - 1);
  int64_t width = shape[last];
  DType dtype = e.node.type.dtype;
  return e.for_each_row_piece(
      shape_size(outer_shape), width, [&](llvm::Value* row, llvm::Value* begin, llvm::Value* end) {
        llvm::Value* target = e.mul(row, width);
        e.copy(dtype, e.output_pointer(), e.add(target, begin), e.input_pointer(0), e.add(target, begin),
               e.builder.CreateSub(end, begin));
        if (empty_update) return;
        std::vector<llvm::Value*> outer = e.decompose(row, outer_shape);
        llvm::Value* inside = e.builder.getTrue();
        llvm::Value* source = e.builder.CreateNeg(starts[last]);
        for (size_t a = 0; a < last; ++a) {
          llvm::Value* position = e.builder.CreateSub(outer[a], starts[a]);
          // Unsigned: rows before the window have a negative position.
          inside = e.builder.CreateAnd(inside, e.builder.CreateICmpULT(position, e.i64(window[a])));
          source = e.add(source, e.mul(position, update_strides[a]));
        }
        e.when(inside, [&] {
          llvm::Value* first = e.max(begin, starts[last]);
          llvm::Value* after = e.min(end, e.add(starts[last], e.i64(window[last])));
          e.copy(dtype, e.output_pointer(), e.add(target, first), e.input_pointer(1), e.add(source, first),
                 e.builder.CreateSub(after, first));
        });
      });
}

}  // namespace kiln::llvm_backend::standalone
