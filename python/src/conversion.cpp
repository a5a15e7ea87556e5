// Python arguments to kiln's: dtypes, numbers, axes and shapes. Bad input is a
// TypeError or ValueError naming the operation and what was given, raised
// before any kiln work starts.
#include <cmath>
#include <string>

#include "bindings.h"

namespace kiln::python {
namespace {

std::string describe(py::handle object) {
  std::string type = py::str(py::type::handle_of(object).attr("__name__"));
  std::string text = py::repr(object);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text + " (" + type + ")";
}

// NumPy integer scalars and other objects with __index__ (not bool, not arrays).
std::optional<int64_t> index_value(py::handle object) {
  if (PyBool_Check(object.ptr())) return std::nullopt;
  if (py::isinstance<Array>(object)) {  // a 0-d integer array stands for its value, as NumPy's do
    const Array& array = object.cast<const Array&>();
    if (array.is_tracer() || array.ndim() != 0 || !is_integer(array.dtype())) return std::nullopt;
    return array.item<int64_t>(here());
  }
  if (!PyIndex_Check(object.ptr())) return std::nullopt;
  if (py::isinstance<py::array>(object) && py::reinterpret_borrow<py::array>(object).ndim() != 0) return std::nullopt;
  py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(object.ptr()));
  if (!index) throw py::error_already_set();
  int overflow = 0;
  long long value = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (overflow != 0) throw py::value_error("integer " + std::string(py::repr(object)) + " does not fit in 64 bits");
  return value;
}

}  // namespace

const char* numpy_name(DType dtype) {
  switch (dtype) {
    case DType::bool_: return "bool";
    case DType::i8: return "int8";
    case DType::i16: return "int16";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
    case DType::u8: return "uint8";
    case DType::u16: return "uint16";
    case DType::u32: return "uint32";
    case DType::u64: return "uint64";
    case DType::f16: return "float16";
    case DType::bf16: return "bfloat16";
    case DType::f32: return "float32";
    case DType::f64: return "float64";
    case DType::c64: return "complex64";
    case DType::c128: return "complex128";
  }
  return "?";
}

DType to_dtype(py::handle object) {
  if (py::isinstance<DType>(object)) return object.cast<DType>();
  if (object.ptr() == reinterpret_cast<PyObject*>(&PyBool_Type)) return DType::bool_;
  if (object.ptr() == reinterpret_cast<PyObject*>(&PyLong_Type)) return DType::i32;
  if (object.ptr() == reinterpret_cast<PyObject*>(&PyFloat_Type)) return DType::f32;
  if (object.ptr() == reinterpret_cast<PyObject*>(&PyComplex_Type)) return DType::c64;
  std::string name;
  if (py::isinstance<py::str>(object)) {
    name = object.cast<std::string>();
  } else if (py::hasattr(object, "dtype") && py::isinstance<py::dtype>(object.attr("dtype"))) {
    name = py::str(object.attr("dtype").attr("name"));  // a NumPy scalar type (np.float32) or array
  } else {
    try {
      name = py::str(py::dtype::from_args(py::reinterpret_borrow<py::object>(object)).attr("name"));
    } catch (py::error_already_set&) {
      throw py::type_error("not a dtype: " + describe(object) +
                           "; use a kiln dtype (kn.float32), a NumPy dtype or a name such as 'float32'");
    }
  }
  for (int k = 0; k < dtype_count; ++k) {
    auto dtype = static_cast<DType>(k);
    if (name == numpy_name(dtype) || name == dtype_name(dtype)) return dtype;
  }
  if (name == "bool_") return DType::bool_;
  throw py::type_error(
      "kiln has no dtype " + name + " (given " + describe(object) +
      "); its dtypes are bool, int8..int64, uint8..uint64, float16, bfloat16, float32, float64, complex64, "
      "complex128");
}

std::optional<DType> to_optional_dtype(py::handle object) {
  if (object.is_none()) return std::nullopt;
  return to_dtype(object);
}

std::optional<Scalar> to_scalar(py::handle object) {
  PyObject* value = object.ptr();
  if (PyBool_Check(value)) return Scalar(value == Py_True);
  // Exact types: NumPy's scalars (np.float64 is a float) are arrays with a dtype of their own.
  if (PyLong_CheckExact(value)) {
    int overflow = 0;
    long long integer = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow != 0)
      throw py::value_error("the Python int " + std::string(py::repr(object)) +
                            " does not fit in 64 bits; kiln's numbers are at most 64-bit integers");
    return Scalar(static_cast<int64_t>(integer));
  }
  if (PyFloat_CheckExact(value)) return Scalar(PyFloat_AS_DOUBLE(value));
  if (PyComplex_CheckExact(value))
    return Scalar(std::complex<double>(PyComplex_RealAsDouble(value), PyComplex_ImagAsDouble(value)));
  return std::nullopt;
}

