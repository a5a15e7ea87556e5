// Standalone kernels that compute rather than move: cumsum, argmax/argmin,
// matmul of integers and bool (floats go to BLAS), and the random numbers.
// Each reproduces its reference kernel bit for bit: the same accumulation
// type and order (cumsum of f32 accumulates in double), the same tie and NaN
// rules, the same Threefry counters. (Which NaN the sum of two NaNs gives is
// left open by IEEE 754, and the compilers of either side may commute it.)
#include <llvm/IR/Intrinsics.h>

#include <algorithm>

#include "backend/llvm/standalone_emitter.h"

namespace kiln::llvm_backend::standalone {

using ir::Primitive;

namespace {

// Scans and argument reductions run along the axis for a tile of up to
// line_tile neighbouring lines at once, so the innermost loop walks
// contiguous memory (and vectorizes) instead of striding along the axis.
constexpr int64_t line_tile = 256;
// Up to this many neighbouring lines keep their running values in registers.
constexpr int64_t narrow_lines = 8;

struct Tiling {
  int64_t tile = 1, tiles = 0;
};

Tiling tiling(const AxisView& view) {
  Tiling result;
  result.tile = std::min(view.inner, line_tile);
  result.tiles = (view.inner + result.tile - 1) / result.tile;
  return result;
}

/// Loops over (outer, tile of inner) pairs; body(outer, first column, columns).
template <class Body>
CompiledKernel for_each_tile(Emitter& e, const AxisView& view, Body body) {
  Tiling t = tiling(view);
  CompiledKernel result;
  result.range = view.outer * t.tiles;
  result.work_per_iteration = t.tile * std::max<int64_t>(view.extent, 1);
  e.loop(e.begin(), e.end(), "tile", [&](llvm::Value* iteration) {
    std::vector<llvm::Value*> split = e.decompose(iteration, {view.outer, t.tiles});
    llvm::Value* first = e.mul(split[1], t.tile);
    llvm::Value* columns =
        t.tiles == 1 ? e.i64(view.inner) : e.min(e.i64(t.tile), e.builder.CreateSub(e.i64(view.inner), first));
    body(split[0], first, columns);
  });
  return result;
}

// ---- cumsum ------------------------------------------------------------------------

}  // namespace

CompiledKernel emit_cumsum(Emitter& e) {
  if (shape_size(e.node.type.shape) == 0) return {};
  AxisView view = view_around(e.node.type.shape, e.node.attrs.ints[0]);
  bool reverse = e.node.attrs.ints[1] != 0;
  DType dtype = e.node.type.dtype;
  llvm::IRBuilder<>& b = e.builder;
  llvm::Type* type = e.value_type(dtype);
  // The reference's accumulator: double for f32.
  llvm::Type* running_type = dtype == DType::f32 ? b.getDoubleTy() : type;
  llvm::Value* running = e.stack_array(running_type, tiling(view).tile);
  llvm::Value* zero = llvm::Constant::getNullValue(running_type);
  // Adds element `at` to running sum `c` and stores the sum so far there.
  auto accumulate = [&](llvm::Value* at, llvm::Value* c) {
    llvm::Value* value = e.load(type, e.input_pointer(0), at);
    llvm::Value* sum = e.load(running_type, running, c);
    switch (dtype) {
      case DType::bool_: sum = b.CreateZExt(b.CreateICmpNE(b.CreateOr(sum, value), b.getInt8(0)), b.getInt8Ty()); break;
      case DType::f32: sum = b.CreateFAdd(sum, b.CreateFPExt(value, running_type)); break;
      case DType::f64: sum = b.CreateFAdd(sum, value); break;
      default:
        sum = b.CreateAdd(sum, value);  // wraps
        break;
    }
    e.store(sum, running, c);
    e.store(dtype == DType::f32 ? b.CreateFPTrunc(sum, type) : sum, e.output_pointer(), at);
  };
  auto position_of = [&](llvm::Value* step) { return reverse ? b.CreateSub(e.i64(view.extent - 1), step) : step; };
  // A few lines (a scan along the last axis is one) are walked at constant
  // columns, so that their running sums become registers: through memory,
  // each step waited on the previous step's store (about 2.5x slower).
  bool narrow = tiling(view).tiles == 1 && view.inner <= narrow_lines;
  return for_each_tile(e, view, [&](llvm::Value* outer, llvm::Value* first, llvm::Value* columns) {
    auto each_column = [&](const char* name, auto body) {
      if (!narrow) return e.loop(e.i64(0), columns, name, body);
      for (int64_t c = 0; c < view.inner; ++c) body(e.i64(c));
    };
    each_column("clear", [&](llvm::Value* c) { e.store(zero, running, c); });
    llvm::Value* line = e.add(e.mul(outer, view.extent * view.inner), first);
    e.loop(e.i64(0), e.i64(view.extent), "step", [&](llvm::Value* step) {
      llvm::Value* base = e.add(line, e.mul(position_of(step), view.inner));
      each_column("column", [&](llvm::Value* c) { accumulate(e.add(base, c), c); });
    });
  });
}

// ---- argmax / argmin -----------------------------------------------------------------

namespace {

/// Whether `value` displaces `best` as the extreme: a NaN is the extreme
/// (the first one stays), ties keep the first occurrence.
llvm::Value* displaces(Emitter& e, Primitive op, DType dtype, llvm::Value* value, llvm::Value* best) {
  llvm::IRBuilder<>& b = e.builder;
  bool largest = op == Primitive::argmax;
  if (is_floating(dtype)) {
    llvm::Value* better = largest ? b.CreateFCmpOGT(value, best) : b.CreateFCmpOLT(value, best);
    llvm::Value* best_is_number = b.CreateFCmpORD(best, best);
    return b.CreateAnd(best_is_number, b.CreateOr(b.CreateFCmpUNO(value, value), better));
  }
  if (dtype == DType::bool_) return largest ? b.CreateICmpUGT(value, best) : b.CreateICmpULT(value, best);
  return largest ? b.CreateICmpSGT(value, best) : b.CreateICmpSLT(value, best);
}

/// Whether the candidate (value, index) beats the current (best, best_index)
/// when both come from different parts of one line: the reference's answer
/// is the first NaN if there is one, else the first of the values equal to
/// the extreme, whichever order the parts were scanned in.
llvm::Value* beats(Emitter& e, DType dtype, llvm::Value* value, llvm::Value* index, llvm::Value* best,
                   llvm::Value* best_index) {
  llvm::IRBuilder<>& b = e.builder;
  llvm::Value* tie = is_floating(dtype)
                         ? b.CreateOr(b.CreateFCmpOEQ(value, best),
                                      b.CreateAnd(b.CreateFCmpUNO(value, value), b.CreateFCmpUNO(best, best)))
                         : b.CreateICmpEQ(value, best);
  llvm::Value* earlier_tie = b.CreateAnd(tie, b.CreateICmpSLT(index, best_index));
  return b.CreateOr(displaces(e, e.node.op, dtype, value, best), earlier_tie);
}

// Along contiguous lines, the line is scanned as rows of `lanes` elements:
// each lane keeps the reference's sequential answer for its own elements
// (vectorized across lanes), then the lanes' answers are combined.
constexpr int64_t lanes = 16;

CompiledKernel emit_contiguous_argument_reduce(Emitter& e, const AxisView& view) {
  DType dtype = e.input(0).type.dtype;
  llvm::IRBuilder<>& b = e.builder;
  llvm::Type* type = e.value_type(dtype);
  llvm::Type* index_type = b.getInt32Ty();
  llvm::Value* best = e.stack_array(type, lanes);
  llvm::Value* best_index = e.stack_array(index_type, lanes);
  int64_t rows = view.extent / lanes, remainder = view.extent % lanes;
  CompiledKernel result;
  result.range = view.outer;
  result.work_per_iteration = view.extent;
  e.loop(e.begin(), e.end(), "line", [&](llvm::Value* line) {
    llvm::Value* start = e.mul(line, view.extent);
    auto scan_row = [&](llvm::Value* row, int64_t count) {
      llvm::Value* first = e.mul(row, lanes);
      e.loop(e.i64(0), e.i64(count), "lane", [&](llvm::Value* c) {
        llvm::Value* position = e.add(first, c);
        llvm::Value* value = e.load(type, e.input_pointer(0), e.add(start, position));
        llvm::Value* current = e.load(type, best, c);
        llvm::Value* better = displaces(e, e.node.op, dtype, value, current);
        e.store(b.CreateSelect(better, value, current), best, c);
        llvm::Value* index = b.CreateTrunc(position, index_type);
        e.store(b.CreateSelect(better, index, e.load(index_type, best_index, c)), best_index, c);
      });
    };
    e.loop(e.i64(0), e.i64(lanes), "lane", [&](llvm::Value* c) {
      e.store(e.load(type, e.input_pointer(0), e.add(start, c)), best, c);
      e.store(b.CreateTrunc(c, index_type), best_index, c);
    });
    e.loop(e.i64(1), e.i64(rows), "row", [&](llvm::Value* row) { scan_row(row, lanes); });
    if (remainder) scan_row(e.i64(rows), remainder);
    llvm::Value* answer = e.stack_array(type, 1);
    llvm::Value* answer_index = e.stack_array(index_type, 1);
    e.store(e.load(type, best, e.i64(0)), answer, e.i64(0));
    e.store(e.load(index_type, best_index, e.i64(0)), answer_index, e.i64(0));
    e.loop(e.i64(1), e.i64(lanes), "combine", [&](llvm::Value* c) {
      llvm::Value* value = e.load(type, best, c);
      llvm::Value* index = e.load(index_type, best_index, c);
      llvm::Value* current = e.load(type, answer, e.i64(0));
      llvm::Value* current_index = e.load(index_type, answer_index, e.i64(0));
      llvm::Value* better = beats(e, dtype, value, index, current, current_index);
      e.store(b.CreateSelect(better, value, current), answer, e.i64(0));
      e.store(b.CreateSelect(better, index, current_index), answer_index, e.i64(0));
    });
    e.store(e.load(index_type, answer_index, e.i64(0)), e.output_pointer(), line);
  });
  return result;
}

}  // namespace

CompiledKernel emit_argument_reduce(Emitter& e) {
  if (shape_size(e.node.type.shape) == 0) return {};
  const ir::Node& x = e.input(0);
  AxisView view = view_around(x.type.shape, e.node.attrs.ints[0]);
  llvm::IRBuilder<>& b = e.builder;
  if (view.extent == 0) {
    // Every line is empty: index 0, as the reference.
    int64_t size = shape_size(e.node.type.shape);
    return e.for_each_row_piece(1, size, [&](llvm::Value*, llvm::Value* begin, llvm::Value* end) {
      e.fill(b.getInt32(0), e.output_pointer(), begin, b.CreateSub(end, begin));
    });
  }
  if (view.inner == 1 && view.extent >= 2 * lanes) return emit_contiguous_argument_reduce(e, view);
  DType dtype = x.type.dtype;
  llvm::Type* type = e.value_type(dtype);
  int64_t tile = tiling(view).tile;
  llvm::Value* best = e.stack_array(type, tile);
  llvm::Value* best_index = e.stack_array(b.getInt32Ty(), tile);
  return for_each_tile(e, view, [&](llvm::Value* outer, llvm::Value* first, llvm::Value* columns) {
    llvm::Value* line = e.add(e.mul(outer, view.extent * view.inner), first);
    e.loop(e.i64(0), columns, "start", [&](llvm::Value* c) {
      e.store(e.load(type, e.input_pointer(0), e.add(line, c)), best, c);
      e.store(b.getInt32(0), best_index, c);
    });
    e.loop(e.i64(1), e.i64(view.extent), "step", [&](llvm::Value* step) {
      llvm::Value* base = e.add(line, e.mul(step, view.inner));
      llvm::Value* step_index = b.CreateTrunc(step, b.getInt32Ty());
      e.loop(e.i64(0), columns, "column", [&](llvm::Value* c) {
        llvm::Value* value = e.load(type, e.input_pointer(0), e.add(base, c));
        llvm::Value* current = e.load(type, best, c);
        llvm::Value* better = displaces(e, e.node.op, dtype, value, current);
        e.store(b.CreateSelect(better, value, current), best, c);
        e.store(b.CreateSelect(better, step_index, e.load(b.getInt32Ty(), best_index, c)), best_index, c);
      });
    });
    llvm::Value* target = e.add(e.mul(outer, view.inner), first);
    e.loop(e.i64(0), columns, "finish", [&](llvm::Value* c) {
      e.store(e.load(b.getInt32Ty(), best_index, c), e.output_pointer(), e.add(target, c));
    });
  });
}

// ---- matmul of integers and bool ----------------------------------------------------

// Row by row in i-p-j order like the reference, so both operands are read
// contiguously; integers wrap, bool is the "or" of "and"s.
CompiledKernel emit_integer_matmul(Emitter& e) {
  if (shape_size(e.node.type.shape) == 0) return {};
  const Shape& a_shape = e.input(0).type.shape;
  size_t rank = a_shape.size();
  int64_t m = a_shape[rank - 2], k = a_shape[rank - 1], n = e.node.type.shape[rank - 1];
  int64_t batch = shape_size(Shape(a_shape.begin(), a_shape.end() - 2));
  DType dtype = e.node.type.dtype;
  llvm::IRBuilder<>& b = e.builder;
  llvm::Type* type = e.value_type(dtype);
  llvm::Value* zero = llvm::Constant::getNullValue(type);
  CompiledKernel result;
  result.range = batch * m;
  result.work_per_iteration = std::max<int64_t>(k * n, n);
  e.loop(e.begin(), e.end(), "row", [&](llvm::Value* row) {
    llvm::Value* matrix = e.decompose(row, {batch, m})[0];
    llvm::Value* target = e.mul(row, n);
    e.fill(zero, e.output_pointer(), target, e.i64(n));
    e.loop(e.i64(0), e.i64(k), "inner", [&](llvm::Value* p) {
      llvm::Value* x = e.load(type, e.input_pointer(0), e.add(e.mul(row, k), p));
      llvm::Value* source = e.mul(e.add(e.mul(matrix, k), p), n);
      e.loop(e.i64(0), e.i64(n), "column", [&](llvm::Value* j) {
        llvm::Value* at = e.add(target, j);
        llvm::Value* y = e.load(type, e.input_pointer(1), e.add(source, j));
        llvm::Value* sum = e.load(type, e.output_pointer(), at);
        if (dtype == DType::bool_) {
          llvm::Value* both = b.CreateAnd(b.CreateICmpNE(x, zero), b.CreateICmpNE(y, zero));
          sum = b.CreateZExt(b.CreateOr(b.CreateICmpNE(sum, zero), both), type);
        } else {
          sum = b.CreateAdd(sum, b.CreateMul(x, y));  // wraps
        }
        e.store(sum, e.output_pointer(), at);
      });
    });
  });
  return result;
}

// ---- random numbers --------------------------------------------------------------------

namespace {

/// Threefry-2x32 with 20 rounds, as ops::threefry2x32 (src/ops/random/threefry.h).
std::pair<llvm::Value*, llvm::Value*> threefry(Emitter& e, llvm::Value* key0, llvm::Value* key1, llvm::Value* counter0,
                                               llvm::Value* counter1) {
  llvm::IRBuilder<>& b = e.builder;
  constexpr uint32_t rotations[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  llvm::Value* schedule[3] = {key0, key1, b.CreateXor(b.CreateXor(key0, key1), b.getInt32(0x1BD11BDAu))};
  llvm::Value* x0 = b.CreateAdd(counter0, schedule[0]);
  llvm::Value* x1 = b.CreateAdd(counter1, schedule[1]);
  for (uint32_t group = 0; group < 5; ++group) {
    for (uint32_t rotation : rotations[group % 2]) {
      x0 = b.CreateAdd(x0, x1);
      x1 = b.CreateIntrinsic(llvm::Intrinsic::fshl, {b.getInt32Ty()}, {x1, x1, b.getInt32(rotation)});
      x1 = b.CreateXor(x1, x0);
    }
    x0 = b.CreateAdd(x0, schedule[(group + 1) % 3]);
    x1 = b.CreateAdd(x1, b.CreateAdd(schedule[(group + 2) % 3], b.getInt32(group + 1)));
  }
  return {x0, x1};
}

/// A 32-bit word as the node's element: itself (random_bits) or a float in
/// [0, 1) from its high 23 bits under the exponent of 1.0.
llvm::Value* element_of_word(Emitter& e, llvm::Value* word) {
  llvm::IRBuilder<>& b = e.builder;
  if (e.node.op == Primitive::random_bits) return word;
  llvm::Value* bits = b.CreateOr(b.CreateLShr(word, 9), b.getInt32(0x3F800000u));
  return b.CreateFSub(b.CreateBitCast(bits, b.getFloatTy()), llvm::ConstantFP::get(b.getFloatTy(), 1.0));
}

}  // namespace

// Counters as src/ops/random/random.cpp lays them out: a draw of N words hashes
// (j, H + j) for j < H = ceil(N / 2) into words j and H + j, the counter N
// (the last pair's when N is odd) replaced by 0 and its word dropped. An f64
// takes two words, i and N + i of a draw of 2N: the pair (i, N + i).
CompiledKernel emit_random(Emitter& e) {
  int64_t size = shape_size(e.node.type.shape);
  if (size == 0) return {};
  llvm::IRBuilder<>& b = e.builder;
  llvm::Value* key0 = e.load(b.getInt32Ty(), e.input_pointer(0), e.i64(0));
  llvm::Value* key1 = e.load(b.getInt32Ty(), e.input_pointer(0), e.i64(1));
  auto word = [&](llvm::Value* counter) { return b.CreateTrunc(counter, b.getInt32Ty()); };
  CompiledKernel result;
  result.work_per_iteration = 32;
  if (e.node.type.dtype == DType::f64) {
    result.range = size;
    e.loop(e.begin(), e.end(), "element", [&](llvm::Value* i) {
      auto [high, low] = threefry(e, key0, key1, word(i), word(e.add(i, e.i64(size))));
      llvm::Value* bits =
          b.CreateOr(b.CreateShl(b.CreateZExt(high, b.getInt64Ty()), 32), b.CreateZExt(low, b.getInt64Ty()));
      bits = b.CreateOr(b.CreateLShr(bits, 12), b.getInt64(0x3FF0000000000000u));
      llvm::Value* value =
          b.CreateFSub(b.CreateBitCast(bits, b.getDoubleTy()), llvm::ConstantFP::get(b.getDoubleTy(), 1.0));
      e.store(value, e.output_pointer(), i);
    });
    return result;
  }
  int64_t half = (size + 1) / 2, pairs = size / 2;
  result.range = half;
  e.loop(e.begin(), e.min(e.end(), e.i64(pairs)), "pair", [&](llvm::Value* j) {
    llvm::Value* partner = e.add(j, e.i64(half));
    auto [first, second] = threefry(e, key0, key1, word(j), word(partner));
    e.store(element_of_word(e, first), e.output_pointer(), j);
    e.store(element_of_word(e, second), e.output_pointer(), partner);
  });
  if (size % 2 == 1) {
    llvm::Value* mine = b.CreateAnd(b.CreateICmpSLE(e.begin(), e.i64(pairs)), b.CreateICmpSGT(e.end(), e.i64(pairs)));
    e.when(mine, [&] {
      llvm::Value* first = threefry(e, key0, key1, b.getInt32(static_cast<uint32_t>(pairs)), b.getInt32(0)).first;
      e.store(element_of_word(e, first), e.output_pointer(), e.i64(pairs));
    });
  }
  return result;
}

}  // namespace kiln::llvm_backend::standalone
