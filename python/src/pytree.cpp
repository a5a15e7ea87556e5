// The pytrees of a jitted call's hot path, read through the C API: the
// arguments of a training step (dicts and lists of arrays) are flattened,
// and its results rebuilt, at every call. python/kiln/_tree.py is the
// definition; this handles the common containers and hands anything else
// back to it (None), so the two never disagree.
#include <string>

#include "bindings.h"

namespace kiln::python {
namespace {

/// Appends `tree`'s array leaves to `leaves` and its structure to `code`;
/// false for anything but tuples, lists, dicts with str keys, None and arrays.
bool flatten(PyObject* tree, PyObject* leaves, std::string& code) {
  if (array_pointer(tree) != nullptr) {
    code += 'A';
    return PyList_Append(leaves, tree) == 0;
  }
  if (tree == Py_None) {
    code += 'N';
    return true;
  }
  if (PyTuple_CheckExact(tree) || PyList_CheckExact(tree)) {
    bool tuple = PyTuple_CheckExact(tree);
    Py_ssize_t size = tuple ? PyTuple_GET_SIZE(tree) : PyList_GET_SIZE(tree);
    code += tuple ? 'T' : 'L';
    code += std::to_string(size) + ':';
    for (Py_ssize_t k = 0; k < size; ++k)
      if (!flatten(tuple ? PyTuple_GET_ITEM(tree, k) : PyList_GET_ITEM(tree, k), leaves, code)) return false;
    return true;
  }
  if (PyDict_CheckExact(tree)) {
    auto keys = py::reinterpret_steal<py::object>(PyDict_Keys(tree));
    if (!keys || PyList_Sort(keys.ptr()) != 0) {
      PyErr_Clear();
      return false;
    }
    Py_ssize_t size = PyList_GET_SIZE(keys.ptr());
    code += 'D';
    code += std::to_string(size) + ':';
    for (Py_ssize_t k = 0; k < size; ++k) {
      PyObject* key = PyList_GET_ITEM(keys.ptr(), k);
      if (!PyUnicode_CheckExact(key)) return false;
      Py_ssize_t length = 0;
      const char* text = PyUnicode_AsUTF8AndSize(key, &length);
      if (text == nullptr) {
        PyErr_Clear();
        return false;
      }
      code += std::to_string(length) + ':';
      code.append(text, static_cast<size_t>(length));
      if (!flatten(PyDict_GetItem(tree, key), leaves, code)) return false;
    }
    return true;
  }
  return false;
}

// TreeDef kinds that _tree.py spells as strings.
PyObject* leaf_kind = nullptr;
PyObject* none_kind = nullptr;

/// _tree.TreeDef.unflatten for the common containers; nullptr (no error set)
/// where a node is of another kind.
PyObject* build(PyObject* treedef, PyObject* leaves, Py_ssize_t& next) {
  auto kind = py::reinterpret_steal<py::object>(PyObject_GetAttrString(treedef, "kind"));
  if (!kind) return nullptr;
  if (PyUnicode_CheckExact(kind.ptr())) {
    if (PyUnicode_Compare(kind.ptr(), leaf_kind) == 0) {
      PyObject* leaf = PyList_GET_ITEM(leaves, next++);
      Py_INCREF(leaf);
      return leaf;
    }
    if (PyUnicode_Compare(kind.ptr(), none_kind) == 0) Py_RETURN_NONE;
    return nullptr;
  }
  bool tuple = kind.ptr() == reinterpret_cast<PyObject*>(&PyTuple_Type);
  bool list = kind.ptr() == reinterpret_cast<PyObject*>(&PyList_Type);
  bool dict = kind.ptr() == reinterpret_cast<PyObject*>(&PyDict_Type);
  if (!tuple && !list && !dict) return nullptr;
  auto children = py::reinterpret_steal<py::object>(PyObject_GetAttrString(treedef, "children"));
  if (!children || !PyTuple_CheckExact(children.ptr())) return nullptr;
  Py_ssize_t size = PyTuple_GET_SIZE(children.ptr());
  py::object keys;
  if (dict) keys = py::reinterpret_steal<py::object>(PyObject_GetAttrString(treedef, "data"));
  auto result = py::reinterpret_steal<py::object>(tuple ? PyTuple_New(size) : list ? PyList_New(size) : PyDict_New());
  for (Py_ssize_t k = 0; k < size; ++k) {
    PyObject* child = build(PyTuple_GET_ITEM(children.ptr(), k), leaves, next);
    if (child == nullptr) return nullptr;
    if (tuple) {
      PyTuple_SET_ITEM(result.ptr(), k, child);
    } else if (list) {
      PyList_SET_ITEM(result.ptr(), k, child);
    } else {
      int failed = PyDict_SetItem(result.ptr(), PyTuple_GET_ITEM(keys.ptr(), k), child);
      Py_DECREF(child);
      if (failed) return nullptr;
    }
  }
  return result.release().ptr();
}

}  // namespace

void bind_pytree(py::module_& module) {
  // (array leaves, a code naming the structure) or None: see flatten above.
  module.def("_flatten_arrays", [](py::handle tree) -> py::object {
    py::list leaves;
    std::string code;
    if (!flatten(tree.ptr(), leaves.ptr(), code)) {
      if (PyErr_Occurred()) throw py::error_already_set();
      return py::none();
    }
    return py::make_tuple(leaves, py::bytes(code));
  });
  // (the tree of `treedef` with `leaves`,), or None where it holds other kinds.
  module.def("_unflatten", [](py::handle treedef, py::list leaves) -> py::object {
    if (leaf_kind == nullptr) {
      leaf_kind = PyUnicode_InternFromString("leaf");
      none_kind = PyUnicode_InternFromString("none");
    }
    Py_ssize_t next = 0;
    PyObject* tree = build(treedef.ptr(), leaves.ptr(), next);
    if (tree == nullptr) {
      if (PyErr_Occurred()) throw py::error_already_set();
      return py::none();
    }
    return py::make_tuple(py::reinterpret_steal<py::object>(tree));
  });
}

}  // namespace kiln::python
