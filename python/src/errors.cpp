// kiln's errors as Python exceptions: kn.Error is a RuntimeError, and each
// kind of kiln::Error has its subclass. Messages were written for C++ users
// ("use kiln::where"); Python users read the same advice in their names.
#include <string>

#include "bindings.h"
#include "core/error_format.h"

namespace kiln::python {
namespace {

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

}  // namespace

std::string for_python(const std::string& message) {
  std::string text = message;
  replace_all(text, "JitOptions::dynamic_dims", "kn.jit's dynamic_dims");
  replace_all(text, "JitOptions::", "kn.jit's ");
  replace_all(text, "std::nullopt", "None");
  replace_all(text, "when xs is kiln::no_xs", "when xs is None");
  replace_all(text, "C++ integer bounds", "Python int bounds");
  replace_all(text, "[switch_]", "[switch]");
  replace_all(text, "read a dynamic size in C++", "read a dynamic size as a Python number");
  replace_all(text, "kiln::", "kn.");
  return text;
}

namespace {

// The bindings' own TypeError, ValueError and IndexError (bad Python input,
// found before kiln's C++ runs) name the user's line as kiln's errors do.
std::string with_line(const char* message) {
  return std::string(message) + " (at " + detail::location_string(here()) + ")";
}

PyObject* error_class(py::module_& module, const char* name, PyObject* base, const char* doc) {
  py::object type = py::reinterpret_steal<py::object>(
      PyErr_NewExceptionWithDoc((std::string("kiln.") + name).c_str(), doc, base, nullptr));
  if (!type) throw py::error_already_set();
  module.attr(name) = type;
  return type.release().ptr();  // owned by the module for the life of the process
}

}  // namespace

void bind_errors(py::module_& module) {
  static PyObject* error = error_class(module, "Error", PyExc_RuntimeError, "Base of every kiln error.");
  static PyObject* concretization =
      error_class(module, "ConcretizationError", error,
                  "A traced array was asked for its value (item(), float(), bool(), np.asarray) while tracing.");
  static PyObject* leaked =
      error_class(module, "LeakedTracerError", error, "A traced array was used after its trace ended.");
  static PyObject* donated =
      error_class(module, "DonatedArrayError", error, "An array was used after it was donated to a jitted call.");
  static PyObject* storm =
      error_class(module, "StormError", error, "A function recompiled more often than its recompile_limit allows.");
  static PyObject* allocation = error_class(
      module, "AllocationError", error, "Memory for an array could not be had, or its size is beyond kiln's limit.");
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const ConcretizationError& e) {
      PyErr_SetString(concretization, for_python(e.what()).c_str());
    } catch (const LeakedTracerError& e) {
      PyErr_SetString(leaked, for_python(e.what()).c_str());
    } catch (const DonatedArrayError& e) {
      PyErr_SetString(donated, for_python(e.what()).c_str());
    } catch (const StormError& e) {
      PyErr_SetString(storm, for_python(e.what()).c_str());
    } catch (const AllocationError& e) {
      PyErr_SetString(allocation, for_python(e.what()).c_str());
    } catch (const Error& e) {
      PyErr_SetString(error, for_python(e.what()).c_str());
    } catch (const py::type_error& e) {
      PyErr_SetString(PyExc_TypeError, with_line(e.what()).c_str());
    } catch (const py::value_error& e) {
      PyErr_SetString(PyExc_ValueError, with_line(e.what()).c_str());
    } catch (const py::index_error& e) {
      PyErr_SetString(PyExc_IndexError, with_line(e.what()).c_str());
    }
  });
}

}  // namespace kiln::python
