// The native backend: simplify, plan, generate and link kernels, then run the
// plan's steps through runtime::StepProgram, which owns liveness and the run
// loop; what stays here is how each kind of step runs. Compiling is a straight
// sequence of named steps; KILN_DUMP=dir writes each one's result for a graph.
// A symbolic graph compiles once; each call binds its symbols and runs with
// the instance (instance.h) of that binding.
#include "backend/llvm/backend.h"

#include <llvm/Config/llvm-config.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>

#include "backend/llvm/codegen.h"
#include "backend/llvm/engine.h"
#include "backend/llvm/instance.h"
#include "backend/llvm/interpreted_inner.h"
#include "backend/llvm/interpreted_rows.h"
#include "backend/llvm/native_loop.h"
#include "backend/llvm/plan.h"
#include "backend/llvm/saved_code.h"
#include "backend/llvm/scalar_program.h"
#include "backend/llvm/step_names.h"
#include "core/allocation_guard.h"
#include "core/error_format.h"
#include "ops/common/graph_text.h"
#include "ops/common/rules.h"
#include "ops/control/control.h"
#include "runtime/binding_cache.h"
#include "runtime/blas.h"
#include "runtime/compile_profile.h"
#include "runtime/executable.h"
#include "runtime/step_program.h"
#include "runtime/thread_pool.h"
#include "telemetry/telemetry.h"
#include "telemetry/timeline.h"
#include "transform/simplify.h"

namespace kiln::llvm_backend {

namespace {

// The fewest input elements a slice of a chunked reduction gets.
constexpr int64_t chunk_minimum = int64_t{1} << 15;

// One line per primitive, the first time a compiled graph runs it through
// its reference kernel.
void report_reference_kernels(const std::vector<ir::Primitive>& primitives) {
  static std::mutex mutex;
  static std::set<ir::Primitive>& reported = *new std::set<ir::Primitive>;  // outlives a compile at exit
  std::lock_guard lock(mutex);
  for (ir::Primitive op : primitives) {
    if (!reported.insert(op).second) continue;
    telemetry::log(telemetry::log_storms | telemetry::log_compiles,
                   "the LLVM backend has no native lowering for '" + std::string(ir::primitive_name(op)) +
                       "' yet; compiled graphs run its reference kernel");
  }
}

std::string dump_prefix(const ir::Graph& graph) {
  const char* directory = std::getenv("KILN_DUMP");
  if (!directory || !*directory) return "";
  static std::atomic<int> counter{0};
  std::string name = graph.name;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return std::string(directory) + "/" + name + "-" + std::to_string(counter.fetch_add(1));
}

std::span<const Array> gather(const std::vector<Array>& values, const ir::Node& node, std::vector<Array>& inputs) {
  inputs.clear();
  for (ir::ValueId input : node.inputs) inputs.push_back(values[static_cast<size_t>(input)]);
  return inputs;
}

class CompiledGraph final : public runtime::Executable {
 public:
  /// Compiles `graph`, or with `saved`, links the code a saved executable
  /// of the same graph describes (save below) without compiling anything.
  explicit CompiledGraph(std::shared_ptr<const ir::Graph> graph, LinkedObjects* objects = nullptr,
                         detail::ByteReader* saved = nullptr) {
    telemetry::timeline::Span span;
    if (telemetry::timeline::recording())
      span.begin("compile", saved ? "load" : "compile", {{"nodes", static_cast<int64_t>(graph->nodes.size())}}, "graph",
                 graph->name);
    // The caches keep the graph as traced; this executable runs its simplified copy.
    {
      runtime::PhaseTimer timer(runtime::CompilePhase::simplify);
      auto simplified = std::make_shared<ir::Graph>(*graph);
      transform::simplify(*simplified);
      graph_ = std::move(simplified);
    }
    std::string dump = dump_prefix(*graph_);
    std::optional<runtime::PhaseTimer> planning(std::in_place, runtime::CompilePhase::plan);
    plan_ = plan_graph(*graph_);
    planning.reset();
    if (!dump.empty()) {
      std::ofstream(dump + ".graph") << ops::graph_text(*graph_);
      std::ofstream(dump + ".plan") << describe(*graph_, plan_);
    }
    if (saved) {
      load_kernels(*objects, *saved);
    } else {
      kernels_ = compile_kernels(*graph_, plan_, graph_->name, dump);
    }
    planning.emplace(runtime::CompilePhase::plan);
    if (!symbolic()) static_instance_ = static_instance(graph_, plan_, kernels_);
    std::vector<Array> constants = fold_constants(*graph_, plan_);
    planning.reset();
    report_reference_kernels(plan_.reference_primitives);
    program_ = runtime::StepProgram(*graph_, program_steps(*graph_, plan_), std::move(constants), "implicit inputs");
    group_at_.assign(plan_.steps.size(), -1);
    for (size_t g = 0; g < plan_.row_groups.size(); ++g)
      group_at_[plan_.row_groups[g].first_step] = static_cast<int>(g);
    // A loop's body is compiled once, here, and runs at every iteration:
    // inside one native loop when it is small, else as executables of its own.
    bodies_.resize(plan_.steps.size());
    native_loops_.resize(plan_.steps.size());
    for (size_t s = 0; s < plan_.steps.size(); ++s) {
      const ir::Node& node = graph_->nodes[static_cast<size_t>(plan_.steps[s].value)];
      if (node.bodies.empty()) continue;
      if (saved) {
        load_bodies(s, node, *objects, *saved);
        continue;
      }
      // A loop compiled whole has fixed sizes; a symbolic one runs its bodies' executables.
      if (!symbolic())
        native_loops_[s] = NativeLoop::compile(node, dump.empty() ? dump : dump + "-loop" + std::to_string(s));
      if (native_loops_[s]) continue;
      for (const auto& body : node.bodies) bodies_[s].push_back(std::make_shared<CompiledGraph>(body));
    }
    element_counts_ = ops::count_elements(*graph_);
  }

