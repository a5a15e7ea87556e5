// Elementwise operations under NumPy's names (kiln/__init__.py adds the Array
// API's where they differ: acos for arccos, ...). Arguments may be arrays,
// NumPy arrays, nested lists or Python numbers; numbers stay weakly typed.
#include "bindings.h"

namespace kiln::python {
namespace {

using Binary = Array (*)(Operand, Operand);
using Unary = Array (*)(const Array&, Location);

template <Binary function>
Array binary(py::handle a, py::handle b) {
  Location where = here();
  return function(to_operand(a, where), to_operand(b, where));
}

template <Unary function>
Array unary(py::handle x) {
  Location where = here();
  return function(to_array(x), where);
}

template <Binary function>
void def_binary(py::module_& module, const char* name) {
  module.def(name, &binary<function>, py::arg("x1"), py::arg("x2"));
}

template <Unary function>
void def_unary(py::module_& module, const char* name) {
  module.def(name, &unary<function>, py::arg("x"));
}

}  // namespace

void bind_elementwise(py::module_& module) {
  def_binary<add>(module, "add");
  def_binary<sub>(module, "subtract");
  def_binary<mul>(module, "multiply");
  def_binary<div>(module, "divide");
  def_binary<pow>(module, "pow");
  def_binary<maximum>(module, "maximum");
  def_binary<minimum>(module, "minimum");
  def_binary<equal>(module, "equal");
  def_binary<not_equal>(module, "not_equal");
  def_binary<less>(module, "less");
  def_binary<less_equal>(module, "less_equal");
  def_binary<greater>(module, "greater");
  def_binary<greater_equal>(module, "greater_equal");
  def_binary<logical_and>(module, "logical_and");
  def_binary<logical_or>(module, "logical_or");
  def_binary<arctan2>(module, "arctan2");
  def_binary<floor_divide>(module, "floor_divide");
  def_binary<remainder>(module, "remainder");
  def_binary<copysign>(module, "copysign");
  def_binary<nextafter>(module, "nextafter");
  def_binary<bitwise_and>(module, "bitwise_and");
  def_binary<bitwise_or>(module, "bitwise_or");
  def_binary<bitwise_xor>(module, "bitwise_xor");
  def_binary<left_shift>(module, "left_shift");
  def_binary<right_shift>(module, "right_shift");
  def_binary<logaddexp>(module, "logaddexp");
  def_binary<hypot>(module, "hypot");
  module.def(
      "divmod",
      [](py::handle a, py::handle b) {
        Location where = here();
        return divmod(to_operand(a, where), to_operand(b, where));
      },
      py::arg("x1"), py::arg("x2"));

  def_unary<neg>(module, "negative");
  def_unary<abs>(module, "abs");
  def_unary<sign>(module, "sign");
  def_unary<exp>(module, "exp");
  def_unary<exp2>(module, "exp2");
  def_unary<log>(module, "log");
  def_unary<log2>(module, "log2");
  def_unary<log10>(module, "log10");
  def_unary<log1p>(module, "log1p");
  def_unary<expm1>(module, "expm1");
  def_unary<sqrt>(module, "sqrt");
  def_unary<rsqrt>(module, "rsqrt");
  def_unary<square>(module, "square");
  def_unary<tanh>(module, "tanh");
  def_unary<erf>(module, "erf");
  def_unary<erfinv>(module, "erfinv");
  def_unary<sin>(module, "sin");
  def_unary<cos>(module, "cos");
  def_unary<tan>(module, "tan");
  def_unary<sinh>(module, "sinh");
  def_unary<cosh>(module, "cosh");
  def_unary<arcsin>(module, "arcsin");
  def_unary<arccos>(module, "arccos");
  def_unary<arctan>(module, "arctan");
  def_unary<arcsinh>(module, "arcsinh");
  def_unary<arccosh>(module, "arccosh");
  def_unary<arctanh>(module, "arctanh");
  def_unary<floor>(module, "floor");
  def_unary<ceil>(module, "ceil");
  def_unary<round>(module, "_round");
  def_unary<logical_not>(module, "logical_not");
  def_unary<isnan>(module, "isnan");
  def_unary<isinf>(module, "isinf");
  def_unary<isfinite>(module, "isfinite");
  def_unary<reciprocal>(module, "reciprocal");
  def_unary<degrees>(module, "degrees");
  def_unary<radians>(module, "radians");
  def_unary<bitwise_not>(module, "bitwise_not");
  def_unary<stop_gradient>(module, "stop_gradient");
  def_unary<sigmoid>(module, "sigmoid");
  def_unary<relu>(module, "relu");
  def_unary<conj>(module, "conj");
  def_unary<real>(module, "real");
  def_unary<imag>(module, "imag");
  def_unary<angle>(module, "angle");

  module.def(
      "where",
      [](py::handle condition, py::handle x, py::handle y) {
        Location where = here();
        return kiln::where(to_operand(condition, where), to_operand(x, where), to_operand(y, where));
      },
      py::arg("condition"), py::arg("x1"), py::arg("x2"));
  module.def(
      "_clip",
      [](py::handle x, py::handle lo, py::handle hi) {
        Location where = here();
        return clip(to_operand(x, where), to_operand(lo, where), to_operand(hi, where));
      },
      py::arg("x"), py::arg("min"), py::arg("max"));
  module.def(
      "nan_to_num",
      [](py::handle x, double nan, std::optional<double> posinf, std::optional<double> neginf) {
        return nan_to_num(to_array(x), nan, posinf, neginf, here());
      },
      py::arg("x"), py::arg("nan") = 0.0, py::arg("posinf") = py::none(), py::arg("neginf") = py::none());
  module.def(
      "isclose",
      [](py::handle a, py::handle b, double rtol, double atol, bool equal_nan) {
        return isclose(to_array(a), to_array(b), rtol, atol, equal_nan, here());
      },
      py::arg("a"), py::arg("b"), py::arg("rtol") = 1e-5, py::arg("atol") = 1e-8, py::arg("equal_nan") = false);
  module.def(
      "allclose",
      [](py::handle a, py::handle b, double rtol, double atol, bool equal_nan) {
        return allclose(to_array(a), to_array(b), rtol, atol, equal_nan, here());
      },
      py::arg("a"), py::arg("b"), py::arg("rtol") = 1e-5, py::arg("atol") = 1e-8, py::arg("equal_nan") = false);
  module.def(
      "array_equal",
      [](py::handle a, py::handle b, bool equal_nan) {
        return array_equal(to_array(a), to_array(b), equal_nan, here());
      },
      py::arg("a1"), py::arg("a2"), py::arg("equal_nan") = false);
  module.def(
      "astype",
      [](py::handle x, py::handle dtype, bool copy, py::handle device) {
        if (!device.is_none() && py::str(device).cast<std::string>() != "cpu")
          throw py::value_error("astype: kiln arrays live on the cpu device, not " + std::string(py::str(device)));
        Array array = to_array(x);
        DType target = to_dtype(dtype);
        if (!copy && target == array.dtype(here())) return array;
        return astype(array, target, here());
      },
      py::arg("x"), py::arg("dtype"), py::kw_only(), py::arg("copy") = true, py::arg("device") = py::none());
}

}  // namespace kiln::python
