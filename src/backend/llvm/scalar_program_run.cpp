// The interpreter of ScalarProgram steps (scalar_program_steps.h). Each step
// is a loop over one block, which the C++ compiler vectorizes; where the
// CPU has AVX2 and FMA the same loops are compiled for them too, and a fused
// multiply-add is one instruction there instead of a call to libm's fma.
// This file is compiled with -ffp-contract=off (CMakeLists.txt): a multiply
// and an add stay two roundings unless a step says fused.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "backend/llvm/scalar_program_steps.h"
#include "core/error_format.h"

namespace kiln::llvm_backend {

namespace {

// Slots are reused across types (a float's bits are read as an integer):
// this file is compiled with -fno-strict-aliasing (CMakeLists.txt).
using Bits1 = uint8_t;
using Bits32 = uint32_t;
using Bits64 = uint64_t;
using Float32 = float;
using Float64 = double;

// What a slot holds for each lane: its values, their bits, and the signed
// integer of their width (for signed comparisons, shifts and conversions).
template <class V, class B, class S>
struct LaneTypes {
  using Value = V;
  using Bits = B;
  using Signed = S;
};
template <Lane lane>
struct LaneType;
template <>
struct LaneType<Lane::f32> : LaneTypes<Float32, Bits32, int32_t> {};
template <>
struct LaneType<Lane::f64> : LaneTypes<Float64, Bits64, int64_t> {};
template <>
struct LaneType<Lane::i1> : LaneTypes<Bits1, Bits1, int8_t> {};
template <>
struct LaneType<Lane::i32> : LaneTypes<Bits32, Bits32, int32_t> {};
template <>
struct LaneType<Lane::i64> : LaneTypes<Bits64, Bits64, int64_t> {};

template <class T>
inline T* slot(char* const* slots, int32_t s) {
  return reinterpret_cast<T*>(slots[s]);
}

template <class T, class F>
[[gnu::always_inline]] inline void unary(const Step& step, char* const* slots, int64_t n, F f) {
  T* out = slot<T>(slots, step.result);
  const T* a = slot<T>(slots, step.operands[0]);
  for (int64_t i = 0; i < n; ++i) out[i] = f(a[i]);
}

template <class T, class F>
[[gnu::always_inline]] inline void binary(const Step& step, char* const* slots, int64_t n, F f) {
  T* out = slot<T>(slots, step.result);
  const T* a = slot<T>(slots, step.operands[0]);
  const T* b = slot<T>(slots, step.operands[1]);
  for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
}

template <class T, class F>
[[gnu::always_inline]] inline void compare(const Step& step, char* const* slots, int64_t n, F f) {
  Bits1* out = slot<Bits1>(slots, step.result);
  const T* a = slot<T>(slots, step.operands[0]);
  const T* b = slot<T>(slots, step.operands[1]);
  for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]) ? 1 : 0;
}

template <class From, class To, class F>
[[gnu::always_inline]] inline void convert(const Step& step, char* const* slots, int64_t n, F f) {
  To* out = slot<To>(slots, step.result);
  const From* a = slot<From>(slots, step.operands[0]);
  for (int64_t i = 0; i < n; ++i) out[i] = f(a[i]);
}

// llvm::CmpInst::Predicate's values (FCMP_FALSE = 0 .. FCMP_TRUE = 15, ICMP_EQ = 32 ..).
enum Predicate : uint8_t {
  float_false = 0,
  ordered_equal,
  ordered_greater,
  ordered_greater_equal,
  ordered_less,
  ordered_less_equal,
  ordered_not_equal,
  ordered,
  unordered,
  unordered_equal,
  unordered_greater,
  unordered_greater_equal,
  unordered_less,
  unordered_less_equal,
  unordered_not_equal,
  float_true,
  integer_equal = 32,
  integer_not_equal,
  unsigned_greater,
  unsigned_greater_equal,
  unsigned_less,
  unsigned_less_equal,
  signed_greater,
  signed_greater_equal,
  signed_less,
  signed_less_equal,
};

