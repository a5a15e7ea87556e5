// kn.distributed (kiln's own MPI world, no mpi4py) and kn.telemetry.
#include <memory>
#include <string>
#include <vector>

#include "bindings.h"
#include "kiln/distributed.h"
#include "kiln/telemetry.h"

namespace kiln::python {
namespace {

distributed::ReduceOp to_reduce_op(const std::string& text) {
  if (text == "sum") return distributed::ReduceOp::sum;
  if (text == "mean") return distributed::ReduceOp::mean;
  if (text == "max") return distributed::ReduceOp::max;
  if (text == "min") return distributed::ReduceOp::min;
  throw py::value_error("distributed: op must be \"sum\", \"mean\", \"max\" or \"min\", got \"" + text + "\"");
}

void bind_distributed(py::module_& module) {
  py::module_ sub = module.def_submodule("_distributed");
  sub.def("init", [] {
    py::gil_scoped_release release;
    distributed::init();
  });
  sub.def("rank", &distributed::rank);
  sub.def("world_size", &distributed::world_size);
  sub.def("barrier", [] {
    py::gil_scoped_release release;
    distributed::barrier();
  });
  sub.def("rank_array", [] { return distributed::rank_array(here()); });
  sub.def("all_reduce", [](py::handle x, const std::string& op) {
    Location where = here();
    Array array = to_array(x);
    py::gil_scoped_release release;
    return distributed::all_reduce(array, to_reduce_op(op), where);
  });
  sub.def("all_gather", [](py::handle x, int64_t axis) {
    Location where = here();
    Array array = to_array(x);
    py::gil_scoped_release release;
    return distributed::all_gather(array, axis, where);
  });
  sub.def("reduce_scatter", [](py::handle x, int64_t axis, const std::string& op) {
    Location where = here();
    Array array = to_array(x);
    py::gil_scoped_release release;
    return distributed::reduce_scatter(array, axis, to_reduce_op(op), where);
  });
  sub.def("broadcast", [](py::handle x, int root) {
    Location where = here();
    Array array = to_array(x);
    py::gil_scoped_release release;
    return distributed::broadcast(array, root, where);
  });
  sub.def("average_leaves", [](const std::vector<Array>& leaves, int64_t bucket_bytes) {
    Location where = here();
    py::gil_scoped_release release;
    return distributed::detail::average_leaves(leaves, bucket_bytes, where);
  });
}

/// A telemetry subscription held by Python: unsubscribes when closed or collected.
struct PythonSubscription {
  telemetry::Subscription subscription;
  void close() { subscription.reset(); }
};

void bind_telemetry(py::module_& module) {
  py::module_ sub = module.def_submodule("_telemetry");
  py::class_<telemetry::Event>(sub, "Event", "One telemetry event (fields as kiln::telemetry::Event).")
      .def_property_readonly("kind",
                             [](const telemetry::Event& e) { return std::string(telemetry::kind_name(e.kind)); })
      .def_readonly("function", &telemetry::Event::function)
      .def_readonly("key", &telemetry::Event::key)
      .def_readonly("seconds", &telemetry::Event::seconds)
      .def_readonly("reason", &telemetry::Event::reason)
      .def_readonly("tier", &telemetry::Event::tier)
      .def("__repr__", [](const telemetry::Event& e) {
        return "Event(kind=" + std::string(telemetry::kind_name(e.kind)) + ", function='" + e.function +
               "', key=" + e.key + ", seconds=" + std::to_string(e.seconds) + ")";
      });
  py::class_<PythonSubscription>(sub, "Subscription")
      .def("close", &PythonSubscription::close)
      .def("__enter__", [](PythonSubscription& self) -> PythonSubscription& { return self; })
      .def("__exit__", [](PythonSubscription& self, py::args) { self.close(); });
  sub.def("subscribe", [](py::object callback) {
    std::shared_ptr<const void> held = hold(std::move(callback));
    // Events come from whichever thread compiled or ran: the callback takes the GIL.
    auto subscription = telemetry::subscribe([held](const telemetry::Event& event) {
      if (!Py_IsInitialized()) return;
      py::gil_scoped_acquire gil;
      try {
        py::handle(static_cast<PyObject*>(const_cast<void*>(held.get())))(event);
      } catch (py::error_already_set& error) {
        error.discard_as_unraisable("kn.telemetry callback");
      }
    });
    return PythonSubscription{std::move(subscription)};
  });
  sub.def("start_trace", [](const std::string& directory) { telemetry::start_trace(directory); });
  sub.def("stop_trace", &telemetry::stop_trace);
  sub.def("trace_file", &telemetry::trace_file);
  sub.def("start_profile", [](const std::string& file) { telemetry::start_profile(file); });
  sub.def("stop_profile", &telemetry::stop_profile);
}

}  // namespace

void bind_runtime(py::module_& module) {
  bind_distributed(module);
  bind_telemetry(module);
  // KILN_LOG lines and warnings read in Python's names, as errors do.
  telemetry::set_log_rewriter(&for_python);
}

}  // namespace kiln::python
