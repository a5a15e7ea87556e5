// The native backend's standalone kernels (movement, indexing, cumsum,
// argmax/argmin, random numbers, integer matmul) against the reference
// interpreter, bit for bit. The only floating arithmetic is cumsum's and
// scatter_add's additions, done in the reference's order and type (cumsum
// accumulates f32 in double), so those are exact too — except for which NaN
// the sum of two NaNs is: IEEE 754 leaves the sign and payload open, and the
// reference's own choice changes with how the compiler orders the operands
// (it differs between Debug and Release builds), so there any NaN matches.
// Every graph is also planned, and no step may run a reference kernel.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include "backend/interp/interpreter.h"
#include "backend/llvm/codegen.h"
#include "backend/llvm/plan.h"
#include "backend/llvm/standalone.h"
#include "cache/backend_choice.h"
#include "core/array_impl.h"
#include "ops/common/apply.h"
#include "ops/common/rules.h"
#include "runtime/executable.h"
#include "support/numpy_oracle.h"
#include "support/primitive.h"

namespace kiln {
namespace {

using Arrays = std::vector<Array>;
using ir::Primitive;
using testing::all_dtypes;

std::string name_of(DType dtype) { return std::string(dtype_name(dtype)); }

/// Empty when the two arrays have one dtype, one shape and the same bytes
/// (where `any_nan`, a NaN matches any NaN).
std::string bitwise_difference(const Array& got, const Array& expected, bool any_nan = false) {
  if (got.dtype() != expected.dtype() || got.shape() != expected.shape())
    return "got " + name_of(got.dtype()) + shape_string(got.shape()) + ", expected " + name_of(expected.dtype()) +
           shape_string(expected.shape());
  size_t element = dtype_size(got.dtype());
  auto* a = static_cast<const unsigned char*>(detail::impl(got)->buffer->data());
  auto* b = static_cast<const unsigned char*>(detail::impl(expected)->buffer->data());
  std::vector<double> g, e;
  for (int64_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(a + i * element, b + i * element, element) == 0) continue;
    if (g.empty()) {
      g = got.to_vector<double>();
      e = expected.to_vector<double>();
    }
    if (any_nan && std::isnan(g[static_cast<size_t>(i)]) && std::isnan(e[static_cast<size_t>(i)])) continue;
    return "element " + std::to_string(i) + " of " + name_of(got.dtype()) + shape_string(got.shape()) + ": got " +
           std::to_string(g[static_cast<size_t>(i)]) + ", expected " + std::to_string(e[static_cast<size_t>(i)]);
  }
  return "";
}

using testing::primitive;

/// Runs every standalone-lowered node of `graph` that reads arguments only
/// through its kernel directly (the executable would first simplify some of
/// them away, e.g. 0-d movements), in two calls splitting its parallel range,
/// and compares it with the node's reference kernel. Returns the mismatches.
std::string run_kernels_directly(const Graph& graph, const Arrays& arguments, bool any_nan) {
  const ir::Graph& ir = detail::ir_of(graph);
  std::string failures;
  for (size_t i = 0; i < ir.nodes.size(); ++i) {
    const ir::Node& node = ir.nodes[i];
    if (!llvm_backend::standalone_supported(ir, node)) continue;
    Arrays inputs;
    for (ir::ValueId input : node.inputs)
      for (size_t k = 0; k < ir.arguments.size(); ++k)
        if (ir.arguments[k] == input) inputs.push_back(arguments[k]);
    if (inputs.size() != node.inputs.size()) continue;
    auto id = static_cast<ir::ValueId>(i);
    llvm_backend::Plan plan;
    plan.kernels.push_back({llvm_backend::Kernel::Kind::standalone, id, {id}, node.inputs});
    llvm_backend::CompiledKernel kernel = llvm_backend::compile_kernels(ir, plan, "direct", "")[0];
    Array result = detail::allocate(node.type);
    std::vector<char*> buffers{nullptr, static_cast<char*>(detail::impl(result)->buffer->data())};
    for (const Array& input : inputs) buffers.push_back(static_cast<char*>(detail::impl(input)->buffer->data()));
    int64_t middle = kernel.range / 2;
    kernel.function(buffers.data(), 0, middle);
    kernel.function(buffers.data(), middle, kernel.range);
    std::string difference = bitwise_difference(result, ops::rules(node.op).evaluate(node, inputs), any_nan);
    if (!difference.empty()) failures += "%" + std::to_string(i) + " run directly: " + difference + "\n";
  }
  return failures;
}

class Standalone : public ::testing::Test {
 protected:
  std::mt19937_64 engine{0x7374616e64};

