// Loop nests in LLVM IR for fused kernels (see the header).
//
// Every value in a kernel is indexed by one iteration space: the root's shape
// for an elementwise kernel, the reduced input's shape for a reduction. Fused
// nodes only broadcast (NumPy, trailing-aligned), so a node of shape N reads
// space dimension d at its own dimension d - (rank(space) - rank(N)), or at 0
// where its extent is 1. Loads are therefore base + sum(index_d * stride_d)
// with static strides (0 where broadcast), which LLVM hoists and vectorizes.
#include "backend/llvm/codegen.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "backend/llvm/engine.h"
#include "backend/llvm/kernel_cache.h"
#include "backend/llvm/loops.h"
#include "backend/llvm/scalar_emitter.h"
#include "backend/llvm/standalone.h"
#include "core/error_format.h"
#include "ops/rules.h"

namespace kiln::llvm_backend {

using ir::Primitive;

namespace {

std::string ops_text(const ir::Node& node) {
  std::string text;
  for (int64_t value : node.attrs.ints) text += std::to_string(value) + ",";
  if (node.op == Primitive::literal) {
    // Exact bits: printed digits could make two different values one key.
    double value = node.attrs.scalar.as_double();
    uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    text += "=" + std::to_string(node.attrs.scalar.as_int()) + "/" + std::to_string(bits);
  }
  if (node.op == Primitive::convert) text += std::string(dtype_name(node.attrs.dtype));
  return text;
}

// Literals become kernel parameters, except an exponent of pow, whose value
// LLVM turns into cheaper code (x*x for 2). Returns the literal's slot, or -1.
bool baked(const ir::Graph& graph, const Kernel& kernel, ir::ValueId literal) {
  for (ir::ValueId id : kernel.region) {
    const ir::Node& node = graph.nodes[static_cast<size_t>(id)];
    if (node.op != Primitive::pow) continue;
    // The exponent, possibly through a broadcast.
    ir::ValueId exponent = node.inputs[1];
    const ir::Node& e = graph.nodes[static_cast<size_t>(exponent)];
    if (e.op == Primitive::broadcast) exponent = e.inputs[0];
    if (exponent == literal) return true;
  }
  return false;
}

int literal_slot(const ir::Graph& graph, const Kernel& kernel, ir::ValueId literal) {
  int slot = 0;
  for (ir::ValueId id : kernel.region) {
    if (graph.nodes[static_cast<size_t>(id)].op != Primitive::literal || baked(graph, kernel, id)) continue;
    if (id == literal) return slot;
    ++slot;
  }
  return -1;
}

// A prefetching flat loop (Kernel::prefetch) runs in blocks of this many
// elements, each block first prefetching the lines this many elements ahead
// in every array the kernel reads.
constexpr int64_t prefetch_block = 256;
constexpr int64_t prefetch_distance = 1024;

// Everything the generated code depends on, so equal kernels compile once per
// process: operations, dtypes, attributes, literal values, wiring, and the
// shapes — except for flat kernels, whose code is the same for every shape.
std::string kernel_key(const ir::Graph& graph, const Kernel& kernel) {
  bool flat = is_flat(graph, kernel);
  std::string key = kernel.chunked                            ? "reduce chunked"
                    : kernel.kind == Kernel::Kind::reduce     ? "reduce"
                    : kernel.kind == Kernel::Kind::standalone ? "standalone"
                    : kernel.prefetch                         ? "flat prefetching"
                    : flat                                    ? "flat"
                                                              : "rows";
  auto shape_text = [&](const Shape& shape) {
    if (!flat) return shape_string(shape);
    return std::string(shape_size(shape) == 1 ? "1" : "n");
  };
  auto local = [&](ir::ValueId id) {
    for (size_t k = 0; k < kernel.leaves.size(); ++k)
      if (kernel.leaves[k] == id) return "L" + std::to_string(k);
    for (size_t k = 0; k < kernel.region.size(); ++k)
      if (kernel.region[k] == id) return "R" + std::to_string(k);
    return std::string("?");
  };
  for (ir::ValueId leaf : kernel.leaves) {
    const ir::Node& node = graph.nodes[static_cast<size_t>(leaf)];
    key += "|leaf " + std::string(dtype_name(node.type.dtype)) + shape_text(node.type.shape);
  }
  for (ir::ValueId extra : kernel.extra_roots) key += "|out " + local(extra);
  for (ir::ValueId id : kernel.region) {
    const ir::Node& node = graph.nodes[static_cast<size_t>(id)];
    bool parameter = node.op == Primitive::literal && !baked(graph, kernel, id);
    key += "|" + std::string(ir::primitive_name(node.op)) + " " + std::string(dtype_name(node.type.dtype)) +
           shape_text(node.type.shape) + " " + (parameter ? std::string("param") : ops_text(node));
    for (ir::ValueId input : node.inputs) key += " " + local(input);
  }
  return key;
}

class KernelEmitter {
 public:
  KernelEmitter(llvm::Module& module, const ir::Graph& graph, const Kernel& kernel, const std::string& symbol)
      : context_(module.getContext()), module_(module), builder_(context_), graph_(graph), kernel_(kernel) {
    auto* i64 = builder_.getInt64Ty();
    auto* pointer = builder_.getPtrTy();
    // The body takes every buffer as a noalias parameter (outputs are fresh
    // memory), sparing the vectorizer runtime overlap checks and a scalar
    // fallback copy of each loop; the exported entry unpacks the array of
    // buffers and is inlined into by the body.
    std::vector<llvm::Type*> parameters{i64, i64};
    parameters.insert(parameters.end(), kernel.leaves.size() + kernel.extra_roots.size() + 2,
                      pointer);  // constants, outputs, leaves
    auto* body_type = llvm::FunctionType::get(builder_.getVoidTy(), parameters, false);
    function_ = llvm::Function::Create(body_type, llvm::Function::InternalLinkage, symbol + "_body", module_);
    function_->addFnAttr(llvm::Attribute::NoUnwind);
    function_->addFnAttr(llvm::Attribute::AlwaysInline);
    for (unsigned k = 2; k < function_->arg_size(); ++k) function_->addParamAttr(k, llvm::Attribute::NoAlias);
    auto* entry_type = llvm::FunctionType::get(builder_.getVoidTy(), {pointer, i64, i64}, false);
    entry_ = llvm::Function::Create(entry_type, llvm::Function::ExternalLinkage, symbol, module_);
    entry_->addFnAttr(llvm::Attribute::NoUnwind);
    builder_.SetInsertPoint(llvm::BasicBlock::Create(context_, "entry", function_));
    for (ir::ValueId id : kernel_.region) in_region_.emplace(id, true);
  }

