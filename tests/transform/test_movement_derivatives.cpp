// Derivatives of the movement primitives (reshape, transpose, broadcast,
// slice, concatenate, pad, reverse) through every public builder: finite
// differences in both modes, the transposed movements against NumPy
// scatters, broadcasting through binary ops, 0-d and zero-size arrays, and
// the derivative graphs themselves (traced, jitted, differentiated again).
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/common/apply.h"
#include "support/gradient_check.h"
#include "support/numpy_oracle.h"

namespace kiln {
namespace {

using testing::all_close;
using testing::check_derivatives;
using testing::NumpyOracle;
using testing::RandomArrays;

using Function = testing::ArrayFunction;

Array random_f64(RandomArrays& random, Shape shape) { return random.uniform(std::move(shape), f64, -2, 2); }

std::string ints_text(const std::vector<int64_t>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? "," : "") + std::to_string(values[i]);
  return text + "]";
}

std::string py_tuple(const std::vector<int64_t>& values) {
  std::string text = "(";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? "," : "") + std::to_string(values[i]);
  return text + (values.size() == 1 ? ",)" : ")");
}

/// The cotangent `fn` gives its single input for `cotangent`.
Array pull_back(const std::function<Array(const Array&)>& fn, const Array& x, const Array& cotangent) {
  auto [value, pullback] = vjp(fn, x);
  EXPECT_EQ(value.shape(), cotangent.shape());
  return std::get<0>(pullback(cotangent));
}

// ---- one builder at a time ------------------------------------------------------

TEST(MovementDerivatives, Reshape) {
  RandomArrays random(1);
  struct Case {
    Shape in, target;
  };
  std::vector<Case> cases = {{{2, 3}, {3, 2}}, {{2, 3, 4}, {6, -1}}, {{}, {1, 1}},     {{1, 1}, {}},
                             {{6}, {2, 1, 3}}, {{2, 3}, {-1}},       {{0, 3}, {3, 0}}, {{4, 0}, {0}}};
  for (const Case& c : cases) {
    Shape target = c.target;
    Function fn = [target](const std::vector<Array>& in) { return reshape(in[0], target); };
    EXPECT_TRUE(check_derivatives(fn, {random_f64(random, c.in)}))
        << shape_string(c.in) << " -> " << shape_string(c.target);
  }
}

TEST(MovementDerivatives, Transpose) {
  RandomArrays random(2);
  struct Case {
    Shape in;
    std::vector<int64_t> perm;
  };
  std::vector<Case> cases = {{{2, 3}, {1, 0}},
                             {{2, 3}, {}},
                             {{2, 3, 4}, {0, 2, 1}},
                             {{2, 3, 4}, {1, 0, 2}},
                             {{2, 3, 4}, {1, 2, 0}},
                             {{2, 3, 4}, {2, 0, 1}},
                             {{2, 3, 4}, {2, 1, 0}},
                             {{2, 3, 4}, {-1, 0, 1}},
                             {{2, 1, 3, 2}, {3, 1, 0, 2}},
                             {{2, 1, 3, 2}, {1, 3, 2, 0}},
                             {{0, 2, 3}, {2, 0, 1}},
                             {{}, {}}};
  for (const Case& c : cases) {
    std::vector<int64_t> perm = c.perm;
    Function fn = [perm](const std::vector<Array>& in) { return transpose(in[0], perm); };
    EXPECT_TRUE(check_derivatives(fn, {random_f64(random, c.in)})) << shape_string(c.in) << " perm " << ints_text(perm);
  }
}

struct BroadcastCase {
  Shape in, target;
};

// Leading added axes, stretched axes of extent 1 among kept ones, extent 1
// staying 1, 0-d, and zero-size results (an extent 1 stretched to 0).
const std::vector<BroadcastCase> broadcast_cases = {{{3}, {2, 3}},
                                                    {{1, 3}, {4, 3}},
                                                    {{2, 1}, {2, 5}},
                                                    {{1, 1}, {3, 4}},
                                                    {{}, {2, 3}},
                                                    {{}, {}},
                                                    {{2, 1, 3}, {4, 2, 5, 3}},
                                                    {{1, 3}, {2, 1, 3}},
                                                    {{1, 2, 1}, {3, 1, 2, 4}},
                                                    {{1}, {1}},
                                                    {{1}, {0}},
                                                    {{0, 1}, {3, 0, 4}},
                                                    {{1, 3}, {0, 3}},
                                                    {{}, {2, 0}},
                                                    {{1, 1, 1}, {2, 3, 1}}};