  int64_t integer(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(engine); }
  bool coin(int percent = 50) { return integer(0, 99) < percent; }

  /// Random elements with NaNs (two payloads and signs), infinities, signed
  /// zeros and integer extremes; `ties` draws from a few values only.
  Array data(const Shape& shape, DType dtype, bool ties = false) {
    auto n = static_cast<size_t>(shape_size(shape));
    auto pick = [&](auto special, size_t count) {
      return special[static_cast<size_t>(integer(0, static_cast<int64_t>(count) - 1))];
    };
    switch (dtype) {
      case DType::bool_: {
        std::vector<bool> v(n);
        for (size_t i = 0; i < n; ++i) v[i] = coin();
        return array(v, shape);
      }
      case DType::i32: {
        std::vector<int32_t> v(n);
        const int32_t extremes[] = {INT32_MIN, INT32_MAX, 0, -1};
        for (auto& x : v)
          x = !ties && coin(10) ? pick(extremes, 4) : static_cast<int32_t>(integer(-3, ties ? 1 : 1000));
        return array(v, shape);
      }
      case DType::i64: {
        std::vector<int64_t> v(n);
        const int64_t extremes[] = {INT64_MIN, INT64_MAX, 0, -1};
        for (auto& x : v) x = !ties && coin(10) ? pick(extremes, 4) : integer(-3, ties ? 1 : 1000);
        return array(v, shape);
      }
      case DType::f32: {
        std::vector<float> v(n);
        uint32_t nan_bits = 0xFFC01234u;  // a negative NaN with a payload
        float odd_nan;
        std::memcpy(&odd_nan, &nan_bits, sizeof odd_nan);
        const float specials[] = {
            std::numeric_limits<float>::quiet_NaN(), odd_nan, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f};
        for (auto& x : v)
          x = coin(ties ? 30 : 15) ? pick(specials, 7)
                                   : static_cast<float>(ties ? integer(-1, 1) : integer(-100000, 100000) / 7.0);
        return array(v, shape);
      }
      case DType::f64: {
        std::vector<double> v(n);
        uint64_t nan_bits = 0x7FF8000000000123u;
        double odd_nan;
        std::memcpy(&odd_nan, &nan_bits, sizeof odd_nan);
        const double specials[] = {std::nan(""), odd_nan, INFINITY, -INFINITY, 0.0, -0.0, 1e-310};
        for (auto& x : v)
          x = coin(ties ? 30 : 15) ? pick(specials, 7) : (ties ? integer(-1, 1) : integer(-100000, 100000) / 7.0);
        return array(v, shape);
      }
    }
    return Array();
  }

  Shape shape(int min_rank = 0, int max_rank = 4, int max_extent = 5) {
    Shape result(static_cast<size_t>(integer(min_rank, max_rank)));
    for (int64_t& extent : result) extent = coin(8) ? 0 : integer(1, max_extent);
    return result;
  }

  /// Indices into an axis of `extent`: in range, negative, far out of range, extremes.
  Array indices(const Shape& shape, int64_t extent, DType dtype) {
    std::vector<int64_t> v(static_cast<size_t>(shape_size(shape)));
    int64_t limit = dtype == DType::i32 ? INT32_MAX : INT64_MAX;
    for (auto& x : v) {
      int64_t kind = integer(0, 9);
      x = kind < 6   ? integer(-extent, std::max<int64_t>(extent - 1, 0))
          : kind < 8 ? integer(-3 * extent - 3, 3 * extent + 3)
          : kind < 9 ? limit
                     : -limit - 1;
    }
    if (dtype == DType::i64) return array(v, shape);
    return array(std::vector<int32_t>(v.begin(), v.end()), shape);
  }

