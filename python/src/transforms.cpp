// The transformations as kiln's Python files call them: every function is
// flat (a list of arrays in, a list of arrays out) because pytrees are
// flattened on the Python side; here each one meets the same C++ core as
// kiln::jit, grad, vjp, jvp and vmap.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "core/array_impl.h"
#include "core/error_format.h"
#include "kiln/control.h"

namespace kiln::python {

std::vector<Array> FlatFunction::operator()(const std::vector<Array>& leaves) const {
  py::gil_scoped_acquire gil;
  py::list arguments(leaves.size());
  for (size_t k = 0; k < leaves.size(); ++k) arguments[k] = py::cast(leaves[k]);
  return to_array_list(fn(arguments), "a transformed function's result");
}

std::shared_ptr<const void> hold(py::object object) {
  return std::shared_ptr<const void>(object.release().ptr(), [](const void* pointer) {
    // A skeleton may outlive the interpreter in a process-wide cache: it is then left alone.
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    Py_DECREF(static_cast<PyObject*>(const_cast<void*>(pointer)));
  });
}

namespace {

OnStorm to_on_storm(const std::string& text) {
  if (text == "warn") return OnStorm::Warn;
  if (text == "error") return OnStorm::Error;
  if (text == "generalize") return OnStorm::Generalize;
  throw py::value_error("jit: on_storm must be \"warn\", \"error\" or \"generalize\", got \"" + text + "\"");
}

std::vector<DynamicDim> to_dynamic_dims(py::handle object) {
  std::vector<DynamicDim> dims;
  if (object.is_none()) return dims;
  for (py::handle item : object) {
    std::vector<int64_t> numbers = to_int_list(item, "jit", "each dynamic_dims entry");
    if (numbers.size() != 2 && numbers.size() != 4)
      throw py::value_error(
          "jit: each dynamic_dims entry is (leaf, dim) or (leaf, dim, min, max), counting the array leaves of all "
          "arguments from 0");
    DynamicDim dim{static_cast<int>(numbers[0]), static_cast<int>(numbers[1])};
    if (numbers.size() == 4) {
      dim.min = numbers[2];
      dim.max = numbers[3];
    }
    dims.push_back(dim);
  }
  return dims;
}

detail::SignatureToken token_of(py::handle description, const std::vector<Array>& arrays) {
  auto item = description.cast<py::tuple>();
  std::string kind = item[0].cast<std::string>();
  std::string path = item[1].cast<std::string>();
  using Token = detail::SignatureToken;
  if (kind == "array") {
    detail::SignatureDescriber describer;
    describer.path = {path};
    describer.array(arrays.at(item[2].cast<size_t>()));
    return describer.tokens.front();
  }
  Token token{kind == "static" ? Token::Kind::static_value : Token::Kind::node, path, item[2].cast<std::string>()};
  token.hash = static_cast<uint64_t>(item[3].cast<int64_t>());
  if (kind != "static") token.size = item[4].cast<size_t>();
  return token;
}

/// kn.jit's compile_mode: None (KILN_COMPILE decides), "background" or "sync".
CompileMode to_compile_mode(py::handle mode) {
  if (mode.is_none()) return CompileMode::Auto;
  std::string text = py::str(mode);
  if (text == "background") return CompileMode::Background;
  if (text == "sync") return CompileMode::Sync;
  throw py::value_error("kn.jit: compile_mode must be None, 'background' or 'sync', got " +
                        std::string(py::repr(mode)));
}

/// kn.jit's core: the same JitCore as kiln::jit. A Python function may read
/// anything (globals, closures, attributes), so it is a stateful callable:
/// each call traces it and looks the graph up.
class PythonJit {
 public:
  PythonJit(std::string name, int recompile_limit, const std::string& on_storm, py::handle dynamic_dims,
            bool automatic_dynamic, py::handle compile_mode, std::string device)
      : where_(here()),
        core_(JitOptions{.name = std::move(name),
                         .recompile_limit = recompile_limit,
                         .on_storm = to_on_storm(on_storm),
                         .dynamic_dims = to_dynamic_dims(dynamic_dims),
                         .automatic_dynamic = automatic_dynamic,
                         .device = std::move(device),
                         .compile_mode = to_compile_mode(compile_mode)},
              /*stateful=*/true, where_) {}

