// Kernel emitter: entry and body functions, elementwise kernels and the
// values they compute (see the header).
#include "backend/llvm/kernel_emitter.h"

#include "backend/llvm/engine.h"
#include "backend/llvm/standalone.h"
#include "core/error_format.h"

namespace kiln::llvm_backend {

using ir::Primitive;

bool baked_literal(const ir::Graph& graph, const Kernel& kernel, ir::ValueId literal) {
  // A symbolic literal's value is the call's: it stays a parameter.
  if (graph.nodes[static_cast<size_t>(literal)].symbolic) return false;
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
    if (graph.nodes[static_cast<size_t>(id)].op != Primitive::literal || baked_literal(graph, kernel, id)) continue;
    if (id == literal) return slot;
    ++slot;
  }
  return -1;
}

int parameter_literal_count(const ir::Graph& graph, const Kernel& kernel) {
  int count = 0;
  for (ir::ValueId id : kernel.region)
    if (graph.nodes[static_cast<size_t>(id)].op == Primitive::literal && !baked_literal(graph, kernel, id)) ++count;
  return count;
}

KernelEmitter::KernelEmitter(llvm::Module& module, const ir::Graph& graph, const Kernel& kernel,
                             const std::string& symbol)
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

CompiledKernel KernelEmitter::emit() {
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
  sizes_.emplace(function_, constants_, parameter_literal_count(graph_, kernel_));
  output_ = function_->getArg(3);
  for (size_t k = 0; k < kernel_.extra_roots.size(); ++k) extra_outputs_.push_back(function_->getArg(4 + k));
  unsigned first_leaf = 4 + static_cast<unsigned>(kernel_.extra_roots.size());
  for (size_t k = 0; k < kernel_.leaves.size(); ++k)
    leaf_pointer_[kernel_.leaves[k]] = function_->getArg(first_leaf + k);
  CompiledKernel result;
  if (kernel_.kind == Kernel::Kind::standalone) {
    result = emit_standalone(builder_, function_, graph_, root);
    // Kernels of fixed sizes count in numbers; those serving every size
    // also as formulas, which a symbolic graph's calls evaluate.
    bool fixed = !root.symbolic;
    for (ir::ValueId input : root.inputs) fixed = fixed && !node(input).symbolic;
    if (fixed) {
      result.range_count = SymbolicCount(ir::DimExpr::constant(result.range));
      result.work_count = SymbolicCount(ir::DimExpr::constant(result.work_per_iteration));
    }
  } else if (kernel_.kind == Kernel::Kind::reduce) {
    result = emit_reduce(root);
  } else {
    space_ = root.type.shape;
    space_node_ = &root;
    result = emit_elementwise(root);
  }
  builder_.CreateRetVoid();
  return result;
}

int KernelEmitter::full_width_lanes() {
  int widest = 1;
  auto widen = [&](ir::ValueId id) {
    int bits = static_cast<int>(register_type(node(id).type.dtype)->getScalarSizeInBits());
    widest = std::max(widest, (bits + 7) / 8);
  };
  for (ir::ValueId id : kernel_.region) widen(id);
  for (ir::ValueId id : kernel_.leaves) widen(id);
  return std::max(Engine::instance().vector_bytes() / widest, 1);
}

