// einsum, tensordot, outer, inner, kron, cross and nan_to_num against NumPy:
// random einsum expressions (repeated letters, "...", implicit and explicit
// outputs, 1-3 operands) over f32, f64, i32, f16 and u8; derivatives by
// finite differences; jit equal to eager; vmap of einsum equal to a loop; errors.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <limits>

#include "support/errors.h"
#include "support/gradient_check.h"
#include "support/numpy_oracle.h"

namespace kiln {
namespace {

using testing::all_close;
using testing::expect_error;
using testing::numpy_dtype;
using testing::NumpyOracle;
using testing::RandomArrays;

// A random einsum expression and operand shapes that fit it.
struct Expression {
  std::string subscripts;
  std::vector<Shape> shapes;
};

Expression random_expression(RandomArrays& random) {
  const std::string pool = "abcdijkxyzAB";
  int letters = static_cast<int>(random.integer(1, 5));
  std::string chosen;
  std::vector<int64_t> extents;
  while (static_cast<int>(chosen.size()) < letters) {
    char c = pool[static_cast<size_t>(random.integer(0, static_cast<int64_t>(pool.size()) - 1))];
    if (chosen.find(c) != std::string::npos) continue;
    chosen += c;
    extents.push_back(random.integer(0, 9) == 0 ? 0 : random.integer(1, 3));
  }
  bool broadcasting = random.integer(0, 2) == 0;
  Shape broadcast = random.shape(0, 2, 3, false);
  int operands = static_cast<int>(random.integer(1, 3));
  Expression e;
  std::string used;
  bool any_ellipsis = false;
  for (int i = 0; i < operands; ++i) {
    std::string term;
    Shape shape;
    int rank = static_cast<int>(random.integer(0, 3));
    for (int d = 0; d < rank; ++d) {
      size_t k = static_cast<size_t>(random.integer(0, letters - 1));
      term += chosen[k];
      shape.push_back(extents[k]);
      used += chosen[k];
    }
    if (broadcasting && random.integer(0, 3) != 0) {
      // Its own trailing part of the broadcast dims, some of them 1.
      size_t count = static_cast<size_t>(random.integer(0, static_cast<int64_t>(broadcast.size())));
      Shape dims(broadcast.end() - static_cast<std::ptrdiff_t>(count), broadcast.end());
      for (int64_t& dim : dims)
        if (random.integer(0, 3) == 0) dim = 1;
      size_t at = static_cast<size_t>(random.integer(0, rank));
      term.insert(at, "...");
      shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(at), dims.begin(), dims.end());
      any_ellipsis = true;
    }
    e.subscripts += (i ? "," : "") + term;
    e.shapes.push_back(shape);
  }
  if (random.integer(0, 1)) {
    // Explicit: some of the used letters, each once, in a random order.
    std::string output;
    for (char c : used)
      if (output.find(c) == std::string::npos && random.integer(0, 2) != 0) output += c;
    std::shuffle(output.begin(), output.end(), random.engine());
    if (any_ellipsis) output.insert(static_cast<size_t>(random.integer(0, static_cast<int64_t>(output.size()))), "...");
    e.subscripts += "->" + output;
  }
  return e;
}

Array random_operand(RandomArrays& random, const Shape& shape, DType dtype) {
  // f16 holds small integers, so every sum of products is exact in it.
  if (dtype == DType::f16) return astype(random.uniform(shape, DType::i32, -2, 2), DType::f16);
  if (dtype == DType::u8) return random.uniform(shape, DType::u8, 0, 6);
  return random.uniform(shape, dtype);
}

// NumPy computes in f64 (floats) or i64 (integers, which wrap on the way back).
std::string numpy_einsum(const std::string& subscripts, size_t operands, DType dtype) {
  std::string compute = is_floating(dtype) ? "np.float64" : "np.int64";
  std::string expression = "np.einsum('" + subscripts + "'";
  for (size_t i = 0; i < operands; ++i) expression += std::string(", ") + char('a' + i) + ".astype(" + compute + ")";
  return expression + ").astype(" + numpy_dtype(dtype) + ")";
}

struct Pending {
  Array actual;
  int id;
  std::string context;
  double rtol, atol;
};

void expect_pending(const NumpyOracle& oracle, const std::vector<Pending>& cases) {
  for (const Pending& c : cases) {
    std::optional<Array> expected = oracle.result(c.id);
    ASSERT_TRUE(expected) << c.context << ": NumPy raised\n" << oracle.error(c.id);
    EXPECT_EQ(c.actual.dtype(), expected->dtype()) << c.context;
    EXPECT_TRUE(all_close(c.actual, *expected, c.rtol, c.atol, c.context));
  }
}

double rtol_of(DType dtype) {
  switch (dtype) {
    case DType::f32: return 1e-5;
    case DType::f64: return 1e-12;
    case DType::f16: return 1e-3;
    default: return 0;
  }
}

double atol_of(DType dtype) { return dtype == DType::f32 ? 1e-4 : dtype == DType::f64 ? 1e-12 : 0; }

TEST(ContractionOracle, RandomEinsumExpressionsEveryDtype) {
  RandomArrays random(71);
  NumpyOracle oracle;
  std::vector<Pending> cases;
  int expressions = 0;
  for (DType dtype : {DType::f32, DType::f64, DType::i32, DType::f16, DType::u8}) {
    for (int trial = 0; trial < 14; ++trial, ++expressions) {
      Expression e = random_expression(random);
      std::vector<Array> operands;
      std::string context = std::string(dtype_name(dtype)) + " einsum(\"" + e.subscripts + "\")";
      for (const Shape& shape : e.shapes) {
        operands.push_back(random_operand(random, shape, dtype));
        context += " " + shape_string(shape);
      }
      cases.push_back({einsum(e.subscripts, operands),
                       oracle.add(numpy_einsum(e.subscripts, operands.size(), dtype), operands), context,
                       rtol_of(dtype), atol_of(dtype)});
    }
  }
  EXPECT_GE(expressions, 40);
  oracle.run();
  expect_pending(oracle, cases);
}

TEST(ContractionOracle, NamedEinsumExpressions) {
  RandomArrays random(72);
  NumpyOracle oracle;
  std::vector<Pending> cases;
  struct Named {
    std::string subscripts;
    std::vector<Shape> shapes;
  };
  const std::vector<Named> named = {
      {"ij,jk->ik", {{2, 3}, {3, 4}}},
      {"ij,jk", {{2, 3}, {3, 4}}},
      {"ii->i", {{4, 4}}},
      {"ii", {{4, 4}}},
      {"iii->i", {{3, 3, 3}}},
      {"ij->", {{3, 5}}},
      {"ij->ji", {{3, 5}}},
      {"i,i->i", {{5}, {5}}},
      {"i,j->ij", {{3}, {4}}},
      {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},
      {"...ij,...jk->...ik", {{2, 1, 3, 4}, {5, 4, 2}}},
      {"...i,...i", {{2, 1, 3}, {5, 3}}},
      {"i...,j", {{2, 3}, {4}}},
      {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 2}}},
      {"ij,jk", {{2, 1}, {3, 4}}},
      {"iij,jk->ik", {{3, 3, 2}, {2, 4}}},
      {"bA,Ab", {{2, 3}, {3, 2}}},
      {"ab,cd->", {{2, 3}, {4, 1}}},
      {"i->", {{0}}},
      {"ij,jk->ik", {{2, 0}, {0, 3}}},
      {"", {{}}},
      {",->", {{}, {}}},
      {"ijk,ikj->", {{2, 3, 4}, {2, 4, 3}}},
  };
  for (DType dtype : {DType::f64, DType::i32, DType::bool_}) {
    for (const Named& n : named) {
      std::vector<Array> operands;
      for (const Shape& shape : n.shapes) operands.push_back(random_operand(random, shape, dtype));
      std::string compute = dtype == DType::bool_ ? "bool" : is_floating(dtype) ? "np.float64" : "np.int64";
      std::string expression = "np.einsum('" + n.subscripts + "'";
      for (size_t i = 0; i < operands.size(); ++i)
        expression += std::string(", ") + char('a' + i) + ".astype(" + compute + ")";
      expression += ").astype(" + numpy_dtype(dtype) + ")";
      cases.push_back({einsum(n.subscripts, operands), oracle.add(expression, operands),
                       std::string(dtype_name(dtype)) + " einsum(\"" + n.subscripts + "\")", rtol_of(dtype),
                       atol_of(dtype)});
    }
  }
  oracle.run();
  expect_pending(oracle, cases);
}