TEST(MovementDerivatives, BroadcastTo) {
  RandomArrays random(3);
  for (const BroadcastCase& c : broadcast_cases) {
    Shape target = c.target;
    Function fn = [target](const std::vector<Array>& in) { return broadcast_to(in[0], target); };
    EXPECT_TRUE(check_derivatives(fn, {random_f64(random, c.in)}))
        << shape_string(c.in) << " -> " << shape_string(c.target);
  }
}

// Each input element's cotangent is the sum over the output elements that
// copied it: NumPy's np.add.at over a broadcast index array says so without
// using the sum-over-axes rule.
TEST(MovementDerivatives, BroadcastVjpMatchesNumpyScatter) {
  RandomArrays random(4);
  NumpyOracle oracle;
  struct Pending {
    Array actual;
    int id;
    std::string context;
  };
  std::vector<Pending> pending;
  for (DType dtype : {f32, f64}) {
    for (const BroadcastCase& c : broadcast_cases) {
      Array x = random.uniform(c.in, dtype);
      Array cotangent = random.uniform(c.target, dtype);
      Shape target = c.target;
      Array actual = pull_back([target](const Array& a) { return broadcast_to(a, target); }, x, cotangent);
      std::string expression = "(lambda z: (np.add.at(z, np.broadcast_to(np.arange(a.size).reshape(a.shape), " +
                               py_tuple(target) +
                               ").ravel(), b.ravel()), z.reshape(a.shape))[1])(np.zeros(a.size, a.dtype))";
      pending.push_back({actual, oracle.add(expression, {x, cotangent}),
                         std::string(dtype_name(dtype)) + shape_string(c.in) + " -> " + shape_string(target)});
    }
  }
  oracle.run();
  for (const Pending& p : pending) {
    std::optional<Array> expected = oracle.result(p.id);
    ASSERT_TRUE(expected) << p.context << ": " << oracle.error(p.id);
    EXPECT_EQ(p.actual.dtype(), expected->dtype()) << p.context;
    EXPECT_TRUE(all_close(p.actual, *expected, 1e-5, 1e-5, p.context));
  }
}

TEST(MovementDerivatives, ExpandDimsAndSqueeze) {
  RandomArrays random(5);
  struct Case {
    Shape in;
    Axes axes;
    bool expand;
  };
  std::vector<Case> cases = {{{2, 3}, 0, true},          {{2, 3}, -1, true},
                             {{2, 3}, Axes{0, 2}, true}, {{}, Axes{0, 1}, true},
                             {{0, 2}, 1, true},          {{1, 3, 1}, Axes::all(), false},
                             {{1, 3, 1}, 0, false},      {{1, 3, 1}, -1, false},
                             {{1}, Axes::all(), false},  {{1, 0, 1}, Axes{0, 2}, false}};
  for (const Case& c : cases) {
    Axes axes = c.axes;
    bool expand = c.expand;
    Function fn = [axes, expand](const std::vector<Array>& in) {
      return expand ? expand_dims(in[0], axes) : squeeze(in[0], axes);
    };
    EXPECT_TRUE(check_derivatives(fn, {random_f64(random, c.in)}))
        << (expand ? "expand_dims " : "squeeze ") << shape_string(c.in);
  }
}

struct SliceCase {
  Shape in;
  std::vector<int64_t> start, stop, step;
};

