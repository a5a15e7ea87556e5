// The submodules' operations: products and kn.linalg, kn.nn, kn.random and
// file I/O. kiln/linalg.py, nn.py and random.py give them their public
// names; results made of several arrays come back as tuples.
#include <map>

#include "bindings.h"

namespace kiln::python {
namespace {

Padding to_padding(py::handle padding, const char* operation) {
  if (py::isinstance<py::str>(padding)) {
    std::string name = padding.cast<std::string>();
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name == "valid") return Padding::valid();
    if (name == "same") return Padding::same();
    throw py::value_error(std::string(operation) + ": padding must be 'valid', 'same' or (before, after) pairs, got '" +
                          name + "'");
  }
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (py::handle pair : py::reinterpret_borrow<py::sequence>(padding)) {
    if (PyLong_Check(pair.ptr())) {
      int64_t both = pair.cast<int64_t>();
      pairs.emplace_back(both, both);
    } else {
      pairs.push_back(pair.cast<std::pair<int64_t, int64_t>>());
    }
  }
  return Padding(std::move(pairs));
}

std::vector<int64_t> optional_list(py::handle object, const char* operation, const char* what) {
  return object.is_none() ? std::vector<int64_t>{} : to_int_list(object, operation, what);
}

// A str or any os.PathLike (pathlib.Path).
std::string file_path(py::handle path) { return py::str(py::module_::import("os").attr("fspath")(path)); }

linalg::NormOrder to_norm_order(py::handle order) {
  if (order.is_none()) return {};
  if (py::isinstance<py::str>(order)) return linalg::NormOrder(order.cast<std::string>().c_str());
  return linalg::NormOrder(order.cast<double>());
}

void bind_products(py::module_& module) {
  module.def(
      "matmul", [](py::handle a, py::handle b) { return matmul(to_array(a), to_array(b), here()); }, py::arg("x1"),
      py::arg("x2"));
  module.def(
      "_tensordot",
      [](py::handle a, py::handle b, py::handle axes) {
        if (PyLong_Check(axes.ptr())) return tensordot(to_array(a), to_array(b), axes.cast<int>(), here());
        auto pair = axes.cast<std::pair<py::object, py::object>>();
        return tensordot(to_array(a), to_array(b),
                         {to_int_list(pair.first, "tensordot", "axes"), to_int_list(pair.second, "tensordot", "axes")},
                         here());
      },
      py::arg("x1"), py::arg("x2"), py::arg("axes"));
  module.def("_einsum", [](const std::string& subscripts, py::args operands) {
    return einsum(subscripts, to_array_list(operands, "einsum"), here());
  });
  module.def(
      "outer", [](py::handle a, py::handle b) { return outer(to_array(a), to_array(b), here()); }, py::arg("x1"),
      py::arg("x2"));
  module.def(
      "inner", [](py::handle a, py::handle b) { return inner(to_array(a), to_array(b), here()); }, py::arg("x1"),
      py::arg("x2"));
  module.def(
      "kron", [](py::handle a, py::handle b) { return kron(to_array(a), to_array(b), here()); }, py::arg("x1"),
      py::arg("x2"));
  module.def(
      "cross", [](py::handle a, py::handle b, int64_t axis) { return cross(to_array(a), to_array(b), axis, here()); },
      py::arg("x1"), py::arg("x2"), py::kw_only(), py::arg("axis") = -1);
}

void bind_linalg_module(py::module_& module) {
  py::module_ linalg = module.def_submodule("_linalg", "kiln's numpy.linalg (import as kn.linalg)");
  linalg.def("cholesky", [](py::handle a) { return linalg::cholesky(to_array(a), here()); });
  linalg.def(
      "triangular_solve",
      [](py::handle a, py::handle b, bool lower, bool transpose_a, bool unit_diagonal) {
        return linalg::triangular_solve(to_array(a), to_array(b), lower, transpose_a, unit_diagonal, here());
      },
      py::arg("a"), py::arg("b"), py::kw_only(), py::arg("lower") = true, py::arg("transpose_a") = false,
      py::arg("unit_diagonal") = false);
  linalg.def("solve", [](py::handle a, py::handle b) { return linalg::solve(to_array(a), to_array(b), here()); });
  linalg.def("inv", [](py::handle a) { return linalg::inv(to_array(a), here()); });
  linalg.def("slogdet", [](py::handle a) { return linalg::slogdet(to_array(a), here()); });
  linalg.def("det", [](py::handle a) { return linalg::det(to_array(a), here()); });
  linalg.def("qr", [](py::handle a, const std::string& mode) {
    linalg::QR result = linalg::qr(to_array(a), mode, here());
    return py::make_tuple(result.q, result.r);
  });
  linalg.def("svd", [](py::handle a, bool full_matrices, bool compute_uv) {
    linalg::SVD result = linalg::svd(to_array(a), full_matrices, compute_uv, here());
    if (!compute_uv) return py::object(py::cast(result.s));
    return py::object(py::make_tuple(result.u, result.s, result.vh));
  });
  linalg.def("svdvals", [](py::handle a) { return linalg::svdvals(to_array(a), here()); });
  linalg.def("eigh", [](py::handle a, bool lower) {
    linalg::Eigh result = linalg::eigh(to_array(a), lower, here());
    return py::make_tuple(result.eigenvalues, result.eigenvectors);
  });
  linalg.def("eigvalsh", [](py::handle a, bool lower) { return linalg::eigvalsh(to_array(a), lower, here()); });
  linalg.def("norm", [](py::handle x, py::handle order, py::handle axis, bool keepdims) {
    return linalg::norm(to_array(x), to_norm_order(order), to_axes(axis, "norm"), keepdims, here());
  });
  linalg.def("lstsq", [](py::handle a, py::handle b, std::optional<double> rcond) {
    linalg::Lstsq result = linalg::lstsq(to_array(a), to_array(b), rcond, here());
    return py::make_tuple(result.solution, result.residuals, result.rank, result.singular_values);
  });
  linalg.def("pinv",
             [](py::handle a, std::optional<double> rcond) { return linalg::pinv(to_array(a), rcond, here()); });
  linalg.def("matrix_rank",
             [](py::handle a, std::optional<double> tol) { return linalg::matrix_rank(to_array(a), tol, here()); });
}

void bind_nn_module(py::module_& module) {
  py::module_ nn = module.def_submodule("_nn", "kiln's neural-network operations (import as kn.nn)");
  nn.def("conv", [](py::handle x, py::handle kernel, py::handle strides, py::handle padding, py::handle dilation,
                    int64_t groups, bool channels_last) {
    ConvOptions options{optional_list(strides, "conv", "strides"), to_padding(padding, "conv"),
                        optional_list(dilation, "conv", "dilation"), groups, channels_last};
    return conv(to_array(x), to_array(kernel), options, here());
  });
  nn.def("conv_transpose", [](py::handle y, py::handle kernel, py::handle spatial, py::handle strides,
                              py::handle padding, py::handle dilation, int64_t groups, bool channels_last) {
    ConvOptions options{optional_list(strides, "conv_transpose", "strides"), to_padding(padding, "conv_transpose"),
                        optional_list(dilation, "conv_transpose", "dilation"), groups, channels_last};
    return conv_transpose(to_array(y), to_array(kernel), to_shape(spatial, "conv_transpose"), options, here());
  });
  nn.def("max_pool", [](py::handle x, py::handle window, py::handle strides, py::handle padding, bool channels_last) {
    PoolOptions options{optional_list(strides, "max_pool", "strides"), to_padding(padding, "max_pool"), channels_last};
    return max_pool(to_array(x), to_int_list(window, "max_pool", "window"), options, here());
  });
  nn.def("avg_pool", [](py::handle x, py::handle window, py::handle strides, py::handle padding, bool channels_last) {
    PoolOptions options{optional_list(strides, "avg_pool", "strides"), to_padding(padding, "avg_pool"), channels_last};
    return avg_pool(to_array(x), to_int_list(window, "avg_pool", "window"), options, here());
  });
  nn.def("reduce_window",
         [](py::handle x, const std::string& reduction, py::handle window, py::handle strides, py::handle padding) {
           static const std::map<std::string, WindowReduction> reductions{{"sum", WindowReduction::sum},
                                                                          {"max", WindowReduction::max},
                                                                          {"min", WindowReduction::min},
                                                                          {"mean", WindowReduction::mean}};
           auto found = reductions.find(reduction);
           if (found == reductions.end())
             throw py::value_error("reduce_window: the reduction must be 'sum', 'max', 'min' or 'mean', got '" +
                                   reduction + "'");
           return reduce_window(to_array(x), found->second, to_int_list(window, "reduce_window", "window"),
                                optional_list(strides, "reduce_window", "strides"),
                                to_padding(padding, "reduce_window"), here());
         });
  nn.def("layer_norm",
         [](py::handle x, int64_t axis, double eps) { return layer_norm(to_array(x), axis, eps, here()); });
  nn.def("rms_norm", [](py::handle x, int64_t axis, double eps) { return rms_norm(to_array(x), axis, eps, here()); });
  nn.def("gelu", [](py::handle x, bool approximate) { return gelu(to_array(x), approximate, here()); });
  nn.def("silu", [](py::handle x) { return silu(to_array(x), here()); });
  nn.def("softplus", [](py::handle x) { return softplus(to_array(x), here()); });
  nn.def("log_sigmoid", [](py::handle x) { return log_sigmoid(to_array(x), here()); });
}

void bind_random_module(py::module_& module) {
  namespace rnd = kiln::random;
  py::module_ random = module.def_submodule("_random", "kiln's counter-based random numbers (import as kn.random)");
  random.def("key", [](uint64_t seed) { return rnd::key(seed, here()); });
  random.def("split", [](const Array& key, int64_t n) { return rnd::split(key, n, here()); });
  random.def("uniform", [](const Array& key, py::handle shape, py::handle dtype, double lo, double hi) {
    return rnd::uniform(key, to_shape(shape, "uniform"), to_optional_dtype(dtype).value_or(DType::f32), lo, hi, here());
  });
  random.def("normal", [](const Array& key, py::handle shape, py::handle dtype) {
    return rnd::normal(key, to_shape(shape, "normal"), to_optional_dtype(dtype).value_or(DType::f32), here());
  });
  random.def("randint", [](const Array& key, py::handle shape, int64_t lo, int64_t hi, py::handle dtype) {
    return rnd::randint(key, to_shape(shape, "randint"), lo, hi, to_optional_dtype(dtype).value_or(DType::i32), here());
  });
  random.def("bernoulli", [](const Array& key, double p, py::handle shape) {
    return rnd::bernoulli(key, p, to_shape(shape, "bernoulli"), here());
  });
  random.def("gumbel", [](const Array& key, py::handle shape, py::handle dtype) {
    return rnd::gumbel(key, to_shape(shape, "gumbel"), to_optional_dtype(dtype).value_or(DType::f32), here());
  });
  random.def("laplace", [](const Array& key, py::handle shape, py::handle dtype) {
    return rnd::laplace(key, to_shape(shape, "laplace"), to_optional_dtype(dtype).value_or(DType::f32), here());
  });
  random.def("truncated_normal", [](const Array& key, double lo, double hi, py::handle shape, py::handle dtype) {
    return rnd::truncated_normal(key, lo, hi, to_shape(shape, "truncated_normal"),
                                 to_optional_dtype(dtype).value_or(DType::f32), here());
  });
  random.def("categorical", [](const Array& key, py::handle logits, int64_t axis) {
    return rnd::categorical(key, to_array(logits), axis, here());
  });
  random.def("permutation", [](const Array& key, py::handle x, int64_t axis) {
    if (PyLong_Check(x.ptr())) return rnd::permutation(key, x.cast<int64_t>(), here());
    return rnd::permutation(key, to_array(x), axis, here());
  });
  random.def("shuffle",
             [](const Array& key, py::handle x, int64_t axis) { return rnd::shuffle(key, to_array(x), axis, here()); });
  random.def("choice", [](const Array& key, py::handle a, py::handle shape, bool replace, py::handle p) {
    std::optional<Array> probabilities;
    if (!p.is_none()) probabilities = to_array(p);
    if (PyLong_Check(a.ptr()))
      return rnd::choice(key, a.cast<int64_t>(), to_shape(shape, "choice"), replace, probabilities, here());
    return rnd::choice(key, to_array(a), to_shape(shape, "choice"), replace, probabilities, here());
  });
  random.def("multivariate_normal", [](const Array& key, py::handle mean, py::handle covariance, py::handle shape) {
    return rnd::multivariate_normal(key, to_array(mean), to_array(covariance), to_shape(shape, "multivariate_normal"),
                                    here());
  });
}

fft::Norm to_norm(const std::string& norm) {
  if (norm == "backward") return fft::Norm::backward;
  if (norm == "ortho") return fft::Norm::ortho;
  if (norm == "forward") return fft::Norm::forward;
  throw py::value_error("fft: norm must be 'backward', 'ortho' or 'forward', got '" + norm + "'");
}

std::optional<Shape> optional_shape(py::handle s, const char* operation) {
  if (s.is_none()) return std::nullopt;
  return to_int_list(s, operation, "s");
}

std::optional<std::vector<int64_t>> optional_axes(py::handle axes, const char* operation) {
  if (axes.is_none()) return std::nullopt;
  return to_int_list(axes, operation, "axes");
}

void bind_fft_module(py::module_& module) {
  py::module_ transforms = module.def_submodule("_fft", "kiln's discrete Fourier transforms (import as kn.fft)");
  using OneAxis = Array (*)(const Array&, std::optional<int64_t>, int64_t, fft::Norm, Location);
  auto one_axis = [&transforms](const char* name, OneAxis function) {
    transforms.def(name, [function](py::handle x, std::optional<int64_t> n, int64_t axis, const std::string& norm) {
      return function(to_array(x), n, axis, to_norm(norm), here());
    });
  };
  one_axis("fft", &fft::fft);
  one_axis("ifft", &fft::ifft);
  one_axis("rfft", &fft::rfft);
  one_axis("irfft", &fft::irfft);
  one_axis("hfft", &fft::hfft);
  one_axis("ihfft", &fft::ihfft);
  using Axes = Array (*)(const Array&, std::optional<Shape>, std::optional<std::vector<int64_t>>, fft::Norm, Location);
  auto several_axes = [&transforms](const char* name, Axes function) {
    transforms.def(name, [function, name](py::handle x, py::handle s, py::handle axes, const std::string& norm) {
      return function(to_array(x), optional_shape(s, name), optional_axes(axes, name), to_norm(norm), here());
    });
  };
  several_axes("fftn", &fft::fftn);
  several_axes("ifftn", &fft::ifftn);
  several_axes("rfftn", &fft::rfftn);
  several_axes("irfftn", &fft::irfftn);
  transforms.def("fftfreq", [](int64_t n, double d, py::handle dtype) {
    return fft::fftfreq(n, d, to_optional_dtype(dtype).value_or(DType::f32), here());
  });
  transforms.def("rfftfreq", [](int64_t n, double d, py::handle dtype) {
    return fft::rfftfreq(n, d, to_optional_dtype(dtype).value_or(DType::f32), here());
  });
  transforms.def("fftshift", [](py::handle x, py::handle axes) {
    return fft::fftshift(to_array(x), to_axes(axes, "fftshift"), here());
  });
  transforms.def("ifftshift", [](py::handle x, py::handle axes) {
    return fft::ifftshift(to_array(x), to_axes(axes, "ifftshift"), here());
  });
}

}  // namespace

void bind_linalg(py::module_& module) {
  bind_products(module);
  bind_linalg_module(module);
}
void bind_nn(py::module_& module) { bind_nn_module(module); }
void bind_random(py::module_& module) { bind_random_module(module); }
void bind_fft(py::module_& module) { bind_fft_module(module); }

void bind_io(py::module_& module) {
  module.def(
      "save",
      [](py::handle path, py::dict arrays) {
        std::map<std::string, Array> named;
        for (auto [name, value] : arrays) named[py::str(name).cast<std::string>()] = to_array(value);
        save(file_path(path), named, here());
      },
      py::arg("path"), py::arg("arrays"));
  module.def(
      "load", [](py::handle path) { return load(file_path(path), here()); }, py::arg("path"));
  module.def(
      "save_npy", [](py::handle path, py::handle array) { save_npy(file_path(path), to_array(array), here()); },
      py::arg("path"), py::arg("array"));
  module.def(
      "load_npy", [](py::handle path) { return load_npy(file_path(path), here()); }, py::arg("path"));
}

}  // namespace kiln::python