template <class T>
[[gnu::always_inline]] inline void compare_floats(const Step& step, char* const* slots, int64_t n) {
  switch (step.predicate) {
    case float_false: return compare<T>(step, slots, n, [](T, T) { return false; });
    case ordered_equal: return compare<T>(step, slots, n, [](T a, T b) { return a == b; });
    case ordered_greater: return compare<T>(step, slots, n, [](T a, T b) { return a > b; });
    case ordered_greater_equal: return compare<T>(step, slots, n, [](T a, T b) { return a >= b; });
    case ordered_less: return compare<T>(step, slots, n, [](T a, T b) { return a < b; });
    case ordered_less_equal: return compare<T>(step, slots, n, [](T a, T b) { return a <= b; });
    case ordered_not_equal: return compare<T>(step, slots, n, [](T a, T b) { return a < b || a > b; });
    case ordered: return compare<T>(step, slots, n, [](T a, T b) { return a == a && b == b; });
    case unordered: return compare<T>(step, slots, n, [](T a, T b) { return a != a || b != b; });
    case unordered_equal: return compare<T>(step, slots, n, [](T a, T b) { return !(a < b || a > b); });
    case unordered_greater: return compare<T>(step, slots, n, [](T a, T b) { return !(a <= b); });
    case unordered_greater_equal: return compare<T>(step, slots, n, [](T a, T b) { return !(a < b); });
    case unordered_less: return compare<T>(step, slots, n, [](T a, T b) { return !(a >= b); });
    case unordered_less_equal: return compare<T>(step, slots, n, [](T a, T b) { return !(a > b); });
    case unordered_not_equal: return compare<T>(step, slots, n, [](T a, T b) { return a != b; });
    case float_true: return compare<T>(step, slots, n, [](T, T) { return true; });
  }
  KILN_CHECK(false, "a scalar program compares floats with an unknown predicate");
}

template <class U, class S>
[[gnu::always_inline]] inline void compare_integers(const Step& step, char* const* slots, int64_t n) {
  switch (step.predicate) {
    case integer_equal: return compare<U>(step, slots, n, [](U a, U b) { return a == b; });
    case integer_not_equal: return compare<U>(step, slots, n, [](U a, U b) { return a != b; });
    case unsigned_greater: return compare<U>(step, slots, n, [](U a, U b) { return a > b; });
    case unsigned_greater_equal: return compare<U>(step, slots, n, [](U a, U b) { return a >= b; });
    case unsigned_less: return compare<U>(step, slots, n, [](U a, U b) { return a < b; });
    case unsigned_less_equal: return compare<U>(step, slots, n, [](U a, U b) { return a <= b; });
    case signed_greater: return compare<U>(step, slots, n, [](U a, U b) { return S(a) > S(b); });
    case signed_greater_equal: return compare<U>(step, slots, n, [](U a, U b) { return S(a) >= S(b); });
    case signed_less: return compare<U>(step, slots, n, [](U a, U b) { return S(a) < S(b); });
    case signed_less_equal: return compare<U>(step, slots, n, [](U a, U b) { return S(a) <= S(b); });
  }
  KILN_CHECK(false, "a scalar program compares integers with an unknown predicate");
}

template <Lane lane>
[[gnu::always_inline]] inline void floating_step(const Step& step, char* const* slots, int64_t n) {
  using T = typename LaneType<lane>::Value;
  using B = typename LaneType<lane>::Bits;
  constexpr B sign = B{1} << (sizeof(B) * 8 - 1);
  switch (step.code) {
    case StepCode::add: return binary<T>(step, slots, n, [](T a, T b) { return a + b; });
    case StepCode::subtract: return binary<T>(step, slots, n, [](T a, T b) { return a - b; });
    case StepCode::multiply: return binary<T>(step, slots, n, [](T a, T b) { return a * b; });
    case StepCode::divide: return binary<T>(step, slots, n, [](T a, T b) { return a / b; });
    case StepCode::negate: return unary<B>(step, slots, n, [](B a) { return B(a ^ sign); });
    case StepCode::absolute: return unary<B>(step, slots, n, [](B a) { return B(a & ~sign); });
    case StepCode::copy_sign: return binary<B>(step, slots, n, [](B a, B b) { return B((a & ~sign) | (b & sign)); });
    case StepCode::square_root: return unary<T>(step, slots, n, [](T a) { return std::sqrt(a); });
    case StepCode::round_to_even: return unary<T>(step, slots, n, [](T a) { return std::nearbyint(a); });
    case StepCode::floor: return unary<T>(step, slots, n, [](T a) { return std::floor(a); });
    case StepCode::ceil: return unary<T>(step, slots, n, [](T a) { return std::ceil(a); });
    case StepCode::truncate_to_integral: return unary<T>(step, slots, n, [](T a) { return std::trunc(a); });
    case StepCode::round_half_away: return unary<T>(step, slots, n, [](T a) { return std::round(a); });
    case StepCode::fused_multiply_add:
    case StepCode::multiply_then_add: {
      T* out = slot<T>(slots, step.result);
      const T* a = slot<T>(slots, step.operands[0]);
      const T* b = slot<T>(slots, step.operands[1]);
      const T* c = slot<T>(slots, step.operands[2]);
      if (step.code == StepCode::fused_multiply_add) {
        for (int64_t i = 0; i < n; ++i) out[i] = std::fma(a[i], b[i], c[i]);
      } else {
        for (int64_t i = 0; i < n; ++i) {
          T product = a[i] * b[i];
          out[i] = product + c[i];
        }
      }
      return;
    }
    case StepCode::compare_floats: return compare_floats<T>(step, slots, n);
    default: KILN_CHECK(false, "a scalar program applies an integer step to floats");
  }
}

