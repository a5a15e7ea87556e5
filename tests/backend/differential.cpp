// Compiled-versus-interpreter comparison (see the header).
#include "differential.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <tuple>

#include "backend/interp/interpreter.h"
#include "backend/llvm/backend.h"
#include "backend/llvm/plan.h"
#include "core/array_impl.h"
#include "transform/simplify.h"

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
  ir::Graph simplified = detail::ir_of(graph);  // what compiling plans
  transform::simplify(simplified);
  return llvm_backend::describe(simplified, llvm_backend::plan_graph(simplified));
}

DumpDirectory::DumpDirectory() {
  static std::atomic<int> count{0};
  path_ = std::filesystem::temp_directory_path() /
          ("kiln_dump_" + std::to_string(::getpid()) + "_" + std::to_string(count.fetch_add(1)));
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
  ::setenv("KILN_DUMP", path_.c_str(), 1);
}

DumpDirectory::~DumpDirectory() {
  ::unsetenv("KILN_DUMP");
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::vector<std::filesystem::path> DumpDirectory::files(std::string_view suffix) const {
  std::vector<std::filesystem::path> found;
  for (const auto& entry : std::filesystem::directory_iterator(path_))
    if (entry.path().filename().string().ends_with(suffix)) found.push_back(entry.path());
  std::sort(found.begin(), found.end());
  return found;
}

std::string compiled_assembly(const Graph& graph) {
  DumpDirectory dump;
  llvm_backend::llvm_backend().compile(detail::shared_ir(graph));
  std::string assembly;
  for (const std::filesystem::path& path : dump.files(".s")) {
    std::ifstream file(path);
    assembly += std::string(std::istreambuf_iterator<char>(file), {});
  }
  return assembly;
}

std::string compare_outputs(const std::vector<Array>& got, const std::vector<Array>& expected,
                            const std::vector<Tolerance>& tolerances, const std::string& how) {
  if (got.size() != expected.size())
    return how + "compiled " + std::to_string(got.size()) + " outputs, reference " + std::to_string(expected.size()) +
           "\n";
  std::string failure;
  for (size_t i = 0; i < got.size(); ++i) {
    Tolerance tolerance = tolerances.empty() ? Tolerance{} : tolerances[std::min(i, tolerances.size() - 1)];
    std::string mismatch;
    try {
      mismatch = compare_arrays(got[i], expected[i], tolerance);
    } catch (const std::exception& error) {
      mismatch = std::string("reading it threw: ") + error.what();
    }
    if (!mismatch.empty()) failure += how + "output " + std::to_string(i) + ": " + mismatch + "\n";
  }
  return failure;
}

std::pair<std::vector<Array>, std::vector<Array>> run_with_and_without_donation(const runtime::Executable& executable,
                                                                                const std::vector<Array>& arguments,
                                                                                const std::vector<Array>& captures) {
  std::vector<Array> got = executable.run(arguments, captures);
  std::vector<Array> copies;
  for (const Array& argument : arguments) copies.push_back(detail::copy_of(argument));
  std::vector<char> donated(copies.size(), 1);
  return {std::move(got), executable.run(copies, captures, donated)};
}

std::string describe_arrays(const std::string& what, const std::vector<Array>& arrays) {
  std::ostringstream report;
  for (size_t i = 0; i < arrays.size(); ++i) {
    if (!arrays[i].defined()) {
      report << what << " " << i << ": an empty Array\n";
    } else if (arrays[i].size() > 64) {
      report << what << " " << i << ": " << arrays[i].dtype() << shape_string(arrays[i].shape()) << "\n";
    } else {
      report << what << " " << i << ": " << arrays[i] << "\n";
    }
  }
  return report.str();
}

std::string run_differential(const DifferentialCase& test, const std::vector<Tolerance>& tolerances,
                             const runtime::Backend& backend) {
  std::vector<Array> expected, got, donated_got;
  std::string failure;
  try {
    expected = detail::interpret(test.graph, test.arguments, test.captures);
  } catch (const std::exception& error) {
    failure = std::string("the interpreter threw: ") + error.what();
  }
  if (failure.empty()) {
    try {
      auto executable = backend.compile(detail::shared_ir(test.graph));
      std::tie(got, donated_got) = run_with_and_without_donation(*executable, test.arguments, test.captures);
    } catch (const std::exception& error) {
      failure = std::string("the ") + std::string(backend.name()) + " backend threw: " + error.what();
    }
  }
  if (failure.empty()) failure = compare_outputs(got, expected, tolerances);
  if (failure.empty()) failure = compare_outputs(donated_got, expected, tolerances, "with every argument donated, ");
  if (failure.empty()) return "";
  std::ostringstream report;
  report << failure << "\n--- graph\n" << test.graph.to_string();
  try {
    report << "--- plan\n" << describe_plan(test.graph);
  } catch (const std::exception& error) {
    report << "--- plan failed: " << error.what() << "\n";
  }
  report << describe_arrays("argument", test.arguments) << describe_arrays("capture", test.captures)
         << describe_arrays("expected", expected) << describe_arrays("got", got);
  if (!donated_got.empty()) report << describe_arrays("got with donated arguments", donated_got);
  return report.str();
}

namespace {

class Nudged final : public runtime::Executable {
 public:
  explicit Nudged(std::shared_ptr<const runtime::Executable> inner) : inner_(std::move(inner)) {}
  std::string_view backend() const override { return "nudging"; }
  std::vector<Array> run(std::span<const Array> arguments, std::span<const Array> implicit_inputs,
                         std::span<const char> donated) const override {
    std::vector<Array> outputs = inner_->run(arguments, implicit_inputs, donated);
    for (Array& output : outputs) {
      if (output.size() == 0) continue;
      std::vector<double> values = output.to_vector<double>();
      double& last = values.back();
      if (output.dtype() == DType::f32) last = std::nextafter(static_cast<float>(last), INFINITY);
      else if (output.dtype() == DType::f64) last = std::nextafter(last, INFINITY);
      else if (output.dtype() == DType::bool_) last = last == 0;
      else last = last == 0 ? 1 : 0;
      output = astype(array(values, output.shape()), output.dtype());
    }
    return outputs;
  }

 private:
  std::shared_ptr<const runtime::Executable> inner_;
};

}  // namespace

std::shared_ptr<const runtime::Executable> NudgingBackend::compile(std::shared_ptr<const ir::Graph> graph) const {
  return std::make_shared<Nudged>(cache::default_backend().compile(std::move(graph)));
}

}  // namespace kiln::testing
