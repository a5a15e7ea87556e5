// The native backend's side of ops::ScalarEmitter: the instructions one
// element of a fused kernel is built from, as LLVM IR. The primitives' rows
// (src/ops/) say which instructions each primitive is; this class knows no
// primitive. Reading literals and positions depends on the kernel, so those
// two stay for the kernel emitter to implement.
#pragma once

#include <llvm/IR/IRBuilder.h>

#include <map>
#include <utility>

#include "ops/common/lowering.h"

namespace kiln::llvm_backend {

class LlvmScalarEmitter : public ops::ScalarEmitter {
 public:
  explicit LlvmScalarEmitter(llvm::IRBuilder<>& builder) : builder_(builder) {}

  static ops::ScalarValue wrap(llvm::Value* value) { return {value}; }
  static llvm::Value* unwrap(ops::ScalarValue value) { return static_cast<llvm::Value*>(value.handle); }

  /// The type a value computes in: f16 and bf16 compute in float.
  llvm::Type* register_type(DType dtype);
  /// The type an element is stored as: bool in a byte, f16 and bf16 in 16 bits.
  llvm::Type* memory_type(DType dtype);
  /// A stored element as a register value, and back (bf16 and f16 round to nearest even).
  llvm::Value* from_memory(llvm::Value* stored, DType dtype);
  llvm::Value* to_memory(llvm::Value* value, DType dtype);
  llvm::Value* constant_value(double value, DType dtype);
  llvm::Value* convert_value(llvm::Value* x, DType from, DType to);
  /// NaN-propagating maximum / minimum (NaN if either operand is NaN).
  llvm::Value* extreme_value(bool largest, llvm::Value* a, llvm::Value* b, DType dtype);

  // Reductions: the identity to start from and the step that combines.
  llvm::Value* reduction_identity(ops::Reduction reduction, DType dtype);
  llvm::Value* bound_of(DType dtype, bool largest);
  /// The reference's order: the accumulator wins ties, NaN wins everything.
  llvm::Value* combine(ops::Reduction reduction, DType dtype, llvm::Value* accumulator, llvm::Value* value);
  /// max/min for a reduction that tracks NaNs apart, in the form LLVM
  /// vectorizes as a min/max reduction.
  llvm::Value* fast_extreme(bool largest, llvm::Value* accumulator, llvm::Value* value);

  /// From now on, a transcendental function used before (same function, same
  /// type) is a call to one copy of it in the module, whose `lanes`-wide twin
  /// the vectorizer calls (outlined_math.h). Its first use stays inline, so
  /// a body with each function once keeps the code it had.
  void outline_repeated_math(int lanes) { outlined_math_lanes_ = lanes; }

  ops::ScalarValue constant(double value, DType dtype) override;
  ops::ScalarValue add(ops::ScalarValue a, ops::ScalarValue b, DType dtype) override;
  ops::ScalarValue sub(ops::ScalarValue a, ops::ScalarValue b, DType dtype) override;
  ops::ScalarValue mul(ops::ScalarValue a, ops::ScalarValue b, DType dtype) override;
  ops::ScalarValue div(ops::ScalarValue a, ops::ScalarValue b) override;
  ops::ScalarValue neg(ops::ScalarValue x, DType dtype) override;
  ops::ScalarValue abs(ops::ScalarValue x, DType dtype) override;
  ops::ScalarValue sqrt(ops::ScalarValue x) override;
  ops::ScalarValue round(ops::Rounding mode, ops::ScalarValue x) override;
  ops::ScalarValue math(ops::MathFunction function, ops::ScalarValue x) override;
  ops::ScalarValue pow(ops::ScalarValue base, ops::ScalarValue exponent, DType dtype) override;
  ops::ScalarValue extreme(bool largest, ops::ScalarValue a, ops::ScalarValue b, DType dtype) override;
  ops::ScalarValue compare(ops::Comparison comparison, ops::ScalarValue a, ops::ScalarValue b, DType dtype) override;
  ops::ScalarValue is_nan(ops::ScalarValue x) override;
  ops::ScalarValue logical_and(ops::ScalarValue a, ops::ScalarValue b) override;
  ops::ScalarValue logical_or(ops::ScalarValue a, ops::ScalarValue b) override;
  ops::ScalarValue logical_not(ops::ScalarValue x) override;
  ops::ScalarValue select(ops::ScalarValue condition, ops::ScalarValue on_true, ops::ScalarValue on_false) override;
  ops::ScalarValue convert(ops::ScalarValue x, DType from, DType to) override;
  ops::ScalarValue atan2(ops::ScalarValue y, ops::ScalarValue x) override;
  ops::ScalarValue bitwise(ops::Bitwise operation, ops::ScalarValue a, ops::ScalarValue b) override;
  ops::ScalarValue shift(ops::Shift direction, ops::ScalarValue a, ops::ScalarValue count, DType dtype) override;
  ops::ScalarValue truncated_divide(ops::ScalarValue a, ops::ScalarValue b, DType dtype) override;
  ops::ScalarValue truncated_remainder(ops::ScalarValue a, ops::ScalarValue b, DType dtype) override;
  ops::ScalarValue copysign(ops::ScalarValue magnitude, ops::ScalarValue sign) override;
  ops::ScalarValue next_after(ops::ScalarValue x, ops::ScalarValue toward) override;

 protected:
  /// A float register value (of f32 or f64 `from`) rounded to f16 or bf16, kept as float.
  llvm::Value* round_to_half(llvm::Value* x, DType from, DType to);

  llvm::IRBuilder<>& builder_;
  int outlined_math_lanes_ = 0;  // 0: inlined at each use
  std::map<std::pair<ops::MathFunction, llvm::Type*>, int> math_uses_;
};

}  // namespace kiln::llvm_backend