std::vector<SliceCase> slice_cases() {
  std::vector<SliceCase> cases;
  // Every step 1..3 on both axes of a 7x5 array with positive, negative and
  // end-of-array bounds, so strided axes end both on and off the last element.
  for (int64_t step0 = 1; step0 <= 3; ++step0)
    for (int64_t step1 = 1; step1 <= 3; ++step1) {
      cases.push_back({{7, 5}, {0, 0}, {7, 5}, {step0, step1}});
      cases.push_back({{7, 5}, {1, -4}, {-1, 5}, {step0, step1}});
      cases.push_back({{7, 5}, {-7, 2}, {6, -1}, {step0, step1}});
      cases.push_back({{7, 5}, {-3, -5}, {7, 4}, {step0, step1}});
    }
  cases.push_back({{3, 4, 5}, {1, -4, -5}, {3, 4, 5}, {2, 3, 2}});
  cases.push_back({{3, 4, 5}, {0, 1}, {3, 3}, {3, 1}});  // trailing axis omitted: whole
  cases.push_back({{9}, {2}, {3}, {3}});                 // one element of a strided axis
  cases.push_back({{9}, {1}, {9}, {7}});                 // step past most of the axis
  cases.push_back({{9}, {5}, {2}, {2}});                 // start after stop: empty
  cases.push_back({{4, 3}, {2, 0}, {2, 3}, {1, 2}});     // empty axis next to a strided one
  cases.push_back({{0, 3}, {0, 1}, {0, 3}, {1, 2}});     // zero-size input
  cases.push_back({{1}, {0}, {1}, {3}});
  return cases;
}

TEST(MovementDerivatives, Slice) {
  RandomArrays random(6);
  for (const SliceCase& c : slice_cases()) {
    Function fn = [c](const std::vector<Array>& in) { return slice(in[0], c.start, c.stop, c.step); };
    EXPECT_TRUE(check_derivatives(fn, {random_f64(random, c.in)}))
        << shape_string(c.in) << " start " << ints_text(c.start) << " stop " << ints_text(c.stop) << " step "
        << ints_text(c.step);
  }
}

std::string py_slices(const SliceCase& c) {
  std::string text = "(";
  for (size_t a = 0; a < c.start.size(); ++a)
    text += "slice(" + std::to_string(c.start[a]) + "," + std::to_string(c.stop[a]) + "," + std::to_string(c.step[a]) +
            "),";
  return text + ")";
}

// The cotangent lands exactly where the slice read: NumPy's assignment
// through the same slice into zeros.
TEST(MovementDerivatives, SliceVjpMatchesNumpyAssignment) {
  RandomArrays random(7);
  NumpyOracle oracle;
  struct Pending {
    Array actual;
    int id;
    std::string context;
  };
  std::vector<Pending> pending;
  std::vector<SliceCase> cases = slice_cases();
  // Random slices of random shapes as well.
  for (int k = 0; k < 40; ++k) {
    SliceCase c{random.shape(1, 3, 7), {}, {}, {}};
    for (int64_t extent : c.in) {
      c.start.push_back(random.integer(-extent, extent));
      c.stop.push_back(random.integer(-extent, extent));
      c.step.push_back(random.integer(1, 4));
    }
    cases.push_back(c);
  }
  for (const SliceCase& c : cases) {
    for (DType dtype : {f32, f64}) {
      Array x = random.uniform(c.in, dtype);
      Array cotangent = random.uniform(slice(x, c.start, c.stop, c.step).shape(), dtype);
      Array actual = pull_back([&c](const Array& a) { return slice(a, c.start, c.stop, c.step); }, x, cotangent);
      std::string expression = "(lambda z: (z.__setitem__(" + py_slices(c) + ", b), z)[1])(np.zeros(a.shape, a.dtype))";
      pending.push_back({actual, oracle.add(expression, {x, cotangent}),
                         std::string(dtype_name(dtype)) + shape_string(c.in) + " start " + ints_text(c.start) +
                             " stop " + ints_text(c.stop) + " step " + ints_text(c.step)});
    }
  }
  oracle.run();
  for (const Pending& p : pending) {
    std::optional<Array> expected = oracle.result(p.id);
    ASSERT_TRUE(expected) << p.context << ": " << oracle.error(p.id);
    EXPECT_EQ(p.actual.dtype(), expected->dtype()) << p.context;
    EXPECT_TRUE(all_close(p.actual, *expected, 0, 0, p.context));
  }
}