  CompiledKernel emit() {
    {
      llvm::IRBuilder<> entry(llvm::BasicBlock::Create(context_, "entry", entry_));
      std::vector<llvm::Value*> arguments{entry_->getArg(1), entry_->getArg(2)};
      for (size_t k = 0; k < kernel_.leaves.size() + kernel_.extra_roots.size() + 2; ++k) {
        llvm::Value* slot = entry.CreateConstGEP1_64(entry.getPtrTy(), entry_->getArg(0), k);
        arguments.push_back(entry.CreateLoad(entry.getPtrTy(), slot));
      }
      entry.CreateCall(function_, arguments);
      entry.CreateRetVoid();
    }
    const ir::Node& root = node(kernel_.root);
    constants_ = function_->getArg(2);
    function_->addParamAttr(2, llvm::Attribute::ReadOnly);
    output_ = function_->getArg(3);
    for (size_t k = 0; k < kernel_.extra_roots.size(); ++k) extra_outputs_.push_back(function_->getArg(4 + k));
    unsigned first_leaf = 4 + static_cast<unsigned>(kernel_.extra_roots.size());
    for (size_t k = 0; k < kernel_.leaves.size(); ++k)
      leaf_pointer_[kernel_.leaves[k]] = function_->getArg(first_leaf + k);
    CompiledKernel result;
    if (kernel_.kind == Kernel::Kind::standalone) {
      result = emit_standalone(builder_, function_, graph_, root);
    } else if (kernel_.kind == Kernel::Kind::reduce) {
      result = emit_reduce(root);
    } else {
      space_ = root.type.shape;
      result = emit_elementwise(root);
    }
    builder_.CreateRetVoid();
    return result;
  }