  /// Writes what the loading constructor reads: a digest of the plan (a
  /// later build planning differently must not run these kernels), each
  /// kernel's object and symbol, and each loop's code or bodies in turn.
  void save(ObjectTable& objects, detail::ByteWriter& out) const {
    out.add(plan_digest(*graph_, plan_));
    out.add(static_cast<uint32_t>(kernels_.size()));
    for (const CompiledKernel& kernel : kernels_) {
      // Quick code serves a first tier for a moment; a saved entry serves for good.
      if (kernel.quick) throw SavedCodeMismatch("a kernel has quick code");
      const std::vector<std::string>& symbols = kernel.object ? kernel.object->symbols : std::vector<std::string>{};
      auto symbol = std::find(symbols.begin(), symbols.end(), kernel.symbol);
      if (symbol == symbols.end()) throw SavedCodeMismatch("a kernel's symbol is not in its object");
      out.add(objects.index(kernel.object));
      out.add(static_cast<uint32_t>(symbol - symbols.begin()));
      // A symbolic graph's ranges are formulas, evaluated per call.
      if (symbolic()) {
        kernel.range_count.write(out);
        kernel.work_count.write(out);
      } else {
        out.add(kernel.range);
        out.add(kernel.work_per_iteration);
      }
    }
    for (size_t s = 0; s < plan_.steps.size(); ++s) {
      if (graph_->nodes[static_cast<size_t>(plan_.steps[s].value)].bodies.empty()) continue;
      out.add(static_cast<uint8_t>(native_loops_[s] ? 1 : 0));
      if (native_loops_[s]) {
        out.add(objects.index(native_loops_[s]->object()));
        continue;
      }
      for (const auto& body : bodies_[s]) body->save(objects, out);
    }
  }

  std::vector<Array> run(std::span<const Array> arguments, std::span<const Array> implicit_inputs,
                         std::span<const char> donated) const override {
    if (!symbolic()) return run_instance(*static_instance_, arguments, implicit_inputs, donated);
    runtime::check_input_count(*graph_, graph_->arguments, arguments.size(), "arguments");
    runtime::check_input_count(*graph_, graph_->captures, implicit_inputs.size(), "implicit inputs");
    return run_instance(*instance(ir::bind_symbols(*graph_, arguments, implicit_inputs)), arguments, implicit_inputs,
                        donated);
  }