TEST(MovementDerivatives, SliceVjpInterleavesZeros) {
  Array x = zeros({10}, f64);
  Array cotangent = array({10.0, 20.0, 30.0});
  Array dx = pull_back([](const Array& a) { return slice(a, {1}, {9}, {3}); }, x, cotangent);
  EXPECT_EQ(dx.to_vector<double>(), (std::vector<double>{0, 10, 0, 0, 20, 0, 0, 30, 0, 0}));
}

TEST(MovementDerivatives, Concatenate) {
  RandomArrays random(8);
  struct Case {
    std::vector<Shape> shapes;
    int64_t axis;
  };
  std::vector<Case> cases = {{{{2, 3}}, 0},
                             {{{2, 3}, {4, 3}}, 0},
                             {{{2, 3}, {2, 1}}, 1},
                             {{{2, 3}, {2, 2}, {2, 4}}, -1},
                             {{{1, 2, 3}, {2, 2, 3}, {3, 2, 3}}, 0},
                             {{{2, 1, 3}, {2, 3, 3}, {2, 2, 3}}, 1},
                             {{{2, 2, 1}, {2, 2, 2}}, 2},
                             {{{2, 0}, {2, 3}, {2, 0}}, 1},
                             {{{0, 3}, {0, 3}}, 0},
                             {{{3}, {0}, {2}}, 0}};
  for (const Case& c : cases) {
    std::vector<Array> inputs;
    for (const Shape& shape : c.shapes) inputs.push_back(random_f64(random, shape));
    int64_t axis = c.axis;
    Function fn = [axis](const std::vector<Array>& in) { return concatenate(in, axis); };
    EXPECT_TRUE(check_derivatives(fn, inputs)) << c.shapes.size() << " inputs along axis " << axis;
  }
}

// Only floating inputs carry derivatives: an integer operand is converted to
// the result's dtype and passed through.
TEST(MovementDerivatives, ConcatenateWithIntegerOperand) {
  RandomArrays random(9);
  std::vector<Array> inputs = {random_f64(random, {2, 3}), random.uniform({1, 3}, i32), random_f64(random, {2, 3})};
  Function fn = [](const std::vector<Array>& in) { return concatenate(in, 0); };
  EXPECT_TRUE(check_derivatives(fn, inputs));
}

// Forward mode with tangents for some operands only: the others count as zero.
TEST(MovementDerivatives, ConcatenateJvpWithSomeTangentsZero) {
  RandomArrays random(10);
  Array a = random_f64(random, {2, 2}), b = random_f64(random, {2, 3});
  Array ta = random_f64(random, {2, 2});
  auto fn = [&b](const Array& x) { return concatenate({x, b}, 1); };
  auto [value, tangent] = jvp(fn, std::tuple{a}, std::tuple{ta});
  Array expected = concatenate({ta, zeros({2, 3}, f64)}, 1);
  EXPECT_TRUE(all_close(tangent, expected, 0, 0, "concatenate jvp"));

  // The pad's value is a constant; only y's rows of the result move.
  auto padded = [&a](const Array& y) { return pad(concatenate({a, y}, 0), {1, 0}, {0, 2}, 5.0); };
  Array y = random_f64(random, {1, 2}), ty = random_f64(random, {1, 2});
  auto [padded_value, padded_tangent] = jvp(padded, std::tuple{y}, std::tuple{ty});
  std::vector<double> expected_tangent(16, 0.0), dy = ty.to_vector<double>();
  expected_tangent[12] = dy[0];
  expected_tangent[13] = dy[1];
  EXPECT_EQ(padded_tangent.shape(), (Shape{4, 4}));
  EXPECT_EQ(padded_tangent.to_vector<double>(), expected_tangent);
}

