// The backend of the "cuda" device (see the header).
#include "backend/cuda/gpu_backend.h"

#include <llvm/Config/llvm-config.h>

#include <algorithm>
#include <cstring>

#include "backend/llvm/backend.h"
#include "backend/llvm/codegen.h"
#include "backend/llvm/plan.h"
#include "core/array_impl.h"
#include "core/byte_stream.h"
#include "core/error_format.h"
#include "ir/symbolic.h"
#include "ops/common/rules.h"
#include "ops/control/control.h"
#include "runtime/binding_cache.h"
#include "transform/simplify.h"

namespace kiln::cuda_backend {

namespace {

using llvm_backend::Kernel;
using llvm_backend::Plan;
using llvm_backend::Step;

// A value on the device: a block of memory (shared by a reshape's view).
using DeviceValue = std::shared_ptr<DeviceBuffer>;

// A device-resident array's elements: a block of the device's memory.
class GpuStorage final : public detail::DeviceStorage {
 public:
  explicit GpuStorage(DeviceValue value) : value_(std::move(value)) {}
  std::string device() const override { return "cuda"; }
  void copy_to_host(void* destination, size_t bytes) const override {
    value_->device().copy_to_host(destination, value_->address(), bytes);
  }
  void synchronize() const override { value_->device().synchronize(); }
  const DeviceValue& value() const { return value_; }

 private:
  DeviceValue value_;
};

// `bytes` of host memory in fresh memory of `device`; `operation` names it
// when the device has none left.
DeviceValue copied_to(Device& device, const void* data, size_t bytes, const std::string& operation) {
  DeviceValue value = device.allocate(bytes, operation);
  device.copy_to_device(value->address(), data, bytes);
  return value;
}

// The fewest input elements a slice of a reduction to one value gets: each
// slice's partial result is read back and combined on the host, so a few
// thousand slices at most.
constexpr int64_t slice_minimum = 4096;

class GpuExecutable final : public runtime::Executable {
  // What a call at one binding of the symbols runs with: the symbols'
  // values, the concrete graph (every value's type), each kernel's constants
  // on the device (its literals, then the symbols' values) and its range.
  struct Instance {
    std::vector<int64_t> values;
    std::shared_ptr<const ir::Graph> graph;
    std::vector<DeviceValue> constants;  // by kernel; null when it has none
    std::vector<int64_t> ranges;         // by kernel
  };

 public:
  /// Compiles `traced`, or with `saved`, loads the code a saved executable
  /// of the same graph describes (save below) without generating any.
  GpuExecutable(std::shared_ptr<const ir::Graph> traced, std::shared_ptr<Device> device,
                detail::ByteReader* saved = nullptr)
      : device_(std::move(device)) {
    auto simplified = std::make_shared<ir::Graph>(*traced);
    transform::simplify(*simplified);
    graph_ = std::move(simplified);
    plan_ = llvm_backend::plan_graph(*graph_);
    program_ = saved ? load_program(*saved) : device_->load(*graph_, plan_, graph_->name);
    if (graph_->symbols == 0) static_instance_ = std::make_shared<const Instance>(make_instance({}));
    std::vector<Array> folded = llvm_backend::fold_constants(*graph_, plan_);
    folded_.resize(folded.size());
    for (size_t id = 0; id < folded.size(); ++id)
      if (folded[id].defined()) folded_[id] = upload(folded[id], "compile");
    std::vector<runtime::ProgramStep> steps = llvm_backend::program_steps(*graph_, plan_);
    std::vector<int> last_reads = runtime::last_reading_steps(steps, graph_->nodes.size(), graph_->outputs);
    released_after_.resize(plan_.steps.size());
    for (size_t id = 0; id < last_reads.size(); ++id)
      if (last_reads[id] >= 0 && static_cast<size_t>(last_reads[id]) < plan_.steps.size())
        released_after_[static_cast<size_t>(last_reads[id])].push_back(static_cast<ir::ValueId>(id));
    // A loop's or branch's bodies compile once, here, and run on the device
    // at each iteration; the loop itself is driven from the host.
    bodies_.resize(plan_.steps.size());
    for (size_t s = 0; s < plan_.steps.size(); ++s)
      for (const auto& body : node(plan_.steps[s].value).bodies)
        bodies_[s].push_back(std::make_shared<GpuExecutable>(body, device_, saved));
    element_counts_ = ops::count_elements(*graph_);
  }

