// The hot loop of kn.jit's guards (python/kiln/_guards.py): reading every
// probed place and comparing it with what the trace saw, once per call. The
// probes are made and explained in Python; this reads them through the C
// API, where a probe costs a few dozen nanoseconds instead of a microsecond.
#include <cmath>
#include <string>

#include "bindings.h"
#include "core/array_impl.h"

namespace kiln::python {
namespace {

// Probe kinds and modes, as _guards.py numbers them.
enum Kind { dict_item, cell, length, attribute, item, keys };
enum Mode { identity, equal, array_type, numpy_contents, same_array };

PyObject* missing = nullptr;  // _guards._MISSING, set once

/// The value a probe reads now (a new reference), `missing` where absent.
PyObject* read(int kind, PyObject* holder, PyObject* key) {
  switch (kind) {
    case dict_item: {
      if (PyDict_Check(holder)) {  // a subclass's storage, as the walk read it
        PyObject* value = PyDict_GetItemWithError(holder, key);
        if (value == nullptr && PyErr_Occurred()) return nullptr;
        value = value ? value : missing;
        Py_INCREF(value);
        return value;
      }
      PyObject* value = PyObject_GetItem(holder, key);  // a class's mappingproxy
      if (value == nullptr && PyErr_ExceptionMatches(PyExc_KeyError)) {
        PyErr_Clear();
        Py_INCREF(missing);
        return missing;
      }
      return value;
    }
    case cell: {
      PyObject* value = PyCell_GET(holder);
      value = value ? value : missing;
      Py_INCREF(value);
      return value;
    }
    case length: {
      Py_ssize_t size = PyObject_Size(holder);
      return size < 0 ? nullptr : PyLong_FromSsize_t(size);
    }
    case attribute: {
      PyObject* value = PyObject_GetAttr(holder, key);
      if (value == nullptr && PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyErr_Clear();
        Py_INCREF(missing);
        return missing;
      }
      return value;
    }
    case keys: {
      auto list = py::reinterpret_steal<py::object>(PyMapping_Keys(holder));
      return list ? PyList_AsTuple(list.ptr()) : nullptr;
    }
    default: return PyObject_GetItem(holder, key);
  }
}

/// Python numbers and strings compare by value, except that -0.0 is not 0.0
/// (1 / x tells them apart) and NaN is NaN.
bool same_value(PyObject* value, PyObject* expected) {
  if (Py_TYPE(value) != Py_TYPE(expected)) return false;
  if (PyFloat_CheckExact(value)) {
    double a = PyFloat_AS_DOUBLE(value), b = PyFloat_AS_DOUBLE(expected);
    return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b));
  }
  if (PyTuple_CheckExact(value)) {  // a dict's keys: (1,) is not (1.0,)
    Py_ssize_t size = PyTuple_GET_SIZE(value);
    if (size != PyTuple_GET_SIZE(expected)) return false;
    for (Py_ssize_t k = 0; k < size; ++k)
      if (!same_value(PyTuple_GET_ITEM(value, k), PyTuple_GET_ITEM(expected, k))) return false;
    return true;
  }
  int equal = PyObject_RichCompareBool(value, expected, Py_EQ);
  if (equal < 0) PyErr_Clear();
  return equal == 1;
}

bool same_numpy_contents(PyObject* value, PyObject* expected) {
  // expected: (the array, dtype.str, shape, hash of its bytes)
  py::handle array = PyTuple_GET_ITEM(expected, 0);
  if (value != array.ptr()) return false;
  py::object dtype = array.attr("dtype").attr("str"), shape = array.attr("shape");
  return dtype.equal(py::handle(PyTuple_GET_ITEM(expected, 1))) &&
         shape.equal(py::handle(PyTuple_GET_ITEM(expected, 2))) &&
         py::hash(array.attr("tobytes")()) == py::handle(PyTuple_GET_ITEM(expected, 3)).cast<py::ssize_t>();
}

/// The arrays the ARRAY probes hold now, by probe index (None elsewhere), or
/// None when a probe no longer holds what the trace saw.
py::object check(py::tuple probes) {
  size_t count = probes.size();
  py::list arrays(count);
  for (size_t index = 0; index < count; ++index) {
    PyObject* probe = PyTuple_GET_ITEM(probes.ptr(), static_cast<Py_ssize_t>(index));
    int kind = static_cast<int>(PyLong_AsLong(PyTuple_GET_ITEM(probe, 0)));
    int mode = static_cast<int>(PyLong_AsLong(PyTuple_GET_ITEM(probe, 3)));
    PyObject* expected = PyTuple_GET_ITEM(probe, 4);
    auto value = py::reinterpret_steal<py::object>(read(kind, PyTuple_GET_ITEM(probe, 1), PyTuple_GET_ITEM(probe, 2)));
    if (!value) throw py::error_already_set();
    bool holds;
    switch (mode) {
      case array_type: {
        const Array* array = array_pointer(value);
        holds = array != nullptr && detail::impl(*array) &&
                detail::impl(*array)->type.to_string() == py::handle(expected).cast<std::string>();
        if (holds) arrays[index] = value;
        break;
      }
      case same_array: {
        const Array* array = array_pointer(value);
        const Array* first = array_pointer(arrays[PyLong_AsSsize_t(expected)]);
        holds = array != nullptr && first != nullptr && detail::impl(*array) == detail::impl(*first);
        break;
      }
      case identity: holds = value.ptr() == expected; break;
      case equal: holds = value.ptr() == expected || same_value(value.ptr(), expected); break;
      default: holds = same_numpy_contents(value.ptr(), expected); break;
    }
    if (!holds) return py::none();
  }
  return arrays;
}

}  // namespace

void bind_guards(py::module_& module) {
  module.def("_set_guard_missing", [](py::object sentinel) { missing = sentinel.release().ptr(); });
  module.def("_check_probes", &check);
}

}  // namespace kiln::python