TEST(MovementDerivatives, Stack) {
  RandomArrays random(11);
  struct Case {
    Shape shape;
    size_t count;
    int64_t axis;
  };
  std::vector<Case> cases = {{{3}, 1, 0},    {{3}, 2, 0}, {{3}, 3, 1},    {{2, 3}, 3, -1},
                             {{2, 3}, 2, 1}, {{}, 3, 0},  {{0, 2}, 2, 1}, {{2, 2}, 2, -3}};
  for (const Case& c : cases) {
    std::vector<Array> inputs;
    for (size_t k = 0; k < c.count; ++k) inputs.push_back(random_f64(random, c.shape));
    int64_t axis = c.axis;
    Function fn = [axis](const std::vector<Array>& in) { return stack(in, axis); };
    EXPECT_TRUE(check_derivatives(fn, inputs)) << c.count << " x " << shape_string(c.shape) << " axis " << axis;
  }
}

TEST(MovementDerivatives, Pad) {
  RandomArrays random(12);
  struct Case {
    Shape in;
    std::vector<int64_t> lo, hi;
    double value;
  };
  std::vector<Case> cases = {{{3}, {1}, {2}, 0.0},
                             {{3}, {0}, {2}, 2.5},
                             {{2, 3}, {1, 0}, {0, 2}, -1.5},
                             {{2, 3}, {2, 1}, {1, 3}, 0.0},
                             {{2, 1, 2}, {0, 1, 1}, {1, 0, 2}, 3.0},
                             {{0, 2}, {1, 0}, {2, 1}, 4.0},
                             {{2, 0}, {0, 1}, {0, 0}, 1.0},
                             {{}, {}, {}, 7.0}};
  for (const Case& c : cases) {
    Function fn = [c](const std::vector<Array>& in) { return pad(in[0], c.lo, c.hi, c.value); };
    EXPECT_TRUE(check_derivatives(fn, {random_f64(random, c.in)}))
        << shape_string(c.in) << " lo " << ints_text(c.lo) << " hi " << ints_text(c.hi);
  }
}

/// The pad primitive with a traced padding value, which the public builder
/// (taking a C++ number) cannot give.
Array pad_primitive(const Array& x, const Array& value, std::vector<int64_t> lo, const std::vector<int64_t>& hi) {
  ir::Attributes attrs;
  attrs.ints = std::move(lo);
  attrs.ints.insert(attrs.ints.end(), hi.begin(), hi.end());
  return detail::apply(ir::Primitive::pad, {x, value}, std::move(attrs), Location::current());
}

TEST(MovementDerivatives, PadValueGetsSumOverPadding) {
  RandomArrays random(13);
  struct Case {
    Shape in;
    std::vector<int64_t> lo, hi;
  };
  std::vector<Case> cases = {{{3}, {1}, {2}},
                             {{2, 3}, {1, 0}, {0, 2}},
                             {{2, 3}, {0, 0}, {0, 0}},
                             {{2, 1, 2}, {0, 1, 1}, {1, 0, 2}},
                             {{0, 2}, {1, 0}, {2, 1}},
                             {{2, 0}, {1, 1}, {0, 2}},
                             {{}, {}, {}}};
  NumpyOracle oracle;
  struct Pending {
    Array x_cotangent, value_cotangent;
    int x_id, value_id;
  };
  std::vector<Pending> pending;
  for (const Case& c : cases) {
    Function fn = [c](const std::vector<Array>& in) { return pad_primitive(in[0], in[1], c.lo, c.hi); };
    Array x = random_f64(random, c.in), value = random_f64(random, {});
    EXPECT_TRUE(check_derivatives(fn, {x, value})) << shape_string(c.in) << " lo " << ints_text(c.lo);

    Array cotangent = random_f64(random, fn({x, value}).shape());
    auto [out, pullback] = vjp(fn, std::vector<Array>{x, value});
    std::vector<Array> cotangents = std::get<0>(pullback(cotangent));
    std::string interior = "(";
    for (size_t a = 0; a < c.in.size(); ++a)
      interior += "slice(" + std::to_string(c.lo[a]) + "," + std::to_string(c.lo[a] + c.in[a]) + "),";
    interior += ")";
    pending.push_back({cotangents[0], cotangents[1], oracle.add("a[" + interior + "]", {cotangent}),
                       oracle.add("(lambda m: (m.__setitem__(" + interior +
                                      ", False), np.sum(a, where=m))[1])"
                                      "(np.ones(a.shape, bool))",
                                  {cotangent})});
  }
  oracle.run();
  for (const Pending& p : pending) {
    EXPECT_TRUE(all_close(p.x_cotangent, oracle.expected(p.x_id), 0, 0, "x cotangent"));
    EXPECT_EQ(p.value_cotangent.shape(), Shape{});
    EXPECT_TRUE(all_close(p.value_cotangent, oracle.expected(p.value_id), 1e-12, 1e-12, "value cotangent"));
  }
}