  std::optional<runtime::OutputPlan> plan_outputs(std::span<const Array> arguments,
                                                  std::span<const Array> implicit_inputs) const override {
    if (!symbolic()) return runtime::output_plan(*graph_);
    runtime::check_input_count(*graph_, graph_->arguments, arguments.size(), "arguments");
    runtime::check_input_count(*graph_, graph_->captures, implicit_inputs.size(), "implicit inputs");
    return runtime::output_plan(*instance(ir::bind_symbols(*graph_, arguments, implicit_inputs))->graph);
  }

  /// Runs a body of a control node of a symbolic graph, whose symbols are
  /// the enclosing graph's: at the binding of the call running it (`values`;
  /// none from a static graph).
  std::vector<Array> run_body(std::span<const int64_t> values, std::span<const Array> arguments,
                              std::span<const Array> implicit_inputs, std::span<const char> donated) const {
    if (!symbolic() || values.empty()) return run(arguments, implicit_inputs, donated);
    return run_instance(*instance(std::vector<int64_t>(values.begin(), values.end())), arguments, implicit_inputs,
                        donated);
  }

  std::string_view backend() const override { return "llvm"; }

 private:
  bool symbolic() const { return graph_->symbols > 0; }

  std::shared_ptr<const Instance> instance(const std::vector<int64_t>& values) const {
    return instances_.get(
        values, [&](const std::vector<int64_t>& bound) { return bind_instance(*graph_, plan_, kernels_, bound); });
  }

  std::vector<Array> run_instance(const Instance& instance, std::span<const Array> arguments,
                                  std::span<const Array> implicit_inputs, std::span<const char> donated) const {
    // Asked once per call: while no profile records, a step pays one test of a local flag.
    if (telemetry::timeline::recording()) return run_recorded(instance, arguments, implicit_inputs, donated);
    return run_steps(instance, arguments, implicit_inputs, donated, false);
  }

  std::vector<Array> run_recorded(const Instance& instance, std::span<const Array> arguments,
                                  std::span<const Array> implicit_inputs, std::span<const char> donated) const {
    // Named at the first recorded run: executables never profiled never name their steps.
    std::call_once(names_made_, [&] {
      step_names_ = step_names(*graph_, plan_);
      group_names_ = row_group_names(plan_, step_names_);
    });
    telemetry::timeline::Span span;
    span.begin("executable", graph_->name.empty() ? "graph" : graph_->name);
    return run_steps(instance, arguments, implicit_inputs, donated, true);
  }

  std::vector<Array> run_steps(const Instance& instance, std::span<const Array> arguments,
                               std::span<const Array> implicit_inputs, std::span<const char> donated,
                               bool recorded) const {
    std::vector<Array> inputs;
    std::vector<char*> pointers;
    pointers.reserve(8);  // constants, outputs, leaves: grown once at most
    ops::ControlResults control_results(element_counts_);
    return program_.run(
        arguments, implicit_inputs, donated,
        [&](size_t s, std::vector<Array>& values, const std::vector<char>& overwritable) -> size_t {
          if (recorded) return run_recorded_from(instance, s, values, overwritable, control_results, inputs, pointers);
          return run_from(instance, s, values, overwritable, control_results, inputs, pointers);
        },
        instance.graph.get());
  }

  size_t run_recorded_from(const Instance& instance, size_t s, std::vector<Array>& values,
                           const std::vector<char>& overwritable, ops::ControlResults& control_results,
                           std::vector<Array>& inputs, std::vector<char*>& pointers) const {
    telemetry::timeline::Span span;
    begin_step_span(span, instance, s);
    return run_from(instance, s, values, overwritable, control_results, inputs, pointers);
  }

