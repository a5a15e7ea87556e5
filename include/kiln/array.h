// Array: an immutable n-dimensional value with shared storage, or — inside a
// trace — a placeholder (tracer) that records the operations applied to it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <source_location>
#include <vector>

#include "kiln/dtype.h"

namespace kiln {

/// Where the user wrote an operation. Every public function takes one as its
/// last, defaulted argument so errors and printed IR can name the user's line.
/// It reads like std::source_location, and can also be made for a line of
/// another language calling kiln (the Python package names the user's Python
/// file and line): `file` and `function` must outlive every graph and error
/// that may name them (string literals, or strings interned for the process).
class Location {
 public:
  constexpr Location() = default;
  constexpr Location(const char* file, const char* function, uint32_t line, uint32_t column = 0)
      : file_(file), function_(function), line_(line), column_(column) {}
  constexpr Location(const std::source_location& where)  // NOLINT: implicit, a C++ line is a Location
      : file_(where.file_name()), function_(where.function_name()), line_(where.line()), column_(where.column()) {}
  /// The caller's line: used as a defaulted argument, it names the line of
  /// the outermost call, as std::source_location::current() does.
  static constexpr Location current(std::source_location where = std::source_location::current()) noexcept {
    return Location(where);
  }

  constexpr const char* file_name() const noexcept { return file_; }
  constexpr const char* function_name() const noexcept { return function_; }
  constexpr uint32_t line() const noexcept { return line_; }
  constexpr uint32_t column() const noexcept { return column_; }

 private:
  const char* file_ = "";
  const char* function_ = "";
  uint32_t line_ = 0;
  uint32_t column_ = 0;
};

class Array;
class Index;        // kiln/ops.h
class IndexUpdate;  // kiln/ops.h

namespace detail {
// Internal to the library: what a handle points at, and the library's way to it.
struct ArrayImpl;
struct ArrayAccess;
}  // namespace detail

class Array {
 public:
  /// An empty handle; any operation on it throws kiln::Error.
  Array() = default;

  // The location is the caller's, for the error on an empty or donated handle.
  DType dtype(Location where = Location::current()) const;
  const Shape& shape(Location where = Location::current()) const;
  int64_t shape(int64_t axis, Location where = Location::current()) const;  // negative axes count from the end
  int64_t ndim(Location where = Location::current()) const;
  int64_t size(Location where = Location::current()) const;
  /// True for arrays born from C++ numbers: they adopt the other operand's dtype.
  bool weak_type(Location where = Location::current()) const;
  /// True for a placeholder recorded by a trace (inside jit, grad, ...).
  bool is_tracer() const;
  bool defined() const { return impl_ != nullptr; }

  // item and to_vector are compiled into the library for every Element type.

  /// The single element as a host value. Throws ConcretizationError on a tracer.
  template <Element T>
  T item(Location where = Location::current()) const;
  /// All elements in row-major order, converted to T.
  template <Element T>
  std::vector<T> to_vector(Location where = Location::current()) const;

  /// Waits until the work computing this array (queued by a jitted call or
  /// an eager operation: kiln dispatches asynchronously) has run, and
  /// rethrows its error if it failed; returns the array. Reading elements
  /// waits by itself: this is for timing and for surfacing errors at a
  /// chosen line.
  const Array& block_until_ready(Location where = Location::current()) const;

  /// Where the array's elements are: "cpu", or "cuda" for an array a
  /// function jitted for the GPU returned, or to_device moved there. Reading
  /// a GPU array's elements on the host (item, to_vector, an eager
  /// operation) copies them to the host once.
  std::string device(Location where = Location::current()) const;

  /// JAX's x.at[...]: x.at({0, Slice{1, 3}, indices}).set(values) (see IndexUpdate in kiln/ops.h).
  IndexUpdate at(std::vector<Index> indices) const;

 private:
  friend struct detail::ArrayAccess;
  explicit Array(std::shared_ptr<detail::ArrayImpl> impl) : impl_(std::move(impl)) {}

  std::shared_ptr<detail::ArrayImpl> impl_;
};

std::ostream& operator<<(std::ostream& out, const Array& array);

/// The array's elements on `device` ("cpu" or "cuda"): `x` itself when it
/// is there, else a copy. A function jitted for the GPU reads arguments on
/// the GPU in place and copies others there at every call: move what each
/// step reads (parameters, optimizer state) to the GPU once.
Array to_device(const Array& x, const std::string& device, Location where = Location::current());

/// Waits for all work queued so far (jitted calls and eager operations
/// return as soon as it is queued), then rethrows the first error queued work
/// raised since the last synchronize. KILN_DISPATCH=sync turns queues off.
void synchronize();

// ---- Creation ---------------------------------------------------------------

/// An array holding `data` (row-major) with the given shape (compiled into
/// the library for every Element type).
template <Element T>
Array array(const std::vector<T>& data, Shape shape, Location where = Location::current());
template <Element T>
Array array(std::initializer_list<T> data, Shape shape, Location where = Location::current()) {
  return array(std::vector<T>(data), std::move(shape), where);
}
/// A 1-d array.
template <Element T>
Array array(std::initializer_list<T> data, Location where = Location::current()) {
  return array(std::vector<T>(data), Shape{static_cast<int64_t>(data.size())}, where);
}
template <Element T>
Array array(const std::vector<T>& data, Location where = Location::current()) {
  return array(data, Shape{static_cast<int64_t>(data.size())}, where);
}

/// A 0-d array of the C++ type's dtype (`scalar(2.0)` is f64, `scalar(2.0f)` f32).
template <Element T>
Array scalar(T value, Location where = Location::current()) {
  return array(std::vector<T>{value}, Shape{}, where);
}

Array zeros(Shape shape, DType dtype = DType::f32, Location where = Location::current());
Array ones(Shape shape, DType dtype = DType::f32, Location where = Location::current());
/// Filled with `value`; the dtype defaults to the value's kind (f32, i32, bool).
Array full(Shape shape, Scalar value, std::optional<DType> dtype = std::nullopt, Location where = Location::current());
Array zeros_like(const Array& x, Location where = Location::current());
Array ones_like(const Array& x, Location where = Location::current());
Array full_like(const Array& x, Scalar value, Location where = Location::current());
/// [0, stop) with step 1. Integer bounds give i32, floating bounds f32.
Array arange(Scalar stop, Location where = Location::current());
Array arange(Scalar start, Scalar stop, Scalar step = 1, std::optional<DType> dtype = std::nullopt,
             Location where = Location::current());
/// n x m identity-like matrix with ones on diagonal k.
Array eye(int64_t n, std::optional<int64_t> m = std::nullopt, int64_t k = 0, DType dtype = DType::f32,
          Location where = Location::current());
Array linspace(double start, double stop, int64_t num = 50, bool endpoint = true, DType dtype = DType::f32,
               Location where = Location::current());

}  // namespace kiln
