// Loop nests in LLVM IR, shared by the fused kernels (codegen.cpp) and the
// standalone ones (standalone_*.cpp).
#pragma once

#include <kiln/dtype.h>
#include <llvm/IR/IRBuilder.h>

#include <string>
#include <vector>

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
/// (extents of 1 give a constant 0 and cost no division).
inline std::vector<llvm::Value*> decompose(llvm::IRBuilder<>& builder, llvm::Value* flat,
                                           const std::vector<int64_t>& extents) {
  std::vector<llvm::Value*> indices(extents.size());
  for (size_t k = extents.size(); k-- > 0;) {
    if (extents[k] == 1) {
      indices[k] = builder.getInt64(0);
    } else if (k == 0) {
      indices[k] = flat;
    } else {
      indices[k] = builder.CreateURem(flat, builder.getInt64(static_cast<uint64_t>(extents[k])));
      flat = builder.CreateUDiv(flat, builder.getInt64(static_cast<uint64_t>(extents[k])));
    }
  }
  return indices;
}

/// Element strides of a contiguous row-major array.
inline std::vector<int64_t> row_major_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

}  // namespace kiln::llvm_backend
