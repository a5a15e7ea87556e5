// LLVM IR for the instructions of ops::ScalarEmitter (see the header).
#include "backend/llvm/scalar_emitter.h"

#include <llvm/IR/Intrinsics.h>

#include "backend/llvm/math.h"
#include "backend/llvm/outlined_math.h"
#include "core/error_format.h"

namespace kiln::llvm_backend {

using ops::Comparison;
using ops::ScalarValue;

namespace {
// Whether integer `x` is larger (smaller) than `y`, by the dtype's signedness.
llvm::Value* integer_beats(llvm::IRBuilder<>& b, DType dtype, bool largest, llvm::Value* x, llvm::Value* y) {
  if (is_unsigned(dtype) || dtype == DType::bool_) return largest ? b.CreateICmpUGT(x, y) : b.CreateICmpULT(x, y);
  return largest ? b.CreateICmpSGT(x, y) : b.CreateICmpSLT(x, y);
}

}  // namespace

llvm::Type* LlvmScalarEmitter::register_type(DType dtype) {
  switch (dtype) {
    case DType::bool_: return builder_.getInt1Ty();
    case DType::i8:
    case DType::u8: return builder_.getInt8Ty();
    case DType::i16:
    case DType::u16: return builder_.getInt16Ty();
    case DType::i32:
    case DType::u32: return builder_.getInt32Ty();
    case DType::i64:
    case DType::u64: return builder_.getInt64Ty();
    case DType::f16:
    case DType::bf16:  // computed in f32, rounded when stored
    case DType::f32: return builder_.getFloatTy();
    case DType::f64: return builder_.getDoubleTy();
    case DType::c64:
    case DType::c128: break;  // never in a fused kernel (plan.h, touches_complex)
  }
  KILN_CHECK(false, "a dtype without native code");
  return nullptr;
}

llvm::Type* LlvmScalarEmitter::memory_type(DType dtype) {
  if (dtype == DType::bool_) return builder_.getInt8Ty();
  if (is_half(dtype)) return builder_.getInt16Ty();
  return register_type(dtype);
}

llvm::Value* LlvmScalarEmitter::from_memory(llvm::Value* stored, DType dtype) {
  switch (dtype) {
    case DType::bool_: return builder_.CreateICmpNE(stored, builder_.getInt8(0));
    case DType::f16: {
      // Integer steps rather than fpext: LLVM narrows a comparison of an
      // fpext'ed half with a constant back to a half comparison, which x86
      // without AVX512-FP16 runs one lane at a time (W1 ran 3x slower).
      // The fraction and exponent move to f32's places; scaling by 2^112
      // rebiases the exponent and turns f16 subnormals into f32 normals, exactly.
      llvm::Value* bits = builder_.CreateZExt(stored, builder_.getInt32Ty());
      llvm::Value* magnitude = builder_.CreateShl(builder_.CreateAnd(bits, 0x7FFF), 13);
      llvm::Value* scaled = builder_.CreateFMul(builder_.CreateBitCast(magnitude, builder_.getFloatTy()),
                                                llvm::ConstantFP::get(builder_.getFloatTy(), 0x1p112));
      llvm::Value* special = builder_.CreateICmpEQ(builder_.CreateAnd(bits, 0x7C00), builder_.getInt32(0x7C00));
      llvm::Value* infinite_or_nan = builder_.CreateOr(magnitude, 0x7F800000);
      llvm::Value* unsigned_bits =
          builder_.CreateSelect(special, infinite_or_nan, builder_.CreateBitCast(scaled, builder_.getInt32Ty()));
      llvm::Value* sign = builder_.CreateShl(builder_.CreateAnd(bits, 0x8000), 16);
      return builder_.CreateBitCast(builder_.CreateOr(unsigned_bits, sign), builder_.getFloatTy());
    }
    case DType::bf16:
      return builder_.CreateBitCast(builder_.CreateShl(builder_.CreateZExt(stored, builder_.getInt32Ty()), 16),
                                    builder_.getFloatTy());
    default: return stored;
  }
}

llvm::Value* LlvmScalarEmitter::to_memory(llvm::Value* value, DType dtype) {
  switch (dtype) {
    case DType::bool_: return builder_.CreateZExt(value, builder_.getInt8Ty());
    case DType::f16:
      return builder_.CreateBitCast(builder_.CreateFPTrunc(value, builder_.getHalfTy()), builder_.getInt16Ty());
    case DType::bf16: {
      // Ties to even on the top 16 bits; a NaN keeps its top bits and turns quiet.
      llvm::Value* bits = builder_.CreateBitCast(value, builder_.getInt32Ty());
      llvm::Value* odd = builder_.CreateAnd(builder_.CreateLShr(bits, 16), 1);
      llvm::Value* rounded = builder_.CreateAdd(builder_.CreateAdd(bits, builder_.getInt32(0x7FFF)), odd);
      llvm::Value* quiet = builder_.CreateOr(bits, builder_.getInt32(0x400000));
      llvm::Value* nan = builder_.CreateFCmpUNO(value, value);
      llvm::Value* chosen = builder_.CreateSelect(nan, quiet, rounded);
      return builder_.CreateTrunc(builder_.CreateLShr(chosen, 16), builder_.getInt16Ty());
    }
    default: return value;
  }
}

llvm::Value* LlvmScalarEmitter::round_to_half(llvm::Value* x, DType from, DType to) {
  if (from == DType::f64) {
    // Rounded to odd in f32 first, so the second rounding (to 11 or 8
    // significant bits of 24) is as if straight from f64.
    llvm::Value* nearest = builder_.CreateFPTrunc(x, builder_.getFloatTy());
    llvm::Value* back = builder_.CreateFPExt(nearest, builder_.getDoubleTy());
    llvm::Intrinsic::ID fabs = llvm::Intrinsic::fabs;
    llvm::Value* away =
        builder_.CreateFCmpOGT(builder_.CreateUnaryIntrinsic(fabs, back), builder_.CreateUnaryIntrinsic(fabs, x));
    llvm::Value* bits = builder_.CreateBitCast(nearest, builder_.getInt32Ty());
    bits = builder_.CreateSub(bits, builder_.CreateZExt(away, builder_.getInt32Ty()));
    llvm::Value* inexact = builder_.CreateFCmpUNE(back, x);
    bits = builder_.CreateOr(bits, builder_.CreateZExt(inexact, builder_.getInt32Ty()));
    x = builder_.CreateBitCast(bits, builder_.getFloatTy());
  }
  return from_memory(to_memory(x, to), to);
}

llvm::Value* LlvmScalarEmitter::constant_value(double value, DType dtype) {
  llvm::Type* type = register_type(dtype);
  if (dtype == DType::f16) return llvm::ConstantFP::get(type, static_cast<float>(float16(value)));
  if (dtype == DType::bf16) return llvm::ConstantFP::get(type, static_cast<float>(bfloat16(value)));
  if (is_floating(dtype)) return llvm::ConstantFP::get(type, value);
  if (dtype == DType::bool_) return builder_.getInt1(value != 0);
  if (is_unsigned(dtype))  // a negative value wraps, as -1 gives every bit set
    return llvm::ConstantInt::get(
        type, value < 0 ? static_cast<uint64_t>(static_cast<int64_t>(value)) : static_cast<uint64_t>(value));
  return llvm::ConstantInt::get(type, static_cast<uint64_t>(static_cast<int64_t>(value)), true);
}

llvm::Value* LlvmScalarEmitter::convert_value(llvm::Value* x, DType from, DType to) {
  if (from == to) return x;
  llvm::Type* target = register_type(to);
  if (to == DType::bool_)
    return is_floating(from) ? builder_.CreateFCmpUNE(x, llvm::ConstantFP::get(x->getType(), 0.0))
                             : builder_.CreateICmpNE(x, llvm::ConstantInt::get(x->getType(), 0));
  if (from == DType::bool_) return is_floating(to) ? builder_.CreateUIToFP(x, target) : builder_.CreateZExt(x, target);
  if (is_half(to)) {
    // Through f64 from integers, as the reference converts (exact up to 2^53).
    if (!is_floating(from)) return round_to_half(convert_value(x, from, DType::f64), DType::f64, to);
    return round_to_half(x, from, to);
  }
  if (is_floating(from) && is_floating(to)) return builder_.CreateFPCast(x, target);
  if (!is_floating(from) && !is_floating(to))
    return is_unsigned(from) ? builder_.CreateZExtOrTrunc(x, target) : builder_.CreateSExtOrTrunc(x, target);
  if (!is_floating(from))
    return is_unsigned(from) ? builder_.CreateUIToFP(x, target) : builder_.CreateSIToFP(x, target);
  // Saturating, NaN to 0: the reference conversion's defined behaviour.
  llvm::Intrinsic::ID saturating = is_unsigned(to) ? llvm::Intrinsic::fptoui_sat : llvm::Intrinsic::fptosi_sat;
  return builder_.CreateIntrinsic(saturating, {target, x->getType()}, {x});
}

llvm::Value* LlvmScalarEmitter::extreme_value(bool largest, llvm::Value* a, llvm::Value* b, DType dtype) {
  if (dtype == DType::bool_) return largest ? builder_.CreateOr(a, b) : builder_.CreateAnd(a, b);
  if (!is_floating(dtype)) return builder_.CreateSelect(integer_beats(builder_, dtype, largest, a, b), a, b);
  llvm::Value* either_nan = builder_.CreateFCmpUNO(a, b);
  llvm::Value* wins = largest ? builder_.CreateFCmpOGT(a, b) : builder_.CreateFCmpOLT(a, b);
  return builder_.CreateSelect(either_nan, builder_.CreateFAdd(a, b), builder_.CreateSelect(wins, a, b));
}

// The smallest value of the dtype, or the largest: -inf or +inf for floats,
// false or true for bool.
llvm::Value* LlvmScalarEmitter::bound_of(DType dtype, bool largest) {
  llvm::Type* type = register_type(dtype);
  if (is_floating(dtype)) return llvm::ConstantFP::getInfinity(type, !largest);
  if (dtype == DType::bool_) return builder_.getInt1(largest);
  unsigned bits = type->getIntegerBitWidth();
  if (is_unsigned(dtype))
    return llvm::ConstantInt::get(type, largest ? llvm::APInt::getMaxValue(bits) : llvm::APInt::getMinValue(bits));
  return llvm::ConstantInt::get(type,
                                largest ? llvm::APInt::getSignedMaxValue(bits) : llvm::APInt::getSignedMinValue(bits));
}

llvm::Value* LlvmScalarEmitter::reduction_identity(ops::Reduction reduction, DType dtype) {
  llvm::Type* type = register_type(dtype);
  bool floating = is_floating(dtype);
  switch (reduction) {
    case ops::Reduction::sum: return floating ? llvm::ConstantFP::get(type, 0.0) : llvm::ConstantInt::get(type, 0);
    case ops::Reduction::product: return floating ? llvm::ConstantFP::get(type, 1.0) : llvm::ConstantInt::get(type, 1);
    case ops::Reduction::max: return bound_of(dtype, /*largest=*/false);
    case ops::Reduction::min: return bound_of(dtype, /*largest=*/true);
    case ops::Reduction::none: break;
  }
  KILN_CHECK(false, "a reduction kernel for a primitive that names no combining operation");
  return nullptr;
}

namespace {
// The accumulator wins ties (the first of equal values, which decides between
// -0 and +0), NaN wins everything.
llvm::Value* keep_first(llvm::IRBuilder<>& b, DType dtype, llvm::Value* accumulator, llvm::Value* value, bool largest) {
  if (!is_floating(dtype))
    return b.CreateSelect(integer_beats(b, dtype, largest, value, accumulator), value, accumulator);
  llvm::Value* better = largest ? b.CreateFCmpOGT(value, accumulator) : b.CreateFCmpOLT(value, accumulator);
  llvm::Value* chosen = b.CreateSelect(better, value, accumulator);
  llvm::Value* accumulator_nan = b.CreateFCmpUNO(accumulator, accumulator);
  llvm::Value* value_nan = b.CreateFCmpUNO(value, value);
  return b.CreateSelect(accumulator_nan, accumulator, b.CreateSelect(value_nan, value, chosen));
}
}  // namespace

llvm::Value* LlvmScalarEmitter::combine(ops::Reduction reduction, DType dtype, llvm::Value* a, llvm::Value* b) {
  if (dtype == DType::bool_) {
    bool any = reduction == ops::Reduction::sum || reduction == ops::Reduction::max;
    return any ? builder_.CreateOr(a, b) : builder_.CreateAnd(a, b);
  }
  bool floating = is_floating(dtype);
  llvm::FastMathFlags reassociate;
  reassociate.setAllowReassoc();  // lets the vectorizer keep several partial sums
  switch (reduction) {
    case ops::Reduction::sum: {
      if (!floating) return builder_.CreateAdd(a, b);
      auto* sum = llvm::cast<llvm::Instruction>(builder_.CreateFAdd(a, b));
      sum->setFastMathFlags(reassociate);
      return sum;
    }
    case ops::Reduction::product: {
      if (!floating) return builder_.CreateMul(a, b);
      auto* product = llvm::cast<llvm::Instruction>(builder_.CreateFMul(a, b));
      product->setFastMathFlags(reassociate);
      return product;
    }
    case ops::Reduction::max: return keep_first(builder_, dtype, a, b, true);
    case ops::Reduction::min: return keep_first(builder_, dtype, a, b, false);
    case ops::Reduction::none: break;
  }
  KILN_CHECK(false, "a reduction kernel for a primitive that names no combining operation");
  return nullptr;
}

// With no NaNs and no distinction of zero signs assumed, LLVM recognizes the
// pattern as a min/max reduction and vectorizes it. (A NaN makes these values
// poison, but then the NaN flag replaces the result.)
llvm::Value* LlvmScalarEmitter::fast_extreme(bool largest, llvm::Value* accumulator, llvm::Value* value) {
  llvm::FastMathFlags flags;
  flags.setNoNaNs();
  flags.setNoSignedZeros();
  auto* better = llvm::cast<llvm::Instruction>(largest ? builder_.CreateFCmpOGT(value, accumulator)
                                                       : builder_.CreateFCmpOLT(value, accumulator));
  better->setFastMathFlags(flags);
  auto* chosen = llvm::cast<llvm::Instruction>(builder_.CreateSelect(better, value, accumulator));
  chosen->setFastMathFlags(flags);
  return chosen;
}

ScalarValue LlvmScalarEmitter::constant(double value, DType dtype) { return wrap(constant_value(value, dtype)); }

ScalarValue LlvmScalarEmitter::add(ScalarValue a, ScalarValue b, DType dtype) {
  return wrap(is_floating(dtype) ? builder_.CreateFAdd(unwrap(a), unwrap(b))
                                 : builder_.CreateAdd(unwrap(a), unwrap(b)));
}

ScalarValue LlvmScalarEmitter::sub(ScalarValue a, ScalarValue b, DType dtype) {
  return wrap(is_floating(dtype) ? builder_.CreateFSub(unwrap(a), unwrap(b))
                                 : builder_.CreateSub(unwrap(a), unwrap(b)));
}

ScalarValue LlvmScalarEmitter::mul(ScalarValue a, ScalarValue b, DType dtype) {
  return wrap(is_floating(dtype) ? builder_.CreateFMul(unwrap(a), unwrap(b))
                                 : builder_.CreateMul(unwrap(a), unwrap(b)));
}

ScalarValue LlvmScalarEmitter::div(ScalarValue a, ScalarValue b) {
  return wrap(builder_.CreateFDiv(unwrap(a), unwrap(b)));
}

ScalarValue LlvmScalarEmitter::neg(ScalarValue x, DType dtype) {
  llvm::Value* v = unwrap(x);
  if (is_floating(dtype)) return wrap(builder_.CreateFNeg(v));
  return wrap(builder_.CreateSub(llvm::ConstantInt::get(v->getType(), 0), v));
}

ScalarValue LlvmScalarEmitter::abs(ScalarValue x, DType dtype) {
  llvm::Value* v = unwrap(x);
  if (is_floating(dtype)) return wrap(builder_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, v));
  if (is_unsigned(dtype)) return x;
  llvm::Value* zero = llvm::ConstantInt::get(v->getType(), 0);
  return wrap(builder_.CreateSelect(builder_.CreateICmpSLT(v, zero), builder_.CreateSub(zero, v), v));
}

