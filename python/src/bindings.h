// What the binding files share: the user's Python line, and the conversions
// from Python objects to kiln's arguments. Every binding converts its
// arguments here, so that a list, a NumPy array, a Python number and a kiln
// array are accepted alike, and a bad one gets the same TypeError everywhere.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>

#include "kiln/kiln.h"

namespace kiln::python {

namespace py = pybind11;

/// The line of the user's Python code that called into kiln: the innermost
/// frame outside the kiln package's own files. File and function names are
/// interned for the life of the process, as Location requires.
Location here();
/// The folder of the kiln package: frames in files under it are kiln's own.
void set_package_folder(const std::string& folder);

/// The dtype an object names: a kiln dtype, a NumPy dtype or scalar type, a
/// name ("float32", "f32") or a Python type (bool, int, float, complex).
DType to_dtype(py::handle object);
std::optional<DType> to_optional_dtype(py::handle object);
/// NumPy's name of a dtype ("float32"), the Array API's names.
const char* numpy_name(DType dtype);

/// A kiln array from any array-like object: a kiln array as it is, a NumPy
/// array (its buffer shared when kiln can read it in place and `copy` is not
/// true), a DLPack or buffer-protocol object, a nested sequence, or a
/// Python number (of kiln's default dtype for its kind, weakly typed unless
/// `dtype` is given). `copy` false refuses to copy, as the Array API says.
Array to_array(py::handle object, std::optional<DType> dtype = std::nullopt, std::optional<bool> copy = std::nullopt);
/// An operand of a binary operation: Python numbers stay weakly typed numbers.
Operand to_operand(py::handle object, Location where);
/// A Python number as kiln's weakly typed number; nullopt for anything else.
std::optional<Scalar> to_scalar(py::handle object);
/// None (every axis), an int, or a sequence of ints.
Axes to_axes(py::handle object, const char* operation);
std::optional<int64_t> to_optional_axis(py::handle object, const char* operation);
/// An int or a sequence of ints, each a valid extent (TypeError, ValueError).
Shape to_shape(py::handle object, const char* operation);
std::vector<int64_t> to_int_list(py::handle object, const char* operation, const char* what);
std::vector<Array> to_array_list(py::handle object, const char* operation);

/// The array a Python kn.Array holds, or null for any other object: one
/// comparison of types, where pybind11's own check hashes the C++ type's name
/// (an operator's operands are checked on every call).
const Array* array_pointer(py::handle object);
/// Called once the Array class exists.
void remember_array_type(py::handle type);

/// The array a Python Array object holds (TypeError naming `operation` otherwise).
const Array& array_of(py::handle object, const char* operation);

/// A C++ message as Python users read it ("kiln::where" is "kn.where").
std::string for_python(const std::string& message);

/// A Python callable over a list of arrays that returns a list of arrays:
/// the form in which kiln's Python files hand functions to the C++
/// transformations (pytrees are flattened on the Python side).
struct FlatFunction {
  py::object fn;
  std::vector<Array> operator()(const std::vector<Array>& leaves) const;
};
/// Keeps a Python object alive from C++ (a cached result's skeleton),
/// released under the GIL.
std::shared_ptr<const void> hold(py::object object);

// Each file adds its part of the module.
void bind_errors(py::module_& module);
void bind_dtypes(py::module_& module);
void bind_array(py::module_& module);
void bind_interop(py::module_& module);
void bind_indexing(py::module_& module);
void bind_elementwise(py::module_& module);
void bind_reductions(py::module_& module);
void bind_manipulation(py::module_& module);
void bind_linalg(py::module_& module);
void bind_nn(py::module_& module);
void bind_random(py::module_& module);
void bind_fft(py::module_& module);
void bind_io(py::module_& module);
void bind_transforms(py::module_& module);
void bind_control(py::module_& module);
void bind_runtime(py::module_& module);
void bind_guards(py::module_& module);
void bind_pytree(py::module_& module);

}  // namespace kiln::python