 private:
  const ir::Node& node(ir::ValueId id) const { return graph_.nodes[static_cast<size_t>(id)]; }
  static ops::Reduction reduction_of(const ir::Node& root) { return ops::rules(root.op).reduction; }

  llvm::Type* memory_type(DType dtype) { return dtype == DType::bool_ ? builder_.getInt8Ty() : register_type(dtype); }
  llvm::Type* register_type(DType dtype) { return element_.register_type(dtype); }

  // ---- loops ------------------------------------------------------------------------

  // What a loop asks of the vectorizer. interleave > 1: that many vectors per
  // iteration (it otherwise interleaves nothing, see the pass pipeline).
  // fold_tail: the last partial vector runs masked in the vector body instead
  // of in a scalar copy of the loop (and a narrower vector copy before it),
  // so a long loop body is compiled once rather than three times.
  struct LoopHints {
    int interleave = 1;
    bool fold_tail = false;
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
    llvm::Value* size_value = builder_.getInt64(size);
    llvm::Value* first = builder_.CreateUDiv(begin, size_value);
    llvm::Value* last = builder_.CreateUDiv(builder_.CreateAdd(end, builder_.getInt64(size - 1)), size_value);
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

  CompiledKernel emit_elementwise(const ir::Node& root) {
    CompiledKernel result;
    if (is_flat(graph_, kernel_)) {
      // One loop over every element; leaves are the same shape or scalars.
      flat_ = true;
      result.range = kernel_range(graph_, kernel_);
      // A long body (many transcendental functions) is worth compiling once:
      // the tail's mask costs little next to it.
      int body_cost = 0;
      for (ir::ValueId id : kernel_.region) body_cost += operation_cost(node(id).op);
      LoopHints hints{.fold_tail = body_cost >= 128};
      flat_blocks([&](llvm::Value* begin, llvm::Value* end) {
        loop(
            begin, end, "i",
            [&](llvm::Value* i) {
              flat_index_ = i;
              index_.assign(space_.size(), i);
              // Every output is computed before any is stored, so an output may
              // share memory with a leaf read at the same index.
              llvm::Value* main = value(kernel_.root);
              std::vector<llvm::Value*> extras;
              for (ir::ValueId extra : kernel_.extra_roots) extras.push_back(value(extra));
              store(i, main, root.type.dtype);
              for (size_t k = 0; k < extras.size(); ++k)
                store_to(extra_outputs_[k], i, extras[k], node(kernel_.extra_roots[k]).type.dtype);
            },
            hints);
      });
      return result;
    }
    if (!kernel_.extra_roots.empty())
      throw std::logic_error("kiln LLVM backend: a kernel with several outputs must be flat");
    // Rows: the parallel loop runs over all but the last dimension, the inner
    // loop over the last one (contiguous for every full-shaped leaf).
    int64_t inner = space_.back();
    std::vector<int64_t> outer_extents(space_.begin(), space_.end() - 1);
    result.range = kernel_range(graph_, kernel_);
    result.work_per_iteration = inner;
    loop(function_->getArg(0), function_->getArg(1), "row", [&](llvm::Value* row) {
      std::vector<llvm::Value*> outer = decompose(builder_, row, outer_extents);
      llvm::Value* row_start = builder_.CreateMul(row, builder_.getInt64(inner));
      loop(builder_.getInt64(0), builder_.getInt64(inner), "column", [&](llvm::Value* column) {
        index_ = outer;
        index_.push_back(column);
        memo_.clear();
        store(builder_.CreateAdd(row_start, column), value(kernel_.root), root.type.dtype);
      });
    });
    return result;
  }