ScalarValue LlvmScalarEmitter::sqrt(ScalarValue x) {
  return wrap(builder_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, unwrap(x)));
}

ScalarValue LlvmScalarEmitter::round(ops::Rounding mode, ScalarValue x) {
  llvm::Intrinsic::ID intrinsic = llvm::Intrinsic::roundeven;
  switch (mode) {
    case ops::Rounding::floor: intrinsic = llvm::Intrinsic::floor; break;
    case ops::Rounding::ceil: intrinsic = llvm::Intrinsic::ceil; break;
    case ops::Rounding::nearest_even: intrinsic = llvm::Intrinsic::roundeven; break;
  }
  return wrap(builder_.CreateUnaryIntrinsic(intrinsic, unwrap(x)));
}

ScalarValue LlvmScalarEmitter::math(ops::MathFunction function, ScalarValue x) {
  if (outlined_math_lanes_ > 0 && outlinable(function) && ++math_uses_[{function, unwrap(x)->getType()}] > 1)
    return wrap(call_outlined_math(builder_, function, unwrap(x), outlined_math_lanes_));
  return wrap(emit_math(builder_, function, unwrap(x)));
}

ScalarValue LlvmScalarEmitter::pow(ScalarValue base, ScalarValue exponent, DType dtype) {
  llvm::Module& module = *builder_.GetInsertBlock()->getModule();
  if (is_floating(dtype)) return wrap(emit_pow(builder_, module, unwrap(base), unwrap(exponent)));
  return wrap(emit_integer_pow(builder_, module, unwrap(base), unwrap(exponent)));
}

