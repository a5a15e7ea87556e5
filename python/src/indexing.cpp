// NumPy's indexing on kiln arrays (x[1:, None, ..., idx]) and JAX's
// x.at[idx].set(v), both by kiln::index: Python's keys become kiln's Index
// list. An integer out of range is an IndexError, as in Python (iteration
// relies on it); integer arrays clamp, as kiln's gather does.
#include <string>

#include "bindings.h"

namespace kiln::python {
namespace {

std::optional<int64_t> slice_bound(PyObject* bound) {
  if (bound == Py_None) return std::nullopt;
  if (!PyIndex_Check(bound) || PyBool_Check(bound))
    throw py::type_error("slice bounds must be ints or None, got " + std::string(py::repr(bound)));
  return py::reinterpret_borrow<py::object>(bound).cast<int64_t>();
}

Index to_index(py::handle key) {
  PyObject* object = key.ptr();
  if (object == Py_None) return Index(newaxis);
  if (object == Py_Ellipsis) return Index(ellipsis);
  if (PyBool_Check(object))
    throw py::index_error(
        "indexing with a Python bool selects a number of elements that depends on its value, which a compiled "
        "function cannot have; use kn.where(condition, x, other) instead");
  if (PySlice_Check(object)) {
    auto* slice = reinterpret_cast<PySliceObject*>(object);
    Slice result{slice_bound(slice->start), slice_bound(slice->stop), 1};
    if (slice->step != Py_None) {
      result.step = py::reinterpret_borrow<py::object>(slice->step).cast<int64_t>();
      if (result.step == 0) throw py::value_error("slice step cannot be zero");
    }
    return Index(result);
  }
  if (!py::isinstance<Array>(key) && PyIndex_Check(object) &&
      !(py::isinstance<py::array>(key) && py::reinterpret_borrow<py::array>(key).ndim() != 0))
    return Index(py::reinterpret_borrow<py::object>(key).cast<int64_t>());
  if (py::isinstance<py::str>(key) || PyFloat_Check(object))
    throw py::index_error("only integers, slices (:), ellipsis (...), None and integer arrays are valid indices, got " +
                          std::string(py::repr(key)));
  Array array = to_array(key);
  if (is_floating(array.dtype()))
    throw py::index_error("arrays used as indices must be of integer type, got " +
                          std::string(numpy_name(array.dtype())));
  // kiln gathers with 32- or 64-bit indices; NumPy takes any integer type.
  DType dtype = array.dtype();
  if (dtype == DType::i8 || dtype == DType::i16 || dtype == DType::u8 || dtype == DType::u16)
    array = astype(array, DType::i32, here());
  else if (dtype == DType::u32 || dtype == DType::u64) array = astype(array, DType::i64, here());
  return Index(array);
}

std::vector<Index> to_indices(const Array& x, py::handle key) {
  std::vector<Index> indices;
  if (py::isinstance<py::tuple>(key)) {
    for (py::handle item : py::reinterpret_borrow<py::tuple>(key)) indices.push_back(to_index(item));
  } else {
    indices.push_back(to_index(key));
  }
  // Integers name their axis counting from the front before an ellipsis and
  // from the back after it.
  const Shape& shape = x.shape(here());
  size_t ellipsis_at = indices.size();
  int64_t consumed = 0;
  for (size_t k = 0; k < indices.size(); ++k) {
    Index::Kind kind = indices[k].kind();
    if (kind == Index::Kind::ellipsis) ellipsis_at = k;
    else if (kind != Index::Kind::new_axis) ++consumed;
  }
  if (consumed > static_cast<int64_t>(shape.size()))
    throw py::index_error("too many indices for an array of shape " + shape_string(shape) + ": " +
                          std::to_string(consumed) + " axes indexed, " + std::to_string(shape.size()) + " there");
  int64_t axis = 0;
  for (size_t k = 0; k < indices.size(); ++k) {
    Index::Kind kind = indices[k].kind();
    if (k == ellipsis_at) {
      int64_t after = 0;
      for (size_t j = k + 1; j < indices.size(); ++j)
        if (indices[j].kind() != Index::Kind::new_axis) ++after;
      axis = static_cast<int64_t>(shape.size()) - after;
      continue;
    }
    if (kind == Index::Kind::new_axis) continue;
    if (kind == Index::Kind::integer) {
      int64_t extent = shape[static_cast<size_t>(axis)];
      int64_t value = indices[k].integer();
      if (value < -extent || value >= extent)
        throw py::index_error("index " + std::to_string(value) + " is out of bounds for axis " + std::to_string(axis) +
                              " with size " + std::to_string(extent) + " (array of shape " + shape_string(shape) + ")");
    }
    ++axis;
  }
  return indices;
}

}  // namespace

void bind_indexing(py::module_& module) {
  auto array = py::reinterpret_borrow<py::class_<Array>>(module.attr("Array"));
  array.def("__getitem__", [](const Array& self, py::handle key) {
    std::vector<Index> indices = to_indices(self, key);
    return index(self, indices, here());
  });
  array.def("__iter__", [](const Array& self) {
    const Shape& shape = self.shape(here());
    if (shape.empty()) throw py::type_error("iteration over a 0-d array");
    py::list rows;
    for (int64_t i = 0; i < shape[0]; ++i) rows.append(py::cast(index(self, {Index(i)}, here())));
    return py::iter(rows);
  });
  // x.at[key].<kind>(values): the Python class in kiln/_array.py calls this.
  module.def("_index_update", [](const Array& x, py::handle key, const std::string& kind, py::handle values) {
    Location where = here();
    IndexUpdate update(x, to_indices(x, key));
    if (kind == "get") return update.get(where);
    Operand operand = to_operand(values, where);
    if (kind == "set") return update.set(operand, where);
    if (kind == "add") return update.add(operand, where);
    if (kind == "mul") return update.mul(operand, where);
    if (kind == "max") return update.max(operand, where);
    if (kind == "min") return update.min(operand, where);
    throw py::value_error("x.at[...]: no update '" + kind + "'; use set, add, mul, max, min or get");
  });
}

}  // namespace kiln::python