  CompiledKernel emit_reduce(const ir::Node& root) {
    const ir::Node& input = node(root.inputs[0]);
    space_ = input.type.shape;
    const std::vector<int64_t>& axes = root.attrs.ints;
    std::vector<char> reduced(space_.size(), 0);
    for (int64_t axis : axes) reduced[static_cast<size_t>(axis)] = 1;
    std::vector<int64_t> kept_extents;
    std::vector<size_t> kept_dims, reduced_dims;
    for (size_t d = 0; d < space_.size(); ++d) {
      if (reduced[d]) {
        reduced_dims.push_back(d);
      } else {
        kept_dims.push_back(d);
        kept_extents.push_back(space_[d]);
      }
    }
    CompiledKernel result;
    result.range = kernel_range(graph_, kernel_);
    int64_t reduced_size = 1;
    for (size_t d : reduced_dims) reduced_size *= space_[d];
    result.work_per_iteration = std::max<int64_t>(reduced_size, 1);
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

  // The accumulator lives in a stack slot; mem2reg turns it into registers.
  // Floating max/min track "a NaN was seen" separately, so the comparison
  // itself can be a plain, vectorizable max/min reduction.
  llvm::AllocaInst* start_accumulator(const ir::Node& root) {
    DType dtype = root.type.dtype;
    llvm::IRBuilder<> entry(&function_->getEntryBlock(), function_->getEntryBlock().begin());
    ops::Reduction reduction = reduction_of(root);
    bool extreme = is_floating(dtype) && (reduction == ops::Reduction::max || reduction == ops::Reduction::min);
    nan_seen_ = extreme ? entry.CreateAlloca(builder_.getInt1Ty()) : nullptr;
    return entry.CreateAlloca(register_type(dtype));
  }

  void reset_accumulator(const ir::Node& root, llvm::AllocaInst* accumulator) {
    builder_.CreateStore(element_.reduction_identity(reduction_of(root), root.type.dtype), accumulator);
    if (nan_seen_) builder_.CreateStore(builder_.getFalse(), nan_seen_);
  }

  llvm::Value* accumulated(const ir::Node& root, llvm::AllocaInst* accumulator) {
    llvm::Value* result = builder_.CreateLoad(register_type(root.type.dtype), accumulator);
    if (!nan_seen_) return result;
    return builder_.CreateSelect(builder_.CreateLoad(builder_.getInt1Ty(), nan_seen_),
                                 llvm::ConstantFP::getNaN(result->getType()), result);
  }

  // A chunked reduction (Kernel::chunked): each call reduces the input
  // elements [begin, end) and writes its one result to the output's first
  // element; the runtime gives each slice its own output slot and combines
  // the slices' results in order.
  CompiledKernel emit_chunked_reduction(const ir::Node& root, CompiledKernel result) {
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
    return result;
  }

  // A reduction over one block of consecutive axes with kept axes after it
  // (a bias gradient summed over the batch; a maximum down the columns; a
  // mean over the sequence of [batch, sequence, features]): the input seen as
  // [outer, reduced, inner] is accumulated one row of `inner` elements after
  // another into the output, so every access is contiguous and the loop over
  // the output vectorizes, instead of striding down each column. Each output
  // element still combines the rows in the reference's order. The leaves
  // must be read at the input's flat index; with outer axes, rows shorter
  // than a cache line gain nothing over striding.
  bool rows_accumulate(const ir::Node& root, const std::vector<size_t>& reduced_dims) const {
    if (root.type.dtype == DType::bool_ || reduced_dims.empty()) return false;
    size_t first = reduced_dims.front(), last = reduced_dims.back();
    if (last - first + 1 != reduced_dims.size() || last + 1 == space_.size()) return false;
    int64_t inner = 1;
    for (size_t d = last + 1; d < space_.size(); ++d) inner *= space_[d];
    if (inner == 0 || (first > 0 && inner < 16)) return false;
    return reads_at_flat_index(graph_, kernel_);
  }

  CompiledKernel emit_accumulating_rows(const ir::Node& root, const std::vector<size_t>& reduced_dims,
                                        CompiledKernel result) {
    DType dtype = root.type.dtype;
    llvm::Type* type = register_type(dtype);
    int64_t rows = 1, inner = 1;
    for (size_t d : reduced_dims) rows *= space_[d];
    for (size_t d = reduced_dims.back() + 1; d < space_.size(); ++d) inner *= space_[d];
    llvm::Value* inner_size = builder_.getInt64(inner);
    flat_ = true;
    // Output elements [begin, end) cut where the outer index changes.
    segments(function_->getArg(0), function_->getArg(1), inner, "outer",
             [&](llvm::Value* outer, llvm::Value* low, llvm::Value* high) {
               loop(low, high, "init", [&](llvm::Value* out) {
                 store(out, element_.reduction_identity(reduction_of(root), dtype), dtype);
               });
               // Input element (outer, row, i) sits at (outer * rows + row) * inner + i
               // = out + (outer * (rows - 1) + row) * inner for output element out = outer * inner + i.
               llvm::Value* outer_shift = builder_.CreateMul(outer, builder_.getInt64(rows - 1));
               loop(builder_.getInt64(0), builder_.getInt64(rows), "row", [&](llvm::Value* row) {
                 llvm::Value* shift = builder_.CreateMul(builder_.CreateAdd(outer_shift, row), inner_size);
                 loop(low, high, "column", [&](llvm::Value* out) {
                   memo_.clear();
                   flat_index_ = builder_.CreateAdd(shift, out);
                   llvm::Value* element = value(root.inputs[0]);
                   llvm::Value* address = builder_.CreateInBoundsGEP(type, output_, out);
                   llvm::Value* current = builder_.CreateLoad(type, address);
                   builder_.CreateStore(element_.combine(reduction_of(root), dtype, current, element), address);
                 });
               });
             });
    flat_ = false;
    return result;
  }

  void accumulate(const ir::Node& root, llvm::AllocaInst* accumulator) {
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
    builder_.CreateStore(element_.combine(reduction_of(root), root.type.dtype, current, element), accumulator);
  }

  void emit_reduction_loops(const ir::Node& root, const std::vector<size_t>& dims, size_t level,
                            llvm::AllocaInst* accumulator) {
    if (level == dims.size()) return accumulate(root, accumulator);
    size_t dim = dims[level];
    // The innermost loop keeps four partial results: one chain of vector adds
    // waits on each add's latency, four keep the loads streaming.
    LoopHints hints{.interleave = level + 1 == dims.size() ? 4 : 1};
    loop(
        builder_.getInt64(0), builder_.getInt64(space_[dim]), "reduce",
        [&](llvm::Value* counter) {
          index_[dim] = counter;
          emit_reduction_loops(root, dims, level + 1, accumulator);
        },
        hints);
  }

  // ---- values -----------------------------------------------------------------------

  llvm::Value* offset_of(ir::ValueId id) {
    if (flat_) {
      return shape_size(node(id).type.shape) == 1 && shape_size(space_) != 1 ? builder_.getInt64(0) : flat_index_;
    }
    const Shape& shape = node(id).type.shape;
    std::vector<int64_t> strides = row_major_strides(shape);
    size_t shift = space_.size() - shape.size();
    llvm::Value* offset = builder_.getInt64(0);
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] == 1) continue;
      llvm::Value* term = builder_.CreateMul(index_[d + shift], builder_.getInt64(strides[d]), "", true, true);
      offset = builder_.CreateAdd(offset, term, "", true, true);
    }
    return offset;
  }