TEST(ContractionOracle, TensordotOuterInnerKronCross) {
  RandomArrays random(73);
  NumpyOracle oracle;
  std::vector<Pending> cases;
  for (DType dtype : {DType::f32, DType::f64, DType::i32, DType::u8}) {
    double rtol = rtol_of(dtype), atol = atol_of(dtype);
    std::string name(dtype_name(dtype));
    for (int trial = 0; trial < 6; ++trial) {
      // tensordot with a count: b starts with a's last `axes` extents.
      Shape a_shape = random.shape(0, 4, 3);
      int axes = static_cast<int>(random.integer(0, static_cast<int64_t>(a_shape.size())));
      Shape b_shape(a_shape.end() - axes, a_shape.end());
      Shape more = random.shape(0, 2, 3);
      b_shape.insert(b_shape.end(), more.begin(), more.end());
      Array a = random_operand(random, a_shape, dtype), b = random_operand(random, b_shape, dtype);
      std::string context = name + shape_string(a_shape) + " " + shape_string(b_shape);
      cases.push_back({tensordot(a, b, axes), oracle.add("np.tensordot(a, b, " + std::to_string(axes) + ")", {a, b}),
                       "tensordot " + std::to_string(axes) + " " + context, rtol, atol});
      // tensordot with axis lists: a [2,3,4] against b [4,5,2] over (0,2) and (-1,0).
      Array c = random_operand(random, {2, 3, 4}, dtype), d = random_operand(random, {4, 5, 2}, dtype);
      cases.push_back({tensordot(c, d, {{0, 2}, {-1, 0}}), oracle.add("np.tensordot(a, b, ((0, 2), (-1, 0)))", {c, d}),
                       "tensordot lists " + name, rtol, atol});
      cases.push_back({outer(a, b), oracle.add("np.outer(a, b)", {a, b}), "outer " + context, rtol, atol});
      Shape inner_a = random.shape(0, 3, 3), inner_b = random.shape(0, 3, 3);
      if (!inner_a.empty() && !inner_b.empty()) inner_b.back() = inner_a.back();
      Array e = random_operand(random, inner_a, dtype), f = random_operand(random, inner_b, dtype);
      cases.push_back({inner(e, f), oracle.add("np.inner(a, b)", {e, f}),
                       "inner " + name + shape_string(inner_a) + " " + shape_string(inner_b), rtol, atol});
      cases.push_back({kron(e, f), oracle.add("np.kron(a, b)", {e, f}),
                       "kron " + name + shape_string(inner_a) + " " + shape_string(inner_b), rtol, atol});
    }
    Array u = random_operand(random, {4, 3}, dtype), v = random_operand(random, {3}, dtype);
    cases.push_back({cross(u, v), oracle.add("np.cross(a, b)", {u, v}), "cross " + name, rtol, atol});
    Array p = random_operand(random, {3, 2, 1}, dtype), q = random_operand(random, {3, 1, 5}, dtype);
    cases.push_back({cross(p, q, 0), oracle.add("np.cross(a, b, axis=0)", {p, q}), "cross axis 0 " + name, rtol, atol});
  }
  oracle.run();
  expect_pending(oracle, cases);
}

