// Discrete Fourier transforms with numpy.fft's names and semantics (the
// Array API's fft extension): complex results (c64 from f32 and c64 inputs,
// c128 from f64 and c128), `n` pads with zeros or truncates the transformed
// axis, `norm` places the 1/n factor. Every transform traces, compiles,
// differentiates (JAX's convention for complex values) and batches under vmap.
#pragma once

#include <optional>
#include <vector>

#include "kiln/ops.h"

namespace kiln::fft {

/// Where the 1/n factor goes: on the inverse (NumPy's default), split as
/// 1/sqrt(n) on both, or on the forward transform.
enum class Norm { backward, ortho, forward };

Array fft(const Array& x, std::optional<int64_t> n = std::nullopt, int64_t axis = -1, Norm norm = Norm::backward,
          Location where = Location::current());
Array ifft(const Array& x, std::optional<int64_t> n = std::nullopt, int64_t axis = -1, Norm norm = Norm::backward,
           Location where = Location::current());
/// The transform of real input: the n/2 + 1 non-negative frequencies.
Array rfft(const Array& x, std::optional<int64_t> n = std::nullopt, int64_t axis = -1, Norm norm = Norm::backward,
           Location where = Location::current());
/// The inverse of rfft: n real values (default 2 * (m - 1) for m frequencies).
Array irfft(const Array& x, std::optional<int64_t> n = std::nullopt, int64_t axis = -1, Norm norm = Norm::backward,
            Location where = Location::current());
/// The transform of a signal with Hermitian symmetry (real spectrum), and its inverse.
Array hfft(const Array& x, std::optional<int64_t> n = std::nullopt, int64_t axis = -1, Norm norm = Norm::backward,
           Location where = Location::current());
Array ihfft(const Array& x, std::optional<int64_t> n = std::nullopt, int64_t axis = -1, Norm norm = Norm::backward,
            Location where = Location::current());

/// Over several axes (default: all, or the last len(s)); `s` gives each axis's length.
Array fftn(const Array& x, std::optional<Shape> s = std::nullopt,
           std::optional<std::vector<int64_t>> axes = std::nullopt, Norm norm = Norm::backward,
           Location where = Location::current());
Array ifftn(const Array& x, std::optional<Shape> s = std::nullopt,
            std::optional<std::vector<int64_t>> axes = std::nullopt, Norm norm = Norm::backward,
            Location where = Location::current());
/// rfft over the last of `axes`, then fft over the others.
Array rfftn(const Array& x, std::optional<Shape> s = std::nullopt,
            std::optional<std::vector<int64_t>> axes = std::nullopt, Norm norm = Norm::backward,
            Location where = Location::current());
Array irfftn(const Array& x, std::optional<Shape> s = std::nullopt,
             std::optional<std::vector<int64_t>> axes = std::nullopt, Norm norm = Norm::backward,
             Location where = Location::current());

/// The sample frequencies of an n-point transform with sample spacing d:
/// [0, 1, ..., n/2 - 1, -n/2, ..., -1] / (d n) (NumPy's order).
Array fftfreq(int64_t n, double d = 1.0, DType dtype = DType::f32, Location where = Location::current());
/// Those of rfft: [0, 1, ..., n/2] / (d n).
Array rfftfreq(int64_t n, double d = 1.0, DType dtype = DType::f32, Location where = Location::current());
/// The zero frequency moved to the middle of each of `axes` (default all), and back.
Array fftshift(const Array& x, Axes axes = Axes::all(), Location where = Location::current());
Array ifftshift(const Array& x, Axes axes = Axes::all(), Location where = Location::current());

}  // namespace kiln::fft