  /// A 0-d start: often in range, sometimes negative or far out.
  Array start(int64_t extent, DType dtype) { return indices({}, extent + 1, dtype); }

  /// Traces fn(arguments), runs it compiled and interpreted, compares every
  /// output bit for bit, and checks the plan runs no reference kernel.
  template <class F>
  void check(const std::string& context, F&& fn, const Arrays& arguments, bool any_nan = false) {
    SCOPED_TRACE(context);
    ASSERT_EQ(cache::default_backend().name(), "llvm");
    Graph graph = make_graph(
        "standalone", [&](const Arrays& xs) { return Arrays(fn(xs)); }, arguments);
    llvm_backend::Plan plan = llvm_backend::plan_graph(detail::ir_of(graph));
    for (const llvm_backend::Step& step : plan.steps)
      EXPECT_NE(step.kind, llvm_backend::Step::Kind::reference)
          << "reference step for " << ir::primitive_name(detail::ir_of(graph).nodes[static_cast<size_t>(step.value)].op)
          << "\n"
          << graph.to_string();
    Arrays expected = detail::interpret(graph, arguments, {});
    Arrays got = cache::default_backend().compile(detail::shared_ir(graph))->run(arguments, {});
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      std::string difference = bitwise_difference(got[i], expected[i], any_nan);
      EXPECT_TRUE(difference.empty()) << "output " << i << ": " << difference << "\n" << graph.to_string();
    }
    std::string direct = run_kernels_directly(graph, arguments, any_nan);
    EXPECT_TRUE(direct.empty()) << direct << graph.to_string();
  }

  /// A permutation of rank axes, some written negative.
  std::vector<int64_t> permutation(int64_t rank) {
    std::vector<int64_t> perm(static_cast<size_t>(rank));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), engine);
    for (auto& axis : perm)
      if (coin(30)) axis -= rank;
    return perm;
  }
};

// ---- movement ----------------------------------------------------------------------------

TEST_F(Standalone, TransposeEveryDtypeRankAndSize) {
  for (DType dtype : all_dtypes) {
    for (int trial = 0; trial < 12; ++trial) {
      Shape s = shape(1, 5);
      std::vector<int64_t> perm = permutation(static_cast<int64_t>(s.size()));
      check("transpose " + name_of(dtype) + shape_string(s),
            [&](const Arrays& x) {
              return Arrays{transpose(x[0], perm), transpose(x[0])};
            },
            {data(s, dtype)});
    }
    // Tiled (large matrices, partial edge tiles, batched) and 0-d.
    check("large transposes " + name_of(dtype),
          [](const Arrays& x) {
            return Arrays{transpose(x[0]),
                          transpose(x[1], {0, 2, 1}),
                          transpose(x[1], {2, 0, 1}),
                          transpose(x[1], {1, 2, 0}),
                          transpose(x[2], {2, 1, 0}),
                          primitive(Primitive::transpose, {x[3]}, {})};
          },
          {data({67, 100}, dtype), data({3, 40, 33}, dtype), data({37, 70, 2}, dtype), data({}, dtype)});
  }
}

TEST_F(Standalone, SliceWithNegativeBoundsAndSteps) {
  for (DType dtype : all_dtypes) {
    for (int trial = 0; trial < 12; ++trial) {
      Shape s = shape(1, 4, 7);
      std::vector<int64_t> start, stop, step;
      for (int64_t extent : s) {
        start.push_back(integer(-extent, extent));
        stop.push_back(integer(-extent, extent));
        step.push_back(integer(1, 3));
      }
      check("slice " + name_of(dtype) + shape_string(s),
            [&](const Arrays& x) {
              return Arrays{slice(x[0], start, stop, step), slice(x[0], start, {}, {})};
            },
            {data(s, dtype)});
    }
    check("large and 0-d slices " + name_of(dtype),
          [](const Arrays& x) {
            return Arrays{slice(x[0], {3, 1}, {20, 40000}, {1, 1}), slice(x[0], {0, 5}, {1, 39000}, {1, 3}),
                          primitive(Primitive::slice, {x[1]}, {})};
          },
          {data({20, 40000}, dtype), data({}, dtype)});
  }
}

