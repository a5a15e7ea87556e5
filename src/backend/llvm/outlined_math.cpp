#include "backend/llvm/outlined_math.h"

#include <llvm/IR/Module.h>

#include <string>

#include "backend/llvm/math.h"

namespace kiln::llvm_backend {

namespace {

const char* name_of(ops::MathFunction function) {
  switch (function) {
    case ops::MathFunction::exp: return "exp";
    case ops::MathFunction::exp2: return "exp2";
    case ops::MathFunction::log: return "log";
    case ops::MathFunction::log2: return "log2";
    case ops::MathFunction::log10: return "log10";
    case ops::MathFunction::log1p: return "log1p";
    case ops::MathFunction::expm1: return "expm1";
    case ops::MathFunction::tanh: return "tanh";
    case ops::MathFunction::logistic: return "logistic";
    case ops::MathFunction::erf: return "erf";
    case ops::MathFunction::sin: return "sin";
    case ops::MathFunction::cos: return "cos";
    case ops::MathFunction::atan: return "atan";
  }
  return "math";
}

// function(x) of one argument of `type`: pure, so the vectorizer may call it
// for masked-off lanes of a folded tail and nothing may keep it from moving.
llvm::Function* define(llvm::Module& module, const std::string& name, ops::MathFunction function, llvm::Type* type) {
  if (llvm::Function* existing = module.getFunction(name)) return existing;
  auto* signature = llvm::FunctionType::get(type, {type}, false);
  auto* defined = llvm::Function::Create(signature, llvm::Function::InternalLinkage, name, module);
  defined->setDoesNotAccessMemory();
  defined->setDoesNotThrow();
  defined->setWillReturn();
  defined->addFnAttr(llvm::Attribute::NoInline);
  defined->addFnAttr(llvm::Attribute::Speculatable);
  if (type->isVectorTy())
    defined->addFnAttr("min-legal-vector-width", std::to_string(type->getPrimitiveSizeInBits().getFixedValue()));
  llvm::IRBuilder<> body(llvm::BasicBlock::Create(module.getContext(), "entry", defined));
  body.CreateRet(emit_math(body, function, defined->getArg(0)));
  return defined;
}

}  // namespace

bool outlinable(ops::MathFunction function) {
  return function != ops::MathFunction::sin && function != ops::MathFunction::cos;
}

llvm::Value* call_outlined_math(llvm::IRBuilder<>& builder, ops::MathFunction function, llvm::Value* x, int lanes) {
  llvm::Module& module = *builder.GetInsertBlock()->getModule();
  llvm::Type* type = x->getType();
  std::string scalar_name = std::string("kiln_math_") + name_of(function) + (type->isFloatTy() ? "_f32" : "_f64");
  std::string vector_name = scalar_name + "_x" + std::to_string(lanes);
  llvm::Function* scalar = define(module, scalar_name, function, type);
  define(module, vector_name, function, llvm::FixedVectorType::get(type, static_cast<unsigned>(lanes)));
  llvm::CallInst* call = builder.CreateCall(scalar, {x});
  // The vector function ABI's name for an unmasked `lanes`-wide variant of
  // one vector argument, redirected to the twin.
  call->addFnAttr(
      llvm::Attribute::get(builder.getContext(), "vector-function-abi-variant",
                           "_ZGV_LLVM_N" + std::to_string(lanes) + "v_" + scalar_name + "(" + vector_name + ")"));
  return call;
}

}  // namespace kiln::llvm_backend
