// The extension module: each binding file adds its part, in an order where
// every part finds what it extends (the Array class before its methods).
#include "bindings.h"
#include "cache/tiered_compile.h"
#include "core/dispatch_queue.h"
#include "core/error_format.h"

PYBIND11_MODULE(_kiln, module) {
  namespace python = kiln::python;
  module.doc() = "kiln's core: arrays, operations and errors (import kiln, not this module)";
  module.def("_set_package_folder", &python::set_package_folder);
  // " (at file:line)" of the user's call, for errors raised by kiln's Python files.
  module.def("_at", [] { return " (at " + kiln::detail::location_string(python::here()) + ")"; });
  python::bind_errors(module);
  python::bind_dtypes(module);
  python::bind_array(module);
  python::bind_interop(module);
  python::bind_indexing(module);
  python::bind_elementwise(module);
  python::bind_reductions(module);
  python::bind_manipulation(module);
  python::bind_linalg(module);
  python::bind_nn(module);
  python::bind_random(module);
  python::bind_fft(module);
  python::bind_io(module);
  python::bind_transforms(module);
  python::bind_control(module);
  python::bind_runtime(module);
  python::bind_guards(module);
  python::bind_pytree(module);
  // A thread waiting for queued work lets others run Python meanwhile, and
  // the dispatch thread may need the GIL (a telemetry listener, releasing
  // a NumPy array kiln borrowed).
  kiln::detail::set_blocking_wait_hooks(
      {[]() -> void* { return Py_IsInitialized() && PyGILState_Check() ? PyEval_SaveThread() : nullptr; },
       [](void* state) {
         if (state) PyEval_RestoreThread(static_cast<PyThreadState*>(state));
       }});
  // Compiles in flight stop, and queued work runs, while the interpreter and
  // every C++ static still live: Python's exit handlers run before the
  // process's. Without the GIL, so that a compile reporting to a Python
  // telemetry listener can finish.
  pybind11::module_::import("atexit").attr("register")(pybind11::cpp_function([] {
    try {
      kiln::detail::synchronize_queue();
    } catch (...) {
      // Nobody reads what failed: the program is ending.
    }
    kiln::detail::set_blocking_wait_hooks({});
    pybind11::gil_scoped_release release;
    kiln::cache::stop_background_compiles();
  }));
}