TEST(ContractionOracle, NanToNumPerDtype) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  Array values = array<double>({nan, inf, -inf, 1.5, -2.0, 0.0});
  NumpyOracle oracle;
  std::vector<Pending> cases;
  for (DType dtype : {DType::f16, DType::f32, DType::f64}) {
    Array x = astype(values, dtype);
    std::string name(dtype_name(dtype));
    cases.push_back({nan_to_num(x), oracle.add("np.nan_to_num(a)", {x}), "nan_to_num " + name, 0, 0});
    cases.push_back({nan_to_num(x, 7, 100, -50), oracle.add("np.nan_to_num(a, nan=7, posinf=100, neginf=-50)", {x}),
                     "nan_to_num values " + name, 0, 0});
  }
  Array integers = array<int32_t>({1, -2, 3});
  cases.push_back({nan_to_num(integers), oracle.add("np.nan_to_num(a)", {integers}), "nan_to_num i32", 0, 0});
  oracle.run();
  expect_pending(oracle, cases);
  // bf16, which NumPy lacks: its largest finite value is 0x7F7F.
  Array cleaned = astype(nan_to_num(astype(values, DType::bf16)), DType::f64);
  double largest = static_cast<double>(std::numeric_limits<bfloat16>::max());
  EXPECT_EQ(cleaned.to_vector<double>(), (std::vector<double>{0, largest, -largest, 1.5, -2, 0}));
  EXPECT_EQ(largest, 3.3895313892515355e38);
  EXPECT_EQ(nan_to_num(astype(values, DType::u8)).dtype(), DType::u8);
}

