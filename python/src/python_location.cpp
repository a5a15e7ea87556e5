// The user's Python line for every node, explanation and error. Frames are
// read from the interpreter directly (no traceback objects): an operation
// pays for one walk up the few frames of kiln's own Python files and two
// lookups by object identity.
// clang-format off
#include "bindings.h"  // Python.h before any other Python header, as the C API asks
#include <frameobject.h>
// clang-format on

#include <string>
#include <unordered_map>
#include <unordered_set>

namespace kiln::python {
namespace {

std::string package_folder;

// Strings a Location points at live as long as the process: a graph or an
// error may name them after the code object that held them is gone.
const char* intern(const std::string& text) {
  static std::unordered_set<std::string> interned;
  return interned.insert(text).first->c_str();
}

struct FileName {
  const char* text;
  bool kiln_own;
};

// Keyed by the interpreter's string objects, held here so that their
// addresses are never reused for another name. The GIL guards both maps.
const FileName& file_name(PyObject* name) {
  static std::unordered_map<PyObject*, FileName> names;
  auto found = names.find(name);
  if (found != names.end()) return found->second;
  Py_INCREF(name);
  std::string text = py::reinterpret_borrow<py::str>(name);
  bool kiln_own = !package_folder.empty() && text.compare(0, package_folder.size(), package_folder) == 0;
  return names.emplace(name, FileName{intern(text), kiln_own}).first->second;
}

const char* function_name(PyObject* name) {
  static std::unordered_map<PyObject*, const char*> names;
  auto found = names.find(name);
  if (found != names.end()) return found->second;
  Py_INCREF(name);
  return names.emplace(name, intern(py::reinterpret_borrow<py::str>(name))).first->second;
}

}  // namespace

void set_package_folder(const std::string& folder) { package_folder = folder; }

Location here() {
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  if (frame == nullptr) return Location("<python>", "", 0);
  Py_INCREF(frame);
  Location found("<python>", "", 0);
  while (frame != nullptr) {
    PyCodeObject* code = PyFrame_GetCode(frame);
    const FileName& file = file_name(code->co_filename);
    if (!file.kiln_own) {
      found =
          Location(file.text, function_name(code->co_qualname), static_cast<uint32_t>(PyFrame_GetLineNumber(frame)));
      Py_DECREF(code);
      Py_DECREF(frame);
      return found;
    }
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(frame);
    Py_DECREF(frame);
    frame = back;
  }
  return found;
}

}  // namespace kiln::python
