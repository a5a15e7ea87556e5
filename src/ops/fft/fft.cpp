// The fft family: three primitives over the LAST axis, unnormalized —
//   fft   complex [..., n] -> complex [..., n]; ints {inverse}
//   rfft  real [..., n] -> complex [..., n/2 + 1]
//   irfft complex [..., n/2 + 1] -> real [..., n]; ints {n}
// and numpy.fft's functions composed from them (moving an axis last, padding
// or cutting to n, scaling by the norm). Working on the last axis makes
// batching free (a batch axis is one more leading axis) and keeps every
// derivative a transform of its own: the unnormalized transforms are
// symmetric matrices, so each is its own transpose (JAX's rules, which give
// the cotangent of a real input the real part and conjugate irfft's).
// Kernels are KISS FFT's (BSD, Debian's libkissfft-dev, header-only C++
// template), run in double precision for every dtype, as NumPy's pocketfft.
#include "kiln/fft.h"

#include <cmath>
#include <complex>
#include <kissfft.hh>
#include <map>
#include <memory>

#include "core/dispatch.h"
#include "core/error_format.h"
#include "core/location_scope.h"
#include "ops/common/apply.h"
#include "ops/common/axes.h"
#include "ops/common/rules.h"

namespace kiln {
namespace ops {
namespace {

using Complex = std::complex<double>;

DType complex_of(DType real) { return real == DType::f64 ? DType::c128 : DType::c64; }
DType real_of(DType complex) { return complex == DType::c128 ? DType::f64 : DType::f32; }

const AbstractValue& operand(const Node& node, std::span<const AbstractValue* const> inputs) {
  const char* name = ir::primitive_name(node.op).data();
  if (inputs.size() != 1) detail::raise(name, "takes 1 operand, got " + std::to_string(inputs.size()), node.where);
  const AbstractValue& x = *inputs[0];
  if (x.ndim() == 0)
    detail::raise(name, "needs an array of at least one dimension, got " + x.to_string(), node.where,
                  "reshape the scalar to [1] first");
  return x;
}

AbstractValue infer_fft(const Node& node, std::span<const AbstractValue* const> inputs) {
  const AbstractValue& x = operand(node, inputs);
  if (!is_complex(x.dtype))
    detail::raise("fft", "transforms complex values, got " + x.to_string(), node.where,
                  "convert with astype(x, c64) first (kiln::fft::fft does)");
  return {x.dtype, false, x.shape};
}

AbstractValue infer_rfft(const Node& node, std::span<const AbstractValue* const> inputs) {
  const AbstractValue& x = operand(node, inputs);
  if (x.dtype != DType::f32 && x.dtype != DType::f64)
    detail::raise("rfft", "transforms f32 or f64 values, got " + x.to_string(), node.where,
                  "convert with astype first (kiln::fft::rfft does)");
  Shape shape = x.shape;
  shape.back() = shape.back() / 2 + 1;
  return {complex_of(x.dtype), false, shape};
}

AbstractValue infer_irfft(const Node& node, std::span<const AbstractValue* const> inputs) {
  const AbstractValue& x = operand(node, inputs);
  int64_t n = node.attrs.ints.at(0);
  if (!is_complex(x.dtype) || n < 1 || x.shape.back() != n / 2 + 1)
    detail::raise("irfft",
                  "needs n/2 + 1 = " + std::to_string(n / 2 + 1) + " complex frequencies for n=" + std::to_string(n) +
                      ", got " + x.to_string(),
                  node.where, "kiln::fft::irfft pads or cuts the frequencies to fit");
  Shape shape = x.shape;
  shape.back() = n;
  return {real_of(x.dtype), false, shape};
}

std::string describe_fft(const Node& node) { return node.attrs.ints.at(0) ? "inverse" : ""; }
std::string describe_irfft(const Node& node) { return "n=" + std::to_string(node.attrs.ints.at(0)); }

// One transform plan per length, direction and thread: the twiddle factors
// are computed once per thread. Not one per process: a KISS FFT plan keeps a
// mutable scratch buffer for radices above 5 (any length with a prime factor
// of 7 or more), so two threads transforming with one plan corrupt each
// other's rows.
const kissfft<double>& plan(int64_t n, bool inverse) {
  thread_local std::map<std::pair<int64_t, bool>, std::unique_ptr<kissfft<double>>> plans;
  auto& found = plans[{n, inverse}];
  if (!found) found = std::make_unique<kissfft<double>>(static_cast<size_t>(n), inverse);
  return *found;
}

// Reads each row of `lines` rows of `in_length` elements as complex numbers
// (zero-padded to `length`), transforms it, and hands the result to `write`.
template <class Read, class Write>
void transform_rows(int64_t rows, int64_t length, bool inverse, Read read, Write write) {
  if (length == 0) return;
  const kissfft<double>& fft = plan(length, inverse);
  std::vector<Complex> in(static_cast<size_t>(length)), out(static_cast<size_t>(length));
  for (int64_t row = 0; row < rows; ++row) {
    read(row, in.data());
    fft.transform(in.data(), out.data());
    write(row, out.data());
  }
}

Array evaluate_fft(const Node& node, std::span<const Array> inputs) {
  const detail::ArrayImpl& x = *detail::impl(inputs[0]);
  Array result = detail::allocate(node.type);
  int64_t n = x.type.shape.back(), rows = n == 0 ? 0 : x.type.size() / n;
  detail::dispatch(x.type.dtype, [&]<class T>() {
    if constexpr (ComplexNumber<T>) {
      const T* source = x.data<T>();
      T* target = detail::impl(result)->mutable_data<T>();
      transform_rows(
          rows, n, node.attrs.ints.at(0) != 0,
          [&](int64_t row, Complex* line) {
            for (int64_t k = 0; k < n; ++k) line[k] = Complex(source[row * n + k]);
          },
          [&](int64_t row, const Complex* line) {
            for (int64_t k = 0; k < n; ++k) target[row * n + k] = T(line[k]);
          });
    }
  });
  return result;
}

Array evaluate_rfft(const Node& node, std::span<const Array> inputs) {
  const detail::ArrayImpl& x = *detail::impl(inputs[0]);
  Array result = detail::allocate(node.type);
  int64_t n = x.type.shape.back(), half = node.type.shape.back(), rows = n == 0 ? 0 : x.type.size() / n;
  detail::dispatch(x.type.dtype, [&]<class T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      using Out = std::complex<T>;
      const T* source = x.data<T>();
      Out* target = detail::impl(result)->mutable_data<Out>();
      transform_rows(
          rows, n, false,
          [&](int64_t row, Complex* line) {
            for (int64_t k = 0; k < n; ++k) line[k] = Complex(static_cast<double>(source[row * n + k]), 0.0);
          },
          [&](int64_t row, const Complex* line) {
            for (int64_t k = 0; k < half; ++k) target[row * half + k] = Out(line[k]);
          });
    }
  });
  return result;
}

// The Hermitian extension of the n/2 + 1 frequencies, transformed back: the
// imaginary parts of the zero (and, for even n, the Nyquist) frequency are
// ignored, as NumPy's irfft ignores them.
Array evaluate_irfft(const Node& node, std::span<const Array> inputs) {
  const detail::ArrayImpl& x = *detail::impl(inputs[0]);
  Array result = detail::allocate(node.type);
  int64_t n = node.type.shape.back(), half = x.type.shape.back(), rows = x.type.size() / half;
  detail::dispatch(x.type.dtype, [&]<class T>() {
    if constexpr (ComplexNumber<T>) {
      using Real = typename T::value_type;
      const T* source = x.data<T>();
      Real* target = detail::impl(result)->mutable_data<Real>();
      transform_rows(
          rows, n, true,
          [&](int64_t row, Complex* line) {
            const T* frequencies = source + row * half;
            for (int64_t k = 0; k < n; ++k) {
              Complex value = k < half ? Complex(frequencies[k]) : std::conj(Complex(frequencies[n - k]));
              if (k == 0 || 2 * k == n) value = Complex(value.real(), 0.0);
              line[k] = value;
            }
          },
          [&](int64_t row, const Complex* line) {
            for (int64_t k = 0; k < n; ++k) target[row * n + k] = static_cast<Real>(line[k].real());
          });
    }
  });
  return result;
}

Array apply_fft(const Array& x, bool inverse) {
  ir::Attributes attrs;
  attrs.ints = {inverse ? 1 : 0};
  return detail::apply(Primitive::fft, {x}, std::move(attrs), Location::current());
}
Array apply_rfft(const Array& x) { return detail::apply(Primitive::rfft, {x}, {}, Location::current()); }
Array apply_irfft(const Array& x, int64_t n) {
  ir::Attributes attrs;
  attrs.ints = {n};
  return detail::apply(Primitive::irfft, {x}, std::move(attrs), Location::current());
}

// `x` along its last axis padded with zeros or cut to `length`.
Array fit_last(const Array& x, int64_t length) {
  int64_t have = x.shape(-1);
  if (have == length) return x;
  size_t rank = static_cast<size_t>(x.ndim());
  if (have > length) {
    std::vector<int64_t> start(rank, 0), stop = x.shape();
    stop.back() = length;
    return slice(x, start, stop);
  }
  std::vector<int64_t> lo(rank, 0), hi(rank, 0);
  hi.back() = length - have;
  return pad(x, lo, hi);
}

// The transforms are linear: the tangent goes through the same transform.
Array fft_jvp(const Node& node, std::span<const Array>, const Array&, std::span<const Array> tangents) {
  return apply_fft(tangents[0], node.attrs.ints.at(0) != 0);
}
Array rfft_jvp(const Node&, std::span<const Array>, const Array&, std::span<const Array> tangents) {
  return apply_rfft(tangents[0]);
}
Array irfft_jvp(const Node& node, std::span<const Array>, const Array&, std::span<const Array> tangents) {
  return apply_irfft(tangents[0], node.attrs.ints.at(0));
}

// The DFT matrix is symmetric: the transpose of each c2c transform is itself.
std::vector<Array> fft_vjp(const Node& node, std::span<const Array>, const Array&, const Array& cotangent) {
  return {apply_fft(cotangent, node.attrs.ints.at(0) != 0)};
}

// rfft is the first n/2 + 1 rows of the DFT of a real vector: its transpose
// puts the cotangent back in a length-n vector of zeros, transforms it, and
// keeps the real part (the transpose of making a real value complex).
std::vector<Array> rfft_vjp(const Node&, std::span<const Array> inputs, const Array&, const Array& cotangent) {
  Array full = apply_fft(fit_last(cotangent, inputs[0].shape(-1)), false);
  return {real(full)};
}

// irfft counts each frequency strictly between 0 and Nyquist twice (itself and
// its conjugate): the transpose is rfft weighted 1, 2, ..., 2, (1), and
// conjugated, as JAX's rule for a complex-to-real map.
std::vector<Array> irfft_vjp(const Node& node, std::span<const Array>, const Array&, const Array& cotangent) {
  int64_t n = node.attrs.ints.at(0), half = n / 2 + 1;
  Array frequencies = apply_rfft(cotangent);
  std::vector<float> weights(static_cast<size_t>(half), 2.0f);
  weights.front() = 1.0f;
  if (n % 2 == 0) weights.back() = 1.0f;
  return {conj(frequencies * array(weights))};
}

// A batch axis is a leading axis: the transform of the last axis is unchanged.
Array batch_last_axis(const Node& node, std::span<const Array> inputs, std::span<const char>, int64_t) {
  return detail::apply(node.op, {inputs[0]}, node.attrs, node.where);
}

constexpr const char* fft_waiver = "KISS FFT's transform: the native backend calls the reference kernel";

}  // namespace

