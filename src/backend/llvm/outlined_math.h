// Transcendental functions compiled once per module rather than once per use.
//
// A long elementwise body (25 rounds of tanh, say) inlines each function's
// 30-odd vector instructions at every use, and instruction selection and
// register allocation then dominate the optimized compile (two thirds of a
// 100-node tanh chain's). Outlined, each function is one internal function
// of the module, called from the scalar loop; its vector twin (the same IR on
// whole vectors) is named to the loop vectorizer through
// "vector-function-abi-variant", so the vector loop calls it once per vector.
// Both run the same operations in the same order as the inlined code, so
// every lane's bits are the same.
#pragma once

#include <llvm/IR/IRBuilder.h>

#include "ops/common/lowering.h"

namespace kiln::llvm_backend {

/// Whether `function` is kiln's own IR (not a libm call) and so worth outlining.
bool outlinable(ops::MathFunction function);

/// A call to `function` of scalar x, outlined in x's module, that the
/// vectorizer widens to a call to its `lanes`-wide twin.
llvm::Value* call_outlined_math(llvm::IRBuilder<>& builder, ops::MathFunction function, llvm::Value* x, int lanes);

}  // namespace kiln::llvm_backend