TEST_F(Standalone, ReverseAnyAxes) {
  for (DType dtype : all_dtypes) {
    for (int trial = 0; trial < 12; ++trial) {
      Shape s = shape(1, 4);
      std::vector<int64_t> axes;
      for (int64_t a = 0; a < static_cast<int64_t>(s.size()); ++a)
        if (coin()) axes.push_back(coin() ? a : a - static_cast<int64_t>(s.size()));
      check("flip " + name_of(dtype) + shape_string(s),
            [&](const Arrays& x) {
              return Arrays{flip(x[0], Axes(axes)), flip(x[0])};
            },
            {data(s, dtype)});
    }
    check("large and 0-d flips " + name_of(dtype),
          [](const Arrays& x) {
            return Arrays{flip(x[0]), flip(x[0], Axes(std::vector<int64_t>{-1})),
                          primitive(Primitive::reverse, {x[1]}, {})};
          },
          {data({3, 50000}, dtype), data({}, dtype)});
  }
}

TEST_F(Standalone, ConcatenateManyOperandsAndEmptyBlocks) {
  for (DType dtype : all_dtypes) {
    for (int trial = 0; trial < 12; ++trial) {
      Shape s = shape(1, 4);
      auto rank = static_cast<int64_t>(s.size());
      int64_t axis = integer(-rank, rank - 1);
      Arrays parts;
      for (int64_t k = 0, count = integer(2, 4); k < count; ++k) {
        Shape part = s;
        part[static_cast<size_t>(axis < 0 ? axis + rank : axis)] = coin(20) ? 0 : integer(1, 4);
        parts.push_back(data(part, dtype));
      }
      check(
          "concatenate " + name_of(dtype) + shape_string(s) + " axis " + std::to_string(axis),
          [&](const Arrays& x) { return Arrays{concatenate(x, axis)}; }, parts);
    }
    // Rows longer than a piece: split across iterations at arbitrary points.
    check("long rows " + name_of(dtype),
          [](const Arrays& x) {
            return Arrays{concatenate({x[0], x[1], x[0]}, 1), concatenate({x[1], x[1]}, 0)};
          },
          {data({2, 20000}, dtype), data({2, 17001}, dtype)});
  }
}

TEST_F(Standalone, PadEveryDtypeIncludingEmptyOperands) {
  for (DType dtype : all_dtypes) {
    for (int trial = 0; trial < 12; ++trial) {
      Shape s = shape(1, 4);
      std::vector<int64_t> lo, hi;
      for (size_t a = 0; a < s.size(); ++a) {
        lo.push_back(coin(40) ? 0 : integer(0, 3));
        hi.push_back(coin(40) ? 0 : integer(0, 3));
      }
      Scalar value = dtype == DType::bool_ ? Scalar(true) : Scalar(-7);
      check("pad " + name_of(dtype) + shape_string(s),
            [&](const Arrays& x) { return Arrays{pad(x[0], lo, hi, value)}; }, {data(s, dtype)});
    }
    // The padding value as a traced 0-d operand; 0-d; rows longer than a piece.
    check("pad with operand value " + name_of(dtype),
          [](const Arrays& x) {
            return Arrays{primitive(Primitive::pad, {x[0], x[1]}, {1, 0, 2, 3}),
                          primitive(Primitive::pad, {x[2], x[1]}, {}),
                          primitive(Primitive::pad, {x[3], x[1]}, {5, 20000}),
                          primitive(Primitive::pad, {x[4], x[1]}, {1, 0, 2, 1, 0, 2}),
                          primitive(Primitive::pad, {x[5], x[1]}, {2, 0, 1, 1})};  // all padding
          },
          {data({3, 4}, dtype), data({}, dtype), data({}, dtype), data({30000}, dtype), data({2, 0, 3}, dtype),
           data({0, 3}, dtype)});
  }
}

// ---- cumsum and argument reductions ------------------------------------------------------

