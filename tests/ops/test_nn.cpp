// Convolution (1-D to 3-D, strides, padding, dilation, groups, both layouts),
// its transpose, pooling and the activation and normalization composites
// against PyTorch (torch.nn.functional, run by the NumPy oracle's Python);
// gradients against finite differences; jit and vmap; errors.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include "support/errors.h"
#include "support/gradient_check.h"
#include "support/numpy_oracle.h"

namespace kiln {
namespace {

using testing::all_close;
using testing::NumpyOracle;
using testing::RandomArrays;

const std::string functional = "__import__('torch').nn.functional";
std::string tensor(const std::string& name) { return "__import__('torch').from_numpy(" + name + ")"; }

std::string tuple(const Shape& values) {
  std::string text = "(";
  for (int64_t v : values) text += std::to_string(v) + ",";
  return text + ")";
}

// [N, C, spatial...] <-> [N, spatial..., C]
Array to_last(const Array& x) {
  std::vector<int64_t> permutation{0};
  for (int64_t a = 2; a < x.ndim(); ++a) permutation.push_back(a);
  permutation.push_back(1);
  return transpose(x, permutation);
}
Array to_first(const Array& x) {
  std::vector<int64_t> permutation{0, x.ndim() - 1};
  for (int64_t a = 1; a + 1 < x.ndim(); ++a) permutation.push_back(a);
  return transpose(x, permutation);
}
// PyTorch's kernel [O, C/groups, spatial...] as [spatial..., C/groups, O].
Array kernel_to_last(const Array& w) {
  std::vector<int64_t> permutation;
  for (int64_t a = 2; a < w.ndim(); ++a) permutation.push_back(a);
  permutation.push_back(1);
  permutation.push_back(0);
  return transpose(w, permutation);
}

struct ConvCase {
  int64_t dims, batch, groups, group_channels, out_per_group;
  Shape sizes, kernel, strides, dilation, pads;
};

ConvCase random_case(RandomArrays& random) {
  ConvCase c;
  c.dims = random.integer(1, 3);
  c.batch = random.integer(1, 2);
  c.groups = random.integer(1, 2);
  c.group_channels = random.integer(1, 3);
  c.out_per_group = random.integer(1, 3);
  for (int64_t i = 0; i < c.dims; ++i) {
    c.kernel.push_back(random.integer(1, 3));
    c.strides.push_back(random.integer(1, 2));
    c.dilation.push_back(random.integer(1, 2));
    c.pads.push_back(random.integer(0, 1));
    int64_t extent = (c.kernel.back() - 1) * c.dilation.back() + 1;
    c.sizes.push_back(random.integer(std::max<int64_t>(extent - 2 * c.pads.back(), 1), 6));
  }
  return c;
}

TEST(Nn, ConvolutionMatchesPyTorch) {
  RandomArrays random(51);
  NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  int transposes = 0;
  for (int trial = 0; trial < 30; ++trial) {
    ConvCase c = random_case(random);
    Shape x_shape{c.batch, c.groups * c.group_channels}, w_shape{c.groups * c.out_per_group, c.group_channels};
    x_shape.insert(x_shape.end(), c.sizes.begin(), c.sizes.end());
    w_shape.insert(w_shape.end(), c.kernel.begin(), c.kernel.end());
    Array x = random.uniform(x_shape, DType::f64), w = random.uniform(w_shape, DType::f64);
    std::vector<std::pair<int64_t, int64_t>> pairs;
    for (int64_t p : c.pads) pairs.push_back({p, p});
    ConvOptions options{.strides = c.strides,
                        .padding = Padding(pairs),
                        .dilation = c.dilation,
                        .groups = c.groups,
                        .channels_last = false};
    std::string expression = functional + ".conv" + std::to_string(c.dims) + "d(" + tensor("a") + ", " + tensor("b") +
                             ", stride=" + tuple(c.strides) + ", padding=" + tuple(c.pads) +
                             ", dilation=" + tuple(c.dilation) + ", groups=" + std::to_string(c.groups) + ").numpy()";
    std::string context = "conv x " + shape_string(x_shape) + " w " + shape_string(w_shape) + " strides " +
                          shape_string(c.strides) + " dilation " + shape_string(c.dilation) + " pads " +
                          shape_string(c.pads) + " groups " + std::to_string(c.groups);
    int id = oracle.add(expression, {x, w});
    cases.push_back({conv(x, w, options), id, context, 1e-12});
    // Channels last (JAX's layout) gives the same numbers, transposed.
    ConvOptions last = options;
    last.channels_last = true;
    cases.push_back({to_first(conv(to_last(x), kernel_to_last(w), last)), id, context + " channels last", 1e-12});
    // The transpose: PyTorch's conv_transpose with the output padding that
    // gives back x's spatial size.
    Array y = conv(x, w, options);
    Shape extra;
    for (int64_t i = 0; i < c.dims; ++i) {
      int64_t out = y.shape(2 + i);
      extra.push_back(c.sizes[static_cast<size_t>(i)] -
                      ((out - 1) * c.strides[static_cast<size_t>(i)] - 2 * c.pads[static_cast<size_t>(i)] +
                       c.dilation[static_cast<size_t>(i)] * (c.kernel[static_cast<size_t>(i)] - 1) + 1));
    }
    bool torch_accepts = true;  // output padding must be below the stride or the dilation
    for (int64_t i = 0; i < c.dims; ++i)
      torch_accepts = torch_accepts && extra[static_cast<size_t>(i)] < std::max(c.strides[static_cast<size_t>(i)],
                                                                                c.dilation[static_cast<size_t>(i)]);
    if (!torch_accepts) continue;
    ++transposes;
    Array dy = random.uniform(y.shape(), DType::f64);
    cases.push_back({conv_transpose(dy, w, c.sizes, options),
                     oracle.add(functional + ".conv_transpose" + std::to_string(c.dims) + "d(" + tensor("a") + ", " +
                                    tensor("b") + ", stride=" + tuple(c.strides) + ", padding=" + tuple(c.pads) +
                                    ", output_padding=" + tuple(extra) + ", groups=" + std::to_string(c.groups) +
                                    ", dilation=" + tuple(c.dilation) + ").numpy()",
                                {dy, w}),
                     "conv_transpose of " + context, 1e-12});
  }
  EXPECT_GE(transposes, 15);
  oracle.run();
  testing::expect_cases_match(oracle, cases);
}

TEST(Nn, SamePaddingKeepsCeilOfSizeOverStride) {
  RandomArrays random(52);
  NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  for (int64_t stride : {1, 2, 3}) {
    for (int64_t size : {5, 6, 7}) {
      Array x = random.uniform({2, size, size, 3}, DType::f64), w = random.uniform({3, 3, 3, 4}, DType::f64);
      Array y = conv(x, w, {.strides = {stride, stride}, .padding = Padding::same()});
      int64_t out = (size + stride - 1) / stride;
      ASSERT_EQ(y.shape(), (Shape{2, out, out, 4}));
      // The extra padding element goes after (JAX, TensorFlow).
      int64_t total = std::max<int64_t>((out - 1) * stride + 3 - size, 0);
      std::string pads = "((0,0),(0,0),(" + std::to_string(total / 2) + "," + std::to_string(total - total / 2) +
                         "),(" + std::to_string(total / 2) + "," + std::to_string(total - total / 2) + "))";
      std::string torch_x = tensor("np.pad(a.transpose(0, 3, 1, 2), " + pads + ")");
      std::string torch_w = tensor("b.transpose(3, 2, 0, 1).copy()");
      cases.push_back({y,
                       oracle.add(functional + ".conv2d(" + torch_x + ", " + torch_w +
                                      ", stride=" + std::to_string(stride) + ").numpy().transpose(0, 2, 3, 1)",
                                  {x, w}),
                       "same padding, size " + std::to_string(size) + " stride " + std::to_string(stride), 1e-12});
    }
  }
  oracle.run();
  testing::expect_cases_match(oracle, cases);
}

TEST(Nn, PoolingMatchesPyTorch) {
  RandomArrays random(53);
  NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  for (int trial = 0; trial < 12; ++trial) {
    int64_t dims = random.integer(1, 3);
    Shape window, strides, pads, x_shape{random.integer(1, 2), random.integer(1, 3)};
    for (int64_t i = 0; i < dims; ++i) {
      window.push_back(random.integer(1, 3));
      strides.push_back(random.integer(1, 3));
      pads.push_back(random.integer(0, window.back() / 2));
      x_shape.push_back(random.integer(window.back(), 7));
    }
    Array x = random.uniform(x_shape, DType::f64);
    std::vector<std::pair<int64_t, int64_t>> pairs;
    for (int64_t p : pads) pairs.push_back({p, p});
    PoolOptions options{.strides = strides, .padding = Padding(pairs), .channels_last = false};
    std::string args = ", " + tuple(window) + ", stride=" + tuple(strides) + ", padding=" + tuple(pads);
    std::string d = std::to_string(dims) + "d(" + tensor("a");
    std::string context = "x " + shape_string(x_shape) + " window " + shape_string(window) + " strides " +
                          shape_string(strides) + " pads " + shape_string(pads);
    cases.push_back({max_pool(x, window, options), oracle.add(functional + ".max_pool" + d + args + ").numpy()", {x}),
                     "max_pool " + context, 0});
    cases.push_back({avg_pool(x, window, options),
                     oracle.add(functional + ".avg_pool" + d + args + ", count_include_pad=True).numpy()", {x}),
                     "avg_pool " + context, 1e-12});
    PoolOptions last = options;
    last.channels_last = true;
    cases.push_back({to_first(max_pool(to_last(x), window, last)),
                     oracle.add(functional + ".max_pool" + d + args + ").numpy()", {x}),
                     "max_pool channels last " + context, 0});
  }
  oracle.run();
  testing::expect_cases_match(oracle, cases);
}

// lax.reduce_window's semantics in NumPy: pad with the reduction's identity,
// take every window, keep every stride-th, reduce the window axes.
TEST(Nn, ReduceWindowMatchesNumpyOverEveryAxis) {
  RandomArrays random(59);
  NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  const std::vector<std::pair<WindowReduction, std::string>> reductions = {{WindowReduction::sum, "sum"},
                                                                           {WindowReduction::max, "max"},
                                                                           {WindowReduction::min, "min"},
                                                                           {WindowReduction::mean, "mean"}};
  for (int trial = 0; trial < 24; ++trial) {
    auto [reduction, name] = reductions[static_cast<size_t>(trial % 4)];
    DType dtype = trial % 3 == 0 ? DType::i32 : DType::f64;
    if (reduction == WindowReduction::mean) dtype = DType::f64;
    Shape shape, window, strides;
    std::vector<std::pair<int64_t, int64_t>> pads;
    for (int64_t d = 0, rank = random.integer(1, 3); d < rank; ++d) {
      window.push_back(random.integer(1, 3));
      strides.push_back(random.integer(1, 2));
      pads.push_back({random.integer(0, window.back() - 1), random.integer(0, window.back() - 1)});
      shape.push_back(random.integer(window.back(), 6));
    }
    Array x = random.uniform(shape, dtype, -9, 9);
    std::string fill = name == "max" ? "-np.inf" : name == "min" ? "np.inf" : "0";
    std::string pad_text = "[", window_text = "(", slices = "[";
    for (size_t d = 0; d < shape.size(); ++d) {
      pad_text += "(" + std::to_string(pads[d].first) + "," + std::to_string(pads[d].second) + "),";
      window_text += std::to_string(window[d]) + ",";
      slices += "::" + std::to_string(strides[d]) + ",";
    }
    std::string axes = "tuple(range(" + std::to_string(shape.size()) + ", " + std::to_string(2 * shape.size()) + "))";
    std::string expression = "np." + name + "(np.lib.stride_tricks.sliding_window_view(np.pad(a.astype(np.float64), " +
                             pad_text + "], constant_values=" + fill + "), " + window_text + "))" + slices +
                             "], axis=" + axes + ")" + (dtype == DType::i32 ? ".astype(np.int32)" : "");
    std::string context =
        name + " of " + shape_string(shape) + " window " + shape_string(window) + " strides " + shape_string(strides);
    cases.push_back(
        {reduce_window(x, reduction, window, strides, Padding(pads)), oracle.add(expression, {x}), context, 1e-12});
  }
  oracle.run();
  testing::expect_cases_match(oracle, cases);
  // A window of 1 along batch and channels is pooling.
  Array images = random.uniform({2, 5, 4, 3}, DType::f32);
  EXPECT_TRUE(all_close(reduce_window(images, WindowReduction::max, {1, 2, 2, 1}, {1, 2, 2, 1}),
                        max_pool(images, {2, 2}), 0, 0));
}

TEST(Nn, ActivationsAndNormalizationsMatchPyTorch) {
  RandomArrays random(54);
  NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  for (DType dtype : {DType::f32, DType::f64}) {
    Array x = random.uniform({4, 7}, dtype, -30, 30);
    double rtol = dtype == DType::f32 ? 2e-6 : 1e-13;
    std::string t = tensor("a");
    cases.push_back({layer_norm(x), oracle.add(functional + ".layer_norm(" + t + ", (7,), eps=1e-5).numpy()", {x}),
                     "layer_norm", dtype == DType::f32 ? 1e-5 : 1e-12});
    cases.push_back({rms_norm(x, 0),
                     oracle.add("(a / np.sqrt(np.mean(a.astype(np.float64) ** 2, axis=0, keepdims=True) + 1e-6))"
                                ".astype(a.dtype)",
                                {x}),
                     "rms_norm", dtype == DType::f32 ? 1e-5 : 1e-12});
    cases.push_back({gelu(x), oracle.add(functional + ".gelu(" + t + ").numpy()", {x}), "gelu", rtol});
    cases.push_back({gelu(x, true), oracle.add(functional + ".gelu(" + t + ", approximate='tanh').numpy()", {x}),
                     "gelu tanh", rtol});
    cases.push_back({silu(x), oracle.add(functional + ".silu(" + t + ").numpy()", {x}), "silu", rtol});
    cases.push_back({softplus(x), oracle.add("np.logaddexp(0, a)", {x}), "softplus", rtol});
    cases.push_back(
        {log_sigmoid(x), oracle.add(functional + ".logsigmoid(" + t + ").numpy()", {x}), "log_sigmoid", rtol});
  }
  oracle.run();
  testing::expect_cases_match(oracle, cases);
}

TEST(Nn, GradientsAgreeWithFiniteDifferences) {
  RandomArrays random(55);
  Array x = random.uniform({2, 5, 6, 4}, DType::f64), w = random.uniform({3, 2, 2, 6}, DType::f64);
  ConvOptions options{.strides = {2, 1}, .padding = Padding::same(), .dilation = {1, 2}, .groups = 2};
  testing::ArrayFunction convolution = [&](const std::vector<Array>& in) {
    return sum(square(conv(in[0], in[1], options)));
  };
  EXPECT_TRUE(testing::check_derivatives(convolution, {x, w}));
  Array y = random.uniform(conv(x, w, options).shape(), DType::f64);
  testing::ArrayFunction transposed = [&](const std::vector<Array>& in) {
    return sum(square(conv_transpose(in[0], in[1], {5, 6}, options)));
  };
  EXPECT_TRUE(testing::check_derivatives(transposed, {y, w}));
  testing::ArrayFunction pools = [&](const std::vector<Array>& in) {
    PoolOptions p{.strides = {1, 2}, .padding = Padding::same()};
    return sum(square(max_pool(in[0], {2, 3}, p))) + sum(avg_pool(in[0], {3, 2}, p) * in[0].shape(1));
  };
  EXPECT_TRUE(testing::check_derivatives(pools, {x}));
  testing::ArrayFunction composites = [](const std::vector<Array>& in) {
    const Array& v = in[0];
    return sum(layer_norm(v) * v) + sum(rms_norm(v, 1) * v) + sum(gelu(v)) + sum(gelu(v, true)) + sum(silu(v)) +
           sum(softplus(v)) + sum(log_sigmoid(v));
  };
  EXPECT_TRUE(testing::check_derivatives(composites, {random.uniform({3, 5}, DType::f64)}));
}

TEST(Nn, JitAndVmapAgreeWithEager) {
  RandomArrays random(56);
  Array x = random.uniform({3, 6, 6, 2}, DType::f32), w = random.uniform({3, 3, 2, 4}, DType::f32);
  auto layer = [](const Array& images, const Array& kernel) {
    ConvOptions options{.padding = Padding::same()};
    return max_pool(gelu(conv(images, kernel, options)), {2, 2});
  };
  Array eager = layer(x, w);
  EXPECT_TRUE(all_close(jit(layer)(x, w), eager, 1e-5, 1e-6, "jit"));
  // One image per lane, as a batch of one.
  auto one = [&](const Array& image, const Array& kernel) {
    return reshape(layer(reshape(image, {1, 6, 6, 2}), kernel), {3, 3, 4});
  };
  EXPECT_TRUE(all_close(vmap(one, {0, std::nullopt})(x, w), eager, 1e-5, 1e-6, "vmap"));
}

TEST(Nn, ErrorsNameTheShapesAndTheFix) {
  Array x = ones({1, 5, 5, 4});
  const int groups_line = __LINE__ + 1;
  auto groups = [&] { conv(x, ones({3, 3, 3, 2}), {.groups = 2}); };
  testing::expect_error(groups_line, groups, {"[conv]", "input channels 4", "f32[3,3,3,2]", "groups=2"});
  const int window_line = __LINE__ + 1;
  auto wide = [&] { conv(x, ones({7, 1, 4, 2})); };
  testing::expect_error(window_line, wide, {"[conv]", "spans 7 elements", "only 5", "Padding::same()"});
  const int reduce_window_line = __LINE__ + 1;
  auto too_few = [&] { reduce_window(x, WindowReduction::max, {2, 2}); };
  testing::expect_error(reduce_window_line, too_few, {"[reduce_window]", "[1,5,5,4]", "2 extents", "give 1"});
  const int pairs_line = __LINE__ + 1;
  auto pairs = [&] { conv(x, ones({3, 3, 4, 2}), {.padding = Padding({{1, 1}})}); };
  testing::expect_error(pairs_line, pairs, {"[conv]", "1 (before, after) pairs for 2 spatial dimensions"});
  const int pool_line = __LINE__ + 1;
  auto pool = [&] { max_pool(x, {2}); };
  testing::expect_error(pool_line, pool,
                        {"[max_pool]", "a window of 1 dimensions needs an input of 3", "f32[1,5,5,4]"});
  const int transpose_line = __LINE__ + 1;
  auto back = [&] { conv_transpose(ones({1, 3, 3, 2}), ones({3, 3, 4, 2}), {9, 9}); };
  testing::expect_error(transpose_line, back, {"[conv_transpose]", "f32[1,3,3,2]", "spatial size [9,9]"});
}

}  // namespace
}  // namespace kiln
