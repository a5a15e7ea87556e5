// The building blocks of kiln's vector math (math.cpp, math_inverse.cpp):
// constants, Horner polynomials, clamps, the IEEE layout of a float type and
// powers of two built from bits. Straight-line IR only, as the header math.h
// explains.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace kiln::llvm_backend::vector_math {

inline llvm::Value* constant(llvm::Type* type, double value) { return llvm::ConstantFP::get(type, value); }

inline llvm::Value* fabs(llvm::IRBuilder<>& b, llvm::Value* x) {
  return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
}
inline llvm::Value* copysign(llvm::IRBuilder<>& b, llvm::Value* magnitude, llvm::Value* sign) {
  return b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, magnitude, sign);
}
inline llvm::Value* multiply_add(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y, llvm::Value* z) {
  return b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {x->getType()}, {x, y, z});
}

// c[0] x^n + c[1] x^(n-1) + ... + c[n] (Cephes polevl).
inline llvm::Value* polynomial(llvm::IRBuilder<>& b, llvm::Value* x, std::initializer_list<double> coefficients) {
  llvm::Type* t = x->getType();
  const double* c = coefficients.begin();
  llvm::Value* sum = constant(t, *c);
  for (++c; c != coefficients.end(); ++c) sum = multiply_add(b, sum, x, constant(t, *c));
  return sum;
}

// x^n + c[0] x^(n-1) + ... + c[n-1]: the same with an implicit leading 1 (Cephes p1evl).
inline llvm::Value* monic_polynomial(llvm::IRBuilder<>& b, llvm::Value* x, std::initializer_list<double> coefficients) {
  llvm::Type* t = x->getType();
  llvm::Value* sum = b.CreateFAdd(x, constant(t, *coefficients.begin()));
  for (const double* c = coefficients.begin() + 1; c != coefficients.end(); ++c)
    sum = multiply_add(b, sum, x, constant(t, *c));
  return sum;
}

inline bool is_single(llvm::Value* x) { return x->getType()->getScalarType()->isFloatTy(); }

// An integer type of `bits` in x's shape: scalar for a scalar, a vector of as
// many lanes for a vector (the functions are also emitted on whole vectors,
// see outlined_math.h).
inline llvm::Type* integer_like(llvm::Value* x, unsigned bits) {
  llvm::Type* integer = llvm::IntegerType::get(x->getContext(), bits);
  if (auto* vector = llvm::dyn_cast<llvm::VectorType>(x->getType()))
    return llvm::VectorType::get(integer, vector->getElementCount());
  return integer;
}

// The IEEE layout of a float type, for the bit manipulation below, and ln 2
// split as hi + lo with hi short enough that k * hi is exact for every
// binary exponent k of the format.
struct Format {
  llvm::Type* real;
  llvm::Type* integer;  // as wide as real, in its shape
  int significand_bits;
  int bias;
  uint64_t sqrt_half_bits;  // the bits of sqrt(1/2)
  double ln2_hi, ln2_lo;
};

inline Format format_of(llvm::IRBuilder<>&, llvm::Value* x) {
  if (is_single(x)) return {x->getType(), integer_like(x, 32), 23, 127, 0x3f3504f3, 0x1.62e4p-1, 0x1.7f7d1cp-20};
  return {x->getType(), integer_like(x, 64), 52, 1023, 0x3fe6a09e667f3bcd, 0x1.62e42fee00000p-1, 0x1.a39ef35793c76p-33};
}

// x limited to at most `highest`, at least `lowest`, or both; NaN passes
// through each.
inline llvm::Value* at_most(llvm::IRBuilder<>& b, llvm::Value* x, double highest) {
  llvm::Value* high = constant(x->getType(), highest);
  return b.CreateSelect(b.CreateFCmpOGT(x, high), high, x);
}
inline llvm::Value* at_least(llvm::IRBuilder<>& b, llvm::Value* x, double lowest) {
  llvm::Value* low = constant(x->getType(), lowest);
  return b.CreateSelect(b.CreateFCmpOLT(x, low), low, x);
}
inline llvm::Value* clamp(llvm::IRBuilder<>& b, llvm::Value* x, double lowest, double highest) {
  return at_least(b, at_most(b, x, highest), lowest);
}

// k = x / ln2 rounded to the nearest integer, as a float.
inline llvm::Value* nearest_multiple_of_ln2(llvm::IRBuilder<>& b, llvm::Value* x) {
  return b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven,
                                b.CreateFMul(x, constant(x->getType(), 0x1.71547652b82fep+0)));
}

// 2^exponent from its bits, for an integer exponent (format.integer) within
// the normal range.
inline llvm::Value* power_of_two(llvm::IRBuilder<>& b, const Format& format, llvm::Value* exponent) {
  llvm::Value* field = b.CreateAdd(exponent, llvm::ConstantInt::get(format.integer, format.bias));
  return b.CreateBitCast(b.CreateShl(field, format.significand_bits), format.real);
}

// Coefficients of a truncated series, highest power first for polynomial().
inline std::vector<double> series(int terms, double (*coefficient)(int)) {
  std::vector<double> c;
  for (int n = terms; n >= 1; --n) c.push_back(coefficient(n));
  return c;
}

inline llvm::Value* polynomial(llvm::IRBuilder<>& b, llvm::Value* x, const std::vector<double>& coefficients) {
  llvm::Value* sum = constant(x->getType(), coefficients.front());
  for (size_t k = 1; k < coefficients.size(); ++k)
    sum = multiply_add(b, sum, x, constant(x->getType(), coefficients[k]));
  return sum;
}

// Defined in math_inverse.cpp.
llvm::Value* log(llvm::IRBuilder<>& b, llvm::Value* x);
llvm::Value* log2(llvm::IRBuilder<>& b, llvm::Value* x);
llvm::Value* log10(llvm::IRBuilder<>& b, llvm::Value* x);
llvm::Value* atan(llvm::IRBuilder<>& b, llvm::Value* x);

}  // namespace kiln::llvm_backend::vector_math