ScalarValue LlvmScalarEmitter::extreme(bool largest, ScalarValue a, ScalarValue b, DType dtype) {
  return wrap(extreme_value(largest, unwrap(a), unwrap(b), dtype));
}

ScalarValue LlvmScalarEmitter::compare(Comparison comparison, ScalarValue a, ScalarValue b, DType dtype) {
  llvm::Value* x = unwrap(a);
  llvm::Value* y = unwrap(b);
  // Floats: ordered (false against NaN) except "not equal"; bool and unsigned
  // integers unsigned; signed integers signed.
  using P = llvm::CmpInst::Predicate;
  bool floating = is_floating(dtype), boolean = dtype == DType::bool_ || is_unsigned(dtype);
  P predicate = P::ICMP_EQ;
  switch (comparison) {
    case Comparison::eq: predicate = floating ? P::FCMP_OEQ : P::ICMP_EQ; break;
    case Comparison::ne: predicate = floating ? P::FCMP_UNE : P::ICMP_NE; break;
    case Comparison::lt: predicate = floating ? P::FCMP_OLT : boolean ? P::ICMP_ULT : P::ICMP_SLT; break;
    case Comparison::le: predicate = floating ? P::FCMP_OLE : boolean ? P::ICMP_ULE : P::ICMP_SLE; break;
    case Comparison::gt: predicate = floating ? P::FCMP_OGT : boolean ? P::ICMP_UGT : P::ICMP_SGT; break;
    case Comparison::ge: predicate = floating ? P::FCMP_OGE : boolean ? P::ICMP_UGE : P::ICMP_SGE; break;
  }
  return wrap(floating ? builder_.CreateFCmp(predicate, x, y) : builder_.CreateICmp(predicate, x, y));
}

