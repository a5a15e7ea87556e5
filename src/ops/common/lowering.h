// How a primitive becomes native code, as its record states it. An
// elementwise primitive's row holds a `lower` function written against
// ScalarEmitter: the instructions and math functions a native backend offers
// for one element (a vector of elements, in practice). The backend implements
// the emitter and knows no primitive; the row says what code each primitive
// is. A reduction's row names its combining operation (Reduction); other
// primitives are scheduled by their fusion kind (rules.h).
#pragma once

#include <cstdint>
#include <span>

#include "ir/graph.h"

namespace kiln::ops {

/// A value inside the emitted code, opaque to the rows (an llvm::Value* for
/// the native backend).
struct ScalarValue {
  void* handle = nullptr;
};

/// Functions the backend implements with its own vector math.
enum class MathFunction : uint8_t { exp, exp2, log, log2, log10, log1p, expm1, tanh, logistic, erf, sin, cos, atan };
enum class Rounding : uint8_t { floor, ceil, nearest_even };
enum class Comparison : uint8_t { eq, ne, lt, le, gt, ge };
enum class Bitwise : uint8_t { and_, or_, xor_ };
enum class Shift : uint8_t { left, right };

/// Emits code for one element of an elementwise kernel. `dtype` arguments are
/// the operands' dtype where the instruction depends on it (signed integer,
/// unsigned bool, IEEE float).
class ScalarEmitter {
 public:
  virtual ~ScalarEmitter() = default;
  virtual ScalarValue constant(double value, DType dtype) = 0;
  /// A literal node's value (read from the kernel's constants, so kernels
  /// differing only in numbers share code).
  virtual ScalarValue literal(const ir::Node& node) = 0;
  /// The position along an iota node's axis of the element being computed.
  virtual ScalarValue iota(const ir::Node& node) = 0;

  virtual ScalarValue add(ScalarValue a, ScalarValue b, DType dtype) = 0;
  virtual ScalarValue sub(ScalarValue a, ScalarValue b, DType dtype) = 0;
  virtual ScalarValue mul(ScalarValue a, ScalarValue b, DType dtype) = 0;
  virtual ScalarValue div(ScalarValue a, ScalarValue b) = 0;  // floating
  virtual ScalarValue neg(ScalarValue x, DType dtype) = 0;
  virtual ScalarValue abs(ScalarValue x, DType dtype) = 0;
  virtual ScalarValue sqrt(ScalarValue x) = 0;
  virtual ScalarValue round(Rounding mode, ScalarValue x) = 0;
  virtual ScalarValue math(MathFunction function, ScalarValue x) = 0;
  /// The angle of (x, y) in [-pi, pi], with C99 Annex F's zeros and infinities.
  virtual ScalarValue atan2(ScalarValue y, ScalarValue x) = 0;
  /// Floating pow as C99 Annex F; integer pow by squaring, wrapping.
  virtual ScalarValue pow(ScalarValue base, ScalarValue exponent, DType dtype) = 0;
  /// NaN-propagating maximum / minimum.
  virtual ScalarValue extreme(bool largest, ScalarValue a, ScalarValue b, DType dtype) = 0;
  /// Ordered for floats (false against NaN) except `ne`; signed integers; unsigned bool.
  virtual ScalarValue compare(Comparison comparison, ScalarValue a, ScalarValue b, DType dtype) = 0;
  virtual ScalarValue is_nan(ScalarValue x) = 0;
  virtual ScalarValue logical_and(ScalarValue a, ScalarValue b) = 0;
  virtual ScalarValue logical_or(ScalarValue a, ScalarValue b) = 0;
  virtual ScalarValue logical_not(ScalarValue x) = 0;
  virtual ScalarValue select(ScalarValue condition, ScalarValue on_true, ScalarValue on_false) = 0;
  /// On the bits of integers, and bool as one bit.
  virtual ScalarValue bitwise(Bitwise operation, ScalarValue a, ScalarValue b) = 0;
  /// Integers, with JAX's out-of-range shifts: a count outside [0, bits) shifts
  /// every bit out (0, or -1 for a right shift of a negative signed value).
  /// Right shifts are arithmetic for signed dtypes, logical for unsigned.
  virtual ScalarValue shift(Shift direction, ScalarValue a, ScalarValue count, DType dtype) = 0;
  /// Integer division rounded toward zero; a zero divisor gives 0 and the
  /// one overflowing quotient (MIN / -1) wraps to MIN, as NumPy's do.
  virtual ScalarValue truncated_divide(ScalarValue a, ScalarValue b, DType dtype) = 0;
  /// a - b * trunc(a / b): fmod for floats; for integers 0 where the divisor is 0 or MIN / -1 overflows.
  virtual ScalarValue truncated_remainder(ScalarValue a, ScalarValue b, DType dtype) = 0;
  /// Floating: |magnitude| with the sign bit of `sign`.
  virtual ScalarValue copysign(ScalarValue magnitude, ScalarValue sign) = 0;
  /// Floating: the next representable value after x toward `toward` (C's nextafter).
  virtual ScalarValue next_after(ScalarValue x, ScalarValue toward) = 0;
  /// The reference conversion: saturating float to integer (NaN to 0), bool as 0/1.
  virtual ScalarValue convert(ScalarValue x, DType from, DType to) = 0;
};

/// An elementwise primitive's code for one element, given its operands' values.
using ScalarLowering = ScalarValue (*)(ScalarEmitter& emitter, const ir::Node& node,
                                       std::span<const ScalarValue> operands, std::span<const DType> operand_dtypes);

/// How a reduction combines elements; the backend accumulates with it (in
/// rows, lanes or slices) and starts from its identity.
enum class Reduction : uint8_t { none, sum, product, max, min };

/// The native kernel computing a primitive that is a kernel of its own
/// (Fusion::kernel, and matmul on integers): one whole node from its inputs in
/// memory. The backend keeps one emitter per value and its test checks that
/// every value has one.
enum class NativeKernel : uint8_t {
  none,
  transpose,
  slice,
  reverse,
  concatenate,
  pad,
  take,
  scatter_add,
  dynamic_slice,
  dynamic_update_slice,
  cumsum,
  argument_reduce,  // argmax, argmin
  random,           // random_bits, random_uniform
  integer_matmul,
};
inline constexpr int native_kernel_count = static_cast<int>(NativeKernel::integer_matmul) + 1;

}  // namespace kiln::ops
