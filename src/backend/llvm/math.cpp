// Vectorizable transcendental functions (see the header).
#include "backend/llvm/math.h"

#include <llvm/IR/Intrinsics.h>

#include <stdexcept>
#include <string>

namespace kiln::llvm_backend {

using ir::Primitive;

namespace {

llvm::Value* constant(llvm::Type* type, double value) { return llvm::ConstantFP::get(type, value); }

llvm::Value* exp(llvm::IRBuilder<>& b, llvm::Value* x) { return b.CreateUnaryIntrinsic(llvm::Intrinsic::exp, x); }
llvm::Value* log(llvm::IRBuilder<>& b, llvm::Value* x) { return b.CreateUnaryIntrinsic(llvm::Intrinsic::log, x); }

// A call to a scalar libm function (used where no vector form exists yet).
llvm::Value* libm(llvm::IRBuilder<>& b, llvm::Module& module, const std::string& name, llvm::Value* x) {
  bool single = x->getType()->isFloatTy();
  std::string symbol = single ? name + "f" : name;
  llvm::FunctionCallee callee = module.getOrInsertFunction(symbol, x->getType(), x->getType());
  if (auto* function = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    function->setDoesNotThrow();
    function->setOnlyAccessesInaccessibleMemory();
  }
  return b.CreateCall(callee, {x});
}

// tanh(x) = sign(x) * (1 - 2 / (1 + exp(2|x|))); below |x| = 0.3 that form
// cancels, so an odd Taylor polynomial (error < 1e-8 relative there) is used.
llvm::Value* tanh(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* t = x->getType();
  llvm::Value* magnitude = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  llvm::Value* e = exp(b, b.CreateFMul(magnitude, constant(t, 2.0)));
  llvm::Value* large = b.CreateFSub(constant(t, 1.0), b.CreateFDiv(constant(t, 2.0), b.CreateFAdd(constant(t, 1.0), e)));
  large = b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, large, x);
  llvm::Value* x2 = b.CreateFMul(x, x);
  // x - x^3/3 + 2x^5/15 - 17x^7/315 + 62x^9/2835 - 1382x^11/155925
  llvm::Value* poly = constant(t, -1382.0 / 155925.0);
  for (double c : {62.0 / 2835.0, -17.0 / 315.0, 2.0 / 15.0, -1.0 / 3.0})
    poly = b.CreateFAdd(b.CreateFMul(poly, x2), constant(t, c));
  llvm::Value* small = b.CreateFAdd(x, b.CreateFMul(b.CreateFMul(x, x2), poly));
  return b.CreateSelect(b.CreateFCmpOLT(magnitude, constant(t, 0.3)), small, large);
}

// 1 / (1 + exp(-x)), written per sign like the reference so exp never overflows.
llvm::Value* logistic(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* t = x->getType();
  llvm::Value* e = exp(b, b.CreateFNeg(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x)));
  llvm::Value* positive = b.CreateFDiv(constant(t, 1.0), b.CreateFAdd(constant(t, 1.0), e));
  llvm::Value* negative = b.CreateFDiv(e, b.CreateFAdd(constant(t, 1.0), e));
  return b.CreateSelect(b.CreateFCmpOGE(x, constant(t, 0.0)), positive, negative);
}

}  // namespace

llvm::Value* emit_math(llvm::IRBuilder<>& builder, llvm::Module& module, Primitive op, llvm::Value* x) {
  switch (op) {
    case Primitive::exp: return exp(builder, x);
    case Primitive::log: return log(builder, x);
    case Primitive::sin: return builder.CreateUnaryIntrinsic(llvm::Intrinsic::sin, x);
    case Primitive::cos: return builder.CreateUnaryIntrinsic(llvm::Intrinsic::cos, x);
    case Primitive::tanh: return tanh(builder, x);
    case Primitive::logistic: return logistic(builder, x);
    case Primitive::log1p: return libm(builder, module, "log1p", x);
    case Primitive::expm1: return libm(builder, module, "expm1", x);
    case Primitive::erf: return libm(builder, module, "erf", x);
    default: break;
  }
  throw std::logic_error("kiln LLVM backend: no lowering for " + std::string(ir::primitive_name(op)));
}

llvm::Value* emit_pow(llvm::IRBuilder<>& builder, llvm::Module&, llvm::Value* base, llvm::Value* exponent) {
  return builder.CreateBinaryIntrinsic(llvm::Intrinsic::pow, base, exponent);
}

llvm::Value* emit_integer_pow(llvm::IRBuilder<>& b, llvm::Module& module, llvm::Value* base, llvm::Value* exponent) {
  llvm::Type* type = base->getType();
  std::string name = "kiln_integer_pow_i" + std::to_string(type->getIntegerBitWidth());
  llvm::Function* function = module.getFunction(name);
  if (!function) {
    auto* signature = llvm::FunctionType::get(type, {type, type}, false);
    function = llvm::Function::Create(signature, llvm::Function::InternalLinkage, name, module);
    llvm::LLVMContext& context = module.getContext();
    llvm::IRBuilder<> f(llvm::BasicBlock::Create(context, "entry", function));
    llvm::Value* x = function->getArg(0);
    llvm::Value* e = function->getArg(1);
    auto* negative = llvm::BasicBlock::Create(context, "negative", function);
    auto* header = llvm::BasicBlock::Create(context, "header", function);
    auto* body = llvm::BasicBlock::Create(context, "body", function);
    auto* done = llvm::BasicBlock::Create(context, "done", function);
    llvm::Value* zero = llvm::ConstantInt::get(type, 0);
    llvm::Value* one = llvm::ConstantInt::get(type, 1);
    f.CreateCondBr(f.CreateICmpSLT(e, zero), negative, header);
    f.SetInsertPoint(negative);
    llvm::Value* odd = f.CreateICmpNE(f.CreateAnd(e, one), zero);
    llvm::Value* minus_one = llvm::ConstantInt::get(type, -1, true);
    llvm::Value* for_minus_one = f.CreateSelect(odd, minus_one, one);
    f.CreateRet(f.CreateSelect(f.CreateICmpEQ(x, one), one,
                               f.CreateSelect(f.CreateICmpEQ(x, minus_one), for_minus_one, zero)));
    f.SetInsertPoint(header);
    llvm::PHINode* result = f.CreatePHI(type, 2);
    llvm::PHINode* factor = f.CreatePHI(type, 2);
    llvm::PHINode* remaining = f.CreatePHI(type, 2);
    result->addIncoming(one, &function->getEntryBlock());
    factor->addIncoming(x, &function->getEntryBlock());
    remaining->addIncoming(e, &function->getEntryBlock());
    f.CreateCondBr(f.CreateICmpSGT(remaining, zero), body, done);
    f.SetInsertPoint(body);
    llvm::Value* bit = f.CreateICmpNE(f.CreateAnd(remaining, one), zero);
    llvm::Value* next_result = f.CreateSelect(bit, f.CreateMul(result, factor), result);
    result->addIncoming(next_result, body);
    factor->addIncoming(f.CreateMul(factor, factor), body);
    remaining->addIncoming(f.CreateAShr(remaining, one), body);
    f.CreateBr(header);
    f.SetInsertPoint(done);
    f.CreateRet(result);
  }
  return b.CreateCall(function, {base, exponent});
}

}  // namespace kiln::llvm_backend