ScalarValue LlvmScalarEmitter::is_nan(ScalarValue x) { return wrap(builder_.CreateFCmpUNO(unwrap(x), unwrap(x))); }

ScalarValue LlvmScalarEmitter::logical_and(ScalarValue a, ScalarValue b) {
  return wrap(builder_.CreateAnd(unwrap(a), unwrap(b)));
}

ScalarValue LlvmScalarEmitter::logical_or(ScalarValue a, ScalarValue b) {
  return wrap(builder_.CreateOr(unwrap(a), unwrap(b)));
}

ScalarValue LlvmScalarEmitter::logical_not(ScalarValue x) { return wrap(builder_.CreateNot(unwrap(x))); }

ScalarValue LlvmScalarEmitter::select(ScalarValue condition, ScalarValue on_true, ScalarValue on_false) {
  return wrap(builder_.CreateSelect(unwrap(condition), unwrap(on_true), unwrap(on_false)));
}

ScalarValue LlvmScalarEmitter::convert(ScalarValue x, DType from, DType to) {
  return wrap(convert_value(unwrap(x), from, to));
}

ScalarValue LlvmScalarEmitter::atan2(ScalarValue y, ScalarValue x) {
  return wrap(emit_atan2(builder_, unwrap(y), unwrap(x)));
}