// ---- Transformations -------------------------------------------------------------

TEST(ContractionTransforms, DerivativesAgreeWithFiniteDifferences) {
  RandomArrays random(74);
  auto f64 = [&](Shape shape) { return random.uniform(shape, DType::f64, -1, 1); };
  for (const auto& [subscripts, shapes] : std::vector<std::pair<std::string, std::vector<Shape>>>{
           {"bij,bjk->bik", {{2, 3, 2}, {2, 2, 3}}},
           {"ii->i", {{3, 3}}},
           {"ii", {{3, 3}}},
           {"ij,jk,kl->li", {{2, 3}, {3, 2}, {2, 2}}},
           {"...i,...i->...", {{2, 1, 3}, {2, 3}}},
           {"i,j", {{3}, {2}}},
           {"iij,j->", {{2, 2, 3}, {3}}},
       }) {
    std::vector<Array> inputs;
    for (const Shape& shape : shapes) inputs.push_back(f64(shape));
    std::string s = subscripts;
    EXPECT_TRUE(testing::check_derivatives([s](const std::vector<Array>& in) { return einsum(s, in); }, inputs))
        << subscripts;
  }
  EXPECT_TRUE(testing::check_derivatives([](const std::vector<Array>& in) { return tensordot(in[0], in[1], 2); },
                                         {f64({2, 3, 2}), f64({3, 2, 2})}));
  EXPECT_TRUE(testing::check_derivatives(
      [](const std::vector<Array>& in) {
        return tensordot(in[0], in[1], {{0}, {1}});
      },
      {f64({3, 2}), f64({2, 3})}));
  EXPECT_TRUE(testing::check_derivatives([](const std::vector<Array>& in) { return kron(in[0], in[1]); },
                                         {f64({2, 2}), f64({3})}));
  EXPECT_TRUE(testing::check_derivatives([](const std::vector<Array>& in) { return cross(in[0], in[1]); },
                                         {f64({2, 3}), f64({3})}));
}

TEST(ContractionTransforms, JitEqualsEager) {
  RandomArrays random(75);
  Array a = random.uniform({2, 3, 4}, DType::f32), b = random.uniform({4, 3}, DType::f32);
  Array c = random.uniform({3, 3}, DType::f32);
  auto fn = [](const Array& x, const Array& y, const Array& z) {
    return concatenate({ravel(einsum("bij,jk->bik", {x, y})), ravel(einsum("...j,jk,kk->...", {x, y, z})),
                        ravel(einsum("ii", {z})), ravel(tensordot(x, y, {{2, 1}, {0, 1}})), ravel(outer(z, y)),
                        ravel(inner(z, y)), ravel(kron(z, y)), ravel(cross(z, z * 2.0f + 1.0f)),
                        ravel(nan_to_num(log(z)))});
  };
  Array eager = testing::eager_and_traced("contractions", fn, a, b, c);
  EXPECT_TRUE(all_close(jit(fn)(a, b, c), eager, 1e-5, 1e-5, "contractions under jit"));
}

TEST(ContractionTransforms, VmapOfEinsumEqualsALoop) {
  RandomArrays random(76);
  Array x = random.uniform({4, 2, 3}, DType::f64), w = random.uniform({3, 5}, DType::f64);
  for (std::string subscripts : {"ij,jk->ik", "...j,jk->k...", "ij,jk", "ij,ij->"}) {
    Array v = subscripts == "ij,ij->" ? random.uniform({2, 3}, DType::f64) : w;
    auto one = [subscripts](const Array& m, const Array& k) { return einsum(subscripts, {m, k}); };
    std::vector<Array> rows;
    for (int64_t i = 0; i < 4; ++i) rows.push_back(one(reshape(slice(x, {i, 0, 0}, {i + 1, 2, 3}), {2, 3}), v));
    EXPECT_TRUE(all_close(vmap(one, {0, std::nullopt})(x, v), stack(rows), 1e-12, 1e-12, "vmap " + subscripts));
  }
}