  std::vector<Array> run(std::span<const Array> arguments, std::span<const Array> implicit_inputs,
                         std::span<const char> = {}) const override {
    runtime::check_input_count(*graph_, graph_->arguments, arguments.size(), "arguments");
    runtime::check_input_count(*graph_, graph_->captures, implicit_inputs.size(), "implicit inputs");
    if (static_instance_) return run_instance(*static_instance_, arguments, implicit_inputs);
    return run_instance(*instance(ir::bind_symbols(*graph_, arguments, implicit_inputs)), arguments, implicit_inputs);
  }

  std::string_view backend() const override { return "cuda"; }

  /// Writes what the loading constructor reads: a digest of the plan (a
  /// later build planning differently must not run these kernels), each
  /// kernel's entry and range, the program's code, then each loop's or
  /// branch's bodies in turn.
  void save(detail::ByteWriter& out) const {
    out.add(llvm_backend::plan_digest(*graph_, plan_));
    out.add(static_cast<uint32_t>(program_->kernels.size()));
    for (const GpuKernel& kernel : program_->kernels) {
      out.add_string(kernel.entry);
      out.add(static_cast<int32_t>(kernel.output_count));
      out.add(static_cast<int32_t>(kernel.leaf_count));
      out.add(static_cast<uint8_t>(kernel.chunked));
      out.add(kernel.range);
      // A symbolic graph's ranges are formulas, evaluated per binding.
      if (symbolic()) kernel.range_count.write(out);
    }
    out.add_string(program_->code);
    for (const auto& bodies : bodies_)
      for (const auto& body : bodies) body->save(out);
  }

 private:
  bool symbolic() const { return graph_->symbols > 0; }

  std::shared_ptr<const LoadedProgram> load_program(detail::ByteReader& saved) const {
    using runtime::SavedExecutableMismatch;
    if (saved.read<uint64_t>() != llvm_backend::plan_digest(*graph_, plan_))
      throw SavedExecutableMismatch("the plan differs");
    if (saved.read<uint32_t>() != plan_.kernels.size()) throw SavedExecutableMismatch("the number of kernels differs");
    std::vector<GpuKernel> kernels;
    for (const Kernel& planned : plan_.kernels) {
      GpuKernel& kernel = kernels.emplace_back();
      kernel.entry = saved.read_string();
      kernel.output_count = saved.read<int32_t>();
      kernel.leaf_count = saved.read<int32_t>();
      kernel.chunked = saved.read<uint8_t>() != 0;
      kernel.range = saved.read<int64_t>();
      if (symbolic()) kernel.range_count = llvm_backend::SymbolicCount::read(saved);
      if (kernel.output_count != 1 + static_cast<int>(planned.extra_roots.size()) ||
          kernel.leaf_count != static_cast<int>(planned.leaves.size()) || kernel.chunked != planned.chunked)
        throw SavedExecutableMismatch("a kernel's buffers differ from its plan's");
      kernel.constants = llvm_backend::kernel_constants(*graph_, planned);
    }
    return device_->load_saved(std::move(kernels), std::string(saved.read_string()), graph_->name);
  }

  // The instance of a symbolic graph at the symbols' `values`, prepared once.
  std::shared_ptr<const Instance> instance(const std::vector<int64_t>& values) const {
    return instances_.get(values, [&](const std::vector<int64_t>& bound) { return make_instance(bound); });
  }

  /// A body of a loop or branch, run at its enclosing graph's binding
  /// `values` (a body shares its graph's symbols, some of which its own
  /// inputs may not show).
  std::vector<Array> run_body(std::span<const int64_t> values, std::span<const Array> arguments,
                              std::span<const Array> implicit_inputs) const {
    if (!symbolic() || values.empty()) return run(arguments, implicit_inputs);
    return run_instance(*instance(std::vector<int64_t>(values.begin(), values.end())), arguments, implicit_inputs);
  }