ScalarValue LlvmScalarEmitter::bitwise(ops::Bitwise operation, ScalarValue a, ScalarValue b) {
  switch (operation) {
    case ops::Bitwise::and_: return wrap(builder_.CreateAnd(unwrap(a), unwrap(b)));
    case ops::Bitwise::or_: return wrap(builder_.CreateOr(unwrap(a), unwrap(b)));
    case ops::Bitwise::xor_: return wrap(builder_.CreateXor(unwrap(a), unwrap(b)));
  }
  KILN_CHECK(false, "bitwise operation outside the Bitwise enum");
  return {};
}

// LLVM's shifts are poison for counts outside [0, bits): the count is
// checked first (as unsigned, so negative counts are out of range too).
ScalarValue LlvmScalarEmitter::shift(ops::Shift direction, ScalarValue a, ScalarValue count, DType dtype) {
  llvm::Value* x = unwrap(a);
  llvm::Value* n = unwrap(count);
  llvm::Type* type = x->getType();
  llvm::Value* width = llvm::ConstantInt::get(type, type->getIntegerBitWidth());
  llvm::Value* in_range = builder_.CreateICmpULT(n, width);
  llvm::Value* zero = llvm::ConstantInt::get(type, 0);
  if (direction == ops::Shift::right && !is_unsigned(dtype)) {
    // Shifting by bits - 1 leaves only copies of the sign bit: 0 or -1.
    llvm::Value* sign_fill = llvm::ConstantInt::get(type, type->getIntegerBitWidth() - 1);
    return wrap(builder_.CreateAShr(x, builder_.CreateSelect(in_range, n, sign_fill)));
  }
  llvm::Value* safe = builder_.CreateSelect(in_range, n, zero);
  llvm::Value* shifted = direction == ops::Shift::left ? builder_.CreateShl(x, safe) : builder_.CreateLShr(x, safe);
  return wrap(builder_.CreateSelect(in_range, shifted, zero));
}