TEST(MovementDerivatives, PadValueCotangentDoesNotCancelInFloat32) {
  // A large interior next to a tiny padding: sum(all) - sum(interior) would
  // lose the padding's contribution to f32 rounding.
  Array x = zeros({1000, 100}, f32);
  Array value = zeros({}, f32);
  Array cotangent = concatenate({full({1000, 100}, 1000.0f, f32), full({1000, 1}, 1e-3f, f32)}, 1);
  auto fn = [](const Array& a, const Array& v) { return pad_primitive(a, v, {0, 0}, {0, 1}); };
  auto [out, pullback] = vjp(fn, x, value);
  Array value_cotangent = std::get<1>(pullback(cotangent));
  EXPECT_NEAR(value_cotangent.item<float>(), 1.0f, 1e-5f);
}

TEST(MovementDerivatives, Flip) {
  RandomArrays random(14);
  struct Case {
    Shape in;
    Axes axes;
  };
  std::vector<Case> cases = {{{4}, Axes::all()},       {{2, 3}, 0}, {{2, 3}, -1},          {{2, 3, 2}, Axes{0, 2}},
                             {{2, 3, 2}, Axes::all()}, {{0, 3}, 0}, {{2, 0}, Axes::all()}, {{}, Axes::all()}};
  for (const Case& c : cases) {
    Axes axes = c.axes;
    Function fn = [axes](const std::vector<Array>& in) { return flip(in[0], axes); };
    EXPECT_TRUE(check_derivatives(fn, {random_f64(random, c.in)})) << shape_string(c.in);
  }
}

// ---- broadcasting binary ops, 0-d and zero-size ---------------------------------------

TEST(MovementDerivatives, BroadcastingThroughBinaryOps) {
  RandomArrays random(15);
  std::vector<std::pair<Shape, Shape>> pairs = {{{2, 1, 3}, {4, 1}}, {{3}, {2, 3}},         {{}, {2, 3}},
                                                {{2, 3}, {}},        {{1, 3}, {2, 1}},      {{4, 1, 1}, {1, 5, 1}},
                                                {{1}, {1}},          {{2, 3}, {2, 3}},      {{0, 1}, {3}},
                                                {{1, 3}, {0, 1}},    {{2, 1, 3}, {1, 0, 1}}};
  for (const auto& [a_shape, b_shape] : pairs) {
    std::vector<Array> inputs = {random_f64(random, a_shape), random_f64(random, b_shape)};
    std::string context = shape_string(a_shape) + " with " + shape_string(b_shape);
    EXPECT_TRUE(check_derivatives([](const std::vector<Array>& in) { return add(in[0], in[1]); }, inputs))
        << "add " << context;
    EXPECT_TRUE(check_derivatives([](const std::vector<Array>& in) { return mul(in[0], in[1]); }, inputs))
        << "mul " << context;
    EXPECT_TRUE(check_derivatives([](const std::vector<Array>& in) { return mul(add(in[0], in[1]), in[0]); }, inputs))
        << "(a + b) * a " << context;
  }
  // A C++ number meets an array: its literal is broadcast but gets no cotangent.
  Function with_numbers = [](const std::vector<Array>& in) { return mul(add(in[0], 1.5), 2.0); };
  EXPECT_TRUE(check_derivatives(with_numbers, {random_f64(random, {2, 3})}));
}