  // Runs step s (with its row group, when one starts there); returns the next step.
  // A refused allocation names the step's operation and the traced line
  // (prepare_kernel names each kernel of a row group itself).
  size_t run_from(const Instance& instance, size_t s, std::vector<Array>& values, const std::vector<char>& overwritable,
                  ops::ControlResults& control_results, std::vector<Array>& inputs,
                  std::vector<char*>& pointers) const {
    const ir::Node& node = instance.graph->nodes[static_cast<size_t>(plan_.steps[s].value)];
    return detail::guard_allocation<detail::AllocationNaming::compiled_step>(
        ir::primitive_name(node.op).data(), node.type, node.where,
        [&] { return run_step_or_group(instance, s, values, overwritable, control_results, inputs, pointers); });
  }

  size_t run_step_or_group(const Instance& instance, size_t s, std::vector<Array>& values,
                           const std::vector<char>& overwritable, ops::ControlResults& control_results,
                           std::vector<Array>& inputs, std::vector<char*>& pointers) const {
    if (plan_.steps[s].kind == Step::Kind::control) {
      run_control_step(instance, s, values, control_results, inputs);
      return s + 1;
    }
    if (group_at_[s] < 0) {
      run_step(instance, s, values, overwritable, inputs, pointers);
      return s + 1;
    }
    run_row_group(instance, static_cast<size_t>(group_at_[s]), values, overwritable);
    return plan_.row_groups[static_cast<size_t>(group_at_[s])].end_step;
  }

  // A step's span in the timeline: its name (a kernel's fused primitives),
  // how many elements it computes and the graph it belongs to.
  void begin_step_span(telemetry::timeline::Span& span, const Instance& instance, size_t s) const {
    const Step& step = plan_.steps[s];
    if (int g = group_at_[s]; g >= 0) {
      const RowGroup& group = plan_.row_groups[static_cast<size_t>(g)];
      span.begin("row group", group_names_[static_cast<size_t>(g)],
                 {{"rows", instance.group_rows[static_cast<size_t>(g)]},
                  {"steps", static_cast<int64_t>(group.end_step - group.first_step)}},
                 "graph", graph_->name);
      return;
    }
    const ir::Node& node = instance.graph->nodes[static_cast<size_t>(step.value)];
    switch (step.kind) {
      case Step::Kind::view:
      case Step::Kind::constant: return;  // no work to show
      case Step::Kind::kernel: {
        auto k = static_cast<size_t>(step.kernel);
        int64_t elements = kernel_space_node(*instance.graph, plan_.kernels[k]).type.size();
        span.begin("kernel", step_names_[s], {{"elements", elements}, {"range", instance.ranges[k]}}, "graph",
                   graph_->name);
        return;
      }
      default: span.begin("step", step_names_[s], {{"elements", node.type.size()}}, "graph", graph_->name);
    }
  }

  void run_step(const Instance& instance, size_t s, std::vector<Array>& values, const std::vector<char>& overwritable,
                std::vector<Array>& inputs, std::vector<char*>& pointers) const {
    const Step& step = plan_.steps[s];
    const ir::Node& node = instance.graph->nodes[static_cast<size_t>(step.value)];
    Array& result = values[static_cast<size_t>(step.value)];
    switch (step.kind) {
      case Step::Kind::kernel: {
        auto k = static_cast<size_t>(step.kernel);
        prepare_kernel(instance, s, values, overwritable, nullptr, pointers);
        if (plan_.kernels[k].chunked) {
          run_chunked(kernels_[k].function, instance.ranges[k], node, pointers, result);
          break;
        }
        char** buffers = pointers.data();
        KernelFunction function = kernels_[k].function;
        runtime::parallel_for(instance.ranges[k], instance.works[k],
                              [&](int64_t begin, int64_t end) { function(buffers, begin, end); });
        break;
      }
      case Step::Kind::matmul:
        result = runtime::blas_matmul(node, values[static_cast<size_t>(step.operand_a)], step.transpose_a,
                                      values[static_cast<size_t>(step.operand_b)], step.transpose_b);
        break;
      case Step::Kind::view: result = view_of(node, values); break;
      case Step::Kind::reference: result = ops::rules(node.op).evaluate(node, gather(values, node, inputs)); break;
      case Step::Kind::constant: result = program_.constant(step.value); break;
      case Step::Kind::control: break;  // run_control_step
    }
  }