  std::vector<Array> run_instance(const Instance& bound, std::span<const Array> arguments,
                                  std::span<const Array> implicit_inputs) const {
    std::vector<Array> host(graph_->nodes.size());
    runtime::bind_inputs(host, *bound.graph, bound.graph->arguments, arguments, "arguments");
    runtime::bind_inputs(host, *bound.graph, bound.graph->captures, implicit_inputs, "implicit inputs");
    std::lock_guard turn(device_->run_mutex());
    std::vector<DeviceValue> values(graph_->nodes.size());
    for (const auto* ids : {&graph_->arguments, &graph_->captures})
      for (ir::ValueId id : *ids) values[static_cast<size_t>(id)] = on_device(host[static_cast<size_t>(id)]);
    ops::ControlResults control_results(element_counts_);
    for (size_t s = 0; s < plan_.steps.size(); ++s) {
      if (plan_.steps[s].kind == Step::Kind::control) run_control_step(bound, s, values, control_results);
      else run_step(bound, plan_.steps[s], values);
      for (ir::ValueId id : released_after_[s]) values[static_cast<size_t>(id)].reset();
    }
    std::vector<Array> outputs;
    for (ir::ValueId id : graph_->outputs) {
      const Array& input = host[static_cast<size_t>(id)];
      outputs.push_back(input.defined() ? input
                                        : resident(bound.graph->nodes[static_cast<size_t>(id)].type,
                                                   values[static_cast<size_t>(id)]));
    }
    return outputs;
  }

  Instance make_instance(const std::vector<int64_t>& values) const {
    Instance instance;
    instance.values = values;
    instance.graph =
        values.empty() ? graph_ : std::make_shared<const ir::Graph>(runtime::instantiate_checked(*graph_, values));
    for (size_t k = 0; k < plan_.kernels.size(); ++k) {
      const GpuKernel& kernel = program_->kernels[k];
      instance.ranges.push_back(values.empty() ? kernel.range : kernel.range_count.evaluate(values));
      std::vector<uint64_t> constants =
          values.empty() ? kernel.constants : llvm_backend::kernel_constants(*graph_, plan_.kernels[k], values);
      if (constants.empty()) {
        instance.constants.push_back(nullptr);
        continue;
      }
      size_t bytes = constants.size() * sizeof(uint64_t);
      instance.constants.push_back(device_->allocate(bytes, "compile"));
      device_->copy_to_device(instance.constants.back()->address(), constants.data(), bytes);
    }
    return instance;
  }

  // A loop or branch (ops::run_control's semantics) over arrays on the
  // device: each iteration's predicate or index is read on the host, the
  // bodies run here; an element node takes one of its results.
  void run_control_step(const Instance& bound, size_t s, std::vector<DeviceValue>& values,
                        ops::ControlResults& control_results) const {
    ir::ValueId id = plan_.steps[s].value;
    const ir::Node& control = bound.graph->nodes[static_cast<size_t>(id)];
    if (control.op == ir::Primitive::element) {
      values[static_cast<size_t>(id)] = on_device(control_results.take(control));
      return;
    }
    std::vector<Array> operands;
    for (ir::ValueId input : control.inputs)
      operands.push_back(
          resident(bound.graph->nodes[static_cast<size_t>(input)].type, values[static_cast<size_t>(input)]));
    const auto& bodies = bodies_[s];
    auto run_body = [&](size_t b, std::span<const Array> arguments, std::span<const Array> captures,
                        std::span<const char>) { return bodies[b]->run_body(bound.values, arguments, captures); };
    values[static_cast<size_t>(id)] =
        on_device(control_results.keep(id, ops::run_control(control, operands, run_body)));
  }

  // An argument's elements on this device: in place when they are there already.
  DeviceValue on_device(const Array& array) const {
    const std::shared_ptr<detail::Buffer>& buffer = detail::impl(array)->buffer;
    if (const auto* storage = dynamic_cast<const GpuStorage*>(buffer->device_storage().get()))
      if (&storage->value()->device() == device_.get()) return storage->value();
    return upload(array, "call");
  }

  // Values left on the device as arrays: the host reads them (a reference
  // kernel, a caller's item()) through one copy.
  static Array resident(const detail::AbstractValue& type, DeviceValue value) {
    auto impl = std::make_shared<detail::ArrayImpl>();
    impl->type = type;
    impl->buffer = std::make_shared<detail::Buffer>(std::make_shared<GpuStorage>(std::move(value)), type.bytes());
    return detail::wrap(std::move(impl));
  }

  DeviceValue upload(const Array& array, const char* operation) const {
    const detail::ArrayImpl& impl = *detail::impl(array);
    return copied_to(*device_, impl.buffer->data(), impl.type.bytes(), operation);
  }

  DeviceValue fresh(const ir::Node& node) const {
    return device_->allocate(node.type.bytes(), std::string(ir::primitive_name(node.op)));
  }