// ---- Errors ----------------------------------------------------------------------------

TEST(ContractionErrors, EinsumNamesTheSubscriptsShapesAndFix) {
  auto call1 = [] { einsum("ij,jk->ik", {ones({2, 3})}); };
  expect_error(__LINE__ - 1, call1,
               {"[einsum]", "\"ij,jk->ik\"", "f32[2,3]", "2 operand(s) but 1", "one comma-separated term"});
  auto call2 = [] { einsum("ij->i", {ones({2, 3, 4})}); };
  expect_error(__LINE__ - 1, call2,
               {"[einsum]", "f32[2,3,4]", "3 dimension(s)", "2 letter(s)", "one letter per dimension"});
  expect_error(__LINE__, [] { einsum("ij...->i", {ones({2})}); }, {"[einsum]", "f32[2]", "at most as many letters"});
  auto call3 = [] { einsum("ij,jk->ik", {ones({2, 3}), ones({4, 5})}); };
  expect_error(__LINE__ - 1, call3, {"[einsum]", "f32[2,3], f32[4,5]", "'j' has extents 3 and 4", "equal extents"});
  expect_error(__LINE__, [] { einsum("ii->i", {ones({2, 3})}); }, {"[einsum]", "repeats 'i'", "diagonal"});
  expect_error(__LINE__, [] { einsum("i1->i", {ones({2, 3})}); }, {"[einsum]", "the character '1'", "letters a-z"});
  expect_error(__LINE__, [] { einsum("i.j->i", {ones({2, 3})}); }, {"[einsum]", "three dots"});
  expect_error(__LINE__, [] { einsum("...i...->i", {ones({2, 3})}); }, {"[einsum]", "two \"...\""});
  expect_error(__LINE__, [] { einsum("ij->ik", {ones({2, 3})}); }, {"[einsum]", "output letter 'k' is in no input"});
  expect_error(__LINE__, [] { einsum("ij->ii", {ones({2, 3})}); }, {"[einsum]", "output letter 'i' is repeated"});
  auto call4 = [] { einsum("...i->i", {ones({2, 3})}); };
  expect_error(__LINE__ - 1, call4, {"[einsum]", "output has no \"...\"", "put \"...\" in the output"});
  expect_error(__LINE__, [] { einsum("i->i->i", {ones({2})}); }, {"[einsum]", "two \"->\""});
  int line = __LINE__ + 1;
  auto traced = [](const Array& x) { return einsum("ij,jk", {x, x}); };
  expect_error(line, [&] { make_graph("square", traced, ones({2, 3})); }, {"[einsum]", "'j' has extents 3 and 2"});
}

TEST(ContractionErrors, OthersNameTheShapesAndFix) {
  auto call5 = [] { tensordot(ones({2, 3}), ones({4, 5}), 1); };
  expect_error(__LINE__ - 1, call5, {"[tensordot]", "f32[2,3] and f32[4,5]", "equal extents"});
  expect_error(__LINE__, [] { tensordot(ones({2, 3}), ones({3}), 2); }, {"[tensordot]", "cannot contract 2 axes"});
  auto call6 = [] { tensordot(ones({2, 3}), ones({3, 2}), {{0, 1}, {1}}); };
  expect_error(__LINE__ - 1, call6, {"[tensordot]", "2 axes of a against 1 of b"});
  expect_error(__LINE__, [] { inner(ones({2, 3}), ones({4})); }, {"[inner]", "f32[2,3] and f32[4]", "last axis"});
  expect_error(__LINE__, [] { cross(ones({2}), ones({2})); }, {"[cross]", "deprecated in NumPy 2", "f32[2]"});
  expect_error(__LINE__, [] { cross(ones({4}), ones({3})); }, {"[cross]", "3-vectors", "f32[4] and f32[3]"});
}

}  // namespace
}  // namespace kiln
