// Reductions, scans, sorting and searching with NumPy's keyword arguments
// (axis=None for every axis, keepdims=, dtype= converting first).
#include "bindings.h"

namespace kiln::python {
namespace {

using Reduction = Array (*)(const Array&, Axes, bool, Location);
using Scan = Array (*)(const Array&, std::optional<int64_t>, Location);

Array converted(py::handle x, py::handle dtype) {
  Array array = to_array(x);
  std::optional<DType> target = to_optional_dtype(dtype);
  return target && *target != array.dtype(here()) ? astype(array, *target, here()) : array;
}

// dtype= names the result's dtype (the Array API's), also where kiln would
// accumulate in a wider one (sum of uint8 in uint32).
Array in_dtype(Array result, py::handle dtype) {
  std::optional<DType> target = to_optional_dtype(dtype);
  return target && *target != result.dtype(here()) ? astype(result, *target, here()) : result;
}

template <Reduction function>
void def_reduction(py::module_& module, const char* name) {
  module.def(
      name,
      [name](py::handle x, py::handle axis, bool keepdims) {
        return function(to_array(x), to_axes(axis, name), keepdims, here());
      },
      py::arg("x"), py::kw_only(), py::arg("axis") = py::none(), py::arg("keepdims") = false);
}

template <Reduction function>
void def_accumulation(py::module_& module, const char* name) {
  module.def(
      name,
      [name](py::handle x, py::handle axis, py::handle dtype, bool keepdims) {
        return in_dtype(function(converted(x, dtype), to_axes(axis, name), keepdims, here()), dtype);
      },
      py::arg("x"), py::kw_only(), py::arg("axis") = py::none(), py::arg("dtype") = py::none(),
      py::arg("keepdims") = false);
}

template <Scan function>
void def_scan(py::module_& module, const char* name) {
  module.def(
      name,
      [name](py::handle x, py::handle axis, py::handle dtype) {
        return in_dtype(function(converted(x, dtype), to_optional_axis(axis, name), here()), dtype);
      },
      py::arg("x"), py::arg("axis") = py::none(), py::kw_only(), py::arg("dtype") = py::none());
}

template <Array (*function)(const Array&, Axes, int64_t, bool, Location)>
void def_moment(py::module_& module, const char* name) {
  module.def(
      name,
      [name](py::handle x, py::handle axis, double correction, bool keepdims) {
        if (correction != static_cast<double>(static_cast<int64_t>(correction)))
          throw py::value_error(std::string(name) + ": kiln takes a whole-number correction, got " +
                                std::to_string(correction));
        return function(to_array(x), to_axes(axis, name), static_cast<int64_t>(correction), keepdims, here());
      },
      py::arg("x"), py::kw_only(), py::arg("axis") = py::none(), py::arg("correction") = 0.0,
      py::arg("keepdims") = false);
}

template <Array (*function)(const Array&, std::optional<int64_t>, bool, Location)>
void def_arg_extreme(py::module_& module, const char* name) {
  module.def(
      name,
      [name](py::handle x, py::handle axis, bool keepdims) {
        return function(to_array(x), to_optional_axis(axis, name), keepdims, here());
      },
      py::arg("x"), py::kw_only(), py::arg("axis") = py::none(), py::arg("keepdims") = false);
}

}  // namespace

void bind_reductions(py::module_& module) {
  def_accumulation<sum>(module, "sum");
  def_accumulation<prod>(module, "prod");
  def_accumulation<mean>(module, "mean");
  def_reduction<max>(module, "max");
  def_reduction<min>(module, "min");
  def_reduction<any>(module, "any");
  def_reduction<all>(module, "all");
  def_reduction<logsumexp>(module, "logsumexp");
  def_reduction<count_nonzero>(module, "count_nonzero");
  def_reduction<median>(module, "median");
  def_moment<var>(module, "var");
  def_moment<kiln::std>(module, "std");
  def_arg_extreme<argmax>(module, "argmax");
  def_arg_extreme<argmin>(module, "argmin");
  def_scan<cumsum>(module, "cumsum");
  def_scan<cummax>(module, "cummax");
  def_scan<cummin>(module, "cummin");
  module.def(
      "cumprod",
      [](py::handle x, py::handle axis, py::handle dtype, bool reverse) {
        return in_dtype(cumprod(converted(x, dtype), to_optional_axis(axis, "cumprod"), reverse, here()), dtype);
      },
      py::arg("x"), py::arg("axis") = py::none(), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("reverse") = false);
  module.def(
      "quantile",
      [](py::handle x, py::handle q, py::handle axis, bool keepdims) {
        if (PyFloat_Check(q.ptr()) || PyLong_Check(q.ptr()))
          return quantile(to_array(x), q.cast<double>(), to_axes(axis, "quantile"), keepdims, here());
        return quantile(to_array(x), q.cast<std::vector<double>>(), to_axes(axis, "quantile"), keepdims, here());
      },
      py::arg("x"), py::arg("q"), py::kw_only(), py::arg("axis") = py::none(), py::arg("keepdims") = false);

  module.def(
      "sort",
      [](py::handle x, int64_t axis, bool descending, bool) { return sort(to_array(x), axis, descending, here()); },
      py::arg("x"), py::kw_only(), py::arg("axis") = -1, py::arg("descending") = false, py::arg("stable") = true);
  module.def(
      "argsort",
      [](py::handle x, int64_t axis, bool descending, bool) { return argsort(to_array(x), axis, descending, here()); },
      py::arg("x"), py::kw_only(), py::arg("axis") = -1, py::arg("descending") = false, py::arg("stable") = true);
  module.def(
      "top_k", [](py::handle x, int64_t k) { return top_k(to_array(x), k, here()); }, py::arg("x"), py::arg("k"));
  module.def(
      "partition", [](py::handle x, int64_t kth, int64_t axis) { return partition(to_array(x), kth, axis, here()); },
      py::arg("x"), py::arg("kth"), py::arg("axis") = -1);
  module.def(
      "argpartition",
      [](py::handle x, int64_t kth, int64_t axis) { return argpartition(to_array(x), kth, axis, here()); },
      py::arg("x"), py::arg("kth"), py::arg("axis") = -1);
  module.def(
      "softmax", [](py::handle x, int64_t axis) { return softmax(to_array(x), axis, here()); }, py::arg("x"),
      py::arg("axis") = -1);
  module.def(
      "log_softmax", [](py::handle x, int64_t axis) { return log_softmax(to_array(x), axis, here()); }, py::arg("x"),
      py::arg("axis") = -1);
}

}  // namespace kiln::python