  void run_control_step(const Instance& instance, size_t s, std::vector<Array>& values,
                        ops::ControlResults& control_results, std::vector<Array>& inputs) const {
    ir::ValueId id = plan_.steps[s].value;
    const ir::Node& node = instance.graph->nodes[static_cast<size_t>(id)];
    if (node.op == ir::Primitive::element) {
      values[static_cast<size_t>(id)] = control_results.take(node);
      return;
    }
    if (const NativeLoop* loop = native_loops_[s].get()) {
      values[static_cast<size_t>(id)] = control_results.keep(id, loop->run(gather(values, node, inputs)));
      return;
    }
    const auto& bodies = bodies_[s];
    auto run_body = [&](size_t b, std::span<const Array> arguments, std::span<const Array> captures,
                        std::span<const char> donated) {
      return bodies[b]->run_body(instance.values, arguments, captures, donated);
    };
    values[static_cast<size_t>(id)] =
        control_results.keep(id, ops::run_control(node, gather(values, node, inputs), run_body));
  }

  void load_kernels(LinkedObjects& objects, detail::ByteReader& saved) {
    if (saved.read<uint64_t>() != plan_digest(*graph_, plan_)) throw SavedCodeMismatch("the plan differs");
    if (saved.read<uint32_t>() != plan_.kernels.size()) throw SavedCodeMismatch("the number of kernels differs");
    for (const Kernel& kernel : plan_.kernels) {
      CompiledKernel& loaded = kernels_.emplace_back();
      auto object = saved.read<uint32_t>();
      auto symbol = saved.read<uint32_t>();
      auto [address, code] = objects.address(object, symbol);
      loaded.function = reinterpret_cast<KernelFunction>(address);
      loaded.code = std::move(code);
      loaded.object = objects.object(object);
      loaded.symbol = loaded.object->symbols[symbol];
      loaded.constants = kernel_constants(*graph_, kernel);
      if (symbolic()) {
        loaded.range_count = SymbolicCount::read(saved);
        loaded.work_count = SymbolicCount::read(saved);
      } else {
        loaded.range = saved.read<int64_t>();
        loaded.work_per_iteration = saved.read<int64_t>();
      }
    }
  }

  void load_bodies(size_t s, const ir::Node& node, LinkedObjects& objects, detail::ByteReader& saved) {
    if (saved.read<uint8_t>() != 0) {
      native_loops_[s] = NativeLoop::load(node, objects.object(saved.read<uint32_t>()));
      if (!native_loops_[s]) throw SavedCodeMismatch("a loop no longer compiles whole");
      return;
    }
    for (const auto& body : node.bodies) bodies_[s].push_back(std::make_shared<CompiledGraph>(body, &objects, &saved));
  }

  // A chunked reduction (Kernel::chunked): one slice of the input per
  // thread, each writing its result to a slot of its own, then the slots are
  // combined in order by the primitive's reference kernel, so NaN and ties
  // between equal extremes are decided as in one pass. The number of slices
  // depends only on the input's size and the machine, so every call returns
  // the same result for the same input.
  static void run_chunked(KernelFunction function, int64_t range, const ir::Node& node,
                          const std::vector<char*>& pointers, Array& result) {
    int64_t slices = std::clamp<int64_t>(range / chunk_minimum, 1, runtime::thread_count());
    ir::Node combine = node;
    combine.inputs = {0};
    combine.attrs.ints = {0};
    combine.type.shape = {};
    Array partial = detail::allocate(detail::AbstractValue{.dtype = node.type.dtype, .shape = {slices}});
    char* slots = static_cast<char*>(detail::impl(partial)->buffer->data());
    size_t slot_bytes = dtype_size(node.type.dtype);
    runtime::parallel_for(slices, range / slices, [&](int64_t first, int64_t last) {
      std::vector<char*> buffers = pointers;
      for (int64_t slice = first; slice < last; ++slice) {
        buffers[1] = slots + static_cast<size_t>(slice) * slot_bytes;
        function(buffers.data(), range * slice / slices, range * (slice + 1) / slices);
      }
    });
    Array combined = ops::rules(node.op).evaluate(combine, {&partial, 1});
    std::memcpy(detail::impl(result)->buffer->data(), detail::impl(combined)->buffer->data(), slot_bytes);
  }