namespace {
// Integer division is undefined behaviour for a zero divisor and for MIN / -1
// (the quotient overflows): both get divisor 1 instead, which gives the
// wrapped MIN quotient and the 0 remainder of the second case directly.
struct SafeDivisor {
  llvm::Value* divisor;
  llvm::Value* zero;  // whether the original divisor was 0
};

SafeDivisor safe_divisor(llvm::IRBuilder<>& builder, llvm::Value* a, llvm::Value* b, DType dtype) {
  llvm::Type* type = b->getType();
  llvm::Value* one = llvm::ConstantInt::get(type, 1);
  llvm::Value* zero = builder.CreateICmpEQ(b, llvm::ConstantInt::get(type, 0));
  llvm::Value* replace = zero;
  if (!is_unsigned(dtype)) {
    llvm::Value* minimum = llvm::ConstantInt::get(type, llvm::APInt::getSignedMinValue(type->getIntegerBitWidth()));
    llvm::Value* overflow = builder.CreateAnd(builder.CreateICmpEQ(a, minimum),
                                              builder.CreateICmpEQ(b, llvm::ConstantInt::get(type, -1, true)));
    replace = builder.CreateOr(zero, overflow);
  }
  return {builder.CreateSelect(replace, one, b), zero};
}
}  // namespace