void register_fft_rules(RuleTable& table) {
  auto row = [&](Primitive op, PrimitiveRules rules) {
    rules.batch = &batch_last_axis;
    rules.fusion = Fusion::kernel;
    rules.cost = 16;
    rules.no_native_lowering = fft_waiver;
    table[static_cast<size_t>(op)] = rules;
  };
  row(Primitive::fft,
      {.infer = &infer_fft, .evaluate = &evaluate_fft, .describe = &describe_fft, .vjp = &fft_vjp, .jvp = &fft_jvp});
  row(Primitive::rfft, {.infer = &infer_rfft, .evaluate = &evaluate_rfft, .vjp = &rfft_vjp, .jvp = &rfft_jvp});
  row(Primitive::irfft, {.infer = &infer_irfft,
                         .evaluate = &evaluate_irfft,
                         .describe = &describe_irfft,
                         .vjp = &irfft_vjp,
                         .jvp = &irfft_jvp});
}

}  // namespace ops

namespace fft {
namespace {

using ops::apply_fft;
using ops::apply_irfft;
using ops::apply_rfft;
using ops::fit_last;

// The factor a transform of length n gets: forward transforms are unscaled
// under `backward`, inverse ones under `forward`, and both get 1/sqrt(n) under `ortho`.
double scale(Norm norm, int64_t n, bool inverse) {
  if (n == 0) return 1.0;
  if (norm == Norm::ortho) return 1.0 / std::sqrt(static_cast<double>(n));
  bool scaled = inverse ? norm == Norm::backward : norm == Norm::forward;
  return scaled ? 1.0 / static_cast<double>(n) : 1.0;
}

Array scaled(const Array& x, double factor) { return factor == 1.0 ? x : x * factor; }

Array as_complex(const Array& x) {
  DType dtype = x.dtype();
  if (is_complex(dtype)) return x;
  return astype(x, dtype == DType::f64 ? DType::c128 : DType::c64);
}

Array as_real(const Array& x, const char* operation, Location where) {
  DType dtype = x.dtype();
  if (is_complex(dtype))
    detail::raise(operation, "transforms real values, got " + std::string(dtype_name(dtype)) + shape_string(x.shape()),
                  where, "use kiln::fft::fft for complex input, or take kiln::real(x) first");
  return dtype == DType::f64 ? x : astype(x, DType::f32);
}

int64_t checked_length(std::optional<int64_t> n, int64_t fallback, const char* operation, Location where) {
  int64_t length = n.value_or(fallback);
  if (length < 1)
    detail::raise(operation, "needs a transform length of at least 1, got n=" + std::to_string(length), where,
                  n ? "pass a positive n" : "the transformed axis is empty: give n explicitly");
  return length;
}

// `transform` applied along `axis` (moved last and back).
template <class Transform>
Array along(const Array& x, int64_t axis, const char* operation, Location where, Transform transform) {
  if (x.ndim() == 0)
    detail::raise(operation, "needs an array of at least one dimension, got a scalar", where,
                  "reshape the scalar to [1] first");
  int64_t last = x.ndim() - 1;
  axis = ops::normalize_axis(axis, x.ndim(), operation, x.shape(), where);
  if (axis == last) return transform(x);
  return moveaxis(transform(moveaxis(x, axis, last)), last, axis);
}

Array complex_transform(const Array& x, std::optional<int64_t> n, int64_t axis, Norm norm, bool inverse,
                        const char* operation, Location where) {
  return along(x, axis, operation, where, [&](const Array& v) {
    int64_t length = checked_length(n, v.shape(-1), operation, where);
    return scaled(apply_fft(fit_last(as_complex(v), length), inverse), scale(norm, length, inverse));
  });
}

Array real_forward(const Array& x, std::optional<int64_t> n, int64_t axis, Norm norm, const char* operation,
                   Location where) {
  return along(x, axis, operation, where, [&](const Array& v) {
    int64_t length = checked_length(n, v.shape(-1), operation, where);
    return scaled(apply_rfft(fit_last(as_real(v, operation, where), length)), scale(norm, length, false));
  });
}

Array real_inverse(const Array& x, std::optional<int64_t> n, int64_t axis, Norm norm, const char* operation,
                   Location where) {
  return along(x, axis, operation, where, [&](const Array& v) {
    int64_t length = checked_length(n, 2 * (v.shape(-1) - 1), operation, where);
    return scaled(apply_irfft(fit_last(as_complex(v), length / 2 + 1), length), scale(norm, length, true));
  });
}

// The axes and lengths of an n-dimensional transform, as NumPy resolves them.
std::pair<std::vector<int64_t>, std::vector<std::optional<int64_t>>> plan_axes(
    const Array& x, const std::optional<Shape>& s, const std::optional<std::vector<int64_t>>& axes,
    const char* operation, Location where) {
  std::vector<int64_t> chosen;
  if (axes) {
    chosen = *axes;
  } else {
    int64_t count = s ? static_cast<int64_t>(s->size()) : x.ndim();
    for (int64_t k = x.ndim() - count; k < x.ndim(); ++k) chosen.push_back(k);
  }
  if (s && s->size() != chosen.size())
    detail::raise(operation,
                  "s has " + std::to_string(s->size()) + " lengths for " + std::to_string(chosen.size()) + " axes",
                  where, "give one length per transformed axis");
  std::vector<std::optional<int64_t>> lengths(chosen.size());
  for (size_t k = 0; k < chosen.size(); ++k) {
    chosen[k] = ops::normalize_axis(chosen[k], x.ndim(), operation, x.shape(), where);
    if (s) lengths[k] = (*s)[k];
  }
  return {chosen, lengths};
}

// The complex transform along each of the axes, the last first (NumPy's order).
Array complex_transforms(const Array& x, const std::optional<Shape>& s, const std::optional<std::vector<int64_t>>& axes,
                         Norm norm, bool inverse, const char* operation, Location where) {
  auto [chosen, lengths] = plan_axes(x, s, axes, operation, where);
  Array result = as_complex(x);
  for (size_t k = chosen.size(); k-- > 0;)
    result = complex_transform(result, lengths[k], chosen[k], norm, inverse, operation, where);
  return result;
}

}  // namespace

Array fft(const Array& x, std::optional<int64_t> n, int64_t axis, Norm norm, Location where) {
  detail::OperationScope scope("fft", where);
  return complex_transform(x, n, axis, norm, false, "fft", where);
}

Array ifft(const Array& x, std::optional<int64_t> n, int64_t axis, Norm norm, Location where) {
  detail::OperationScope scope("ifft", where);
  return complex_transform(x, n, axis, norm, true, "ifft", where);
}

Array rfft(const Array& x, std::optional<int64_t> n, int64_t axis, Norm norm, Location where) {
  detail::OperationScope scope("rfft", where);
  return real_forward(x, n, axis, norm, "rfft", where);
}

Array irfft(const Array& x, std::optional<int64_t> n, int64_t axis, Norm norm, Location where) {
  detail::OperationScope scope("irfft", where);
  return real_inverse(x, n, axis, norm, "irfft", where);
}

// hfft(x) = irfft(conj(x)) with the forward and inverse norms swapped (NumPy's).
Array hfft(const Array& x, std::optional<int64_t> n, int64_t axis, Norm norm, Location where) {
  detail::OperationScope scope("hfft", where);
  Norm swapped = norm == Norm::backward ? Norm::forward : norm == Norm::forward ? Norm::backward : norm;
  return real_inverse(conj(as_complex(x)), n, axis, swapped, "hfft", where);
}

Array ihfft(const Array& x, std::optional<int64_t> n, int64_t axis, Norm norm, Location where) {
  detail::OperationScope scope("ihfft", where);
  Norm swapped = norm == Norm::backward ? Norm::forward : norm == Norm::forward ? Norm::backward : norm;
  return conj(real_forward(x, n, axis, swapped, "ihfft", where));
}

Array fftn(const Array& x, std::optional<Shape> s, std::optional<std::vector<int64_t>> axes, Norm norm,
           Location where) {
  detail::OperationScope scope("fftn", where);
  return complex_transforms(x, s, axes, norm, false, "fftn", where);
}

Array ifftn(const Array& x, std::optional<Shape> s, std::optional<std::vector<int64_t>> axes, Norm norm,
            Location where) {
  detail::OperationScope scope("ifftn", where);
  return complex_transforms(x, s, axes, norm, true, "ifftn", where);
}

Array rfftn(const Array& x, std::optional<Shape> s, std::optional<std::vector<int64_t>> axes, Norm norm,
            Location where) {
  detail::OperationScope scope("rfftn", where);
  auto [chosen, lengths] = plan_axes(x, s, axes, "rfftn", where);
  if (chosen.empty()) return as_complex(x);
  Array result = real_forward(x, lengths.back(), chosen.back(), norm, "rfftn", where);
  for (size_t k = chosen.size() - 1; k-- > 0;)
    result = complex_transform(result, lengths[k], chosen[k], norm, false, "rfftn", where);
  return result;
}

Array irfftn(const Array& x, std::optional<Shape> s, std::optional<std::vector<int64_t>> axes, Norm norm,
             Location where) {
  detail::OperationScope scope("irfftn", where);
  auto [chosen, lengths] = plan_axes(x, s, axes, "irfftn", where);
  if (chosen.empty()) return real(x);
  Array result = as_complex(x);
  for (size_t k = 0; k + 1 < chosen.size(); ++k)
    result = complex_transform(result, lengths[k], chosen[k], norm, true, "irfftn", where);
  return real_inverse(result, lengths.back(), chosen.back(), norm, "irfftn", where);
}

Array fftfreq(int64_t n, double d, DType dtype, Location where) {
  detail::OperationScope scope("fftfreq", where);
  if (n < 1) detail::raise("fftfreq", "needs n >= 1, got " + std::to_string(n), where);
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k)
    values[static_cast<size_t>(k)] = static_cast<double>(k < (n + 1) / 2 ? k : k - n) / (d * n);
  return astype(array(values), dtype);
}

