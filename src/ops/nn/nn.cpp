// Convolution, pooling and the neural-network composites of <kiln/nn.h>.
// A convolution is a gather of the padded input's patches (take, whose
// derivative is scatter_add) and one matrix product with the kernel (a
// batched one over groups); its transpose is that product transposed and a
// scatter_add of the patches back. Everything works channels last; channels
// first is a transpose on the way in and out.
#include "kiln/nn.h"

#include <cmath>
#include <limits>
#include <numbers>

#include "core/dispatch.h"
#include "core/error_format.h"
#include "core/location_scope.h"
#include "ops/common/apply.h"
#include "ops/common/promotion.h"

namespace kiln {

using detail::OperationScope;

std::vector<std::pair<int64_t, int64_t>> Padding::pairs(const Shape& sizes, const Shape& windows, const Shape& strides,
                                                        const char* operation, Location where) const {
  std::vector<std::pair<int64_t, int64_t>> result(sizes.size(), {0, 0});
  if (kind_ == Kind::same) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      int64_t out = (sizes[i] + strides[i] - 1) / strides[i];
      int64_t total = std::max<int64_t>((out - 1) * strides[i] + windows[i] - sizes[i], 0);
      result[i] = {total / 2, total - total / 2};
    }
  } else if (kind_ == Kind::explicit_pairs) {
    if (pairs_.size() != sizes.size())
      detail::raise(operation,
                    "padding has " + std::to_string(pairs_.size()) + " (before, after) pairs for " +
                        std::to_string(sizes.size()) + " spatial dimensions",
                    where, "give one pair per spatial dimension, or Padding::same() / Padding::valid()");
    for (const auto& [before, after] : pairs_)
      if (before < 0 || after < 0)
        detail::raise(operation, "padding (" + std::to_string(before) + ", " + std::to_string(after) + ") is negative",
                      where, "slice the input instead of padding it negatively");
    result = pairs_;
  }
  return result;
}

