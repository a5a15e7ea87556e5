// Array: an immutable n-dimensional value with shared storage, or — inside a
// trace — a placeholder (tracer) that records the operations applied to it.
#pragma once

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
using Location = std::source_location;

class Array;
class Index;        // kiln/ops.h
class IndexUpdate;  // kiln/ops.h

namespace detail {
struct ArrayImpl;
struct ArrayAccess;
void read_elements(const Array& array, DType as, void* out, int64_t count, const char* operation, Location where);
/// The element count of `array`, or the error `operation` raises on an empty or donated handle.
int64_t element_count(const Array& array, const char* operation, Location where);
}  // namespace detail

class Array {
 public:
  /// An empty handle; any operation on it throws kiln::Error.
  Array() = default;
  explicit Array(std::shared_ptr<detail::ArrayImpl> impl) : impl_(std::move(impl)) {}

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

  /// The single element as a host value. Throws ConcretizationError on a tracer.
  template <Element T>
  T item(Location where = Location::current()) const {
    T value{};
    detail::read_elements(*this, dtype_of<T>(), &value, 1, "item", where);
    return value;
  }

  /// All elements in row-major order, converted to T.
  template <Element T>
  std::vector<T> to_vector(Location where = Location::current()) const {
    std::vector<T> values(static_cast<size_t>(detail::element_count(*this, "to_vector", where)));
    if constexpr (std::is_same_v<T, bool>) {
      std::unique_ptr<bool[]> flat(new bool[values.size()]);
      detail::read_elements(*this, DType::bool_, flat.get(), std::ssize(values), "to_vector", where);
      for (size_t i = 0; i < values.size(); ++i) values[i] = flat[i];
    } else {
      detail::read_elements(*this, dtype_of<T>(), values.data(), std::ssize(values), "to_vector", where);
    }
    return values;
  }

  /// JAX's x.at[...]: x.at({0, Slice{1, 3}, indices}).set(values) (see IndexUpdate in kiln/ops.h).
  IndexUpdate at(std::vector<Index> indices) const;

  const std::shared_ptr<detail::ArrayImpl>& impl() const { return impl_; }

 private:
  friend struct detail::ArrayAccess;
  std::shared_ptr<detail::ArrayImpl> impl_;
};

std::ostream& operator<<(std::ostream& out, const Array& array);

namespace detail {
/// Copies `count` elements of `dtype` from `data`; throws unless they fill `shape`.
Array make_array(const void* data, int64_t count, DType dtype, Shape shape, Location where);
}  // namespace detail

// ---- Creation ---------------------------------------------------------------

/// An array holding `data` (row-major) with the given shape.
template <Element T>
Array array(const std::vector<T>& data, Shape shape, Location where = Location::current()) {
  auto count = static_cast<int64_t>(data.size());
  if constexpr (std::is_same_v<T, bool>) {
    std::unique_ptr<bool[]> flat(new bool[data.size()]);
    for (size_t i = 0; i < data.size(); ++i) flat[i] = data[i];
    return detail::make_array(flat.get(), count, DType::bool_, std::move(shape), where);
  } else {
    return detail::make_array(data.data(), count, dtype_of<T>(), std::move(shape), where);
  }
}
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

namespace detail {
/// Connects eager operations to the compiler, so that eager operations on
/// large arrays run compiled kernels. Every program including a kiln header
/// references it, which links that part of the static library in and runs it
/// before main, as <iostream> does for its streams. kiln's own sources define
/// KILN_LIBRARY_SOURCE: its lower layers must not reach up to the compiler.
bool connect_compiler();
#ifndef KILN_LIBRARY_SOURCE
inline const bool compiler_connected = connect_compiler();
#endif
}  // namespace detail

}  // namespace kiln