TEST(MovementDerivatives, ZeroSizeInputsGetZeroSizeCotangents) {
  RandomArrays random(16);
  Array empty = random_f64(random, {0, 3});
  std::vector<std::pair<std::string, std::function<Array(const Array&)>>> functions = {
      {"reshape",
       [](const Array& x) {
         return reshape(x, {3, 0, 1});
       }},
      {"transpose", [](const Array& x) { return transpose(x); }},
      {"broadcast_to",
       [](const Array& x) {
         return broadcast_to(x, {2, 0, 3});
       }},
      {"slice",
       [](const Array& x) {
         return slice(x, {0, 1}, {0, 3}, {1, 2});
       }},
      {"concatenate",
       [](const Array& x) {
         return concatenate({x, ones({2, 3}, f64)}, 0);
       }},
      {"pad",
       [](const Array& x) {
         return pad(x, {1, 0}, {1, 1}, 3.0);
       }},
      {"flip", [](const Array& x) { return flip(x); }},
      {"add",
       [](const Array& x) {
         return add(x, ones({2, 1, 3}, f64));
       }},
  };
  for (const auto& [name, fn] : functions) {
    Array value = fn(empty);
    Array dx = pull_back(fn, empty, random_f64(random, value.shape()));
    EXPECT_EQ(dx.shape(), empty.shape()) << name;
    EXPECT_EQ(dx.dtype(), f64) << name;
    auto [out, tangent] = jvp(fn, std::tuple{empty}, std::tuple{random_f64(random, {0, 3})});
    EXPECT_EQ(tangent.shape(), value.shape()) << name;
    EXPECT_TRUE(all_close(tangent, zeros(value.shape(), f64), 0, 0, name + " jvp"));
  }
  // An extent-1 axis stretched to 0: the input is not empty, its cotangent is zeros.
  Array one = random_f64(random, {1, 3});
  Array dx = pull_back([](const Array& x) { return broadcast_to(x, {0, 3}); }, one, zeros({0, 3}, f64));
  EXPECT_TRUE(all_close(dx, zeros({1, 3}, f64), 0, 0, "stretched to 0"));
}

TEST(MovementDerivatives, ZeroDimensional) {
  RandomArrays random(17);
  std::vector<std::pair<std::string, Function>> functions = {
      {"reshape",
       [](const std::vector<Array>& in) {
         return reshape(in[0], {1, 1, 1});
       }},
      {"broadcast_to",
       [](const std::vector<Array>& in) {
         return broadcast_to(in[0], {2, 3});
       }},
      {"expand_dims",
       [](const std::vector<Array>& in) {
         return expand_dims(in[0], Axes{0, 1});
       }},
      {"stack",
       [](const std::vector<Array>& in) {
         return stack({in[0], in[1], in[0]});
       }},
      {"add", [](const std::vector<Array>& in) { return add(in[0], in[1]); }},
      {"squeeze back",
       [](const std::vector<Array>& in) {
         return squeeze(reshape(in[0], {1, 1}));
       }},
  };
  for (const auto& [name, fn] : functions)
    EXPECT_TRUE(check_derivatives(fn, {random_f64(random, {}), random_f64(random, {})})) << name;
}

// ---- the derivative graphs ------------------------------------------------------------

/// A chain through every movement primitive, ending in a scalar.
Array movement_chain(const Array& x, const Array& w) {
  Array y = transpose(reshape(x, {3, 4, 2}), {2, 0, 1});                // [2,3,4]
  Array z = slice(flip(y, 1), {0, -3, 1}, {2, 3, 4}, {1, 2, 2});        // [2,2,2]
  Array padded = pad(z, {1, 0, 0}, {0, 1, 2}, 0.5);                     // [3,3,4]
  Array joined = concatenate({padded, broadcast_to(w, {3, 1, 4})}, 1);  // [3,4,4]
  return sum(mul(joined, broadcast_to(reshape(w, {4}), {3, 4, 4})));
}

