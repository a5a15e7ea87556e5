// Neural-network operations: convolution (1-D, 2-D, 3-D; strides, padding,
// dilation, groups; channels last or first) and its transpose, max and
// average pooling, and the fused activations and normalizations.
//
//   Array y = kiln::conv(x, w, {.strides = {2, 2}, .padding = kiln::Padding::same()});   // x [N,H,W,C], w [KH,KW,C,O]
//   Array z = kiln::conv(x, w, {.padding = kiln::Padding({{1, 1}, {1, 1}}), .channels_last = false});  // PyTorch's
//   layout Array p = kiln::max_pool(y, {2, 2});
//
// Every one is a composite of primitives: it traces, compiles, differentiates
// and batches (vmap) like the primitives it is made of. A convolution gathers
// the input's patches in one pass (im2col) and multiplies them by the kernel
// in one matrix product (OpenBLAS); pooling reduces the same patches.
#pragma once

#include <utility>
#include <vector>

#include "kiln/ops.h"

namespace kiln {

/// Padding of the spatial dimensions: none ("valid"), as much as keeps
/// ceil(size / stride) outputs ("same", the extra element after, as JAX and
/// TensorFlow do), or explicit (before, after) pairs, one per spatial dimension.
class Padding {
 public:
  static Padding valid() { return Padding(Kind::valid); }
  static Padding same() { return Padding(Kind::same); }
  Padding(std::vector<std::pair<int64_t, int64_t>> pairs) : kind_(Kind::explicit_pairs), pairs_(std::move(pairs)) {}
  /// The (before, after) pairs for inputs of `sizes` read by windows of
  /// `windows` (dilated extents) at `strides`.
  std::vector<std::pair<int64_t, int64_t>> pairs(const Shape& sizes, const Shape& windows, const Shape& strides,
                                                 const char* operation, Location where) const;

 private:
  enum class Kind { valid, same, explicit_pairs };
  explicit Padding(Kind kind) : kind_(kind) {}
  Kind kind_;
  std::vector<std::pair<int64_t, int64_t>> pairs_;
};

struct ConvOptions {
  std::vector<int64_t> strides;  // per spatial dimension; default 1
  Padding padding = Padding::valid();
  std::vector<int64_t> dilation;  // of the kernel, per spatial dimension; default 1
  int64_t groups = 1;             // input and output channels split into this many independent groups
  /// true: x [N, spatial..., C], kernel [spatial..., C/groups, O] (JAX, TensorFlow);
  /// false: x [N, C, spatial...], kernel [O, C/groups, spatial...] (PyTorch).
  bool channels_last = true;
};

/// Cross-correlation (as every framework's conv) of a batch of images with a kernel.
Array conv(const Array& x, const Array& kernel, const ConvOptions& options = {}, Location where = Location::current());

/// The transpose of conv with respect to its input (a "deconvolution"):
/// conv_transpose(y, kernel, options, x_spatial) has the shape of the conv's
/// input x, with spatial size `spatial` (several inputs sizes give one output size
/// when strides exceed 1). The kernel is conv's: [spatial..., C/groups, O]
/// (channels last) or [O, C/groups, spatial...], and y has O channels.
Array conv_transpose(const Array& y, const Array& kernel, const Shape& spatial, const ConvOptions& options = {},
                     Location where = Location::current());

struct PoolOptions {
  std::vector<int64_t> strides;  // default: the window (non-overlapping)
  Padding padding = Padding::valid();
  bool channels_last = true;
};
/// The largest element of each window (padding never wins).
Array max_pool(const Array& x, std::vector<int64_t> window, const PoolOptions& options = {},
               Location where = Location::current());
/// The mean of each window, padding counted as zeros (PyTorch's default).
Array avg_pool(const Array& x, std::vector<int64_t> window, const PoolOptions& options = {},
               Location where = Location::current());

/// How reduce_window combines the elements of a window.
enum class WindowReduction { sum, max, min, mean };
/// lax.reduce_window: one window per position over every axis of x (a window
/// extent of 1 leaves an axis as it is), moved by `strides` (default 1),
/// with `padding` that never wins a max or min and counts as 0 in a sum or
/// mean. Pooling in any layout is a reduce_window with extent 1 on the batch
/// and channel axes.
Array reduce_window(const Array& x, WindowReduction reduction, std::vector<int64_t> window,
                    std::vector<int64_t> strides = {}, const Padding& padding = Padding::valid(),
                    Location where = Location::current());

/// (x - mean) / sqrt(var + eps) over `axis`, as torch.nn.functional.layer_norm
/// without its affine part (multiply and add your own).
Array layer_norm(const Array& x, int64_t axis = -1, double eps = 1e-5, Location where = Location::current());
/// x / sqrt(mean(x^2) + eps) over `axis`.
Array rms_norm(const Array& x, int64_t axis = -1, double eps = 1e-6, Location where = Location::current());
/// x * Phi(x); `approximate`: the tanh form (GELU's paper, jax.nn.gelu's default).
Array gelu(const Array& x, bool approximate = false, Location where = Location::current());
/// x * sigmoid(x).
Array silu(const Array& x, Location where = Location::current());
/// log(1 + exp(x)), without overflow.
Array softplus(const Array& x, Location where = Location::current());
/// log(sigmoid(x)), without underflow.
Array log_sigmoid(const Array& x, Location where = Location::current());

}  // namespace kiln