TEST_F(Standalone, CumsumForwardAndReverseEveryDtype) {
  for (DType dtype : all_dtypes) {
    for (int trial = 0; trial < 10; ++trial) {
      Shape s = shape(1, 4, 6);
      auto rank = static_cast<int64_t>(s.size());
      int64_t axis = integer(-rank, rank - 1), normalized = axis < 0 ? axis + rank : axis;
      check(
          "cumsum " + name_of(dtype) + shape_string(s) + " axis " + std::to_string(axis),
          [&](const Arrays& x) {
            Arrays out = {primitive(Primitive::cumsum, {x[0]}, {normalized, 0}),
                          primitive(Primitive::cumsum, {x[0]}, {normalized, 1})};
            if (dtype != DType::bool_) {
              out.push_back(cumsum(x[0], axis));
              out.push_back(cumsum(x[0]));
            }
            return out;
          },
          {data(s, dtype)}, true);
    }
    // Partial tiles of lines (inner 700 = 256 + 256 + 188), long lines, many threads.
    check(
        "large cumsums " + name_of(dtype),
        [](const Arrays& x) {
          return Arrays{primitive(Primitive::cumsum, {x[0]}, {0, 0}), primitive(Primitive::cumsum, {x[0]}, {1, 1}),
                        primitive(Primitive::cumsum, {x[1]}, {0, 1})};
        },
        {data({31, 700}, dtype), data({50001}, dtype)}, true);
  }
}

TEST_F(Standalone, ArgmaxArgminTiesNaNAndEmptyAxes) {
  for (DType dtype : all_dtypes) {
    for (int trial = 0; trial < 10; ++trial) {
      Shape s = shape(1, 4, 6);
      auto rank = static_cast<int64_t>(s.size());
      int64_t axis = integer(-rank, rank - 1), normalized = axis < 0 ? axis + rank : axis;
      bool keep = coin();
      check("argmax/argmin " + name_of(dtype) + shape_string(s) + " axis " + std::to_string(axis),
            [&](const Arrays& x) {
              Arrays out = {primitive(Primitive::argmax, {x[0]}, {normalized}),
                            primitive(Primitive::argmin, {x[0]}, {normalized})};
              if (shape_size(s) > 0) {
                out.push_back(argmax(x[0], axis, keep));
                out.push_back(argmin(x[0]));
              }
              return out;
            },
            {data(s, dtype, coin())});
    }
    check("large and empty argmax " + name_of(dtype),
          [](const Arrays& x) {
            return Arrays{argmax(x[0], 0), argmin(x[0], 1), argmax(x[1]), primitive(Primitive::argmin, {x[2]}, {1}),
                          primitive(Primitive::argmax, {x[2]}, {0})};
          },
          {data({300, 700}, dtype, true), data({40001}, dtype, true), data({3, 0, 2}, dtype)});
    // Long contiguous lines are scanned in lanes and the lanes' answers
    // combined: ties and NaNs across lanes, remainders of 0, 1 and 15, and
    // lines without NaN (where the first of the tied extremes must win).
    for (int64_t extent : {32, 33, 47, 100}) {
      Array with_nan = data({60, extent}, dtype, true);
      Array without_nan = is_floating(dtype) ? where(isnan(with_nan), -0.0, with_nan) : with_nan;
      check("argmax/argmin along lines of " + std::to_string(extent) + " " + name_of(dtype),
            [](const Arrays& x) {
              return Arrays{argmax(x[0], 1), argmin(x[0], -1), argmax(x[1], 1), argmin(x[1], 1)};
            },
            {with_nan, without_nan});
    }
  }
}

// ---- indexing -------------------------------------------------------------------------------

TEST_F(Standalone, TakeWrapsAndClampsIndices) {
  for (DType dtype : all_dtypes) {
    for (DType index_dtype : {DType::i32, DType::i64}) {
      for (int trial = 0; trial < 8; ++trial) {
        Shape s = shape(1, 3);
        auto rank = static_cast<int64_t>(s.size());
        int64_t axis = integer(-rank, rank - 1);
        int64_t extent = s[static_cast<size_t>(axis < 0 ? axis + rank : axis)];
        Shape index_shape = extent == 0 ? Shape{0} : shape(0, 2);
        check("take " + name_of(dtype) + shape_string(s) + " axis " + std::to_string(axis) + " indices " +
                  name_of(index_dtype) + shape_string(index_shape),
              [&](const Arrays& x) {
                Arrays out = {take(x[0], x[1], axis)};
                if (shape_size(s) > 0) out.push_back(take(x[0], x[2]));
                return out;
              },
              {data(s, dtype), indices(index_shape, extent, index_dtype),
               indices({5}, std::max<int64_t>(shape_size(s), 1), index_dtype)});
      }
    }
    check("large take " + name_of(dtype),
          [](const Arrays& x) {
            return Arrays{take(x[0], x[1], 0), take(x[0], x[1], 1), take(x[0], x[2], -1)};
          },
          {data({300, 300}, dtype), indices({2000}, 300, DType::i32), indices({}, 300, DType::i64)});
  }
}