  /// `leaves`: the dynamic leaves (arrays); `static_hash`: the
  /// structure and the static values; `trace_fn(placeholders)` returns
  /// (output leaves, skeleton); `describe()` the signature's tokens.
  /// With `want_replay`, the result has a third item: what the call ran (a detail::Replay).
  py::tuple call(const std::vector<Array>& leaves, int64_t static_hash, std::vector<bool> donated, py::object trace_fn,
                 py::object describe_fn, bool want_replay) {
    detail::CallArguments arguments = flatten(leaves, static_hash);
    if (!donated.empty()) arguments.donated.assign(donated.begin(), donated.end());
    auto trace = [&](detail::TraceSession& session) { return run_trace(session, arguments, trace_fn); };
    auto describe = [&] {
      py::gil_scoped_acquire gil;
      detail::SignatureDescription tokens;
      for (py::handle item : describe_fn()) tokens.push_back(token_of(item, arguments.arrays));
      return tokens;
    };
    detail::CallResult result;
    std::optional<detail::Replay> replay;
    if (want_replay) replay.emplace();
    {
      // Compiled code, compiles and waits for other threads' compiles run
      // without the GIL; tracing takes it back.
      py::gil_scoped_release release;
      result = core_.call(arguments, trace, describe, replay ? &*replay : nullptr);
    }
    py::tuple finished = finish(leaves, donated, result);
    if (!replay) return finished;
    return py::make_tuple(finished[0], finished[1], std::move(*replay));
  }

  /// Runs what `replay`'s call ran, with these leaves and captures.
  py::tuple replay(const detail::Replay& replay, const std::vector<Array>& leaves, int64_t static_hash,
                   std::vector<bool> donated, const std::vector<Array>& captures) {
    detail::CallArguments arguments = flatten(leaves, static_hash);
    if (!donated.empty()) arguments.donated.assign(donated.begin(), donated.end());
    detail::CallResult result;
    {
      py::gil_scoped_release release;
      result = core_.replay(replay, arguments, captures);
    }
    return finish(leaves, donated, result);
  }

  /// The signature's bytes: a call whose bytes and static values equal an
  /// earlier call's has the same arguments' structure and abstract values.
  py::bytes signature(const std::vector<Array>& leaves, int64_t static_hash) const {
    return py::bytes(flatten(leaves, static_hash).signature);
  }

  Graph lower(const std::vector<Array>& leaves, int64_t static_hash, py::object trace_fn) {
    detail::CallArguments arguments = flatten(leaves, static_hash);
    auto trace = [&](detail::TraceSession& session) { return run_trace(session, arguments, trace_fn); };
    return core_.lower(arguments, trace);
  }

  CacheStats stats() const { return core_.stats(); }
  size_t cache_size() const { return core_.cache_size(); }
  std::string last_miss_explanation() const { return for_python(core_.last_miss_explanation()); }
  const std::string& name() const { return core_.name(); }

 private:
  detail::CallArguments flatten(const std::vector<Array>& leaves, int64_t static_hash) const {
    detail::CallArguments arguments;
    detail::SignatureBuilder builder{arguments, where_};
    // One static token for the structure and every static value (Python
    // hashed them); explanations get their parts from the describe callback.
    builder.static_leaf(static_cast<uint64_t>(static_hash), "structure");
    for (const Array& leaf : leaves) builder.array(leaf);
    return arguments;
  }

  static detail::TraceOutcome run_trace(detail::TraceSession& session, const detail::CallArguments& arguments,
                                        const py::object& trace_fn) {
    py::gil_scoped_acquire gil;
    py::list placeholders(arguments.arrays.size());
    for (size_t k = 0; k < arguments.arrays.size(); ++k)
      placeholders[k] = py::cast(detail::trace_argument(session, arguments.arrays[k]));
    py::tuple result = trace_fn(placeholders);
    detail::TraceOutcome outcome;
    outcome.outputs = to_array_list(result[0], "a jitted function's result");
    outcome.skeleton = hold(result[1]);
    return outcome;
  }