  const ir::Node& node(ir::ValueId id) const { return graph_->nodes[static_cast<size_t>(id)]; }

  void run_step(const Instance& bound, const Step& step, std::vector<DeviceValue>& values) const {
    const ir::Node& result = bound.graph->nodes[static_cast<size_t>(step.value)];
    DeviceValue& value = values[static_cast<size_t>(step.value)];
    switch (step.kind) {
      case Step::Kind::kernel: run_kernel(bound, static_cast<size_t>(step.kernel), values); return;
      case Step::Kind::matmul:
        value = fresh(result);
        multiply(bound, step, values, value);
        return;
      case Step::Kind::view: value = values[static_cast<size_t>(result.inputs[0])]; return;
      case Step::Kind::constant: value = folded_[static_cast<size_t>(step.value)]; return;
      case Step::Kind::reference: {
        std::vector<Array> inputs;
        for (ir::ValueId input : result.inputs)
          inputs.push_back(
              resident(bound.graph->nodes[static_cast<size_t>(input)].type, values[static_cast<size_t>(input)]));
        value = upload(ops::rules(result.op).evaluate(result, inputs), "call");
        return;
      }
      case Step::Kind::control: break;  // run_control_step
    }
    KILN_CHECK(false, "a step kind the cuda backend does not run");
  }

  void run_kernel(const Instance& bound, size_t k, std::vector<DeviceValue>& values) const {
    const Kernel& kernel = plan_.kernels[k];
    const ir::Graph& graph = *bound.graph;
    const ir::Node& root = graph.nodes[static_cast<size_t>(kernel.root)];
    const int64_t range = bound.ranges[k];
    Launch launch;
    launch.kernel = static_cast<int>(k);
    launch.buffers.push_back(bound.constants[k] ? bound.constants[k]->address() : 0);
    DeviceValue partials;
    if (kernel.chunked) {
      int64_t slices =
          std::clamp<int64_t>(range / slice_minimum, 1, device_->resident_blocks() * device_->threads_per_block());
      launch.chunk = std::max<int64_t>((range + slices - 1) / slices, 1);  // an empty input: no slice
      slices = (range + launch.chunk - 1) / launch.chunk;
      launch.stride = static_cast<int64_t>(dtype_size(root.type.dtype));
      partials =
          device_->allocate(static_cast<size_t>(slices * launch.stride), std::string(ir::primitive_name(root.op)));
      launch.buffers.push_back(partials->address());
    } else {
      values[static_cast<size_t>(kernel.root)] = fresh(root);
      launch.buffers.push_back(values[static_cast<size_t>(kernel.root)]->address());
    }
    for (ir::ValueId extra : kernel.extra_roots) {
      values[static_cast<size_t>(extra)] = fresh(graph.nodes[static_cast<size_t>(extra)]);
      launch.buffers.push_back(values[static_cast<size_t>(extra)]->address());
    }
    for (ir::ValueId leaf : kernel.leaves) launch.buffers.push_back(values[static_cast<size_t>(leaf)]->address());
    launch.range = range;
    int64_t iterations = (range + launch.chunk - 1) / launch.chunk;
    launch.threads = device_->threads_per_block();
    launch.blocks =
        std::clamp<int64_t>((iterations + launch.threads - 1) / launch.threads, 1, device_->resident_blocks());
    if (iterations > 0) device_->launch(*program_, launch);
    if (kernel.chunked) values[static_cast<size_t>(kernel.root)] = combine_slices(root, partials, iterations);
  }

  // The slices' results combined in order by the reduction's reference
  // kernel, as the CPU backend combines its slices.
  DeviceValue combine_slices(const ir::Node& root, const DeviceValue& partials, int64_t slices) const {
    ir::Node combine = root;
    combine.inputs = {0};
    combine.attrs.ints = {0};
    combine.type.shape = {};
    Array partial = resident(detail::AbstractValue{.dtype = root.type.dtype, .shape = {slices}}, partials);
    return upload(ops::rules(root.op).evaluate(combine, {&partial, 1}), "call");
  }

