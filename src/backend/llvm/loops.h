// Loop nests in LLVM IR, shared by the fused kernels (codegen.cpp) and the
// standalone ones (standalone_*.cpp).
#pragma once

#include <kiln/dtype.h>
#include <llvm/IR/IRBuilder.h>

#include <map>
#include <string>
#include <vector>

#include "ir/symbolic.h"

namespace kiln::llvm_backend {

/// for (counter = begin; counter < end; ++counter) body(counter), built at
/// the builder's insert point, which it leaves after the loop. Returns the
/// latch branch, where loop metadata (vectorizer hints) belongs.
template <class Body>
llvm::BranchInst* counted_loop(llvm::IRBuilder<>& builder, llvm::Value* begin, llvm::Value* end, const char* name,
                               Body body) {
  llvm::LLVMContext& context = builder.getContext();
  llvm::BasicBlock* before = builder.GetInsertBlock();
  llvm::Function* function = before->getParent();
  auto* header = llvm::BasicBlock::Create(context, std::string(name) + ".header", function);
  auto* inside = llvm::BasicBlock::Create(context, std::string(name) + ".body", function);
  auto* after = llvm::BasicBlock::Create(context, std::string(name) + ".end", function);
  builder.CreateBr(header);
  builder.SetInsertPoint(header);
  llvm::PHINode* counter = builder.CreatePHI(builder.getInt64Ty(), 2, name);
  counter->addIncoming(begin, before);
  builder.CreateCondBr(builder.CreateICmpSLT(counter, end), inside, after);
  builder.SetInsertPoint(inside);
  body(static_cast<llvm::Value*>(counter));
  llvm::Value* next = builder.CreateAdd(counter, builder.getInt64(1), "", true, true);
  counter->addIncoming(next, builder.GetInsertBlock());
  llvm::BranchInst* latch = builder.CreateBr(header);
  builder.SetInsertPoint(after);
  return latch;
}

/// Splits a flat row-major index over `extents` into one index per extent
/// (extents of 1 give a constant 0 and cost no division). An extent may be
/// computed when the kernel runs (a symbolic dimension).
inline std::vector<llvm::Value*> decompose(llvm::IRBuilder<>& builder, llvm::Value* flat,
                                           const std::vector<llvm::Value*>& extents) {
  std::vector<llvm::Value*> indices(extents.size());
  for (size_t k = extents.size(); k-- > 0;) {
    auto* constant = llvm::dyn_cast<llvm::ConstantInt>(extents[k]);
    if (constant && constant->getSExtValue() == 1) {
      indices[k] = builder.getInt64(0);
    } else if (k == 0) {
      indices[k] = flat;
    } else {
      indices[k] = builder.CreateURem(flat, extents[k]);
      flat = builder.CreateUDiv(flat, extents[k]);
    }
  }
  return indices;
}

inline std::vector<llvm::Value*> decompose(llvm::IRBuilder<>& builder, llvm::Value* flat,
                                           const std::vector<int64_t>& extents) {
  std::vector<llvm::Value*> values;
  values.reserve(extents.size());
  for (int64_t extent : extents) values.push_back(builder.getInt64(static_cast<uint64_t>(extent)));
  return decompose(builder, flat, values);
}

/// Element strides of a contiguous row-major array.
inline std::vector<int64_t> row_major_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

/// The same for a shape of polynomials in the symbols.
inline std::vector<ir::DimExpr> row_major_strides(const std::vector<ir::DimExpr>& shape) {
  std::vector<ir::DimExpr> strides(shape.size(), ir::DimExpr::constant(1));
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

/// Extents as IR: a constant for a number known when compiling, else the
/// polynomial of the symbols, whose values the function reads from its
/// constants (symbol s at slot first_slot + s). Each expression is computed
/// once, in the function's entry block, so it dominates every loop.
class SizeEmitter {
 public:
  SizeEmitter(llvm::Function* function, llvm::Value* constants, int64_t first_slot);
  llvm::Value* operator()(const ir::DimExpr& size);

 private:
  llvm::Value* symbol(int id, llvm::IRBuilder<>& builder);

  llvm::Function* function_;
  llvm::Value* constants_;
  int64_t first_slot_;
  std::map<int, llvm::Value*> symbols_;
  std::map<std::string, llvm::Value*> computed_;
};

}  // namespace kiln::llvm_backend