TEST(MovementDerivatives, ValueAndGradMatchesFloat32) {
  RandomArrays random(18);
  Array x = random_f64(random, {24});
  Array w = random_f64(random, {1, 4});
  auto value_and_gradient = value_and_grad([](const Array& a, const Array& b) { return movement_chain(a, b); }, {0, 1});
  auto [value, grads] = value_and_gradient(x, w);
  auto [value32, grads32] = value_and_gradient(astype(x, f32), astype(w, f32));
  EXPECT_EQ(std::get<0>(grads32).dtype(), f32);
  EXPECT_EQ(std::get<1>(grads32).shape(), (Shape{1, 4}));
  EXPECT_TRUE(all_close(astype(value32, f64), value, 1e-5, 1e-5, "value"));
  EXPECT_TRUE(all_close(astype(std::get<0>(grads32), f64), std::get<0>(grads), 1e-5, 1e-5, "dx"));
  EXPECT_TRUE(all_close(astype(std::get<1>(grads32), f64), std::get<1>(grads), 1e-5, 1e-5, "dw"));
  EXPECT_TRUE(check_derivatives([](const std::vector<Array>& in) { return movement_chain(in[0], in[1]); }, {x, w}));
}

TEST(MovementDerivatives, JitOfValueAndGradMatchesEager) {
  RandomArrays random(19);
  Array x = random_f64(random, {24});
  Array w = random_f64(random, {1, 4});
  auto value_and_gradient = value_and_grad([](const Array& a, const Array& b) { return movement_chain(a, b); }, {0, 1});
  auto [value, grads] = value_and_gradient(x, w);
  auto [jit_value, jit_grads] = jit(value_and_gradient)(x, w);
  EXPECT_TRUE(all_close(jit_value, value, 0, 0, "value"));
  EXPECT_TRUE(all_close(std::get<0>(jit_grads), std::get<0>(grads), 0, 0, "dx"));
  EXPECT_TRUE(all_close(std::get<1>(jit_grads), std::get<1>(grads), 0, 0, "dw"));
}

// The pullbacks are linear maps built from movement ops themselves, so
// differentiating them exercises the rules on the nodes the rules emit.
TEST(MovementDerivatives, PullbacksDifferentiateAgain) {
  RandomArrays random(20);
  std::vector<std::pair<Shape, std::function<Array(const Array&)>>> functions = {
      {{7, 5},
       [](const Array& x) {
         return slice(x, {1, -4}, {7, 5}, {3, 2});
       }},
      {{2, 1, 3},
       [](const Array& x) {
         return broadcast_to(x, {4, 2, 5, 3});
       }},
      {{2, 3},
       [](const Array& x) {
         return pad(x, {1, 0}, {2, 1}, 1.0);
       }},
      {{2, 3},
       [](const Array& x) {
         return concatenate({x, x, slice(x, {0, 1}, {2, 3})}, 1);
       }},
      {{2, 3, 4},
       [](const Array& x) {
         return flip(transpose(x, {1, 2, 0}), {0, 2});
       }},
  };
  for (const auto& [shape, fn] : functions) {
    Array x = random_f64(random, shape);
    Shape out_shape = fn(x).shape();
    Function pullback = [x, fn](const std::vector<Array>& in) { return pull_back(fn, x, in[0]); };
    EXPECT_TRUE(check_derivatives(pullback, {random_f64(random, out_shape)})) << shape_string(shape);
  }
}

// Derivative nodes carry the line of the operation they differentiate.
TEST(MovementDerivatives, DerivativeNodesKeepTheUserLine) {
  Array x = zeros({9}, f64);
  int line = __LINE__ + 1;
  auto strided = [](const Array& a) { return slice(a, {1}, {9}, {3}); };
  Graph graph = make_graph(
      "pullback", [&](const Array& c) { return pull_back(strided, x, c); }, zeros({3}, f64));
  std::string text = graph.to_string();
  std::string where = "test_movement_derivatives.cpp:" + std::to_string(line);
  size_t lines_with_pad = 0;
  for (size_t at = text.find("pad"); at != std::string::npos; at = text.find("pad", at + 1)) {
    size_t end = text.find('\n', at);
    EXPECT_NE(text.substr(at, end - at).find(where), std::string::npos) << text;
    ++lines_with_pad;
  }
  EXPECT_GE(lines_with_pad, 2u) << text;
}

}  // namespace
}  // namespace kiln
