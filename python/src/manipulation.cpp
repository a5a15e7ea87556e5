// Creation, shape and gather/scatter operations with NumPy's and the Array
// API's keyword arguments.
#include "bindings.h"

namespace kiln::python {
namespace {

void check_device(py::handle device, const char* operation) {
  if (!device.is_none() && py::str(device).cast<std::string>() != "cpu")
    throw py::value_error(std::string(operation) + ": kiln arrays live on the cpu device, not " +
                          std::string(py::str(device)));
}

Scalar fill_value(py::handle value, const char* operation) {
  if (std::optional<Scalar> number = to_scalar(value)) return *number;
  if (py::isinstance<Array>(value) || py::isinstance<py::array>(value)) {
    Array array = to_array(value);
    Location where = here();
    if (array.size(where) == 1) {
      DType dtype = array.dtype(where);
      if (dtype == DType::bool_) return Scalar(array.item<bool>(where));
      if (is_integer(dtype)) return Scalar(array.item<int64_t>(where));
      if (is_complex(dtype)) return Scalar(array.item<std::complex<double>>(where));
      return Scalar(array.item<double>(where));
    }
  }
  throw py::type_error(std::string(operation) + ": fill_value must be a Python number, got " +
                       std::string(py::repr(value)));
}

void bind_creation(py::module_& module) {
  module.def(
      "zeros",
      [](py::handle shape, py::handle dtype, py::handle device) {
        check_device(device, "zeros");
        return zeros(to_shape(shape, "zeros"), to_optional_dtype(dtype).value_or(DType::f32), here());
      },
      py::arg("shape"), py::kw_only(), py::arg("dtype") = py::none(), py::arg("device") = py::none());
  module.def(
      "ones",
      [](py::handle shape, py::handle dtype, py::handle device) {
        check_device(device, "ones");
        return ones(to_shape(shape, "ones"), to_optional_dtype(dtype).value_or(DType::f32), here());
      },
      py::arg("shape"), py::kw_only(), py::arg("dtype") = py::none(), py::arg("device") = py::none());
  module.def(
      "full",
      [](py::handle shape, py::handle value, py::handle dtype, py::handle device) {
        check_device(device, "full");
        return full(to_shape(shape, "full"), fill_value(value, "full"), to_optional_dtype(dtype), here());
      },
      py::arg("shape"), py::arg("fill_value"), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none());
  module.def(
      "full_like",
      [](py::handle x, py::handle value, py::handle dtype, py::handle device) {
        check_device(device, "full_like");
        Array array = to_array(x);
        return full(array.shape(here()), fill_value(value, "full_like"),
                    to_optional_dtype(dtype).value_or(array.dtype()), here());
      },
      py::arg("x"), py::arg("fill_value"), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none());
  module.def(
      "arange",
      [](py::handle start, py::handle stop, py::handle step, py::handle dtype, py::handle device) {
        check_device(device, "arange");
        std::optional<Scalar> first = to_scalar(start), last = to_scalar(stop), stride = to_scalar(step);
        if (!first || (!stop.is_none() && !last) || !stride)
          throw py::type_error("arange: start, stop and step must be Python numbers");
        if (stop.is_none()) return arange(Scalar(0), *first, *stride, to_optional_dtype(dtype), here());
        return arange(*first, *last, *stride, to_optional_dtype(dtype), here());
      },
      py::arg("start"), py::arg("stop") = py::none(), py::arg("step") = 1, py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none());
  module.def(
      "linspace",
      [](double start, double stop, int64_t num, py::handle dtype, py::handle device, bool endpoint) {
        check_device(device, "linspace");
        if (num < 0) throw py::value_error("linspace: num must be >= 0, got " + std::to_string(num));
        return linspace(start, stop, num, endpoint, to_optional_dtype(dtype).value_or(DType::f32), here());
      },
      py::arg("start"), py::arg("stop"), py::arg("num"), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), py::arg("endpoint") = true);
  module.def(
      "eye",
      [](int64_t rows, std::optional<int64_t> columns, int64_t k, py::handle dtype, py::handle device) {
        check_device(device, "eye");
        if (rows < 0 || columns.value_or(0) < 0) throw py::value_error("eye: sizes must be >= 0");
        return eye(rows, columns, k, to_optional_dtype(dtype).value_or(DType::f32), here());
      },
      py::arg("n_rows"), py::arg("n_cols") = py::none(), py::kw_only(), py::arg("k") = 0, py::arg("dtype") = py::none(),
      py::arg("device") = py::none());
  module.def(
      "tri",
      [](int64_t n, std::optional<int64_t> m, int64_t k, py::handle dtype) {
        return tri(n, m, k, to_optional_dtype(dtype).value_or(DType::f32), here());
      },
      py::arg("N"), py::arg("M") = py::none(), py::arg("k") = 0, py::kw_only(), py::arg("dtype") = py::none());
}

void bind_shapes(py::module_& module) {
  module.def(
      "_reshape",
      [](py::handle x, py::handle shape) {
        return reshape(to_array(x), to_int_list(shape, "reshape", "shape"), here());
      },
      py::arg("x"), py::arg("shape"));
  module.def(
      "permute_dims",
      [](py::handle x, py::handle axes) {
        std::vector<int64_t> perm = axes.is_none() ? std::vector<int64_t>{} : to_int_list(axes, "permute_dims", "axes");
        return transpose(to_array(x), perm, here());
      },
      py::arg("x"), py::arg("axes"));
  module.def(
      "broadcast_to",
      [](py::handle x, py::handle shape) { return broadcast_to(to_array(x), to_shape(shape, "broadcast_to"), here()); },
      py::arg("x"), py::arg("shape"));
  module.def(
      "expand_dims",
      [](py::handle x, py::handle axis) { return expand_dims(to_array(x), to_axes(axis, "expand_dims"), here()); },
      py::arg("x"), py::arg("axis") = 0);
  module.def(
      "squeeze", [](py::handle x, py::handle axis) { return squeeze(to_array(x), to_axes(axis, "squeeze"), here()); },
      py::arg("x"), py::arg("axis") = py::none());
  module.def(
      "_concat",
      [](py::handle arrays, int64_t axis) { return concatenate(to_array_list(arrays, "concat"), axis, here()); },
      py::arg("arrays"), py::arg("axis") = 0);
  module.def(
      "stack", [](py::handle arrays, int64_t axis) { return stack(to_array_list(arrays, "stack"), axis, here()); },
      py::arg("arrays"), py::kw_only(), py::arg("axis") = 0);
  module.def(
      "flip", [](py::handle x, py::handle axis) { return flip(to_array(x), to_axes(axis, "flip"), here()); },
      py::arg("x"), py::kw_only(), py::arg("axis") = py::none());
  module.def(
      "_roll",
      [](py::handle x, int64_t shift, std::optional<int64_t> axis) { return roll(to_array(x), shift, axis, here()); },
      py::arg("x"), py::arg("shift"), py::arg("axis") = py::none());
  module.def(
      "moveaxis",
      [](py::handle x, int64_t source, int64_t destination) {
        return moveaxis(to_array(x), source, destination, here());
      },
      py::arg("x"), py::arg("source"), py::arg("destination"));
  module.def(
      "swapaxes",
      [](py::handle x, int64_t axis1, int64_t axis2) { return swapaxes(to_array(x), axis1, axis2, here()); },
      py::arg("x"), py::arg("axis1"), py::arg("axis2"));
  module.def(
      "tile",
      [](py::handle x, py::handle reps) { return tile(to_array(x), to_int_list(reps, "tile", "reps"), here()); },
      py::arg("x"), py::arg("repetitions"));
  module.def(
      "_repeat",
      [](py::handle x, int64_t repeats, std::optional<int64_t> axis) {
        return repeat(to_array(x), repeats, axis, here());
      },
      py::arg("x"), py::arg("repeats"), py::arg("axis") = py::none());
  module.def("_split_sections",
             [](py::handle x, int64_t sections, int64_t axis) { return split(to_array(x), sections, axis, here()); });
  module.def("_split_indices", [](py::handle x, py::handle indices, int64_t axis) {
    return split(to_array(x), to_int_list(indices, "split", "indices"), axis, here());
  });
  module.def(
      "unstack", [](py::handle x, int64_t axis) { return unstack(to_array(x), axis, here()); }, py::arg("x"),
      py::kw_only(), py::arg("axis") = 0);
  module.def(
      "tril", [](py::handle x, int64_t k) { return tril(to_array(x), k, here()); }, py::arg("x"), py::kw_only(),
      py::arg("k") = 0);
  module.def(
      "triu", [](py::handle x, int64_t k) { return triu(to_array(x), k, here()); }, py::arg("x"), py::kw_only(),
      py::arg("k") = 0);
  module.def(
      "ravel", [](py::handle x) { return ravel(to_array(x), here()); }, py::arg("x"));
  module.def("atleast_1d", [](py::handle x) { return atleast_1d(to_array(x), here()); });
  module.def("atleast_2d", [](py::handle x) { return atleast_2d(to_array(x), here()); });
  module.def("atleast_3d", [](py::handle x) { return atleast_3d(to_array(x), here()); });
  module.def("_pad", [](py::handle x, std::vector<int64_t> lo, std::vector<int64_t> hi, py::handle value) {
    return pad(to_array(x), std::move(lo), std::move(hi), fill_value(value, "pad"), here());
  });
  module.def(
      "pad_to_bucket",
      [](py::handle x, int64_t axis, std::vector<int64_t> buckets, py::handle value) {
        return pad_to_bucket(to_array(x), axis, std::move(buckets), fill_value(value, "pad_to_bucket"), here());
      },
      py::arg("x"), py::arg("axis"), py::arg("buckets") = std::vector<int64_t>{}, py::arg("value") = 0);
  module.def("broadcast_arrays",
             [](py::args arrays) { return broadcast_arrays(to_array_list(arrays, "broadcast_arrays"), here()); });
  module.def(
      "meshgrid",
      [](py::args arrays, const std::string& indexing) {
        if (indexing != "xy" && indexing != "ij")
          throw py::value_error("meshgrid: indexing must be 'xy' or 'ij', got '" + indexing + "'");
        return meshgrid(to_array_list(arrays, "meshgrid"), indexing == "xy", here());
      },
      py::kw_only(), py::arg("indexing") = "xy");
  module.def(
      "diagonal",
      [](py::handle x, int64_t offset, int64_t axis1, int64_t axis2) {
        return diagonal(to_array(x), offset, axis1, axis2, here());
      },
      py::arg("x"), py::arg("offset") = 0, py::arg("axis1") = 0, py::arg("axis2") = 1);
  module.def(
      "trace",
      [](py::handle x, int64_t offset, int64_t axis1, int64_t axis2) {
        return trace(to_array(x), offset, axis1, axis2, here());
      },
      py::arg("x"), py::arg("offset") = 0, py::arg("axis1") = 0, py::arg("axis2") = 1);
  module.def(
      "diag", [](py::handle x, int64_t k) { return diag(to_array(x), k, here()); }, py::arg("x"), py::arg("k") = 0);
}

void bind_gathers(py::module_& module) {
  module.def(
      "take",
      [](py::handle x, py::handle indices, py::handle axis) {
        return take(to_array(x), to_array(indices), to_optional_axis(axis, "take"), here());
      },
      py::arg("x"), py::arg("indices"), py::kw_only(), py::arg("axis") = py::none());
  module.def(
      "take_along_axis",
      [](py::handle x, py::handle indices, int64_t axis) {
        return take_along_axis(to_array(x), to_array(indices), axis, here());
      },
      py::arg("x"), py::arg("indices"), py::arg("axis") = -1);
  module.def(
      "put_along_axis",
      [](py::handle x, py::handle indices, py::handle values, int64_t axis) {
        Location where = here();
        return put_along_axis(to_array(x), to_array(indices), to_operand(values, where), axis, where);
      },
      py::arg("x"), py::arg("indices"), py::arg("values"), py::arg("axis"));
  module.def(
      "gather", [](py::handle x, py::handle indices) { return gather(to_array(x), to_array(indices), here()); },
      py::arg("x"), py::arg("indices"));
  using Scatter = Array (*)(const Array&, const Array&, const Array&, int64_t, Location);
  auto def_scatter = [&module](const char* name, Scatter function) {
    module.def(
        name,
        [function](py::handle x, py::handle indices, py::handle updates, int64_t axis) {
          return function(to_array(x), to_array(indices), to_array(updates), axis, here());
        },
        py::arg("x"), py::arg("indices"), py::arg("updates"), py::arg("axis") = 0);
  };
  def_scatter("scatter", &scatter);
  def_scatter("scatter_add", &scatter_add);
  def_scatter("scatter_mul", &scatter_mul);
  def_scatter("scatter_max", &scatter_max);
  def_scatter("scatter_min", &scatter_min);
  module.def(
      "dynamic_slice",
      [](py::handle x, py::handle starts, py::handle sizes) {
        Location where = here();
        std::vector<Operand> operands;
        for (py::handle start : py::reinterpret_borrow<py::sequence>(starts))
          operands.push_back(to_operand(start, where));
        return dynamic_slice(to_array(x), std::move(operands), to_shape(sizes, "dynamic_slice"), where);
      },
      py::arg("x"), py::arg("start_indices"), py::arg("slice_sizes"));
  module.def(
      "dynamic_update_slice",
      [](py::handle x, py::handle update, py::handle starts) {
        Location where = here();
        std::vector<Operand> operands;
        for (py::handle start : py::reinterpret_borrow<py::sequence>(starts))
          operands.push_back(to_operand(start, where));
        return dynamic_update_slice(to_array(x), to_array(update), std::move(operands), where);
      },
      py::arg("x"), py::arg("update"), py::arg("start_indices"));
  module.def(
      "one_hot",
      [](py::handle indices, int64_t classes, py::handle dtype) {
        return one_hot(to_array(indices), classes, to_optional_dtype(dtype).value_or(DType::f32), here());
      },
      py::arg("x"), py::arg("num_classes"), py::kw_only(), py::arg("dtype") = py::none());
}

}  // namespace

void bind_manipulation(py::module_& module) {
  bind_creation(module);
  bind_shapes(module);
  bind_gathers(module);
}

}  // namespace kiln::python
