// Every primitive under vmap against a loop over the lanes: each sample
// application below runs batched (every operand batched, then each operand
// alone left unbatched) through the native backend (jit) and through the
// reference interpreter, and must equal the lane-by-lane results stacked.
// The table must name every primitive with a batching rule; the control
// primitives are covered by test_vmap.cpp's loop and branch cases.
#include <gtest/gtest.h>
#include <kiln/distributed.h>
#include <kiln/kiln.h>

#include <complex>
#include <functional>
#include <set>

#include "backend/interp/interpreter.h"
#include "ir/graph.h"
#include "ops/collective/collective.h"
#include "ops/common/apply.h"
#include "ops/common/rules.h"
#include "support/numpy_oracle.h"
#include "support/primitive.h"

namespace kiln {
namespace {

using ir::Primitive;
using testing::all_close;
using testing::primitive;

/// How a lane's operand is drawn.
enum class Values { real, positive, unit, boolean, index, start, key, complex };

struct Operand {
  Shape shape;
  DType dtype = DType::f64;
  Values values = Values::real;
  int64_t extent = 0;  // index: drawn in [-2 * extent, 2 * extent), out of range included
};

struct Sample {
  Primitive op;
  std::string label;
  std::vector<Operand> operands;
  std::function<Array(const std::vector<Array>&)> apply;
};

Sample unary(Primitive op, Values values = Values::real, DType dtype = DType::f64) {
  return {op, std::string(ir::primitive_name(op)), {{{2, 3}, dtype, values}}, [op](const std::vector<Array>& in) {
            return primitive(op, in, {}, {}, DType::f32);  // convert's target; the others ignore it
          }};
}

Sample binary(Primitive op, Values values = Values::real, DType dtype = DType::f64) {
  return {op,
          std::string(ir::primitive_name(op)),
          {{{2, 3}, dtype, values}, {{2, 3}, dtype, values}},
          [op](const std::vector<Array>& in) { return primitive(op, in); }};
}

std::vector<Sample> samples() {
  std::vector<Sample> list;
  for (Primitive op :
       {Primitive::neg, Primitive::abs, Primitive::sign, Primitive::exp, Primitive::expm1, Primitive::tanh,
        Primitive::logistic, Primitive::erf, Primitive::sin, Primitive::cos, Primitive::floor, Primitive::ceil,
        Primitive::round, Primitive::is_nan, Primitive::convert, Primitive::stop_gradient})
    list.push_back(unary(op));
  for (Primitive op : {Primitive::log, Primitive::log1p, Primitive::sqrt, Primitive::rsqrt})
    list.push_back(unary(op, Values::positive));
  list.push_back(unary(Primitive::erf_inv, Values::unit));
  list.push_back(unary(Primitive::logical_not, Values::boolean, DType::bool_));
  for (Primitive op : {Primitive::conj, Primitive::real, Primitive::imag})
    list.push_back(unary(op, Values::complex, DType::c128));
  for (int64_t inverse : {0, 1})
    list.push_back({Primitive::fft,
                    inverse ? "ifft" : "fft",
                    {{{2, 5}, DType::c128, Values::complex}},
                    [inverse](const std::vector<Array>& in) { return primitive(Primitive::fft, in, {inverse}); }});
  list.push_back({Primitive::rfft, "rfft", {{{2, 6}}}, [](const std::vector<Array>& in) {
                    return primitive(Primitive::rfft, in);
                  }});
  list.push_back(
      {Primitive::irfft, "irfft", {{{2, 4}, DType::c128, Values::complex}}, [](const std::vector<Array>& in) {
         return primitive(Primitive::irfft, in, {7});
       }});
  for (Primitive op : {Primitive::add, Primitive::sub, Primitive::mul, Primitive::div, Primitive::max, Primitive::min,
                       Primitive::eq, Primitive::ne, Primitive::lt, Primitive::le, Primitive::gt, Primitive::ge})
    list.push_back(binary(op));
  list.push_back(binary(Primitive::pow, Values::positive));
  list.push_back(binary(Primitive::logical_and, Values::boolean, DType::bool_));
  list.push_back(binary(Primitive::logical_or, Values::boolean, DType::bool_));
  for (Primitive op : {Primitive::exp2, Primitive::atan}) list.push_back(unary(op));
  for (Primitive op : {Primitive::log2, Primitive::log10}) list.push_back(unary(op, Values::positive));
  for (Primitive op :
       {Primitive::atan2, Primitive::floor_divide, Primitive::remainder, Primitive::copysign, Primitive::nextafter})
    list.push_back(binary(op));
  // On bits: integers in [-40, 40), so shift counts fall outside [0, 32) too.
  for (Primitive op : {Primitive::bitwise_and, Primitive::bitwise_or, Primitive::bitwise_xor, Primitive::shift_left,
                       Primitive::shift_right})
    list.push_back({op,
                    std::string(ir::primitive_name(op)),
                    {{{2, 3}, DType::i32, Values::index, 20}, {{2, 3}, DType::i32, Values::index, 20}},
                    [op](const std::vector<Array>& in) { return primitive(op, in); }});
  list.push_back({Primitive::bitwise_not,
                  "bitwise_not",
                  {{{2, 3}, DType::i64, Values::index, 20}},
                  [](const std::vector<Array>& in) { return primitive(Primitive::bitwise_not, in); }});
  list.push_back({Primitive::select,
                  "select",
                  {{{2, 3}, DType::bool_, Values::boolean}, {{2, 3}}, {{2, 3}}},
                  [](const std::vector<Array>& in) { return primitive(Primitive::select, in); }});
  // Movement.
  list.push_back({Primitive::reshape, "reshape", {{{2, 3}}}, [](const std::vector<Array>& in) {
                    return primitive(Primitive::reshape, in, {}, {3, 1, 2});
                  }});
  list.push_back({Primitive::transpose, "transpose", {{{2, 3, 4}}}, [](const std::vector<Array>& in) {
                    return primitive(Primitive::transpose, in, {2, 0, 1});
                  }});
  list.push_back({Primitive::broadcast, "broadcast of a vector", {{{3}}}, [](const std::vector<Array>& in) {
                    return primitive(Primitive::broadcast, in, {}, {2, 3});
                  }});
  list.push_back({Primitive::broadcast, "broadcast of extent 1", {{{2, 1}}}, [](const std::vector<Array>& in) {
                    return primitive(Primitive::broadcast, in, {}, {4, 2, 3});
                  }});
  list.push_back({Primitive::slice, "strided slice", {{{4, 5}}}, [](const std::vector<Array>& in) {
                    return primitive(Primitive::slice, in, {1, 0, 3, 5, 1, 2});
                  }});
  list.push_back(
      {Primitive::concatenate, "concatenate axis 1", {{{2, 3}}, {{2, 1}}, {{2, 2}}}, [](const std::vector<Array>& in) {
         return primitive(Primitive::concatenate, in, {1});
       }});
  list.push_back({Primitive::pad, "pad", {{{2, 3}}, {{}}}, [](const std::vector<Array>& in) {
                    return primitive(Primitive::pad, in, {1, 0, 0, 2});
                  }});
  list.push_back({Primitive::reverse, "reverse", {{{3, 4}}}, [](const std::vector<Array>& in) {
                    return primitive(Primitive::reverse, in, {1});
                  }});
  // Reductions.
  for (Primitive op : {Primitive::reduce_sum, Primitive::reduce_prod, Primitive::reduce_max, Primitive::reduce_min})
    list.push_back({op,
                    std::string(ir::primitive_name(op)) + " over axes 0 and 2",
                    {{{2, 3, 4}}},
                    [op](const std::vector<Array>& in) {
                      return primitive(op, in, {0, 2});
                    }});
  for (Primitive op : {Primitive::argmax, Primitive::argmin})
    list.push_back({op, std::string(ir::primitive_name(op)), {{{3, 4}}}, [op](const std::vector<Array>& in) {
                      return primitive(op, in, {1});
                    }});
  list.push_back({Primitive::cumsum, "reverse cumsum", {{{3, 4}}}, [](const std::vector<Array>& in) {
                    return primitive(Primitive::cumsum, in, {0, 1});
                  }});
  // Matmul, with and without batch dimensions of its own.
  list.push_back({Primitive::matmul, "matmul", {{{2, 3}}, {{3, 4}}}, [](const std::vector<Array>& in) {
                    return primitive(Primitive::matmul, in);
                  }});
  list.push_back({Primitive::matmul, "batched matmul", {{{2, 2, 3}}, {{2, 3, 4}}}, [](const std::vector<Array>& in) {
                    return primitive(Primitive::matmul, in);
                  }});
  // Indexing, indices out of range and negative included.
  list.push_back({Primitive::take,
                  "take axis 1",
                  {{{4, 5}}, {{2, 3}, DType::i32, Values::index, 5}},
                  [](const std::vector<Array>& in) { return primitive(Primitive::take, in, {1}); }});
  list.push_back({Primitive::take,
                  "take axis 0",
                  {{{4, 2}}, {{3}, DType::i64, Values::index, 4}},
                  [](const std::vector<Array>& in) { return primitive(Primitive::take, in, {0}); }});
  list.push_back({Primitive::scatter_add,
                  "scatter_add axis 1",
                  {{{3, 4}}, {{5}, DType::i32, Values::index, 4}, {{3, 5}}},
                  [](const std::vector<Array>& in) { return primitive(Primitive::scatter_add, in, {1}); }});
  list.push_back({Primitive::dynamic_slice,
                  "dynamic_slice",
                  {{{5, 4}}, {{}, DType::i32, Values::start, 5}, {{}, DType::i32, Values::start, 4}},
                  [](const std::vector<Array>& in) {
                    return primitive(Primitive::dynamic_slice, in, {}, {2, 3});
                  }});
  list.push_back({Primitive::dynamic_update_slice,
                  "dynamic_update_slice",
                  {{{5, 4}}, {{2, 3}}, {{}, DType::i32, Values::start, 5}, {{}, DType::i32, Values::start, 4}},
                  [](const std::vector<Array>& in) { return primitive(Primitive::dynamic_update_slice, in); }});
  list.push_back({Primitive::gather,
                  "gather of two axes",
                  {{{4, 3, 2}}, {{5, 2}, DType::i32, Values::index, 3}},
                  [](const std::vector<Array>& in) { return primitive(Primitive::gather, in); }});
  for (int64_t mode = 0; mode < 5; ++mode)
    list.push_back({Primitive::scatter,
                    "scatter mode " + std::to_string(mode),
                    {{{4, 3}}, {{5, 1}, DType::i64, Values::index, 4}, {{5, 3}}},
                    [mode](const std::vector<Array>& in) { return primitive(Primitive::scatter, in, {mode}); }});
  // Random: a key per lane is a stream per lane.
  list.push_back(
      {Primitive::random_bits, "random_bits", {{{2}, DType::i32, Values::key}}, [](const std::vector<Array>& in) {
         return primitive(Primitive::random_bits, in, {}, {3, 2});
       }});
  list.push_back(
      {Primitive::random_uniform, "random_uniform", {{{2}, DType::i32, Values::key}}, [](const std::vector<Array>& in) {
         return primitive(Primitive::random_uniform, in, {}, {4}, DType::f64);
       }});
  // Sorting, ties included (the operands are drawn as few integers).
  list.push_back(
      {Primitive::sort, "sort descending", {{{3, 4}, DType::i64, Values::index, 2}}, [](const std::vector<Array>& in) {
         return primitive(Primitive::sort, {astype(in[0], DType::f64)}, {0, 1});
       }});
  list.push_back({Primitive::argsort,
                  "argsort, the first 2",
                  {{{3, 4}, DType::i32, Values::index, 2}},
                  [](const std::vector<Array>& in) {
                    return primitive(Primitive::argsort, in, {1, 0, 2});
                  }});
  for (Primitive op : {Primitive::cummax, Primitive::cummin})
    list.push_back(
        {op, std::string(ir::primitive_name(op)) + " axis 1", {{{3, 4}}}, [op](const std::vector<Array>& in) {
           return primitive(op, in, {1});
         }});
  list.push_back({Primitive::cumprod, "reverse cumprod axis 1", {{{3, 4}}}, [](const std::vector<Array>& in) {
                    return primitive(Primitive::cumprod, in, {1, 1});
                  }});
  // Linear algebra, on matrices kept well conditioned (3 I added).
  auto conditioned = [](const Array& a) { return a + eye(3, std::nullopt, 0, DType::f64) * 3.0; };
  list.push_back({Primitive::cholesky, "cholesky", {{{3, 3}}}, [=](const std::vector<Array>& in) {
                    return primitive(Primitive::cholesky, {conditioned(matmul(in[0], transpose(in[0])))});
                  }});
  list.push_back({Primitive::triangular_solve,
                  "triangular_solve, upper, transposed",
                  {{{3, 3}}, {{3, 2}}},
                  [=](const std::vector<Array>& in) {
                    return primitive(Primitive::triangular_solve, {conditioned(in[0]), in[1]}, {0, 1, 0});
                  }});
  list.push_back({Primitive::solve, "solve", {{{3, 3}}, {{3, 2}}}, [=](const std::vector<Array>& in) {
                    return primitive(Primitive::solve, {conditioned(in[0]), in[1]});
                  }});
  list.push_back({Primitive::slogdet, "slogdet", {{{3, 3}}}, [=](const std::vector<Array>& in) {
                    return primitive(Primitive::slogdet, {conditioned(in[0])});
                  }});
  list.push_back({Primitive::qr, "qr, reduced, tall", {{{4, 3}}}, [](const std::vector<Array>& in) {
                    return primitive(Primitive::qr, in, {0});
                  }});
  list.push_back({Primitive::qr, "qr, complete, wide", {{{3, 4}}}, [](const std::vector<Array>& in) {
                    return primitive(Primitive::qr, in, {1});
                  }});
  list.push_back({Primitive::svd, "svd, reduced", {{{4, 3}}}, [](const std::vector<Array>& in) {
                    return primitive(Primitive::svd, in, {0, 1});
                  }});
  list.push_back({Primitive::svd, "svd, full_matrices", {{{3, 4}}}, [](const std::vector<Array>& in) {
                    return primitive(Primitive::svd, in, {1, 1});
                  }});
  list.push_back({Primitive::svd, "svd, values only", {{{4, 3}}}, [](const std::vector<Array>& in) {
                    return primitive(Primitive::svd, in, {0, 0});
                  }});
  list.push_back({Primitive::eigh, "eigh, upper", {{{3, 3}}}, [](const std::vector<Array>& in) {
                    return primitive(Primitive::eigh, in, {0});
                  }});
  // Collectives, in a world of one.
  list.push_back({Primitive::all_reduce, "all_reduce", {{{2, 3}}}, [](const std::vector<Array>& in) {
                    return ops::collective(Primitive::all_reduce, in[0], {0}, Location::current());
                  }});
  list.push_back({Primitive::all_gather, "all_gather axis 1", {{{2, 3}}}, [](const std::vector<Array>& in) {
                    return ops::collective(Primitive::all_gather, in[0], {1}, Location::current());
                  }});
  list.push_back({Primitive::reduce_scatter, "reduce_scatter axis 1", {{{2, 3}}}, [](const std::vector<Array>& in) {
                    return ops::collective(Primitive::reduce_scatter, in[0], {1, 0}, Location::current());
                  }});
  list.push_back({Primitive::broadcast_from, "broadcast_from", {{{2, 3}}}, [](const std::vector<Array>& in) {
                    return ops::collective(Primitive::broadcast_from, in[0], {0}, Location::current());
                  }});
  return list;
}

Array draw(const Operand& operand, Shape shape, uint64_t seed) {
  Array key = random::key(seed);
  switch (operand.values) {
    case Values::real: return random::normal(key, shape, operand.dtype);
    case Values::complex: {  // c128: normal real and imaginary parts
      std::vector<Array> keys = random::split_keys(key);
      return astype(random::normal(keys[0], shape, DType::f64), DType::c128) +
             astype(random::normal(keys[1], shape, DType::f64), DType::c128) * std::complex<double>(0, 1);
    }
    case Values::positive: return random::uniform(key, shape, operand.dtype, 0.5, 2.0);
    case Values::unit: return random::uniform(key, shape, operand.dtype, -1.0, 1.0);
    case Values::boolean: return random::bernoulli(key, 0.5, shape);
    case Values::index: return random::randint(key, shape, -2 * operand.extent, 2 * operand.extent, operand.dtype);
    case Values::start: return random::randint(key, shape, -operand.extent - 2, operand.extent + 2, operand.dtype);
    case Values::key: return random::randint(key, shape, -1000000, 1000000, DType::i32);
  }
  return {};
}

constexpr int64_t lanes = 3;

TEST(VmapPrimitives, EveryPrimitiveEqualsALoopOverItsLanes) {
  std::set<Primitive> covered;
  uint64_t seed = 100;
  for (const Sample& sample : samples()) {
    covered.insert(sample.op);
    size_t count = sample.operands.size();
    // Every operand batched, then each one alone unbatched.
    std::vector<std::vector<char>> masks{std::vector<char>(count, 1)};
    for (size_t k = 0; count > 1 && k < count; ++k) {
      masks.emplace_back(count, 1);
      masks.back()[k] = 0;
    }
    for (const std::vector<char>& batched : masks) {
      std::vector<Array> inputs;
      for (size_t k = 0; k < count; ++k) {
        Shape shape = sample.operands[k].shape;
        if (batched[k]) shape.insert(shape.begin(), lanes);
        inputs.push_back(draw(sample.operands[k], shape, ++seed));
      }
      std::vector<Array> lane_results;
      for (int64_t lane = 0; lane < lanes; ++lane) {
        std::vector<Array> lane_inputs;
        for (size_t k = 0; k < count; ++k) lane_inputs.push_back(batched[k] ? unstack(inputs[k])[lane] : inputs[k]);
        lane_results.push_back(sample.apply(lane_inputs));
      }
      Array expected = stack(lane_results);
      std::vector<BatchAxes> axes;
      for (char b : batched) axes.push_back(b ? BatchAxes(0) : BatchAxes(std::nullopt));
      auto fn = [&](const std::vector<Array>& in) { return sample.apply(in); };
      std::string context = sample.label + " with operands batched " + ::testing::PrintToString(batched);
      // vmap's in_axes are per argument: one argument, a vector, an axis per leaf.
      std::vector<std::optional<int>> leaf_axes;
      for (char b : batched) leaf_axes.push_back(b ? std::optional<int>(0) : std::nullopt);
      auto batched_fn = vmap(fn, {BatchAxes::per_leaf(leaf_axes)});
      Array native = batched_fn(inputs);
      EXPECT_TRUE(all_close(native, expected, 1e-12, 1e-12, context + ", native")) << context;
      Graph graph = batched_fn.lower(inputs);
      ASSERT_EQ(graph.num_captures(), 0u) << context << "\n" << graph;
      Array interpreted = detail::interpret(graph, inputs, {})[0];
      EXPECT_TRUE(all_close(interpreted, expected, 1e-12, 1e-12, context + ", interpreter")) << context;
    }
  }
  for (int i = 0; i < ir::primitive_count; ++i) {
    auto op = static_cast<Primitive>(i);
    const ops::PrimitiveRules& rules = ops::rules(op);
    bool control = rules.fusion == ops::Fusion::control;  // test_vmap.cpp: while_loop, scan, cond
    if (rules.batch && !control && !covered.contains(op))
      ADD_FAILURE() << ir::primitive_name(op) << " has a batching rule but no sample here";
  }
}

}  // namespace
}  // namespace kiln
