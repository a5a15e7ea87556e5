// Compiled-versus-interpreter comparison (see the header).
#include "differential.h"

#include <cmath>
#include <exception>
#include <limits>
#include <sstream>

#include "backend/llvm/plan.h"
#include "core/array_impl.h"

namespace kiln::testing {

double epsilon(DType dtype) {
  return dtype == DType::f32 ? std::numeric_limits<float>::epsilon() : std::numeric_limits<double>::epsilon();
}

Tolerance ulps(double ulps, DType dtype) {
  Tolerance tolerance;
  tolerance.relative = ulps * epsilon(dtype);
  // Results in the subnormal range have ulps of a fixed size.
  tolerance.absolute = ulps * (dtype == DType::f32 ? std::numeric_limits<float>::denorm_min()
                                                   : std::numeric_limits<double>::denorm_min());
  return tolerance;
}

Tolerance any_zero_sign() {
  Tolerance tolerance;
  tolerance.zero_sign_matters = false;
  return tolerance;
}

std::string compare_arrays(const Array& compiled, const Array& reference, const Tolerance& tolerance) {
  std::ostringstream out;
  if (compiled.dtype() != reference.dtype() || compiled.shape() != reference.shape()) {
    out << "compiled " << compiled.dtype() << shape_string(compiled.shape()) << " vs reference " << reference.dtype()
        << shape_string(reference.shape());
    return out.str();
  }
  std::vector<double> got = compiled.to_vector<double>();
  std::vector<double> expected = reference.to_vector<double>();
  std::vector<double> scale;
  if (tolerance.scale_factor != 0 && tolerance.scale.defined())
    scale = broadcast_to(tolerance.scale, reference.shape()).to_vector<double>();
  bool exact = !is_floating(reference.dtype()) || tolerance.exact();
  int bad = 0;
  double worst_ratio = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double a = got[i], e = expected[i];
    bool ok;
    double allowed = 0;
    if (std::isnan(a) || std::isnan(e)) {
      ok = std::isnan(a) && std::isnan(e);
    } else if (std::isinf(a) || std::isinf(e) || exact) {
      // Exact means bitwise: the sign of a zero is observable (1 / x).
      ok = a == e && (!tolerance.zero_sign_matters || std::signbit(a) == std::signbit(e));
    } else {
      allowed = tolerance.absolute + tolerance.relative * std::fabs(e);
      if (!scale.empty()) allowed += tolerance.scale_factor * scale[i];
      ok = std::fabs(a - e) <= allowed;
      if (!ok && allowed > 0) worst_ratio = std::max(worst_ratio, std::fabs(a - e) / allowed);
    }
    if (!ok && bad++ < 6) {
      out.precision(reference.dtype() == DType::f32 ? 9 : 17);
      out << "\n    [" << i << "] compiled " << a << ", reference " << e;
      if (allowed > 0) out << " (|diff| " << std::fabs(a - e) << " > allowed " << allowed << ")";
    }
  }
  if (!bad) return "";
  std::ostringstream summary;
  summary << bad << " of " << got.size() << " elements of " << reference.dtype() << shape_string(reference.shape())
          << " differ";
  if (worst_ratio > 0) summary << " (worst " << worst_ratio << "x the tolerance)";
  return summary.str() + out.str();
}

std::string describe_plan(const Graph& graph) {
  return llvm_backend::describe(graph.ir(), llvm_backend::plan_graph(graph.ir()));
}

std::string run_differential(const DifferentialCase& test, const std::vector<Tolerance>& tolerances,
                             const runtime::Backend& backend) {
  std::vector<Array> expected, got;
  std::string failure;
  try {
    expected = detail::interpret(test.graph, test.arguments, test.captures);
  } catch (const std::exception& error) {
    failure = std::string("the interpreter threw: ") + error.what();
  }
  // Run twice: as is, then with every argument donated (on copies, since a
  // donated argument's memory may be overwritten with an output).
  std::vector<Array> donated_got;
  if (failure.empty()) {
    try {
      auto executable = backend.compile(test.graph.shared());
      got = executable->run(test.arguments, test.captures);
      std::vector<Array> copies;
      for (const Array& argument : test.arguments) copies.push_back(detail::copy_of(argument));
      std::vector<char> donated(copies.size(), 1);
      donated_got = executable->run(copies, test.captures, donated);
    } catch (const std::exception& error) {
      failure = std::string("the ") + std::string(backend.name()) + " backend threw: " + error.what();
    }
  }
  auto compare_all = [&](const std::vector<Array>& outputs, const char* how) {
    if (outputs.size() != expected.size()) {
      failure += std::string(how) + "compiled " + std::to_string(outputs.size()) + " outputs, reference " +
                 std::to_string(expected.size()) + "\n";
      return;
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      Tolerance tolerance = tolerances.empty() ? Tolerance{} : tolerances[std::min(i, tolerances.size() - 1)];
      std::string mismatch;
      try {
        mismatch = compare_arrays(outputs[i], expected[i], tolerance);
      } catch (const std::exception& error) {
        mismatch = std::string("reading it threw: ") + error.what();
      }
      if (!mismatch.empty()) failure += std::string(how) + "output " + std::to_string(i) + ": " + mismatch + "\n";
    }
  };
  if (failure.empty()) compare_all(got, "");
  if (failure.empty()) compare_all(donated_got, "with every argument donated, ");
  if (failure.empty()) return "";
  std::ostringstream report;
  report << failure << "\n--- graph\n" << test.graph.to_string();
  try {
    report << "--- plan\n" << describe_plan(test.graph);
  } catch (const std::exception& error) {
    report << "--- plan failed: " << error.what() << "\n";
  }
  auto show = [&](const char* what, const std::vector<Array>& arrays) {
    for (size_t i = 0; i < arrays.size(); ++i) {
      if (!arrays[i].defined()) {
        report << what << " " << i << ": an empty Array\n";
      } else if (arrays[i].size() > 64) {
        report << what << " " << i << ": " << arrays[i].dtype() << shape_string(arrays[i].shape()) << "\n";
      } else {
        report << what << " " << i << ": " << arrays[i] << "\n";
      }
    }
  };
  show("argument", test.arguments);
  show("capture", test.captures);
  show("expected", expected);
  show("got", got);
  if (!donated_got.empty()) show("got with donated arguments", donated_got);
  return report.str();
}

}  // namespace kiln::testing