  llvm::Value* load(ir::ValueId id) {
    DType dtype = node(id).type.dtype;
    llvm::Type* type = memory_type(dtype);
    llvm::Value* address = builder_.CreateInBoundsGEP(type, leaf_pointer_.at(id), offset_of(id));
    llvm::Value* loaded = builder_.CreateLoad(type, address);
    return dtype == DType::bool_ ? builder_.CreateICmpNE(loaded, builder_.getInt8(0)) : loaded;
  }

  void store(llvm::Value* offset, llvm::Value* value, DType dtype) { store_to(output_, offset, value, dtype); }
  void store_to(llvm::Value* base, llvm::Value* offset, llvm::Value* value, DType dtype) {
    llvm::Type* type = memory_type(dtype);
    if (dtype == DType::bool_) value = builder_.CreateZExt(value, type);
    builder_.CreateStore(value, builder_.CreateInBoundsGEP(type, base, offset));
  }

  llvm::Value* value(ir::ValueId id) {
    auto found = memo_.find(id);
    if (found != memo_.end()) return found->second;
    llvm::Value* result = in_region_.count(id) && !(kernel_.kind == Kernel::Kind::reduce && id == kernel_.root)
                              ? compute(node(id))
                              : load(id);
    memo_.emplace(id, result);
    return result;
  }