TEST_F(Standalone, ScatterAddAccumulatesRepeatedAndClampedIndices) {
  for (DType dtype : all_dtypes) {
    for (DType index_dtype : {DType::i32, DType::i64}) {
      for (int trial = 0; trial < 8; ++trial) {
        Shape s = shape(1, 3);
        auto rank = static_cast<int64_t>(s.size());
        int64_t axis = integer(0, rank - 1);
        int64_t extent = s[static_cast<size_t>(axis)];
        Shape index_shape = extent == 0 ? Shape{0} : shape(0, 2, 6);
        Shape update_shape(s.begin(), s.begin() + axis);
        update_shape.insert(update_shape.end(), index_shape.begin(), index_shape.end());
        update_shape.insert(update_shape.end(), s.begin() + axis + 1, s.end());
        check(
            "scatter_add " + name_of(dtype) + shape_string(s) + " axis " + std::to_string(axis) + " indices " +
                name_of(index_dtype) + shape_string(index_shape),
            [&](const Arrays& x) {
              return Arrays{primitive(Primitive::scatter_add, {x[0], x[1], x[2]}, {axis})};
            },
            {data(s, dtype), indices(index_shape, extent, index_dtype), data(update_shape, dtype)}, true);
      }
    }
    // Long rows (several pieces per outer slab) and many slabs.
    check(
        "large scatter_add " + name_of(dtype),
        [](const Arrays& x) {
          return Arrays{primitive(Primitive::scatter_add, {x[0], x[1], x[2]}, {0}),
                        primitive(Primitive::scatter_add, {x[3], x[1], x[4]}, {1})};
        },
        {data({4, 40000}, dtype), indices({9}, 4, DType::i32), data({9, 40000}, dtype), data({3000, 4}, dtype),
         data({3000, 9}, dtype)},
        true);
  }
}

TEST_F(Standalone, DynamicSliceAndUpdateClampStarts) {
  for (DType dtype : all_dtypes) {
    for (DType index_dtype : {DType::i32, DType::i64}) {
      for (int trial = 0; trial < 8; ++trial) {
        Shape s = shape(0, 4);
        Shape window;
        Arrays arguments{data(s, dtype)};
        for (int64_t extent : s) {
          window.push_back(integer(0, extent));
          arguments.push_back(start(extent, index_dtype));
        }
        arguments.push_back(data(window, dtype));
        size_t rank = s.size();
        check(
            "dynamic slices " + name_of(dtype) + shape_string(s) + " window " + shape_string(window),
            [&](const Arrays& x) {
              std::vector<Operand> starts(x.begin() + 1, x.begin() + 1 + static_cast<std::ptrdiff_t>(rank));
              std::vector<Operand> literal_starts;
              for (size_t a = 0; a < rank; ++a) literal_starts.emplace_back(static_cast<int32_t>(integer(-9, 9)));
              return Arrays{dynamic_slice(x[0], starts, window), dynamic_update_slice(x[0], x[rank + 1], starts),
                            dynamic_slice(x[0], literal_starts, window),
                            dynamic_update_slice(x[0], x[rank + 1], literal_starts)};
            },
            arguments);
      }
    }
    Arrays large{data({500, 300}, dtype), data({20, 200}, dtype), start(500, DType::i32), start(300, DType::i64)};
    check(
        "large dynamic slices " + name_of(dtype),
        [](const Arrays& x) {
          return Arrays{dynamic_slice(x[0], {x[2], x[3]}, {100, 250}), dynamic_update_slice(x[0], x[1], {x[2], x[3]}),
                        dynamic_update_slice(x[0], x[1], {490, -1})};
        },
        large);
  }
}