  // A reshape shares its input's memory.
  static Array view_of(const ir::Node& node, const std::vector<Array>& values) {
    auto impl = std::make_shared<detail::ArrayImpl>();
    impl->type = node.type;
    impl->buffer = detail::impl(values[static_cast<size_t>(node.inputs[0])])->buffer;
    return detail::wrap(std::move(impl));
  }

  static Array allocate_value(const ir::Node& node) {
    return detail::guard_allocation<detail::AllocationNaming::compiled_step>(
        ir::primitive_name(node.op).data(), node.type, node.where, [&] { return detail::allocate(node.type); });
  }

  // Allocates a kernel step's outputs (or writes in place) and lists the
  // buffers its function takes.
  void prepare_kernel(const Instance& instance, size_t s, std::vector<Array>& values,
                      const std::vector<char>& overwritable, const RowGroup* group,
                      std::vector<char*>& pointers) const {
    const Step& step = plan_.steps[s];
    const ir::Graph& graph = *instance.graph;
    const ir::Node& node = graph.nodes[static_cast<size_t>(step.value)];
    const Kernel& kernel = plan_.kernels[static_cast<size_t>(step.kernel)];
    const std::vector<uint64_t>& constants = instance.constants[static_cast<size_t>(step.kernel)];
    Array& result = values[static_cast<size_t>(step.value)];
    // Every output may take over a dead leaf: writing where the loop just
    // read spares the cache a read for ownership of fresh lines.
    std::vector<ir::ValueId> taken;
    result = in_place(kernel, step.value, node, values, overwritable, s, group, taken);
    if (!result.defined()) result = allocate_value(node);
    pointers.clear();
    pointers.push_back(reinterpret_cast<char*>(const_cast<uint64_t*>(constants.data())));
    pointers.push_back(static_cast<char*>(detail::impl(result)->buffer->data()));
    for (ir::ValueId extra : kernel.extra_roots) {
      Array& slot = values[static_cast<size_t>(extra)];
      const ir::Node& extra_node = graph.nodes[static_cast<size_t>(extra)];
      slot = in_place(kernel, extra, extra_node, values, overwritable, s, group, taken);
      if (!slot.defined()) slot = allocate_value(extra_node);
      pointers.push_back(static_cast<char*>(detail::impl(slot)->buffer->data()));
    }
    for (ir::ValueId leaf : kernel.leaves)
      pointers.push_back(static_cast<char*>(detail::impl(values[static_cast<size_t>(leaf)])->buffer->data()));
  }

  // Runs a row group: every output is allocated first, then each thread takes
  // a share of the rows and runs all the group's kernels over one block of
  // them before the next, so values pass between kernels through L1/L2.
  void run_row_group(const Instance& instance, size_t g, std::vector<Array>& values,
                     const std::vector<char>& overwritable) const {
    const RowGroup& group = plan_.row_groups[g];
    const ir::Graph& graph = *instance.graph;
    int64_t rows = instance.group_rows[g];
    std::vector<std::vector<char*>> buffers;
    std::vector<KernelFunction> functions;
    std::vector<int64_t> scales;
    int64_t bytes_per_row = 0, work_per_row = 0;
    for (size_t s = group.first_step; s < group.end_step; ++s) {
      const Step& step = plan_.steps[s];
      if (step.kind == Step::Kind::view) {
        values[static_cast<size_t>(step.value)] = view_of(graph.nodes[static_cast<size_t>(step.value)], values);
        continue;
      }
      int64_t scale = instance.group_scales[g][s - group.first_step];
      auto k = static_cast<size_t>(step.kernel);
      buffers.emplace_back();
      prepare_kernel(instance, s, values, overwritable, &group, buffers.back());
      functions.push_back(kernels_[k].function);
      scales.push_back(scale);
      work_per_row += instance.works[k] * scale;
      const auto& type = graph.nodes[static_cast<size_t>(step.value)].type;
      bytes_per_row += rows ? type.size() * static_cast<int64_t>(dtype_size(type.dtype)) / rows : 0;
    }
    if (rows == 0) return;  // (symbolic rows, none at this call)
    // Blocks well inside an L2 cache (softmax of f32[4096,1024]: blocks of
    // 64 and 256 KiB of written values measured alike, 1 MiB 20% slower).
    constexpr int64_t block_bytes = int64_t{128} << 10;
    int64_t block = std::clamp<int64_t>(block_bytes / std::max<int64_t>(bytes_per_row, 1), 1, rows);
    runtime::parallel_for(rows, work_per_row, [&](int64_t begin, int64_t end) {
      for (int64_t first = begin; first < end; first += block) {
        int64_t last = std::min(end, first + block);
        for (size_t k = 0; k < functions.size(); ++k)
          functions[k](buffers[k].data(), first * scales[k], last * scales[k]);
      }
    });
  }

