// matmul against NumPy: every dtype and mixed dtypes (JAX promotion), batch
// dims that broadcast, 1-d operands, zero-size dims; inside a trace; and the
// errors for 0-d operands and mismatched shapes.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <functional>

#include "backend/interp/interpreter.h"
#include "ir/graph.h"
#include "support/errors.h"
#include "support/numpy_oracle.h"
#include "transform/verify.h"

namespace kiln {
namespace {

using testing::all_close;
using testing::all_dtypes;
using testing::numpy_dtype;
using testing::NumpyOracle;
using testing::RandomArrays;

using testing::expect_error;

/// JAX's promotion for two strongly typed arrays.
DType promoted(DType a, DType b) {
  auto rank = [](DType d) {
    switch (d) {
      case DType::bool_: return 0;
      case DType::i32: return 1;
      case DType::i64: return 2;
      case DType::f32: return 3;
      case DType::f64: return 4;
    }
    return 4;
  };
  return rank(a) >= rank(b) ? a : b;
}

/// Random operand shapes for matmul: batch dims that broadcast, sometimes 1-d operands.
std::pair<Shape, Shape> random_operand_shapes(RandomArrays& random) {
  int64_t m = random.integer(0, 4), k = random.integer(0, 4), n = random.integer(0, 4);
  if (random.integer(0, 3) != 0) m = std::max<int64_t>(m, 1);
  if (random.integer(0, 3) != 0) k = std::max<int64_t>(k, 1);
  Shape batch = random.shape(0, 3, 3);
  Shape a_batch = batch, b_batch = random.broadcastable(batch);
  if (random.integer(0, 1)) std::swap(a_batch, b_batch);
  Shape a = a_batch, b = b_batch;
  if (random.integer(0, 4) == 0) a = {k};
  else a.insert(a.end(), {m, k});
  if (random.integer(0, 4) == 0) b = {k};
  else b.insert(b.end(), {k, n});
  return {a, b};
}

TEST(MatmulOracle, EveryDtypeBatchedBroadcastAndVectors) {
  RandomArrays random(21);
  NumpyOracle oracle;
  struct Pending {
    int id;
    Array actual;
    DType dtype;
    std::string context;
  };
  std::vector<Pending> cases;
  for (DType a_dtype : all_dtypes) {
    for (DType b_dtype : all_dtypes) {
      int trials = a_dtype == b_dtype ? 30 : 4;
      for (int trial = 0; trial < trials; ++trial) {
        auto [a_shape, b_shape] = random_operand_shapes(random);
        Array a = random.uniform(a_shape, a_dtype), b = random.uniform(b_shape, b_dtype);
        DType dtype = promoted(a_dtype, b_dtype);
        // f32 in f64 (kiln accumulates f32 in double), others in the result dtype.
        std::string compute = dtype == DType::f32 ? "np.float64" : numpy_dtype(dtype);
        std::string expression =
            "np.matmul(a.astype(" + compute + "), b.astype(" + compute + ")).astype(" + numpy_dtype(dtype) + ")";
        std::string context = std::string(dtype_name(a_dtype)) + shape_string(a_shape) + " @ " +
                              std::string(dtype_name(b_dtype)) + shape_string(b_shape);
        cases.push_back({oracle.add(expression, {a, b}), matmul(a, b), dtype, context});
      }
    }
  }
  oracle.run();
  for (const Pending& c : cases) {
    std::optional<Array> expected = oracle.result(c.id);
    ASSERT_TRUE(expected) << c.context << ": NumPy failed:\n" << oracle.error(c.id);
    EXPECT_EQ(c.actual.dtype(), c.dtype) << c.context;
    EXPECT_TRUE(all_close(c.actual, *expected, testing::default_rtol(c.dtype), c.dtype == DType::f32 ? 1e-30 : 1e-12,
                          c.context));
  }
}

TEST(MatmulOracle, Float32WithinToleranceOfNumpyFloat32) {
  // Against NumPy's own f32 product (BLAS, f32 accumulation).
  RandomArrays random(22);
  NumpyOracle oracle;
  std::vector<std::pair<int, Array>> cases;
  for (int trial = 0; trial < 20; ++trial) {
    int64_t m = random.integer(1, 20), k = random.integer(1, 64), n = random.integer(1, 20);
    Array a = random.uniform({2, m, k}, DType::f32), b = random.uniform({k, n}, DType::f32);
    cases.push_back({oracle.add("np.matmul(a, b)", {a, b}), matmul(a, b)});
  }
  oracle.run();
  for (auto& [id, actual] : cases) EXPECT_TRUE(all_close(actual, oracle.expected(id), 1e-5, 1e-4, "f32 matmul"));
}

TEST(MatmulOracle, IntegersWrapAndBoolIsOrOfAnds) {
  Array a = array<int32_t>({1 << 30, 1 << 30}, {1, 2});
  Array b = array<int32_t>({4, 4}, {2, 1});
  EXPECT_EQ(matmul(a, b).to_vector<int32_t>(), (std::vector<int32_t>{0}));
  Array c = array<int32_t>({70000, 3}, {1, 2});
  Array d = array<int32_t>({70000, 5}, {2, 1});
  EXPECT_EQ(matmul(c, d).item<int32_t>(), 605032719);  // NumPy's wrapped int32 result
  Array p = array<bool>({true, false});
  Array q = array<bool>({true, true}, {2, 1});
  Array r = matmul(p, q);
  EXPECT_EQ(r.dtype(), DType::bool_);
  EXPECT_EQ(r.shape(), (Shape{1}));
  EXPECT_TRUE(r.to_vector<bool>()[0]);
}

TEST(MatmulOracle, ZeroContractionGivesZeros) {
  Array result = matmul(ones({2, 3, 0}), ones({0, 4}));
  EXPECT_EQ(result.shape(), (Shape{2, 3, 4}));
  for (float v : result.to_vector<float>()) EXPECT_EQ(v, 0.0f);
  EXPECT_EQ(matmul(ones({0}), ones({0})).shape(), Shape{});
  EXPECT_EQ(matmul(ones({0}), ones({0})).item<float>(), 0.0f);
  EXPECT_EQ(matmul(ones({0, 3}), ones({3, 2})).shape(), (Shape{0, 2}));
  EXPECT_EQ(matmul(ones({0, 1, 3}), ones({1, 3, 2})).shape(), (Shape{0, 1, 2}));
}

TEST(MatmulOracle, PromotionAndShapesOfVectorOperands) {
  EXPECT_EQ(matmul(ones({2, 3}, DType::i32), ones({3}, DType::f32)).dtype(), DType::f32);
  EXPECT_EQ(matmul(ones({3}, DType::f64), ones({3, 2}, DType::f32)).dtype(), DType::f64);
  EXPECT_EQ(matmul(ones({3}, DType::bool_), ones({3}, DType::i64)).dtype(), DType::i64);
  EXPECT_EQ(matmul(ones({4, 2, 3}), ones({3})).shape(), (Shape{4, 2}));
  EXPECT_EQ(matmul(ones({3}), ones({4, 3, 2})).shape(), (Shape{4, 2}));
  EXPECT_EQ(matmul(ones({3}), ones({3})).item<float>(), 3.0f);
}

// ---- Inside a trace ----------------------------------------------------------------

TEST(MatmulTrace, InterpretedGraphEqualsEager) {
  RandomArrays random(23);
  for (DType dtype : all_dtypes) {
    Array a = random.uniform({2, 1, 3, 4}, dtype), b = random.uniform({5, 4, 2}, dtype);
    Array v = random.uniform({4}, DType::f32);
    auto fn = [](const Array& x, const Array& y, const Array& z) {
      return std::vector<Array>{matmul(x, y), matmul(x, z), matmul(z, y), matmul(z, z)};
    };
    Graph graph = make_graph("products", fn, a, b, v);
    transform::verify(detail::ir_of(graph));
    std::vector<Array> traced = detail::interpret(graph, {a, b, v}, {});
    std::vector<Array> eager = fn(a, b, v);
    ASSERT_EQ(traced.size(), eager.size());
    for (size_t i = 0; i < eager.size(); ++i) {
      EXPECT_EQ(traced[i].dtype(), eager[i].dtype());
      EXPECT_EQ(traced[i].shape(), eager[i].shape());
      EXPECT_TRUE(
          all_close(traced[i], eager[i], 0, 0, std::string(dtype_name(dtype)) + " output " + std::to_string(i)));
    }
  }
}

TEST(MatmulTrace, EveryNodeCarriesTheCallersLine) {
  int line = __LINE__ + 1;
  auto fn = [](const Array& x, const Array& y) { return matmul(x, y); };
  Graph graph = make_graph("vector_product", fn, ones({3}, DType::i32), ones({2, 3, 4}));
  for (const ir::Node& node : detail::ir_of(graph).nodes)
    if (node.op != ir::Primitive::input)
      EXPECT_EQ(node.where.line(), static_cast<uint_least32_t>(line)) << ir::primitive_name(node.op);
  EXPECT_NE(graph.to_string().find("matmul"), std::string::npos);
}

// ---- Errors ----------------------------------------------------------------------------

TEST(MatmulErrors, ZeroDimensionalOperands) {
  std::string not_enough = "does not have enough dimensions";
  expect_error(__LINE__, [] { matmul(scalar(2.0f), ones({2, 2})); }, {"[matmul]", "operand 0 " + not_enough, "f32[]"});
  expect_error(__LINE__, [] { matmul(ones({3}), scalar(2)); }, {"[matmul]", "operand 1 " + not_enough, "i32[]"});
}

TEST(MatmulErrors, ContractionMismatch) {
  expect_error(__LINE__, [] { matmul(ones({2, 3}), ones({4, 5})); }, {"[matmul]", "f32[2,3]", "f32[4,5]", "3", "4"});
  expect_error(__LINE__, [] { matmul(ones({3}, DType::i64), ones({4})); }, {"[matmul]", "i64[3]", "f32[4]"});
  expect_error(__LINE__, [] { matmul(ones({7, 2, 3}), ones({4})); }, {"[matmul]", "f32[7,2,3]", "f32[4]"});
}

TEST(MatmulErrors, BatchDimsThatDoNotBroadcast) {
  expect_error(__LINE__, [] { matmul(ones({2, 3, 4}), ones({3, 4, 5})); }, {"[matmul]", "f32[2,3,4]", "f32[3,4,5]"});
  expect_error(__LINE__, [] { matmul(ones({2, 5, 1, 4}), ones({3, 1, 4, 2})); }, {"batch", "f32[2,5,1,4]"});
}

TEST(MatmulErrors, InsideATraceToo) {
  int line = __LINE__ + 1;
  auto fn = [](const Array& x) { return matmul(x, x); };
  expect_error(line, [&] { make_graph("square", fn, ones({2, 3})); }, {"[matmul]", "f32[2,3]"});
}

}  // namespace
}  // namespace kiln
