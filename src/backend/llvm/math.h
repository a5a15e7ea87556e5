// Transcendental functions in LLVM IR, written so the loop vectorizer can
// vectorize them: exp, log, sin, cos and pow as LLVM intrinsics that glibc's
// vector math library (libmvec) implements for whole vectors; log1p and
// expm1, exp2, log2 and log10 from their own range reductions and series,
// with no calls; tanh, the logistic function, erf, atan and atan2 as
// polynomials and rational functions (around exp for the first three).
// Branch-free, so the vectorizer keeps whole loops vector.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include "ops/common/lowering.h"

namespace kiln::llvm_backend {

/// exp exp2 log log2 log10 log1p expm1 tanh logistic erf sin cos atan of a float or double value.
llvm::Value* emit_math(llvm::IRBuilder<>& builder, ops::MathFunction function, llvm::Value* x);
/// The angle of the point (x, y), C99 Annex F's atan2.
llvm::Value* emit_atan2(llvm::IRBuilder<>& builder, llvm::Value* y, llvm::Value* x);
llvm::Value* emit_pow(llvm::IRBuilder<>& builder, llvm::Module& module, llvm::Value* base, llvm::Value* exponent);
/// Integer power by squaring, wrapping like the reference; negative exponents
/// give 1 for base 1, +-1 for base -1 and 0 otherwise.
llvm::Value* emit_integer_pow(llvm::IRBuilder<>& builder, llvm::Module& module, llvm::Value* base,
                              llvm::Value* exponent);

}  // namespace kiln::llvm_backend