CompiledKernel KernelEmitter::emit_elementwise(const ir::Node& root) {
  CompiledKernel result;
  if (is_flat(graph_, kernel_)) {
    // One loop over every element; leaves are the same shape or scalars.
    flat_ = true;
    result.range = kernel_range(graph_, kernel_);
    result.range_count = SymbolicCount(symbolic_size(root));
    result.work_count = SymbolicCount(ir::DimExpr::constant(1));
    // A long body (many transcendental functions) is worth compiling once:
    // the tail's mask costs little next to it.
    int body_cost = 0;
    for (ir::ValueId id : kernel_.region) body_cost += operation_cost(node(id).op);
    LoopHints hints{.fold_tail = body_cost >= 128};
    // A flat body reads and writes every value at the flat index: the full
    // width for its widest element is what the vectorizer's search picks
    // (the same machine code for the MLP step, W1, casts, bool and f64
    // bodies), so it is asked for and the search spared (7% of optimizing
    // the MLP step).
    hints.width = full_width_lanes();
    // A long body's repeated transcendental functions are compiled once each
    // (at that width, which their vector twins need): 25 rounds of tanh
    // compiled in 13-15 ms rather than 28-38, and ran 1-3% slower.
    if (hints.fold_tail) element_.outline_repeated_math(hints.width);
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
  KILN_CHECK(kernel_.extra_roots.empty(), "a kernel with several outputs must be flat");
  // Rows: the parallel loop runs over all but the last dimension, the inner
  // loop over the last one (contiguous for every full-shaped leaf).
  llvm::Value* inner = space_extent(space_.size() - 1);
  std::vector<llvm::Value*> outer_extents;
  for (size_t d = 0; d + 1 < space_.size(); ++d) outer_extents.push_back(space_extent(d));
  result.range = kernel_range(graph_, kernel_);
  result.work_per_iteration = space_.back();
  result.range_count = SymbolicCount(kernel_range_size(graph_, kernel_));
  result.work_count = SymbolicCount(space_dimension(space_.size() - 1));
  loop(function_->getArg(0), function_->getArg(1), "row", [&](llvm::Value* row) {
    std::vector<llvm::Value*> outer = decompose(builder_, row, outer_extents);
    llvm::Value* row_start = builder_.CreateMul(row, inner);
    loop(builder_.getInt64(0), inner, "column", [&](llvm::Value* column) {
      index_ = outer;
      index_.push_back(column);
      memo_.clear();
      store(builder_.CreateAdd(row_start, column), value(kernel_.root), root.type.dtype);
    });
  });
  return result;
}

llvm::Value* KernelEmitter::offset_of(ir::ValueId id) {
  if (flat_) {
    return is_single_value(node(id)) && !is_single_value(*space_node_) ? builder_.getInt64(0) : flat_index_;
  }
  const Shape& shape = node(id).type.shape;
  std::vector<ir::DimExpr> dims = ir::symbolic_shape(node(id));
  std::vector<ir::DimExpr> strides = row_major_strides(dims);
  size_t shift = space_.size() - shape.size();
  llvm::Value* offset = builder_.getInt64(0);
  for (size_t d = 0; d < shape.size(); ++d) {
    if (dims[d] == ir::DimExpr::constant(1)) continue;  // broadcast (only static extents of 1 are)
    llvm::Value* term = builder_.CreateMul(index_[d + shift], size(strides[d]), "", true, true);
    offset = builder_.CreateAdd(offset, term, "", true, true);
  }
  return offset;
}

ir::DimExpr KernelEmitter::space_dimension(size_t d) const {
  const ir::DimExpr* symbolic = space_node_->symbolic ? space_node_->symbolic->dimension(d) : nullptr;
  return symbolic ? *symbolic : ir::DimExpr::constant(space_[d]);
}

ir::DimExpr KernelEmitter::space_product(const std::vector<size_t>& dims) const {
  ir::DimExpr product = ir::DimExpr::constant(1);
  for (size_t d : dims) product = product * space_dimension(d);
  return product;
}

llvm::Value* KernelEmitter::load(ir::ValueId id) {
  DType dtype = node(id).type.dtype;
  llvm::Type* type = memory_type(dtype);
  llvm::Value* address = builder_.CreateInBoundsGEP(type, leaf_pointer_.at(id), offset_of(id));
  return element_.from_memory(builder_.CreateLoad(type, address), dtype);
}

void KernelEmitter::store_to(llvm::Value* base, llvm::Value* offset, llvm::Value* value, DType dtype) {
  llvm::Type* type = memory_type(dtype);
  builder_.CreateStore(element_.to_memory(value, dtype), builder_.CreateInBoundsGEP(type, base, offset));
}

llvm::Value* KernelEmitter::value(ir::ValueId id) {
  auto found = memo_.find(id);
  if (found != memo_.end()) return found->second;
  llvm::Value* result = in_region_.count(id) && !(kernel_.kind == Kernel::Kind::reduce && id == kernel_.root)
                            ? compute(node(id))
                            : load(id);
  memo_.emplace(id, result);
  return result;
}

llvm::Value* KernelEmitter::literal(const ir::Node& n) {
  ir::ValueId id = static_cast<ir::ValueId>(&n - graph_.nodes.data());
  int slot = literal_slot(graph_, kernel_, id);
  if (slot < 0) return constant(n.attrs.scalar, n.type.dtype);
  llvm::Value* address =
      builder_.CreateConstInBoundsGEP1_64(builder_.getInt64Ty(), constants_, static_cast<uint64_t>(slot));
  llvm::Value* bits = builder_.CreateLoad(builder_.getInt64Ty(), address);
  switch (n.type.dtype) {
    case DType::f32:
      return builder_.CreateFPTrunc(builder_.CreateBitCast(bits, builder_.getDoubleTy()), builder_.getFloatTy());
    case DType::f16:
    case DType::bf16:
      return element_.convert_value(builder_.CreateBitCast(bits, builder_.getDoubleTy()), DType::f64, n.type.dtype);
    case DType::f64: return builder_.CreateBitCast(bits, builder_.getDoubleTy());
    case DType::bool_: return builder_.CreateICmpNE(bits, builder_.getInt64(0));
    default: return builder_.CreateTrunc(bits, register_type(n.type.dtype));
  }
}

llvm::Value* KernelEmitter::constant(const Scalar& scalar, DType dtype) {
  llvm::Type* type = register_type(dtype);
  if (is_floating(dtype)) return element_.constant_value(scalar.as_double(), dtype);
  if (dtype == DType::bool_) return builder_.getInt1(scalar.as_int() != 0);
  return llvm::ConstantInt::get(type, static_cast<uint64_t>(scalar.as_int()), true);
}

llvm::Value* KernelEmitter::compute(const ir::Node& n) {
  const ops::PrimitiveRules& row = ops::rules(n.op);
  KILN_CHECK(row.lower != nullptr, "a fused kernel holds a primitive without scalar code");
  std::vector<ops::ScalarValue> operands(n.inputs.size());
  std::vector<DType> dtypes(n.inputs.size());
  // Operands are emitted last to first: the order the measured kernels were
  // tuned with (W1 over 2^24 floats ran 10% slower emitted first to last,
  // LLVM keeping more values live across tanh's and the logistic's bodies).
  for (size_t k = n.inputs.size(); k-- > 0;) {
    operands[k] = LlvmScalarEmitter::wrap(value(n.inputs[k]));
    dtypes[k] = node(n.inputs[k]).type.dtype;
  }
  return LlvmScalarEmitter::unwrap(row.lower(element_, n, operands, dtypes));
}

llvm::Value* KernelEmitter::iota(const ir::Node& n) {
  int64_t axis = n.attrs.ints[0];
  llvm::Value* position = builder_.getInt64(0);
  const ir::DimExpr* symbolic = n.symbolic ? n.symbolic->dimension(static_cast<size_t>(axis)) : nullptr;
  if (n.type.shape[static_cast<size_t>(axis)] != 1 || symbolic)
    position = flat_ ? flat_index_ : index_[static_cast<size_t>(axis) + space_.size() - n.type.shape.size()];
  return element_.convert_value(position, DType::i64, n.type.dtype);
}

}  // namespace kiln::llvm_backend