template <Lane lane>
[[gnu::always_inline]] inline void integer_step(const Step& step, char* const* slots, int64_t n) {
  using U = typename LaneType<lane>::Value;
  using S = typename LaneType<lane>::Signed;
  // Shift counts at or past the width are poison in LLVM; masked here so
  // the interpreter never meets C++'s undefined behaviour either.
  constexpr U width_mask = sizeof(U) * 8 - 1;
  switch (step.code) {
    case StepCode::integer_add: return binary<U>(step, slots, n, [](U a, U b) { return U(a + b); });
    case StepCode::integer_subtract: return binary<U>(step, slots, n, [](U a, U b) { return U(a - b); });
    case StepCode::integer_multiply: return binary<U>(step, slots, n, [](U a, U b) { return U(a * b); });
    case StepCode::shift_left: return binary<U>(step, slots, n, [](U a, U b) { return U(a << (b & width_mask)); });
    case StepCode::shift_right_logical:
      return binary<U>(step, slots, n, [](U a, U b) { return U(a >> (b & width_mask)); });
    case StepCode::shift_right_arithmetic:
      return binary<U>(step, slots, n, [](U a, U b) { return U(S(a) >> (b & width_mask)); });
    case StepCode::bit_and: return binary<U>(step, slots, n, [](U a, U b) { return U(a & b); });
    case StepCode::bit_or: return binary<U>(step, slots, n, [](U a, U b) { return U(a | b); });
    case StepCode::bit_xor: return binary<U>(step, slots, n, [](U a, U b) { return U(a ^ b); });
    case StepCode::compare_integers: return compare_integers<U, S>(step, slots, n);
    default: KILN_CHECK(false, "a scalar program applies a floating step to integers");
  }
}

template <class U>
[[gnu::always_inline]] inline void select(const Step& step, char* const* slots, int64_t n) {
  U* out = slot<U>(slots, step.result);
  const Bits1* condition = slot<Bits1>(slots, step.operands[0]);
  const U* on_true = slot<U>(slots, step.operands[1]);
  const U* on_false = slot<U>(slots, step.operands[2]);
  for (int64_t i = 0; i < n; ++i) out[i] = condition[i] ? on_true[i] : on_false[i];
}

// An integer lane's value as signed or unsigned 64 bits (i1 is 0 or 1, or 0 or -1 signed).
template <Lane lane>
int64_t signed_value(typename LaneType<lane>::Value v) {
  if constexpr (lane == Lane::i1) return v ? -1 : 0;
  else return static_cast<typename LaneType<lane>::Signed>(v);
}

template <class To, class F>
[[gnu::always_inline]] inline void from_integer(const Step& step, char* const* slots, int64_t n, F f) {
  switch (step.from) {
    case Lane::i1: return convert<Bits1, To>(step, slots, n, [&](Bits1 a) { return f(signed_value<Lane::i1>(a), a); });
    case Lane::i32:
      return convert<Bits32, To>(step, slots, n, [&](Bits32 a) { return f(signed_value<Lane::i32>(a), a); });
    case Lane::i64:
      return convert<Bits64, To>(step, slots, n, [&](Bits64 a) { return f(signed_value<Lane::i64>(a), a); });
    default: KILN_CHECK(false, "a scalar program converts a float as an integer");
  }
}

