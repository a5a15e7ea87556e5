// kn.Array: kiln's immutable array with Python's protocols. Operators take
// Python numbers as weakly typed numbers (as C++ does), NumPy arrays and
// scalars as arrays, and return NotImplemented for anything else so Python
// can ask the other operand. In-place operators are not defined: `x += 1`
// rebinds x to a new array, and every other reference keeps the old value.
#include <sstream>

#include "bindings.h"
#include "core/error_format.h"

namespace kiln::python {
namespace {

std::optional<Operand> operand_or_nothing(py::handle other, Location where) {
  if (const Array* array = array_pointer(other)) return Operand(*array, where);
  if (PyBool_Check(other.ptr()) || PyLong_Check(other.ptr()) || PyFloat_Check(other.ptr()) ||
      PyComplex_Check(other.ptr()))
    return to_operand(other, where);
  // Kept for the process: the operator is called every step, the import once.
  static const py::handle numpy_scalar = py::object(py::module_::import("numpy").attr("generic")).release();
  if (py::isinstance<py::array>(other) || py::isinstance(other, numpy_scalar)) return Operand(to_array(other), where);
  return std::nullopt;
}

using BinaryFunction = Array (*)(Operand, Operand);

template <BinaryFunction function>
py::object binary(const Array& self, py::handle other) {
  Location where = here();
  std::optional<Operand> operand = operand_or_nothing(other, where);
  if (!operand) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
  return py::cast(function(Operand(self, where), *operand));
}

template <BinaryFunction function>
py::object reflected(const Array& self, py::handle other) {
  Location where = here();
  std::optional<Operand> operand = operand_or_nothing(other, where);
  if (!operand) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
  return py::cast(function(*operand, Operand(self, where)));
}

Array matmul_operands(Operand a, Operand b) {
  if (a.is_number() || b.is_number())
    throw py::type_error("matmul: the operands of @ must be arrays, not Python numbers; use * to scale an array");
  return matmul(a.array(), b.array(), a.where());
}
Array power(Operand a, Operand b) { return pow(std::move(a), std::move(b)); }
Array divide(Operand a, Operand b) { return div(std::move(a), std::move(b)); }

py::object python_number(const Array& array, Location where) {
  DType dtype = array.dtype(where);
  if (dtype == DType::bool_) return py::bool_(array.item<bool>(where));
  if (dtype == DType::u64) return py::int_(array.item<uint64_t>(where));
  if (is_integer(dtype)) return py::int_(array.item<int64_t>(where));
  if (is_complex(dtype)) {
    std::complex<double> value = array.item<std::complex<double>>(where);
    return py::reinterpret_steal<py::object>(PyComplex_FromDoubles(value.real(), value.imag()));
  }
  return py::float_(array.item<double>(where));
}

py::tuple shape_tuple(const Shape& shape) {
  py::tuple tuple(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) tuple[d] = py::int_(shape[d]);
  return tuple;
}

}  // namespace

void bind_array(py::module_& module) {
  py::class_<Array> array(module, "Array", py::buffer_protocol(),
                          "An immutable n-dimensional array (or, inside a trace, the placeholder of one).");
  array.def(py::init([](py::handle object) { return to_array(object); }), py::arg("obj"))
      .def_property_readonly("shape", [](const Array& self) { return shape_tuple(self.shape(here())); })
      .def_property_readonly("dtype", [](const Array& self) { return self.dtype(here()); })
      .def_property_readonly("ndim", [](const Array& self) { return self.ndim(here()); })
      .def_property_readonly("size", [](const Array& self) { return self.size(here()); })
      .def_property_readonly("itemsize", [](const Array& self) { return dtype_size(self.dtype(here())); })
      .def_property_readonly("nbytes",
                             [](const Array& self) { return dtype_size(self.dtype(here())) * self.size(here()); })
      .def_property_readonly("weak_type", [](const Array& self) { return self.weak_type(here()); })
      .def_property_readonly("_is_tracer", &Array::is_tracer)
      .def_property_readonly("_device_name", [](const Array& self) { return self.device(here()); })
      .def("_to_device", [](const Array& self, const std::string& device) { return to_device(self, device, here()); })
      .def_property_readonly("T", [](const Array& self) { return transpose(self, {}, here()); })
      .def_property_readonly(
          "mT",
          [](const Array& self) {
            Location where = here();
            if (self.ndim(where) < 2)
              throw py::value_error("mT: needs at least 2 dimensions, got shape " + shape_string(self.shape()));
            return swapaxes(self, -1, -2, where);
          })
      .def("item", [](const Array& self) { return python_number(self, here()); })
      .def(
          "block_until_ready", [](const Array& self) -> const Array& { return self.block_until_ready(here()); },
          "Waits until the queued work computing this array has run (kiln dispatches asynchronously) and raises "
          "its error if it failed; returns the array.")
      .def("_require_concrete",
           [](const Array& self, const std::string& operation) {
             if (!self.is_tracer()) return;
             detail::raise<ConcretizationError>(
                 operation,
                 "cannot read the value of traced array " + std::string(numpy_name(self.dtype())) +
                     shape_string(self.shape()),
                 here(),
                 "a traced value is known only when the compiled code runs: use kn.where for a data-dependent choice "
                 "of values, kn.cond or kn.while_loop for a choice of code, or make the value a static argument");
           })
      .def("__bool__", [](const Array& self) { return self.item<bool>(here()); })
      .def("__float__", [](const Array& self) { return self.item<double>(here()); })
      .def("__int__",
           [](const Array& self) {
             Location where = here();
             return self.dtype(where) == DType::u64 ? py::int_(self.item<uint64_t>(where))
                                                    : py::int_(self.item<int64_t>(where));
           })
      .def("__index__",
           [](const Array& self) {
             Location where = here();
             DType dtype = self.dtype(where);
             if (!is_integer(dtype))
               throw py::type_error(std::string("only integer arrays can be used as an index, not ") +
                                    numpy_name(dtype));
             return dtype == DType::u64 ? py::int_(self.item<uint64_t>(where)) : py::int_(self.item<int64_t>(where));
           })
      .def("__len__",
           [](const Array& self) {
             const Shape& shape = self.shape(here());
             if (shape.empty()) throw py::type_error("len() of a 0-d array");
             return shape[0];
           })
      .def("__setitem__",
           [](const Array&, py::handle, py::handle) {
             throw py::type_error(
                 "kiln arrays are immutable: write x = x.at[index].set(value) for a new array with the update");
           })
      .def(
          "astype",
          [](const Array& self, py::handle dtype, bool copy) {
            DType target = to_dtype(dtype);
            if (!copy && target == self.dtype(here())) return self;
            return astype(self, target, here());
          },
          py::arg("dtype"), py::kw_only(), py::arg("copy") = true)
      .def("__add__", &binary<add>)
      .def("__radd__", &reflected<add>)
      .def("__sub__", &binary<sub>)
      .def("__rsub__", &reflected<sub>)
      .def("__mul__", &binary<mul>)
      .def("__rmul__", &reflected<mul>)
      .def("__truediv__", &binary<divide>)
      .def("__rtruediv__", &reflected<divide>)
      .def("__floordiv__", &binary<floor_divide>)
      .def("__rfloordiv__", &reflected<floor_divide>)
      .def("__mod__", &binary<remainder>)
      .def("__rmod__", &reflected<remainder>)
      .def(
          "__pow__", [](const Array& self, py::handle other, py::handle) { return binary<power>(self, other); },
          py::arg("other"), py::arg("modulo") = py::none())
      .def(
          "__rpow__", [](const Array& self, py::handle other, py::handle) { return reflected<power>(self, other); },
          py::arg("other"), py::arg("modulo") = py::none())
      .def("__matmul__", &binary<matmul_operands>)
      .def("__rmatmul__", &reflected<matmul_operands>)
      .def("__and__", &binary<bitwise_and>)
      .def("__rand__", &reflected<bitwise_and>)
      .def("__or__", &binary<bitwise_or>)
      .def("__ror__", &reflected<bitwise_or>)
      .def("__xor__", &binary<bitwise_xor>)
      .def("__rxor__", &reflected<bitwise_xor>)
      .def("__lshift__", &binary<left_shift>)
      .def("__rlshift__", &reflected<left_shift>)
      .def("__rshift__", &binary<right_shift>)
      .def("__rrshift__", &reflected<right_shift>)
      .def("__lt__", &binary<less>)
      .def("__le__", &binary<less_equal>)
      .def("__gt__", &binary<greater>)
      .def("__ge__", &binary<greater_equal>)
      .def("__eq__", &binary<equal>)
      .def("__ne__", &binary<not_equal>)
      .def("__divmod__",
           [](const Array& self, py::handle other) -> py::object {
             Location where = here();
             std::optional<Operand> operand = operand_or_nothing(other, where);
             if (!operand) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
             return py::cast(divmod(Operand(self, where), *operand));
           })
      .def("__rdivmod__",
           [](const Array& self, py::handle other) -> py::object {
             Location where = here();
             std::optional<Operand> operand = operand_or_nothing(other, where);
             if (!operand) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
             return py::cast(divmod(*operand, Operand(self, where)));
           })
      .def("__neg__", [](const Array& self) { return neg(self, here()); })
      .def("__pos__", [](const Array& self) { return self; })
      .def("__abs__", [](const Array& self) { return abs(self, here()); })
      .def("__invert__", [](const Array& self) { return bitwise_not(self, here()); })
      .def("__str__", [](const Array& self) {
        std::ostringstream text;
        text << self;
        return text.str();
      });
  remember_array_type(array);
  array.attr("__hash__") = py::none();
  // NumPy's operators defer to ours (np_array + kiln_array is a kiln array),
  // while NumPy's functions still read kiln arrays through the buffer.
  array.attr("__array_priority__") = 100;
}

}  // namespace kiln::python
