// Differential testing of a compiled backend against the reference
// interpreter: run one graph both ways and compare every output, exactly for
// integers and bool, within a stated tolerance for floats. Free of GoogleTest
// so the fuzz command can use it too.
#pragma once

#include <kiln/kiln.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "cache/backend_choice.h"
#include "runtime/executable.h"
#include "trace/trace.h"

namespace kiln::testing {

/// How far a compiled float output may be from the interpreter's, per element:
/// absolute + relative * |reference| + scale_factor * scale[element]. `scale`
/// (optional) broadcasts against the output, e.g. sum(|x|) for a sum. The
/// default-constructed tolerance demands exact equality (NaN equals NaN).
struct Tolerance {
  double absolute = 0;
  double relative = 0;
  double scale_factor = 0;
  Array scale;
  /// Exact comparisons also compare the sign of zeros, unless the order of
  /// evaluation may decide it (max/min reductions over +0.0 and -0.0).
  bool zero_sign_matters = true;

  bool exact() const { return absolute == 0 && relative == 0 && (scale_factor == 0 || !scale.defined()); }
};

/// Machine epsilon (distance from 1 to the next value) of a floating dtype.
double epsilon(DType dtype);
/// `ulps` units in the last place of the result.
Tolerance ulps(double ulps, DType dtype);
/// Exact, but +0.0 and -0.0 count as equal.
Tolerance any_zero_sign();

/// A graph together with what it runs on.
struct DifferentialCase {
  Graph graph;
  std::vector<Array> arguments;
  std::vector<Array> captures;
};

/// Traces `fn` on `args` like make_graph, keeping the arrays it captured.
template <class F, Tree... Args>
DifferentialCase trace_case(const TraceName& name, F&& fn, const Args&... args) {
  detail::TraceSession session(name.name, name.where);
  Graph graph = session.finish(tree_leaves(detail::trace_arguments(session, fn, args...)));
  std::vector<Array> arguments;
  [[maybe_unused]] auto append = [&](const auto& arg) {
    for (const Array& leaf : tree_leaves(arg)) arguments.push_back(leaf);
  };
  (append(args), ...);
  return {graph, arguments, session.captured()};
}

/// Empty when `compiled` matches `reference` (same dtype and shape, elements
/// within `tolerance`); otherwise a description of the first mismatches.
std::string compare_arrays(const Array& compiled, const Array& reference, const Tolerance& tolerance);

/// Compares output i with tolerances[i] (the last one repeats; none means
/// exact). Empty when all agree; otherwise a line per mismatching output,
/// each starting with `how`.
std::string compare_outputs(const std::vector<Array>& got, const std::vector<Array>& expected,
                            const std::vector<Tolerance>& tolerances, const std::string& how = "");

/// Runs an executable as is, then with every argument donated (on copies,
/// since a donated argument's memory may be overwritten with an output).
std::pair<std::vector<Array>, std::vector<Array>> run_with_and_without_donation(const runtime::Executable& executable,
                                                                                const std::vector<Array>& arguments,
                                                                                const std::vector<Array>& captures);

/// A line per array: its elements when it is small, else its type.
std::string describe_arrays(const std::string& what, const std::vector<Array>& arrays);

/// Compiles the case with `backend`, runs it and the interpreter, and compares
/// output i with tolerances[i] (the last one repeats; none means exact). The
/// compiled graph runs twice: as is, and with every argument donated.
/// Empty on success; otherwise a report with the graph, the plan and the
/// mismatches. Exceptions from either side are reported, not thrown.
std::string run_differential(const DifferentialCase& test, const std::vector<Tolerance>& tolerances,
                             const runtime::Backend& backend = cache::default_backend());

/// The native backend's fusion plan for a graph, as KILN_DUMP writes it.
std::string describe_plan(const Graph& graph);

/// KILN_DUMP pointed at a fresh directory while this lives (the native
/// backend reads it at every compile), then the directory removed.
class DumpDirectory {
 public:
  DumpDirectory();
  ~DumpDirectory();
  DumpDirectory(const DumpDirectory&) = delete;
  DumpDirectory& operator=(const DumpDirectory&) = delete;
  /// The files written so far whose names end with `suffix`, in name order.
  std::vector<std::filesystem::path> files(std::string_view suffix) const;

 private:
  std::filesystem::path path_;
};

/// The native backend's assembly for `graph`, compiled now with KILN_DUMP
/// pointed at a fresh directory (empty if the backend reused every kernel,
/// writing no dump).
std::string compiled_assembly(const Graph& graph);

/// The default backend with its results off by one unit in the last place in
/// one element of every output (flipped for integers and bool): a
/// comparison that misses this is vacuous.
class NudgingBackend final : public runtime::Backend {
 public:
  std::string_view name() const override { return "nudging"; }
  std::shared_ptr<const runtime::Executable> compile(std::shared_ptr<const ir::Graph> graph) const override;
};

}  // namespace kiln::testing