template <Lane to>
[[gnu::always_inline]] inline void conversion_step(const Step& step, char* const* slots, int64_t n) {
  using To = typename LaneType<to>::Value;
  switch (step.code) {
    case StepCode::signed_to_float:
      return from_integer<To>(step, slots, n, [](int64_t s, uint64_t) { return static_cast<To>(s); });
    case StepCode::unsigned_to_float:
      return from_integer<To>(step, slots, n, [](int64_t, uint64_t u) { return static_cast<To>(u); });
    case StepCode::zero_extend:
      return from_integer<To>(step, slots, n, [](int64_t, uint64_t u) { return static_cast<To>(u); });
    case StepCode::sign_extend:
      return from_integer<To>(step, slots, n, [](int64_t s, uint64_t) { return static_cast<To>(s); });
    case StepCode::truncate_integer:
      return from_integer<To>(step, slots, n, [](int64_t, uint64_t u) {
        if constexpr (to == Lane::i1) return static_cast<To>(u & 1);
        else return static_cast<To>(u);
      });
    case StepCode::float_to_signed:
    case StepCode::float_to_unsigned: {
      bool is_signed = step.code == StepCode::float_to_signed;
      auto to_integer = [&](auto value) -> To {
        using S = typename LaneType<to>::Signed;
        if (is_signed) return static_cast<To>(static_cast<S>(value));
        return static_cast<To>(value);
      };
      if (step.from == Lane::f32) return convert<Float32, To>(step, slots, n, to_integer);
      return convert<Float64, To>(step, slots, n, to_integer);
    }
    case StepCode::widen_float: return convert<Float32, To>(step, slots, n, [](float a) { return static_cast<To>(a); });
    case StepCode::narrow_float:
      return convert<Float64, To>(step, slots, n, [](double a) { return static_cast<To>(a); });
    default: KILN_CHECK(false, "a scalar program's conversion step has no conversion");
  }
}

bool is_conversion(StepCode code) { return code >= StepCode::signed_to_float; }

[[gnu::always_inline]] inline void run_one(const Step& step, char* const* slots, int64_t n) {
  if (step.code == StepCode::copy) {
    std::memcpy(slots[step.result], slots[step.operands[0]], static_cast<size_t>(n * lane_bytes(step.type)));
    return;
  }
  if (step.code == StepCode::select) {
    switch (lane_bytes(step.type)) {
      case 1: return select<Bits1>(step, slots, n);
      case 4: return select<Bits32>(step, slots, n);
      default: return select<Bits64>(step, slots, n);
    }
  }
  if (is_conversion(step.code)) {
    switch (step.type) {
      case Lane::f32: return conversion_step<Lane::f32>(step, slots, n);
      case Lane::f64: return conversion_step<Lane::f64>(step, slots, n);
      case Lane::i1: return conversion_step<Lane::i1>(step, slots, n);
      case Lane::i32: return conversion_step<Lane::i32>(step, slots, n);
      case Lane::i64: return conversion_step<Lane::i64>(step, slots, n);
    }
  }
  switch (step.type) {
    case Lane::f32: return floating_step<Lane::f32>(step, slots, n);
    case Lane::f64: return floating_step<Lane::f64>(step, slots, n);
    case Lane::i1: return integer_step<Lane::i1>(step, slots, n);
    case Lane::i32: return integer_step<Lane::i32>(step, slots, n);
    case Lane::i64: return integer_step<Lane::i64>(step, slots, n);
  }
}

void run_baseline(const std::vector<Step>& steps, char* const* slots, int64_t n) {
  for (const Step& step : steps) run_one(step, slots, n);
}

[[gnu::target("avx2,fma")]] void run_avx2(const std::vector<Step>& steps, char* const* slots, int64_t n) {
  for (const Step& step : steps) run_one(step, slots, n);
}

bool has_avx2_and_fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

}  // namespace

void run_steps(const std::vector<Step>& steps, char* const* slots, int64_t count) {
  if (has_avx2_and_fma()) run_avx2(steps, slots, count);
  else run_baseline(steps, slots, count);
}

}  // namespace kiln::llvm_backend