namespace {

Shape per_dimension(const std::vector<int64_t>& given, size_t dims, const char* what, const char* operation,
                    Location where) {
  if (given.empty()) return Shape(dims, 1);
  if (given.size() != dims)
    detail::raise(operation,
                  std::string(what) + " has " + std::to_string(given.size()) + " entries for " + std::to_string(dims) +
                      " spatial dimensions",
                  where, "give one per spatial dimension, or none for 1");
  for (int64_t value : given)
    if (value < 1)
      detail::raise(operation, std::string(what) + " " + shape_string(given) + " must be at least 1", where);
  return given;
}

Array channels_last(const Array& x, Location where) {
  std::vector<int64_t> permutation{0};
  for (int64_t a = 2; a < x.ndim(); ++a) permutation.push_back(a);
  permutation.push_back(1);
  return transpose(x, permutation, where);
}

Array channels_first(const Array& x, Location where) {
  std::vector<int64_t> permutation{0, x.ndim() - 1};
  for (int64_t a = 1; a + 1 < x.ndim(); ++a) permutation.push_back(a);
  return transpose(x, permutation, where);
}

Shape joined(Shape a, const Shape& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// Where windows read a channels-last input: its spatial sizes, the padding,
/// and the outputs' spatial sizes.
struct Windows {
  int64_t batch = 0, channels = 0;
  Shape sizes, padded, extents, dilation, strides, out;
  std::vector<std::pair<int64_t, int64_t>> pads;
};

Windows windows_of(const Shape& x, const Shape& kernel, const std::vector<int64_t>& strides,
                   const std::vector<int64_t>& dilation, const Padding& padding, const char* operation,
                   Location where) {
  Windows w;
  size_t dims = kernel.size();
  w.batch = x.front();
  w.channels = x.back();
  w.sizes = Shape(x.begin() + 1, x.end() - 1);
  w.strides = per_dimension(strides, dims, "strides", operation, where);
  w.dilation = per_dimension(dilation, dims, "dilation", operation, where);
  for (size_t i = 0; i < dims; ++i) w.extents.push_back((kernel[i] - 1) * w.dilation[i] + 1);
  w.pads = padding.pairs(w.sizes, w.extents, w.strides, operation, where);
  for (size_t i = 0; i < dims; ++i) {
    int64_t padded = w.sizes[i] + w.pads[i].first + w.pads[i].second;
    if (padded < w.extents[i])
      detail::raise(operation,
                    "the window spans " + std::to_string(w.extents[i]) + " elements along spatial dimension " +
                        std::to_string(i) + ", but the padded input has only " + std::to_string(padded) +
                        " (input spatial sizes " + shape_string(w.sizes) + ")",
                    where, "pad the input (Padding::same()), or use a smaller window or dilation");
    w.padded.push_back(padded);
    w.out.push_back((padded - w.extents[i]) / w.strides[i] + 1);
  }
  return w;
}

/// For each output position and window offset, the position it reads in the
/// padded input's flattened spatial dimensions: [prod(out) * prod(window)].
/// Called inside conv's, conv_transpose's or a pool's scope.
Array patch_positions(const Windows& w, const Shape& window, Location where) {
  size_t dims = window.size();
  Shape full = joined(w.out, window);
  Array positions;
  int64_t pitch = 1;
  for (size_t i = dims; i-- > 0;) {
    Shape out_shape(2 * dims, 1), window_shape(2 * dims, 1);
    out_shape[i] = w.out[i];
    window_shape[dims + i] = window[i];
    Array starts = reshape(arange(0, w.out[i] * w.strides[i], w.strides[i], DType::i64, where), out_shape, where);
    Array offsets =
        reshape(arange(0, window[i] * w.dilation[i], w.dilation[i], DType::i64, where), window_shape, where);
    Array term = (starts + offsets) * pitch;
    positions = positions.defined() ? positions + term : term;
    pitch *= w.padded[i];
  }
  return reshape(broadcast_to(positions, full, where), {shape_size(full)}, where);
}

/// The patches of channels-last `x`: [N, prod(out), prod(window), C], and the positions read.
std::pair<Array, Array> patches(const Array& x, const Windows& w, const Shape& window, Scalar fill, Location where) {
  std::vector<int64_t> lo{0}, hi{0};
  for (const auto& [before, after] : w.pads) lo.push_back(before), hi.push_back(after);
  lo.push_back(0);
  hi.push_back(0);
  Array padded = pad(x, lo, hi, fill, where);
  Array flat = reshape(padded, {w.batch, shape_size(w.padded), w.channels}, where);
  Array positions = patch_positions(w, window, where);
  Array gathered = take(flat, positions, 1, where);
  return {reshape(gathered, {w.batch, shape_size(w.out), shape_size(window), w.channels}, where), positions};
}

struct ConvShapes {
  Windows windows;
  Shape window;  // the kernel's spatial extents
  int64_t group_channels = 0, out_channels = 0, groups = 1;
  Array kernel;  // [window..., C/groups, O]
};

ConvShapes conv_shapes(const Shape& x_last, const Array& kernel, const ConvOptions& options, const char* operation,
                       Location where) {
  const detail::AbstractValue& k = detail::impl_of(kernel, operation, where).type;
  size_t dims = x_last.size() - 2;
  if (dims < 1 || dims > 3 || k.shape.size() != dims + 2)
    detail::raise(operation,
                  "needs an input of 3 to 5 dimensions and a kernel of the same rank, got " + shape_string(x_last) +
                      " (channels last) and " + k.to_string(),
                  where,
                  options.channels_last ? "input [N, spatial..., C], kernel [spatial..., C/groups, O]"
                                        : "input [N, C, spatial...], kernel [O, C/groups, spatial...]");
  ConvShapes s;
  s.groups = options.groups;
  if (options.channels_last) {
    s.kernel = kernel;
  } else {
    std::vector<int64_t> permutation;
    for (size_t a = 2; a < dims + 2; ++a) permutation.push_back(static_cast<int64_t>(a));
    permutation.push_back(1);
    permutation.push_back(0);
    s.kernel = transpose(kernel, permutation, where);
  }
  const Shape& kl = s.kernel.shape();
  s.window = Shape(kl.begin(), kl.begin() + static_cast<std::ptrdiff_t>(dims));
  s.group_channels = kl[dims];
  s.out_channels = kl[dims + 1];
  int64_t channels = x_last.back();
  if (s.groups < 1 || channels != s.group_channels * s.groups || s.out_channels % s.groups != 0)
    detail::raise(
        operation,
        "input channels " + std::to_string(channels) + ", kernel " + k.to_string() +
            " and groups=" + std::to_string(s.groups) + " do not agree",
        where,
        "the kernel's input-channel extent must be channels / groups, and groups must divide its output channels");
  s.windows = windows_of(x_last, s.window, options.strides, options.dilation, options.padding, operation, where);
  return s;
}

/// Patches [N, M, Kt, C] times the kernel: [N, M, O].
Array patches_times_kernel(const Array& patches, const ConvShapes& s, Location where) {
  int64_t rows = s.windows.batch * shape_size(s.windows.out), taps = shape_size(s.window), g = s.groups;
  int64_t cg = s.group_channels, og = s.out_channels / g;
  if (g == 1)
    return matmul(reshape(patches, {rows, taps * cg}, where), reshape(s.kernel, {taps * cg, s.out_channels}, where),
                  where);
  Array lhs = reshape(transpose(reshape(patches, {rows, taps, g, cg}, where), {2, 0, 1, 3}, where),
                      {g, rows, taps * cg}, where);
  Array rhs =
      reshape(transpose(reshape(s.kernel, {taps, cg, g, og}, where), {2, 0, 1, 3}, where), {g, taps * cg, og}, where);
  return reshape(transpose(matmul(lhs, rhs, where), {1, 0, 2}, where), {rows, s.out_channels}, where);
}

Shape channels_last_shape(const Array& x, bool is_last) {
  Shape shape = x.shape();
  if (is_last || shape.size() < 2) return shape;
  Shape last{shape[0]};
  last.insert(last.end(), shape.begin() + 2, shape.end());
  last.push_back(shape[1]);
  return last;
}

}  // namespace

Array conv(const Array& x, const Array& kernel, const ConvOptions& options, Location where) {
  OperationScope at("conv", where);
  detail::impl_of(x, "conv", where);
  ConvShapes s = conv_shapes(channels_last_shape(x, options.channels_last), kernel, options, "conv", where);
  Array input = options.channels_last ? x : channels_last(x, where);
  Array product_rows = patches_times_kernel(patches(input, s.windows, s.window, 0, where).first, s, where);
  Array result = reshape(product_rows, joined(joined({s.windows.batch}, s.windows.out), {s.out_channels}), where);
  return options.channels_last ? result : channels_first(result, where);
}

Array conv_transpose(const Array& y, const Array& kernel, const Shape& spatial, const ConvOptions& options,
                     Location where) {
  OperationScope at("conv_transpose", where);
  const detail::AbstractValue& y_type = detail::impl_of(y, "conv_transpose", where).type;
  const detail::AbstractValue& k_type = detail::impl_of(kernel, "conv_transpose", where).type;
  if (y_type.ndim() < 3 || k_type.ndim() != y_type.ndim())
    detail::raise("conv_transpose",
                  "needs y and a kernel of one rank (3 to 5), got " + y_type.to_string() + " and " + k_type.to_string(),
                  where);
  // The conv whose transpose this is reads x [N, spatial..., C], C = C/groups * groups.
  int64_t group_channels = options.channels_last ? k_type.shape[k_type.shape.size() - 2] : k_type.shape[1];
  Shape x_last = joined(joined({y_type.shape[0]}, spatial), {group_channels * options.groups});
  ConvShapes s = conv_shapes(x_last, kernel, options, "conv_transpose", where);
  Shape y_last = channels_last_shape(y, options.channels_last);
  Shape expected = joined(joined({s.windows.batch}, s.windows.out), {s.out_channels});
  if (y_last != expected)
    detail::raise("conv_transpose",
                  "y " + y_type.to_string() + " is not what conv makes of an input of spatial size " +
                      shape_string(spatial) + " with this kernel and these options (" + shape_string(expected) +
                      ", channels last)",
                  where, "pass the spatial size of the convolution's input");
  Array y_rows = reshape(options.channels_last ? y : channels_last(y, where),
                         {s.windows.batch * shape_size(s.windows.out), s.out_channels}, where);
  // The product's transpose: each output row back to its patch.
  int64_t taps = shape_size(s.window), g = s.groups, cg = s.group_channels, og = s.out_channels / g;
  int64_t rows = s.windows.batch * shape_size(s.windows.out);
  Array patch_rows;
  if (g == 1) {
    patch_rows = matmul(y_rows, transpose(reshape(s.kernel, {taps * cg, s.out_channels}, where), {}, where), where);
  } else {
    Array lhs = transpose(reshape(y_rows, {rows, g, og}, where), {1, 0, 2}, where);  // [G, M, Og]
    Array rhs = reshape(transpose(reshape(s.kernel, {taps, cg, g, og}, where), {2, 3, 0, 1}, where), {g, og, taps * cg},
                        where);                                                    // [G, Og, Kt*Cg]
    Array grouped = reshape(matmul(lhs, rhs, where), {g, rows, taps, cg}, where);  // [G, M, Kt, Cg]
    patch_rows = transpose(grouped, {1, 2, 0, 3}, where);                          // [M, Kt, G, Cg]
  }
  // Each patch element added back where it was read, then the padding cut off.
  const Windows& w = s.windows;
  Array updates = reshape(patch_rows, {w.batch, shape_size(w.out) * taps, w.channels}, where);
  Array positions = patch_positions(w, s.window, where);
  Array padded = scatter_add(zeros({w.batch, shape_size(w.padded), w.channels}, y_type.dtype, where), positions,
                             updates, 1, where);
  std::vector<int64_t> start{0}, stop{w.batch};
  for (size_t i = 0; i < w.sizes.size(); ++i) {
    start.push_back(w.pads[i].first);
    stop.push_back(w.pads[i].first + w.sizes[i]);
  }
  start.push_back(0);
  stop.push_back(w.channels);
  Array x = slice(reshape(padded, joined(joined({w.batch}, w.padded), {w.channels}), where), start, stop, {}, where);
  return options.channels_last ? x : channels_first(x, where);
}

namespace {

// Windows over the spatial axes of [N, spatial..., C] (channels_last) or
// [N, C, spatial...], reduced.
Array pool(const Array& x, std::vector<int64_t> window, const PoolOptions& options, WindowReduction reduction,
           const char* operation, Location where) {
  OperationScope at(operation, where);
  const detail::AbstractValue& type = detail::impl_of(x, operation, where).type;
  if (window.empty() || type.ndim() != static_cast<int64_t>(window.size()) + 2)
    detail::raise(operation,
                  "a window of " + std::to_string(window.size()) + " dimensions needs an input of " +
                      std::to_string(window.size() + 2) + ", got " + type.to_string(),
                  where, options.channels_last ? "input [N, spatial..., C]" : "input [N, C, spatial...]");
  Shape window_shape = per_dimension(window, window.size(), "window", operation, where);
  std::vector<int64_t> strides = options.strides.empty() ? window : options.strides;
  Windows w = windows_of(channels_last_shape(x, options.channels_last), window_shape, strides, {}, options.padding,
                         operation, where);
  Array input = options.channels_last ? x : channels_last(x, where);
  // Padding never wins a maximum or a minimum: the dtype's lowest or highest value.
  bool extreme = reduction == WindowReduction::max || reduction == WindowReduction::min;
  Scalar fill = !extreme ? Scalar(0) : detail::dispatch(type.dtype, [&]<class T>() -> Scalar {
    double sign = reduction == WindowReduction::max ? -1 : 1;
    if constexpr (detail::is_floating_element<T>) return Scalar(sign * std::numeric_limits<double>::infinity());
    else if constexpr (detail::is_complex_element<T>) return Scalar(0);  // refused below, by the extremes
    else if constexpr (std::is_same_v<T, bool>) return Scalar(sign > 0);
    else if (sign < 0) return Scalar(static_cast<int64_t>(std::numeric_limits<T>::lowest()));
    else return Scalar(std::numeric_limits<T>::max());
  });
  Array taps = patches(input, w, window_shape, fill, where).first;
  Array reduced;
  switch (reduction) {
    case WindowReduction::sum: reduced = sum(taps, 2, false, where); break;
    case WindowReduction::max: reduced = max(taps, 2, false, where); break;
    case WindowReduction::min: reduced = min(taps, 2, false, where); break;
    case WindowReduction::mean: reduced = mean(taps, 2, false, where); break;
  }
  Array result = reshape(reduced, joined(joined({w.batch}, w.out), {w.channels}), where);
  return options.channels_last ? result : channels_first(result, where);
}

}  // namespace

Array max_pool(const Array& x, std::vector<int64_t> window, const PoolOptions& options, Location where) {
  return pool(x, std::move(window), options, WindowReduction::max, "max_pool", where);
}

Array avg_pool(const Array& x, std::vector<int64_t> window, const PoolOptions& options, Location where) {
  return pool(x, std::move(window), options, WindowReduction::mean, "avg_pool", where);
}

Array reduce_window(const Array& x, WindowReduction reduction, std::vector<int64_t> window,
                    std::vector<int64_t> strides, const Padding& padding, Location where) {
  const Shape& shape = detail::impl_of(x, "reduce_window", where).type.shape;
  if (window.size() != shape.size() || (!strides.empty() && strides.size() != shape.size()))
    detail::raise("reduce_window",
                  "needs a window extent (and a stride, if any) per axis of " + shape_string(shape) + ", got " +
                      std::to_string(window.size()) + " extents and " + std::to_string(strides.size()) + " strides",
                  where, "give 1 for the axes the windows do not span");
  if (shape.empty()) return x;
  // Every axis is a spatial one of a batch of one image with one channel.
  Shape image = joined(joined({1}, shape), {1});
  PoolOptions options{.strides = strides.empty() ? std::vector<int64_t>(shape.size(), 1) : strides,
                      .padding = padding,
                      .channels_last = true};
  Array pooled = pool(reshape(x, image, where), std::move(window), options, reduction, "reduce_window", where);
  const Shape& out = detail::impl_of(pooled, "reduce_window", where).type.shape;
  return reshape(pooled, Shape(out.begin() + 1, out.end() - 1), where);
}

Array layer_norm(const Array& x, int64_t axis, double eps, Location where) {
  OperationScope at("layer_norm", where);
  Array v = ops::as_floating(x, detail::impl_of(x, "layer_norm", where).type, where);
  Array centered = v - mean(v, axis, true);
  return centered * rsqrt(mean(square(centered), axis, true) + eps);
}

Array rms_norm(const Array& x, int64_t axis, double eps, Location where) {
  OperationScope at("rms_norm", where);
  Array v = ops::as_floating(x, detail::impl_of(x, "rms_norm", where).type, where);
  return v * rsqrt(mean(square(v), axis, true) + eps);
}

Array gelu(const Array& x, bool approximate, Location where) {
  OperationScope at("gelu", where);
  Array v = ops::as_floating(x, detail::impl_of(x, "gelu", where).type, where);
  Array inner = approximate ? tanh((v + v * square(v) * 0.044715) * std::sqrt(2.0 / std::numbers::pi))
                            : erf(v * (1.0 / std::numbers::sqrt2));
  return 0.5 * v * (1.0 + inner);
}

Array silu(const Array& x, Location where) {
  OperationScope at("silu", where);
  Array v = ops::as_floating(x, detail::impl_of(x, "silu", where).type, where);
  return v * sigmoid(v);
}

// max(x, 0) + log1p(exp(-|x|)): exp never overflows, and log1p keeps the
// small tail exact.
Array softplus(const Array& x, Location where) {
  OperationScope at("softplus", where);
  Array v = ops::as_floating(x, detail::impl_of(x, "softplus", where).type, where);
  return maximum(v, 0.0) + log1p(exp(-abs(v)));
}

Array log_sigmoid(const Array& x, Location where) {
  OperationScope at("log_sigmoid", where);
  Array v = ops::as_floating(x, detail::impl_of(x, "log_sigmoid", where).type, where);
  return -softplus(-v);
}

}  // namespace kiln