  // An elementwise kernel reads each leaf of its own shape at the index it
  // writes, so it may write over such a leaf whose last use it is, when no one
  // else holds that memory: then no fresh pages are touched.
  // In a row group, a kernel runs block by block after the group's earlier
  // kernels have read only their own rows of values the group produced, but
  // possibly every row of values from before the group: those may be
  // overwritten only when no other kernel of the group reads them.
  Array in_place(const Kernel& kernel, ir::ValueId output, const ir::Node& node, const std::vector<Array>& values,
                 const std::vector<char>& overwritable, size_t position, const RowGroup* group,
                 std::vector<ir::ValueId>& taken) const {
    if (kernel.kind != Kernel::Kind::elementwise) return Array();
    for (ir::ValueId leaf : kernel.leaves) {
      auto id = static_cast<size_t>(leaf);
      if (std::find(taken.begin(), taken.end(), leaf) != taken.end()) continue;
      int producer = program_.defining_step(leaf);
      bool outside_group =
          group && (producer < static_cast<int>(group->first_step) || producer >= static_cast<int>(group->end_step));
      if (outside_group && read_by_another_kernel(*group, position, leaf)) continue;
      const Array& value = values[id];
      const detail::ArrayImpl& impl = *detail::impl(value);
      if (impl.type.dtype != node.type.dtype || impl.type.shape != node.type.shape) continue;
      // Equal at this call's sizes is not enough: read at the index written means equal at every size.
      if (symbolic() && !same_shape(*graph_, graph_->nodes[id], graph_->nodes[static_cast<size_t>(output)])) continue;
      if (program_.last_reading_step(leaf) != static_cast<int>(position) || !impl.buffer) continue;
      bool argument = graph_->nodes[id].op == ir::Primitive::input;
      bool owned =
          argument ? overwritable[id] != 0 : detail::impl(value).use_count() == 1 && impl.buffer.use_count() == 1;
      if (!owned || impl.buffer->bytes() <= detail::Buffer::inline_bytes || impl.buffer->lent()) continue;
      taken.push_back(leaf);
      auto written = std::make_shared<detail::ArrayImpl>();
      written->type = node.type;
      written->buffer = impl.buffer;
      return detail::wrap(std::move(written));
    }
    return Array();
  }

  bool read_by_another_kernel(const RowGroup& group, size_t position, ir::ValueId value) const {
    for (size_t s = group.first_step; s < group.end_step; ++s) {
      if (s == position || plan_.steps[s].kind != Step::Kind::kernel) continue;
      const std::vector<ir::ValueId>& leaves = plan_.kernels[static_cast<size_t>(plan_.steps[s].kernel)].leaves;
      if (std::find(leaves.begin(), leaves.end(), value) != leaves.end()) return true;
    }
    return false;
  }