Operand to_operand(py::handle object, Location where) {
  if (const Array* array = array_pointer(object)) return Operand(*array, where);
  if (std::optional<Scalar> number = to_scalar(object)) {
    switch (number->kind()) {
      case Scalar::Kind::boolean: return Operand(number->as_int() != 0, where);
      case Scalar::Kind::integer: return Operand(number->as_int(), where);
      case Scalar::Kind::floating: return Operand(number->as_double(), where);
      case Scalar::Kind::complex: return Operand(number->as_complex(), where);
    }
  }
  return Operand(to_array(object), where);
}

Axes to_axes(py::handle object, const char* operation) {
  if (object.is_none()) return Axes::all();
  if (std::optional<int64_t> axis = index_value(object)) return Axes(*axis);
  return Axes(to_int_list(object, operation, "axis"));
}

std::optional<int64_t> to_optional_axis(py::handle object, const char* operation) {
  if (object.is_none()) return std::nullopt;
  if (std::optional<int64_t> axis = index_value(object)) return axis;
  throw py::type_error(std::string(operation) + ": axis must be an int or None, got " + describe(object));
}

std::vector<int64_t> to_int_list(py::handle object, const char* operation, const char* what) {
  if (std::optional<int64_t> value = index_value(object)) return {*value};
  if (py::isinstance<Array>(object) || !py::isinstance<py::sequence>(object) || py::isinstance<py::str>(object))
    throw py::type_error(std::string(operation) + ": " + what + " must be an int or a sequence of ints, got " +
                         describe(object));
  std::vector<int64_t> values;
  for (py::handle item : py::reinterpret_borrow<py::sequence>(object)) {
    std::optional<int64_t> value = index_value(item);
    if (!value)
      throw py::type_error(std::string(operation) + ": " + what + " must hold ints, got " + describe(item) + " in " +
                           describe(object));
    values.push_back(*value);
  }
  return values;
}

Shape to_shape(py::handle object, const char* operation) {
  if (PyFloat_Check(object.ptr()))
    throw py::type_error(std::string(operation) + ": a shape holds ints, got " + describe(object) +
                         (std::isnan(PyFloat_AS_DOUBLE(object.ptr())) ? "" : "; use int(...) for a size"));
  Shape shape = to_int_list(object, operation, "shape");
  for (int64_t extent : shape)
    if (extent < 0)
      throw py::value_error(std::string(operation) + ": negative dimension " + std::to_string(extent) + " in shape " +
                            shape_string(shape) + "; every extent must be >= 0");
  return shape;
}

std::vector<Array> to_array_list(py::handle object, const char* operation) {
  if (py::isinstance<Array>(object) || !py::isinstance<py::sequence>(object) || py::isinstance<py::str>(object))
    throw py::type_error(std::string(operation) + ": expected a sequence of arrays, got " + describe(object));
  std::vector<Array> arrays;
  for (py::handle item : py::reinterpret_borrow<py::sequence>(object)) arrays.push_back(to_array(item));
  return arrays;
}

namespace {
PyTypeObject* array_type = nullptr;
}  // namespace

void remember_array_type(py::handle type) { array_type = reinterpret_cast<PyTypeObject*>(type.ptr()); }

const Array* array_pointer(py::handle object) {
  if (Py_TYPE(object.ptr()) != array_type) return nullptr;
  auto* instance = reinterpret_cast<py::detail::instance*>(object.ptr());
  return static_cast<const Array*>(instance->get_value_and_holder().value_ptr());
}

const Array& array_of(py::handle object, const char* operation) {
  if (const Array* array = array_pointer(object)) return *array;
  if (!py::isinstance<Array>(object))
    throw py::type_error(std::string(operation) + ": expected a kiln Array, got " + describe(object));
  return object.cast<const Array&>();
}

void bind_dtypes(py::module_& module) {
  py::class_<DType> dtype(module, "DType", "An element type of kiln arrays (kn.float32, kn.int32, ...).");
  dtype.def_property_readonly("name", [](DType self) { return numpy_name(self); })
      .def_property_readonly("itemsize", [](DType self) { return dtype_size(self); })
      .def("__repr__", [](DType self) { return std::string("kiln.") + numpy_name(self); })
      .def("__str__", [](DType self) { return numpy_name(self); })
      .def("__hash__", [](DType self) { return static_cast<int>(self); })
      .def("__eq__",
           [](DType self, py::handle other) {
             if (py::isinstance<DType>(other)) return self == other.cast<DType>();
             return false;
           })
      .def("__ne__",
           [](DType self, py::handle other) { return !py::isinstance<DType>(other) || self != other.cast<DType>(); });
  dtype.def(py::pickle([](DType self) { return static_cast<int>(self); },
                       [](int value) { return static_cast<DType>(value); }));
  for (int k = 0; k < dtype_count; ++k) {
    auto value = static_cast<DType>(k);
    module.attr(numpy_name(value)) = py::cast(value);
  }
  module.attr("bool_") = py::cast(DType::bool_);
  module.def("_is_floating", &is_floating);
  module.def("_is_integer", &is_integer);
  module.def("_is_unsigned", &is_unsigned);
  module.def("_is_complex", &is_complex);
}

}  // namespace kiln::python
