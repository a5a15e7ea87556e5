// The dtype lattice and the 16-bit float conversions: promotion of every pair
// against a hand-written copy of JAX's table, and f16/bf16 rounding against
// NumPy and PyTorch bit for bit, eagerly and compiled.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "support/numpy_oracle.h"

namespace kiln {
namespace {

using testing::NumpyOracle;

// JAX's type promotion table (jax.numpy's "Type promotion semantics"), with
// i*, f* and c* the weak integer, float and complex (C++ numbers here). Row
// and column order as in `names`. Where complex meets a real float it is the
// Array API standard's table too.
const std::vector<std::string> names = {"b",    "u8",  "u16", "u32", "u64", "i8",   "i16", "i32", "i64",
                                        "bf16", "f16", "f32", "f64", "c64", "c128", "i*",  "f*",  "c*"};
const std::vector<std::string> jax_table = {
    "b    u8   u16  u32  u64  i8   i16  i32  i64  bf16 f16  f32  f64  c64  c128 i*   f*   c*",
    "u8   u8   u16  u32  u64  i16  i16  i32  i64  bf16 f16  f32  f64  c64  c128 u8   f*   c*",
    "u16  u16  u16  u32  u64  i32  i32  i32  i64  bf16 f16  f32  f64  c64  c128 u16  f*   c*",
    "u32  u32  u32  u32  u64  i64  i64  i64  i64  bf16 f16  f32  f64  c64  c128 u32  f*   c*",
    "u64  u64  u64  u64  u64  f*   f*   f*   f*   bf16 f16  f32  f64  c64  c128 u64  f*   c*",
    "i8   i16  i32  i64  f*   i8   i16  i32  i64  bf16 f16  f32  f64  c64  c128 i8   f*   c*",
    "i16  i16  i32  i64  f*   i16  i16  i32  i64  bf16 f16  f32  f64  c64  c128 i16  f*   c*",
    "i32  i32  i32  i64  f*   i32  i32  i32  i64  bf16 f16  f32  f64  c64  c128 i32  f*   c*",
    "i64  i64  i64  i64  f*   i64  i64  i64  i64  bf16 f16  f32  f64  c64  c128 i64  f*   c*",
    "bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 f32  f32  f64  c64  c128 bf16 bf16 c64",
    "f16  f16  f16  f16  f16  f16  f16  f16  f16  f32  f16  f32  f64  c64  c128 f16  f16  c64",
    "f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f64  c64  c128 f32  f32  c64",
    "f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  c128 c128 f64  f64  c128",
    "c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c128 c64  c128 c64  c64  c64",
    "c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128",
    "i*   u8   u16  u32  u64  i8   i16  i32  i64  bf16 f16  f32  f64  c64  c128 i*   f*   c*",
    "f*   f*   f*   f*   f*   f*   f*   f*   f*   bf16 f16  f32  f64  c64  c128 f*   f*   c*",
    "c*   c*   c*   c*   c*   c*   c*   c*   c*   c64  c64  c64  c128 c64  c128 c*   c*   c*",
};

std::vector<std::string> cells(const std::string& row) {
  std::istringstream in(row);
  std::vector<std::string> out;
  for (std::string cell; in >> cell;) out.push_back(cell);
  return out;
}

// An operand of lattice type `name`: a C++ number for the weak types.
Operand operand(const std::string& name) {
  if (name == "i*") return Operand(3);
  if (name == "f*") return Operand(2.5);
  if (name == "c*") return Operand(std::complex<double>(1.5, -2));
  return Operand(zeros({2}, name == "b" ? bool_ : *dtype_from_name(name)));
}

TEST(DtypePromotion, EveryPairFollowsJaxTable) {
  ASSERT_EQ(jax_table.size(), names.size());
  int checked = 0;
  for (size_t r = 0; r < names.size(); ++r) {
    std::vector<std::string> row = cells(jax_table[r]);
    ASSERT_EQ(row.size(), names.size()) << jax_table[r];
    for (size_t c = 0; c < names.size(); ++c) {
      bool weak_a = names[r].back() == '*', weak_b = names[c].back() == '*';
      if (weak_a && weak_b) continue;  // two C++ numbers add in C++
      const std::string& expected = row[c];
      // JAX's weak types materialize as kiln's defaults: i* as weak i32, f* as weak f32, c* as weak c64.
      DType dtype = expected == "b"    ? bool_
                    : expected == "i*" ? i32
                    : expected == "f*" ? f32
                    : expected == "c*" ? c64
                                       : *dtype_from_name(expected);
      bool weak = expected.back() == '*';
      std::string context = names[r] + " + " + names[c] + " -> " + expected;
      Array result = add(operand(names[r]), operand(names[c]));
      EXPECT_EQ(result.dtype(), dtype) << context;
      EXPECT_EQ(result.weak_type(), weak) << context;
      // The table is symmetric, and so is kiln.
      Array swapped = add(operand(names[c]), operand(names[r]));
      EXPECT_EQ(swapped.dtype(), dtype) << context << " (swapped)";
      ++checked;
    }
  }
  EXPECT_EQ(checked, 18 * 18 - 9);
}

TEST(DtypePromotion, WeakNumbersKeepSmallDtypes) {
  Array x = astype(array<int32_t>({1, 200, 255}), u8);
  Array y = x + 1;  // wraps in u8, as JAX's uint8 + 1
  EXPECT_EQ(y.dtype(), u8);
  EXPECT_EQ(y.to_vector<uint8_t>(), (std::vector<uint8_t>{2, 201, 0}));
  Array h = astype(array<float>({1.5f}), bf16) * 2.0;
  EXPECT_EQ(h.dtype(), bf16);
  EXPECT_EQ(h.item<float>(), 3.0f);
  EXPECT_EQ((astype(array<int32_t>({1}), i8) * 2.5).dtype(), f32);  // i8 with f* is f*: the default float
}

// Every one of the 65536 f16 patterns to f32, and f32 and f64 values (with
// exact ties between neighbouring f16 values, and values a hair off them)
// back to f16 — against NumPy, eagerly and compiled.
TEST(DtypePromotion, Float16ConversionsMatchNumpyBitForBit) {
  std::vector<float16> patterns(65536);
  for (uint32_t bits = 0; bits < 65536; ++bits) patterns[bits] = float16::from_bits(static_cast<uint16_t>(bits));
  Array halves = array(patterns, {65536});
  std::vector<uint16_t> raw(65536);
  for (uint32_t b = 0; b < 65536; ++b) raw[b] = static_cast<uint16_t>(b);
  Array bits = array(raw, {65536});

  // Ties and near-ties between finite neighbours, over every binade.
  std::vector<double> wide;
  for (uint32_t b = 0; b < 0x7C00; b += 7) {
    double low = float16::from_bits(static_cast<uint16_t>(b)), high = float16::from_bits(static_cast<uint16_t>(b + 1));
    double middle = (low + high) / 2;
    for (double x : {middle, std::nextafter(middle, 0.0), std::nextafter(middle, 1e9), middle * (1 + 0x1p-30)}) {
      wide.push_back(x);
      wide.push_back(-x);
    }
  }
  for (double x : std::initializer_list<double>{65504.0, 65519.99, 65520.0, 1e6, 0x1p-25, 0x1p-26, 0.0, -0.0, INFINITY,
                                                -INFINITY, NAN})
    wide.push_back(x);
  Array from_f64 = array(wide), from_f32 = astype(from_f64, f32);

  NumpyOracle oracle;
  int to_float = oracle.add("a.view(np.float16).astype(np.float32)", {bits});
  int f64_to_half = oracle.add("a.astype(np.float16)", {from_f64});
  int f32_to_half = oracle.add("a.astype(np.float16)", {from_f32});
  oracle.run();

  auto same_bits = [](const Array& a, const Array& b, const std::string& context) {
    ASSERT_EQ(a.dtype(), b.dtype()) << context;
    std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
    ASSERT_EQ(x.size(), y.size()) << context;
    int bad = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      bool equal = std::isnan(x[i]) ? std::isnan(y[i]) : std::memcmp(&x[i], &y[i], sizeof(double)) == 0;
      if (!equal && bad++ < 5) ADD_FAILURE() << context << " [" << i << "] got " << x[i] << ", expected " << y[i];
    }
  };
  auto to_f32 = jit([](const Array& x) { return astype(x, f32); });
  auto to_f16 = jit([](const Array& x) { return astype(x, f16); });
  same_bits(astype(halves, f32), oracle.expected(to_float), "f16 -> f32 eager");
  same_bits(to_f32(halves), oracle.expected(to_float), "f16 -> f32 compiled");
  same_bits(astype(from_f64, f16), oracle.expected(f64_to_half), "f64 -> f16 eager");
  same_bits(to_f16(from_f64), oracle.expected(f64_to_half), "f64 -> f16 compiled");
  same_bits(astype(from_f32, f16), oracle.expected(f32_to_half), "f32 -> f16 eager");
  same_bits(to_f16(from_f32), oracle.expected(f32_to_half), "f32 -> f16 compiled");
}

// f32 to bf16 against PyTorch (ties to even, NaN stays NaN), and f64 to bf16
// against the exact rounding of the double (PyTorch rounds through f32).
TEST(DtypePromotion, Bfloat16ConversionsMatchTorchBitForBit) {
  std::vector<float> narrow;
  for (uint32_t top = 0; top < 0x10000; top += 3) {
    for (uint32_t low : {0x0000u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu}) {
      uint32_t bits = (top << 16) | low;
      float value;
      std::memcpy(&value, &bits, sizeof value);
      narrow.push_back(value);
    }
  }
  Array x = array(narrow);
  NumpyOracle oracle;
  int rounded = oracle.add("from_bf16(__import__('torch').from_numpy(a))", {x});
  oracle.run();
  Array expected = oracle.expected(rounded);
  ASSERT_EQ(expected.dtype(), bf16);
  auto to_bf16 = jit([](const Array& v) { return astype(v, bf16); });
  for (const auto& [context, actual] : {std::pair{"eager", astype(x, bf16)}, std::pair{"compiled", to_bf16(x)}}) {
    std::vector<float> got = actual.to_vector<float>(), want = expected.to_vector<float>();
    int bad = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      bool equal = std::isnan(want[i]) ? std::isnan(got[i]) : std::memcmp(&got[i], &want[i], sizeof(float)) == 0;
      if (!equal && bad++ < 5)
        ADD_FAILURE() << context << " [" << i << "] " << narrow[i] << " -> " << got[i] << ", torch " << want[i];
    }
  }
  // From f64: 1 + 2^-8 is a tie (to 1), 1 + 2^-8 + 2^-40 is above it (to 1 + 2^-7).
  // Through f32 the second would first round to the tie and then to 1.
  Array wide = array<double>({1 + 0x1p-8, 1 + 0x1p-8 + 0x1p-40, -(1 + 3 * 0x1p-8), 3.5e38, 1e-45});
  std::vector<float> expected_wide = {1.0f, 1 + 0x1p-7f, -(1 + 4 * 0x1p-8f), INFINITY, 0.0f};
  EXPECT_EQ(astype(wide, bf16).to_vector<float>(), expected_wide);
  EXPECT_EQ(to_bf16(wide).to_vector<float>(), expected_wide);
}

TEST(DtypePromotion, NamesAndSizes) {
  for (int k = 0; k < dtype_count; ++k) {
    auto dtype = static_cast<DType>(k);
    EXPECT_EQ(dtype_from_name(dtype_name(dtype)), dtype);
    EXPECT_EQ(is_integer(dtype) + is_floating(dtype) + is_complex(dtype) + (dtype == bool_), 1) << dtype;
  }
  EXPECT_EQ(dtype_size(bf16), 2u);
  EXPECT_EQ(dtype_size(u64), 8u);
  EXPECT_TRUE(is_unsigned(u32) && !is_unsigned(i32) && is_half(bf16) && !is_half(f32));
  EXPECT_FALSE(dtype_from_name("float16").has_value());
}

}  // namespace
}  // namespace kiln