  // Row-major [..., m, k] x [..., k, n] as cuBLAS's column-major product
  // C^T = B^T A^T: a row-major matrix is its transpose in column-major
  // order. `a` is stored [..., k, m] when transpose_a, `b` [..., n, k] when
  // transpose_b (a transpose feeding the product is read as a flag).
  void multiply(const Instance& bound, const Step& step, const std::vector<DeviceValue>& values,
                const DeviceValue& c) const {
    const ir::Node& result = bound.graph->nodes[static_cast<size_t>(step.value)];
    const Shape& shape = result.type.shape;
    const Shape& stored_a = bound.graph->nodes[static_cast<size_t>(step.operand_a)].type.shape;
    size_t rank = shape.size();
    int64_t m = shape[rank - 2], n = shape[rank - 1];
    int64_t k = step.transpose_a ? stored_a[rank - 2] : stored_a[rank - 1];
    if (m * n == 0) return;
    if (k == 0) {
      std::vector<char> zeros(result.type.bytes(), 0);
      device_->copy_to_device(c->address(), zeros.data(), zeros.size());
      return;
    }
    ColumnMajorProduct product;
    product.dtype = result.type.dtype;
    for (size_t d = 0; d + 2 < rank; ++d) product.batch *= shape[d];
    product.m = n;
    product.n = m;
    product.k = k;
    product.a = values[static_cast<size_t>(step.operand_b)]->address();
    product.transpose_a = step.transpose_b;
    product.lda = step.transpose_b ? k : n;
    product.b = values[static_cast<size_t>(step.operand_a)]->address();
    product.transpose_b = step.transpose_a;
    product.ldb = step.transpose_a ? m : k;
    product.c = c->address();
    product.ldc = n;
    product.stride_a = k * n;
    product.stride_b = m * k;
    product.stride_c = m * n;
    device_->multiply(product);
  }

  std::shared_ptr<Device> device_;
  std::shared_ptr<const ir::Graph> graph_;
  Plan plan_;
  std::shared_ptr<const LoadedProgram> program_;
  std::shared_ptr<const Instance> static_instance_;  // a graph without symbols: its only one
  mutable runtime::BindingCache<Instance> instances_;
  std::vector<DeviceValue> folded_;                                        // by value id
  std::vector<std::vector<ir::ValueId>> released_after_;                   // by step: the values no later step reads
  std::vector<std::vector<std::shared_ptr<const GpuExecutable>>> bodies_;  // by step: a control node's
  ops::ElementCounts element_counts_;
};

class GpuBackend final : public runtime::Backend {
 public:
  explicit GpuBackend(std::shared_ptr<Device> device) : device_(std::move(device)) {}
  std::string_view name() const override { return "cuda"; }
  std::shared_ptr<const runtime::Executable> compile(std::shared_ptr<const ir::Graph> graph) const override {
    return std::make_shared<GpuExecutable>(std::move(graph), device_);
  }
  // Its reductions slice differently from eager code's.
  bool matches_op_by_op(const ir::Graph&) const override { return false; }
  // The CPU's fusion plan is this backend's too.
  runtime::FusedView fused_view(std::shared_ptr<const ir::Graph> graph) const override {
    return llvm_backend::llvm_backend().fused_view(std::move(graph));
  }
  std::string target() const override { return "LLVM " LLVM_VERSION_STRING " " + device_->target(); }

  std::string save(const runtime::Executable& executable) const override {
    const auto* compiled = dynamic_cast<const GpuExecutable*>(&executable);
    if (!compiled) return {};
    std::string bytes;
    detail::ByteWriter out(bytes);
    compiled->save(out);
    return bytes;
  }

  std::shared_ptr<const runtime::Executable> load(std::shared_ptr<const ir::Graph> graph,
                                                  std::string_view saved) const override {
    try {
      detail::ByteReader in(saved);
      auto executable = std::make_shared<GpuExecutable>(std::move(graph), device_, &in);
      if (in.left() != 0) throw runtime::SavedExecutableMismatch("bytes are left over");
      return executable;
    } catch (const detail::TruncatedBytes&) {
      throw runtime::SavedExecutableMismatch("the description ends early");
    }
  }

 private:
  std::shared_ptr<Device> device_;
};

}  // namespace

std::unique_ptr<runtime::Backend> make_gpu_backend(std::shared_ptr<Device> device) {
  return std::make_unique<GpuBackend>(std::move(device));
}

std::shared_ptr<const detail::DeviceStorage> copy_to_device(Device& device, const void* data, size_t bytes) {
  return std::make_shared<GpuStorage>(copied_to(device, data, bytes, "to_device"));
}

}  // namespace kiln::cuda_backend