Array rfftfreq(int64_t n, double d, DType dtype, Location where) {
  detail::OperationScope scope("rfftfreq", where);
  if (n < 1) detail::raise("rfftfreq", "needs n >= 1, got " + std::to_string(n), where);
  std::vector<double> values(static_cast<size_t>(n / 2 + 1));
  for (size_t k = 0; k < values.size(); ++k) values[k] = static_cast<double>(k) / (d * n);
  return astype(array(values), dtype);
}

namespace {
Array shift(const Array& x, const Axes& axes, bool inverse, const char* operation, Location where) {
  std::vector<int64_t> chosen = ops::normalize_axes(axes, x.ndim(), operation, x.shape(), where);
  Array result = x;
  for (int64_t axis : chosen) {
    int64_t extent = x.shape(axis);
    result = roll(result, inverse ? -(extent / 2) : extent / 2, axis);
  }
  return result;
}
}  // namespace

Array fftshift(const Array& x, Axes axes, Location where) {
  detail::OperationScope scope("fftshift", where);
  return shift(x, axes, false, "fftshift", where);
}

Array ifftshift(const Array& x, Axes axes, Location where) {
  detail::OperationScope scope("ifftshift", where);
  return shift(x, axes, true, "ifftshift", where);
}

}  // namespace fft
}  // namespace kiln