  py::tuple finish(const std::vector<Array>& leaves, const std::vector<bool>& donated,
                   const detail::CallResult& result) const {
    if (!donated.empty()) {
      std::vector<Array> consumed;
      for (size_t k = 0; k < leaves.size(); ++k)
        if (donated[k]) consumed.push_back(leaves[k]);
      detail::mark_donated(consumed, result.outputs, core_.name(), where_);
    }
    auto skeleton =
        py::reinterpret_borrow<py::object>(static_cast<PyObject*>(const_cast<void*>(result.skeleton.get())));
    return py::make_tuple(py::cast(result.outputs), skeleton);
  }

  Location where_;
  detail::JitCore core_;
};

/// A function traced for differentiation, kept while its pullback lives.
struct Pullback {
  std::shared_ptr<detail::ReplayState> state;
  std::vector<Array> primals;
  Location where;
  std::vector<Array> operator()(const std::vector<Array>& cotangents) const {
    std::vector<Array> result = detail::pull_back(*state, cotangents, where);
    // An integer or bool primal has no cotangent: its slot holds zeros, as JAX's does.
    for (size_t k = 0; k < result.size(); ++k)
      if (!result[k].defined()) result[k] = zeros_like(primals[k], where);
    return result;
  }
};

detail::TracedFunction trace_flat(py::object fn, const std::vector<Array>& leaves, const std::string& name,
                                  Location where) {
  detail::TracedFunction traced;
  FlatFunction flat{std::move(fn)};
  detail::trace_for_derivative(flat, name, where, traced, leaves);
  return traced;
}

void bind_cache_stats(py::module_& module) {
  py::class_<CacheStats>(module, "CacheStats", "What a jitted function's cache did (fields as kiln::CacheStats).")
      .def_readonly("calls", &CacheStats::calls)
      .def_readonly("hits", &CacheStats::hits)
      .def_readonly("misses", &CacheStats::misses)
      .def_readonly("traces", &CacheStats::traces)
      .def_readonly("compiles", &CacheStats::compiles)
      .def_readonly("persistent_hits", &CacheStats::persistent_hits)
      .def_readonly("compile_seconds", &CacheStats::compile_seconds)
      .def_readonly("trace_seconds", &CacheStats::trace_seconds)
      .def_readonly("load_seconds", &CacheStats::load_seconds)
      .def_readonly("saved_compile_seconds", &CacheStats::saved_compile_seconds)
      .def_readonly("calls_before_optimized", &CacheStats::calls_before_optimized)
      .def("__repr__", [](const CacheStats& s) {
        return "CacheStats(calls=" + std::to_string(s.calls) + ", hits=" + std::to_string(s.hits) +
               ", misses=" + std::to_string(s.misses) + ", traces=" + std::to_string(s.traces) +
               ", compiles=" + std::to_string(s.compiles) + ", persistent_hits=" + std::to_string(s.persistent_hits) +
               ", compile_seconds=" + std::to_string(s.compile_seconds) +
               ", trace_seconds=" + std::to_string(s.trace_seconds) +
               ", calls_before_optimized=" + std::to_string(s.calls_before_optimized) + ")";
      });
}

}  // namespace

void bind_transforms(py::module_& module) {
  bind_cache_stats(module);
  module.def("global_cache_stats", &global_cache_stats);
  module.def(
      "synchronize", [] { synchronize(); },
      "Waits for all work queued so far (jitted calls and eager operations return as soon as it is queued), then "
      "raises the first error queued work raised since the last synchronize. KILN_DISPATCH=sync turns queues off.");
  module.def(
      "wait_for_background_compiles",
      [] {
        py::gil_scoped_release release;
        wait_for_background_compiles();
      },
      "Blocks until every optimized compile running in the background (or queued for it) has ended.");
  module.def("clear_graph_cache", &clear_graph_cache);
  module.def("_tracing_active", &detail::tracing_active);

  py::class_<PythonJit>(module, "_JitCore")
      .def(py::init<std::string, int, const std::string&, py::handle, bool, py::handle, std::string>())
      .def("call", &PythonJit::call)
      .def("replay", &PythonJit::replay)
      .def("signature", &PythonJit::signature)
      .def("lower", &PythonJit::lower)
      .def("stats", &PythonJit::stats)
      .def("cache_size", &PythonJit::cache_size)
      .def("last_miss_explanation", &PythonJit::last_miss_explanation)
      .def_property_readonly("name", &PythonJit::name);

  py::class_<Graph>(module, "Graph", "A traced function's IR; str() prints it with the line of every node.")
      .def("__str__", &Graph::to_string)
      .def("__repr__", &Graph::to_string)
      .def_property_readonly("num_nodes", &Graph::num_nodes)
      .def_property_readonly("num_arguments", &Graph::num_arguments)
      .def_property_readonly("num_captures", &Graph::num_captures);

  py::class_<detail::Replay>(module, "_Replay")
      .def_readonly("captures", &detail::Replay::captures)
      .def_property_readonly(
          "constant", [](const detail::Replay& r) { return std::vector<bool>(r.constant.begin(), r.constant.end()); });
  // Which arrays are one: Python wrappers of one array differ, their arrays do not.
  // A function jitted in C++ inside this process: the suite checks that the
  // same function jitted from Python finds its executable (one cache).
  module.def("_cxx_jitted_affine", [](const Array& x) {
    static auto affine = kiln::jit([](const Array& v) { return v * 2.0 + 1.0; }, JitOptions{.name = "cxx_affine"});
    py::gil_scoped_release release;
    return affine(x);
  });
  module.def("_type_key", [](const Array& a) { return detail::impl(a)->type.to_string(); });
  module.def("_identity", [](const Array& a) { return reinterpret_cast<uintptr_t>(detail::impl(a).get()); });

  py::class_<Pullback>(module, "_Pullback").def("__call__", &Pullback::operator());

  // value_and_grad: the outputs (the first a floating scalar) and one cotangent
  // per leaf, empty where `wanted` is false.
  module.def("_differentiate", [](py::object fn, const std::vector<Array>& leaves, const std::vector<bool>& wanted,
                                  const std::string& name) {
    Location where = here();
    detail::TracedFunction traced = trace_flat(std::move(fn), leaves, name, where);
    std::vector<char> mask(wanted.begin(), wanted.end());
    auto [outputs, cotangents] = detail::differentiate(traced, mask, name, where);
    return py::make_tuple(outputs, cotangents);
  });
  module.def("_vjp", [](py::object fn, const std::vector<Array>& leaves, const std::string& name) {
    Location where = here();
    detail::TracedFunction traced = trace_flat(std::move(fn), leaves, name, where);
    std::vector<Array> outputs;
    Pullback pullback{detail::replay_graph(traced, outputs), leaves, where};
    return py::make_tuple(outputs, pullback);
  });
  module.def("_jvp", [](py::object fn, const std::vector<Array>& primals, const std::vector<Array>& tangents,
                        const std::string& name) {
    Location where = here();
    detail::TracedFunction traced = trace_flat(std::move(fn), primals, name, where);
    std::vector<Array> outputs;
    std::vector<Array> output_tangents = detail::push_forward(traced, tangents, outputs, where);
    return py::make_tuple(outputs, output_tangents);
  });
  // `fn(placeholders)` returns (output leaves, out_axes per output leaf).
  module.def("_vmap", [](py::object fn, const std::vector<Array>& leaves, const std::vector<std::optional<int>>& axes,
                         const std::string& name) {
    Location where = here();
    std::vector<std::vector<Array>> arguments;
    std::vector<BatchAxes> in_axes;
    for (size_t k = 0; k < leaves.size(); ++k) {
      arguments.push_back({leaves[k]});
      in_axes.push_back(axes[k] ? BatchAxes(*axes[k]) : BatchAxes(std::nullopt));
    }
    // The result's axes are known once the lane is traced; vmap_leaves reads
    // them after it has traced the lane.
    BatchAxes out_axes(0);
    auto lane = [&](const std::vector<Array>& placeholders) {
      py::list arguments(placeholders.size());
      for (size_t k = 0; k < placeholders.size(); ++k) arguments[k] = py::cast(placeholders[k]);
      py::tuple result = fn(arguments);
      out_axes = BatchAxes::per_leaf(result[1].cast<std::vector<std::optional<int>>>());
      return to_array_list(result[0], "a vmapped function's result");
    };
    return detail::vmap_leaves(arguments, InAxes(std::move(in_axes)), out_axes, name, where, lane);
  });
}

}  // namespace kiln::python