  std::shared_ptr<const ir::Graph> graph_;
  Plan plan_;
  std::vector<CompiledKernel> kernels_;
  std::shared_ptr<const Instance> static_instance_;  // a static graph's, made once
  runtime::BindingCache<Instance> instances_;        // a symbolic graph's, per binding
  runtime::StepProgram program_;                     // the plan's steps, their liveness and the folded constants
  std::vector<int> group_at_;                        // per step: the row group starting there, or -1
  // What the timeline calls each step and each row group.
  mutable std::once_flag names_made_;
  mutable std::vector<std::string> step_names_, group_names_;
  // Per step: the compiled bodies of a control node.
  std::vector<std::vector<std::shared_ptr<const CompiledGraph>>> bodies_;
  std::vector<std::unique_ptr<const NativeLoop>> native_loops_;  // per step: a small loop compiled whole
  ops::ElementCounts element_counts_;
};

class LlvmBackend final : public runtime::Backend {
 public:
  std::string_view name() const override { return "llvm"; }
  std::shared_ptr<const runtime::Executable> compile(std::shared_ptr<const ir::Graph> graph) const override {
    return std::make_shared<CompiledGraph>(std::move(graph));
  }

  void prepare_background_compiles() const override { Engine::instance().make_code_generator_statics(); }
  bool matches_op_by_op(const ir::Graph& graph) const override { return reductions_match_op_by_op(graph); }
  std::shared_ptr<const runtime::Executable> interpret(std::shared_ptr<const ir::Graph> graph,
                                                       bool at_any_size) const override {
    if (auto elementwise = interpreted_executable(graph, at_any_size)) return elementwise;
    if (auto columns = interpreted_rows_executable(graph)) return columns;
    return interpreted_inner_executable(std::move(graph));
  }
  bool interprets(const ir::Graph& graph, const ir::Node& node) const override {
    return llvm_backend::interprets(graph, node) || interprets_rows(graph, node) || interprets_inner(graph, node);
  }
  runtime::FusedView fused_view(std::shared_ptr<const ir::Graph> graph) const override {
    auto simplified = std::make_shared<ir::Graph>(*graph);
    transform::simplify(*simplified);
    Plan plan = plan_graph(*simplified);
    std::vector<int32_t> groups(simplified->nodes.size(), -1);
    for (size_t k = 0; k < plan.kernels.size(); ++k) {
      const Kernel& kernel = plan.kernels[k];
      if (kernel.kind == Kernel::Kind::standalone) continue;  // one node: no cluster to draw
      for (ir::ValueId id : kernel.region) groups[static_cast<size_t>(id)] = static_cast<int32_t>(k);
      groups[static_cast<size_t>(kernel.root)] = static_cast<int32_t>(k);
      for (ir::ValueId id : kernel.extra_roots) groups[static_cast<size_t>(id)] = static_cast<int32_t>(k);
    }
    return {std::move(simplified), std::move(groups)};
  }

  std::string target() const override {
    Engine& engine = Engine::instance();
    return "LLVM " LLVM_VERSION_STRING " " + engine.target_triple() + " cpu " + engine.cpu() + " features " +
           engine.features();
  }

  std::string save(const runtime::Executable& executable) const override {
    const auto* compiled = dynamic_cast<const CompiledGraph*>(&executable);
    if (!compiled) return {};
    std::string description, bytes;
    ObjectTable objects;
    try {
      detail::ByteWriter out(description);
      compiled->save(objects, out);
    } catch (const SavedCodeMismatch&) {
      return {};
    }
    detail::ByteWriter all(bytes);
    objects.write(all);
    bytes += description;
    return bytes;
  }

  std::shared_ptr<const runtime::Executable> load(std::shared_ptr<const ir::Graph> graph,
                                                  std::string_view saved) const override {
    try {
      detail::ByteReader in(saved);
      LinkedObjects objects(in);
      auto executable = std::make_shared<CompiledGraph>(std::move(graph), &objects, &in);
      if (in.left() != 0) throw SavedCodeMismatch("bytes are left over");
      return executable;
    } catch (const detail::TruncatedBytes&) {
      throw SavedCodeMismatch("the description ends early");
    }
  }
};

}  // namespace

const runtime::Backend& llvm_backend() {
  static const LlvmBackend backend;
  return backend;
}

size_t modules_compiled() { return Engine::instance().modules_compiled(); }
size_t quick_modules_compiled() { return Engine::instance().quick_modules_compiled(); }

}  // namespace kiln::llvm_backend