ScalarValue LlvmScalarEmitter::truncated_divide(ScalarValue a, ScalarValue b, DType dtype) {
  llvm::Value* x = unwrap(a);
  SafeDivisor divisor = safe_divisor(builder_, x, unwrap(b), dtype);
  llvm::Value* quotient =
      is_unsigned(dtype) ? builder_.CreateUDiv(x, divisor.divisor) : builder_.CreateSDiv(x, divisor.divisor);
  return wrap(builder_.CreateSelect(divisor.zero, llvm::ConstantInt::get(x->getType(), 0), quotient));
}

ScalarValue LlvmScalarEmitter::truncated_remainder(ScalarValue a, ScalarValue b, DType dtype) {
  llvm::Value* x = unwrap(a);
  if (is_floating(dtype)) return wrap(builder_.CreateFRem(x, unwrap(b)));
  SafeDivisor divisor = safe_divisor(builder_, x, unwrap(b), dtype);
  return wrap(is_unsigned(dtype) ? builder_.CreateURem(x, divisor.divisor) : builder_.CreateSRem(x, divisor.divisor));
}

ScalarValue LlvmScalarEmitter::copysign(ScalarValue magnitude, ScalarValue sign) {
  return wrap(builder_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, unwrap(magnitude), unwrap(sign)));
}

// On the bits: stepping the integer image of a nonzero float by one moves its
// magnitude to the neighbouring value (up to infinity, down to zero), so the
// step is +1 where the magnitude grows toward `toward`, -1 where it shrinks.
ScalarValue LlvmScalarEmitter::next_after(ScalarValue x, ScalarValue toward) {
  llvm::Value* from = unwrap(x);
  llvm::Value* to = unwrap(toward);
  llvm::Type* real = from->getType();
  llvm::Type* integer = builder_.getIntNTy(real->getPrimitiveSizeInBits());
  llvm::Value* zero = llvm::ConstantFP::get(real, 0.0);
  llvm::Value* bits = builder_.CreateBitCast(from, integer);
  llvm::Value* grows = builder_.CreateICmpEQ(builder_.CreateFCmpOGT(to, from), builder_.CreateFCmpOGT(from, zero));
  llvm::Value* stepped = builder_.CreateSelect(grows, builder_.CreateAdd(bits, llvm::ConstantInt::get(integer, 1)),
                                               builder_.CreateSub(bits, llvm::ConstantInt::get(integer, 1)));
  llvm::Value* result = builder_.CreateBitCast(stepped, real);
  // From zero, the smallest subnormal on `toward`'s side.
  llvm::Value* smallest = builder_.CreateBitCast(llvm::ConstantInt::get(integer, 1), real);
  llvm::Value* from_zero = builder_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, smallest, to);
  result = builder_.CreateSelect(builder_.CreateFCmpOEQ(from, zero), from_zero, result);
  result = builder_.CreateSelect(builder_.CreateFCmpOEQ(from, to), to, result);  // C returns `toward` when equal
  return wrap(builder_.CreateSelect(builder_.CreateFCmpUNO(from, to), builder_.CreateFAdd(from, to), result));
}

}  // namespace kiln::llvm_backend