  // A literal is read from the kernel's constants (slot = its ordinal among
  // parameter literals), so kernels differing only in numbers share code.
  llvm::Value* literal(const ir::Node& n) {
    ir::ValueId id = static_cast<ir::ValueId>(&n - graph_.nodes.data());
    int slot = literal_slot(graph_, kernel_, id);
    if (slot < 0) return constant(n.attrs.scalar, n.type.dtype);
    llvm::Value* address =
        builder_.CreateConstInBoundsGEP1_64(builder_.getInt64Ty(), constants_, static_cast<uint64_t>(slot));
    llvm::Value* bits = builder_.CreateLoad(builder_.getInt64Ty(), address);
    switch (n.type.dtype) {
      case DType::f32:
        return builder_.CreateFPTrunc(builder_.CreateBitCast(bits, builder_.getDoubleTy()), builder_.getFloatTy());
      case DType::f64: return builder_.CreateBitCast(bits, builder_.getDoubleTy());
      case DType::bool_: return builder_.CreateICmpNE(bits, builder_.getInt64(0));
      default: return builder_.CreateTrunc(bits, register_type(n.type.dtype));
    }
  }

  llvm::Value* constant(const Scalar& scalar, DType dtype) {
    llvm::Type* type = register_type(dtype);
    if (is_floating(dtype)) return llvm::ConstantFP::get(type, scalar.as_double());
    if (dtype == DType::bool_) return builder_.getInt1(scalar.as_int() != 0);
    return llvm::ConstantInt::get(type, static_cast<uint64_t>(scalar.as_int()), true);
  }

  // The row's code for one element (ops/lowering.h), fed its operands' values.
  llvm::Value* compute(const ir::Node& n) {
    const ops::PrimitiveRules& row = ops::rules(n.op);
    KILN_CHECK(row.lower != nullptr, "a fused kernel holds a primitive without scalar code");
    std::vector<ops::ScalarValue> operands;
    std::vector<DType> dtypes;
    for (ir::ValueId input : n.inputs) {
      operands.push_back(LlvmScalarEmitter::wrap(value(input)));
      dtypes.push_back(node(input).type.dtype);
    }
    return LlvmScalarEmitter::unwrap(row.lower(element_, n, operands, dtypes));
  }

