// Control flow as kiln's Python files call it: carries, operands and results
// are flat lists of arrays (pytrees are flattened and checked in Python), and
// the loops and branches are kiln's own, traced once and compiled as loops.
#include "kiln/control.h"

#include <optional>
#include <vector>

#include "bindings.h"

namespace kiln::python {
namespace {

/// A loop condition: a flat function returning one array.
struct Predicate {
  py::object fn;
  Array operator()(const std::vector<Array>& carry) const {
    py::gil_scoped_acquire gil;
    return array_of(fn(py::cast(carry)), "while_loop's condition");
  }
};

}  // namespace

void bind_control(py::module_& module) {
  module.def("_while_loop", [](py::object cond_fn, py::object body_fn, const std::vector<Array>& init) {
    Location where = here();
    FlatFunction body{std::move(body_fn)};
    return kiln::while_loop(Predicate{std::move(cond_fn)}, body, init, where);
  });
  module.def("_cond",
             [](const Array& predicate, py::object true_fn, py::object false_fn, const std::vector<Array>& operands) {
               Location where = here();
               FlatFunction on_true{std::move(true_fn)}, on_false{std::move(false_fn)};
               return kiln::cond(detail::Located(predicate, where), on_true, on_false, operands);
             });
  module.def("_switch",
             [](const Array& index, const std::vector<py::object>& branch_fns, const std::vector<Array>& operands) {
               Location where = here();
               std::vector<FlatFunction> branches;
               for (const py::object& fn : branch_fns) branches.push_back(FlatFunction{fn});
               return kiln::switch_(detail::Located(index, where), branches, operands);
             });
  // fn(carry, x) returns (carry, y), each a flat list.
  module.def("_scan", [](py::object fn, const std::vector<Array>& init, const std::vector<Array>& xs,
                         std::optional<int64_t> length, bool reverse) {
    Location where = here();
    auto step = [&fn](const std::vector<Array>& carry, const std::vector<Array>& x) {
      py::gil_scoped_acquire gil;
      py::tuple result = fn(py::cast(carry), py::cast(x));
      return std::pair<std::vector<Array>, std::vector<Array>>{to_array_list(result[0], "scan's carry"),
                                                               to_array_list(result[1], "scan's stacked result")};
    };
    auto [carry, ys] = kiln::scan(step, init, xs, length, reverse, where);
    return py::make_tuple(carry, ys);
  });
  // Python int bounds loop a known number of times (differentiable both ways);
  // array bounds make a while loop.
  module.def("_fori_loop", [](py::object lower, py::object upper, py::object body_fn, const std::vector<Array>& init) {
    Location where = here();
    auto body = [&body_fn](const Array& i, const std::vector<Array>& carry) {
      py::gil_scoped_acquire gil;
      return to_array_list(body_fn(i, py::cast(carry)), "fori_loop's body result");
    };
    bool static_bounds = py::isinstance<py::int_>(lower) && py::isinstance<py::int_>(upper);
    if (static_bounds) return kiln::fori_loop(lower.cast<int64_t>(), upper.cast<int64_t>(), body, init, where);
    return kiln::fori_loop(to_array(lower), to_array(upper), body, init, where);
  });
}

}  // namespace kiln::python