// ---- random numbers ----------------------------------------------------------------------

TEST_F(Standalone, RandomBitsAndUniformMatchTheReferenceBitForBit) {
  std::vector<Shape> shapes = {{}, {0}, {1}, {2}, {3}, {7}, {2, 3}, {5, 0}, {3, 3, 3}, {100001}, {64, 1000}};
  for (const Shape& s : shapes) {
    Array key = array(std::vector<int32_t>{static_cast<int32_t>(integer(INT32_MIN, INT32_MAX)),
                                           static_cast<int32_t>(integer(INT32_MIN, INT32_MAX))},
                      {2});
    check("random " + shape_string(s),
          [&](const Arrays& x) {
            return Arrays{primitive(Primitive::random_bits, {x[0]}, {}, s),
                          primitive(Primitive::random_uniform, {x[0]}, {}, s, DType::f32),
                          primitive(Primitive::random_uniform, {x[0]}, {}, s, DType::f64)};
          },
          {key});
  }
  // Keys made and split inside the trace, through the public functions.
  check("random in a trace",
        [](const Arrays& x) {
          std::vector<Array> keys = random::split_keys(x[0], 2);
          return Arrays{random::uniform(keys[0], {3, 5}), random::uniform(random::key(7), {1001}, DType::f64, -2, 5),
                        random::randint(keys[1], {9}, -5, 17), random::bernoulli(keys[1], 0.3, {10})};
        },
        {random::key(42)});
}

// ---- integer and bool matmul -------------------------------------------------------------

TEST_F(Standalone, IntegerAndBoolMatmulWrapLikeTheReference) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{3, 4}, {4, 5}}, {{1, 1}, {1, 1}}, {{2, 3, 4}, {2, 4, 2}},       {{0, 4}, {4, 3}},
      {{3, 0}, {0, 2}}, {{3, 4}, {4, 0}}, {{2, 1, 3, 4}, {2, 1, 4, 2}}, {{37, 65}, {65, 129}}};
  for (DType dtype : {DType::bool_, DType::i32, DType::i64}) {
    for (const auto& [sa, sb] : shapes) {
      Arrays operands{data(sa, dtype), data(sb, dtype)};
      std::string context = "matmul " + name_of(dtype) + shape_string(sa) + " @ " + shape_string(sb);
      // Through the backend: exact, whatever step the plan chose.
      Graph graph = make_graph(
          "matmul", [](const Array& a, const Array& b) { return matmul(a, b); }, operands[0], operands[1]);
      Arrays expected = detail::interpret(graph, operands, {});
      Arrays got = cache::default_backend().compile(detail::shared_ir(graph))->run(operands, {});
      EXPECT_EQ(bitwise_difference(got[0], expected[0]), "") << context;
      // The plan may still send it to the reference kernel: run the native one directly.
      EXPECT_EQ(run_kernels_directly(graph, operands, false), "") << context;
    }
  }
}

// The plan sends integer matmul to the native kernel rather than the reference.
TEST_F(Standalone, IntegerMatmulIsPlannedAsANativeKernel) {
  Graph graph = make_graph(
      "matmul", [](const Array& a, const Array& b) { return matmul(a, b); }, data({3, 4}, DType::i32),
      data({4, 5}, DType::i32));
  llvm_backend::Plan plan = llvm_backend::plan_graph(detail::ir_of(graph));
  bool reference = false;
  for (const llvm_backend::Step& step : plan.steps)
    reference = reference || step.kind == llvm_backend::Step::Kind::reference;
  EXPECT_FALSE(reference) << "plan_graph routes integer matmul to its reference kernel";
  EXPECT_TRUE(plan.reference_primitives.empty());
}

}  // namespace
}  // namespace kiln

namespace kiln {
// The other half of a row's native lowering: every native kernel a row may
// name has an emitter in backend/llvm/standalone_*.cpp.
TEST(NativeKernels, EveryOneHasAnEmitter) {
  std::vector<std::string> missing = llvm_backend::standalone_kernels_missing();
  EXPECT_TRUE(missing.empty()) << missing.front();
}
}  // namespace kiln