  // The position along an iota node's axis of the element being computed.
  llvm::Value* iota(const ir::Node& n) {
    int64_t axis = n.attrs.ints[0];
    llvm::Value* position = builder_.getInt64(0);
    if (n.type.shape[static_cast<size_t>(axis)] != 1)
      position = flat_ ? flat_index_ : index_[static_cast<size_t>(axis) + space_.size() - n.type.shape.size()];
    llvm::Type* type = register_type(n.type.dtype);
    return is_floating(n.type.dtype) ? builder_.CreateSIToFP(position, type)
                                     : builder_.CreateSExtOrTrunc(position, type);
  }

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
  Shape space_;
  std::vector<llvm::Value*> index_;
  bool flat_ = false;
  llvm::Value* flat_index_ = nullptr;
  llvm::AllocaInst* nan_seen_ = nullptr;  // floating max/min reductions
};

}  // namespace

void forget_compiled_kernels() { clear_kernel_cache(); }

std::vector<CompiledKernel> compile_kernels(const ir::Graph& graph, const Plan& plan, const std::string& name,
                                            const std::string& dump_prefix) {
  static std::atomic<uint64_t> next_module{0};

  std::vector<CompiledKernel> kernels(plan.kernels.size());
  std::vector<std::string> keys(plan.kernels.size());
  std::vector<size_t> source(plan.kernels.size());  // the use whose code each use runs: itself or an earlier twin
  std::vector<size_t> missing;
  std::unordered_map<std::string, size_t> first_of;
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    keys[k] = kernel_key(graph, plan.kernels[k]);
    source[k] = k;
    if (std::optional<CompiledKernel> found = find_compiled_kernel(keys[k])) {
      kernels[k] = *found;
    } else if (auto [first, fresh] = first_of.emplace(keys[k], k); fresh) {
      missing.push_back(k);
    } else {
      source[k] = first->second;
    }
  }
  if (!missing.empty()) {
    auto context = std::make_unique<llvm::LLVMContext>();
    Engine& engine = Engine::instance();
    std::unique_ptr<llvm::Module> module = engine.new_module(name, *context);
    std::string prefix = "kiln_" + std::to_string(next_module.fetch_add(1)) + "_kernel_";
    std::vector<std::string> symbols;
    for (size_t k : missing) {
      symbols.push_back(prefix + std::to_string(k));
      KernelEmitter emitter(*module, graph, plan.kernels[k], symbols.back());
      kernels[k] = emitter.emit();
    }
    std::vector<void*> addresses = engine.compile(std::move(module), std::move(context), symbols, dump_prefix);
    for (size_t m = 0; m < missing.size(); ++m) {
      kernels[missing[m]].function = reinterpret_cast<KernelFunction>(addresses[m]);
      kernels[missing[m]] = remember_compiled_kernel(keys[missing[m]], kernels[missing[m]]);
    }
  }
  // Duplicates within this graph, and the parallel range of each use (a flat
  // kernel's range depends on this graph's shapes, not the cached one's).
  // Read from this call's copies: the bounded cache may already have evicted them.
  const std::vector<CompiledKernel> compiled = kernels;
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    const CompiledKernel& cached = compiled[source[k]];
    kernels[k].function = cached.function;
    kernels[k].constants.clear();
    for (ir::ValueId id : plan.kernels[k].region) {
      const ir::Node& node = graph.nodes[static_cast<size_t>(id)];
      if (node.op != Primitive::literal || baked(graph, plan.kernels[k], id)) continue;
      uint64_t bits = 0;
      if (is_floating(node.type.dtype)) {
        double value = node.attrs.scalar.as_double();
        std::memcpy(&bits, &value, sizeof bits);
      } else {
        bits = static_cast<uint64_t>(node.attrs.scalar.as_int());
      }
      kernels[k].constants.push_back(bits);
    }
    if (is_flat(graph, plan.kernels[k])) {
      kernels[k].range = kernel_range(graph, plan.kernels[k]);
      kernels[k].work_per_iteration = 1;
    } else {
      kernels[k].range = cached.range;
      kernels[k].work_per_iteration = cached.work_per_iteration;
    }
  }
  return kernels;
}

}  // namespace kiln::llvm_backend
