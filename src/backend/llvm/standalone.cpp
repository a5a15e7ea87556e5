// Standalone native kernels (see the header): which primitives have one, and
// the shared emitter machinery; the kernels themselves are in
// standalone_movement.cpp, standalone_indexing.cpp and standalone_compute.cpp.
#include "backend/llvm/standalone.h"

#include <string>
#include <vector>

#include "backend/llvm/standalone_emitter.h"
#include "core/error_format.h"
#include "ops/common/rules.h"

namespace kiln::llvm_backend {

namespace {
// What a native kernel is: its emitter; whether it computes on elements,
// written for bool, i32, i64, f32 and f64 only (other dtypes run the
// reference kernel), rather than moving elements of any dtype; and whether
// its geometry may depend on a symbolic graph's symbols (standalone_emitter.h).
struct NativeKernelEntry {
  standalone::KernelEmitFunction emit = nullptr;
  bool computes = false;
  bool serves_every_size = false;
};

NativeKernelEntry native_kernel(ops::NativeKernel kernel) {
  using K = ops::NativeKernel;
  using namespace standalone;
  switch (kernel) {
    case K::transpose: return {.emit = emit_transpose, .serves_every_size = true};
    case K::slice: return {.emit = emit_slice, .serves_every_size = true};
    case K::reverse: return {.emit = emit_reverse, .serves_every_size = true};
    case K::concatenate: return {.emit = emit_concatenate, .serves_every_size = true};
    case K::pad: return {.emit = emit_pad, .serves_every_size = true};

    case K::take: return {.emit = emit_take, .serves_every_size = true};
    case K::scatter_add: return {.emit = emit_scatter_add, .computes = true};
    case K::dynamic_slice: return {.emit = emit_dynamic_slice};
    case K::dynamic_update_slice: return {.emit = emit_dynamic_update_slice};

    case K::cumsum: return {.emit = emit_cumsum, .computes = true};
    case K::argument_reduce: return {.emit = emit_argument_reduce, .computes = true};
    case K::random: return {.emit = emit_random, .computes = true};
    case K::integer_matmul: return {.emit = emit_integer_matmul, .computes = true};
    case K::none: break;
  }
  return {};
}

bool computes_on_dtype(const NativeKernelEntry& kernel, DType dtype) {
  return !kernel.computes || dtype == DType::bool_ || dtype == DType::i32 || dtype == DType::i64 ||
         dtype == DType::f32 || dtype == DType::f64;
}

// With `fixed_sizes`, as if the graph were static.
standalone::KernelEmitFunction kernel_for(const ir::Graph& graph, const ir::Node& node, bool fixed_sizes = false) {
  const ops::PrimitiveRules& row = ops::rules(node.op);
  // Floating products are BLAS calls, planned apart (plan.cpp).
  if (row.fusion == ops::Fusion::matmul && is_floating(node.type.dtype)) return nullptr;
  if (row.fusion != ops::Fusion::kernel && row.fusion != ops::Fusion::matmul) return nullptr;
  NativeKernelEntry kernel = native_kernel(row.kernel);
  if (!computes_on_dtype(kernel, node.type.dtype)) return nullptr;
  bool symbolic = node.symbolic != nullptr;
  for (ir::ValueId input : node.inputs) {
    const ir::Node& operand = graph.nodes[static_cast<size_t>(input)];
    if (!computes_on_dtype(kernel, operand.type.dtype)) return nullptr;
    symbolic = symbolic || operand.symbolic != nullptr;
  }
  if (symbolic && !fixed_sizes && !kernel.serves_every_size) return nullptr;
  return kernel.emit;
}
}  // namespace

bool standalone_supported(const ir::Graph& graph, const ir::Node& node) { return kernel_for(graph, node) != nullptr; }

bool standalone_supported_at_fixed_sizes(const ir::Graph& graph, const ir::Node& node) {
  return kernel_for(graph, node, true) != nullptr;
}

std::vector<std::string> standalone_kernels_missing() {
  std::vector<std::string> missing;
  for (int k = 1; k < ops::native_kernel_count; ++k)
    if (!native_kernel(static_cast<ops::NativeKernel>(k)).emit)
      missing.push_back("native kernel #" + std::to_string(k));
  return missing;
}

CompiledKernel emit_standalone(llvm::IRBuilder<>& builder, llvm::Function* function, const ir::Graph& graph,
                               const ir::Node& node) {
  standalone::KernelEmitFunction emit = kernel_for(graph, node);
  KILN_CHECK(emit != nullptr, "a standalone kernel planned for a primitive whose row names no native kernel");
  standalone::Emitter emitter(builder, function, graph, node);
  return emit(emitter);
}

namespace standalone {

AxisView view_around(const Shape& shape, int64_t axis) {
  AxisView view;
  for (size_t a = 0; a < shape.size(); ++a) {
    auto position = static_cast<int64_t>(a);
    if (position < axis) view.outer *= shape[a];
    if (position == axis) view.extent = shape[a];
    if (position > axis) view.inner *= shape[a];
  }
  return view;
}

AxisSizes sizes_around(const std::vector<Size>& shape, int64_t axis) {
  AxisSizes view;
  for (size_t a = 0; a < shape.size(); ++a) {
    auto position = static_cast<int64_t>(a);
    if (position < axis) view.outer = view.outer * shape[a];
    if (position == axis) view.extent = shape[a];
    if (position > axis) view.inner = view.inner * shape[a];
  }
  return view;
}

// A standalone kernel has no literals: its constants are the symbols' values.
Emitter::Emitter(llvm::IRBuilder<>& builder, llvm::Function* function, const ir::Graph& graph, const ir::Node& node)
    : builder(builder), function(function), node(node), graph_(graph), sizes_(function, function->getArg(2), 0) {}

const ir::Node& Emitter::input(size_t k) const { return graph_.nodes[static_cast<size_t>(node.inputs[k])]; }

llvm::Type* Emitter::bits_type(DType dtype) { return builder.getIntNTy(static_cast<unsigned>(8 * dtype_size(dtype))); }

llvm::Type* Emitter::value_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return builder.getFloatTy();
    case DType::f64: return builder.getDoubleTy();
    default: return bits_type(dtype);
  }
}

llvm::Value* Emitter::load(llvm::Type* type, llvm::Value* base, llvm::Value* offset) {
  return builder.CreateLoad(type, builder.CreateInBoundsGEP(type, base, offset));
}

void Emitter::store(llvm::Value* value, llvm::Value* base, llvm::Value* offset) {
  builder.CreateStore(value, builder.CreateInBoundsGEP(value->getType(), base, offset));
}

llvm::Value* Emitter::load_index(size_t k, llvm::Value* offset) {
  DType dtype = input(k).type.dtype;
  llvm::Value* index = load(bits_type(dtype), input_pointer(k), offset);
  return is_unsigned(dtype) ? builder.CreateZExt(index, builder.getInt64Ty())
                            : builder.CreateSExt(index, builder.getInt64Ty());
}

void Emitter::copy(DType dtype, llvm::Value* to, llvm::Value* to_offset, llvm::Value* from, llvm::Value* from_offset,
                   llvm::Value* count) {
  llvm::Type* type = bits_type(dtype);
  llvm::Value* source = builder.CreateInBoundsGEP(type, from, from_offset);
  llvm::Value* target = builder.CreateInBoundsGEP(type, to, to_offset);
  loop(i64(0), count, "copy", [&](llvm::Value* c) { store(load(type, source, c), target, c); });
}

void Emitter::fill(llvm::Value* value, llvm::Value* to, llvm::Value* offset, llvm::Value* count) {
  llvm::Value* target = builder.CreateInBoundsGEP(value->getType(), to, offset);
  loop(i64(0), count, "fill", [&](llvm::Value* c) { store(value, target, c); });
}

llvm::Value* Emitter::stack_array(llvm::Type* type, int64_t count) {
  llvm::BasicBlock& entry = function->getEntryBlock();
  llvm::IRBuilder<> at_entry(&entry, entry.begin());
  return at_entry.CreateAlloca(type, at_entry.getInt64(static_cast<uint64_t>(count)));
}

}  // namespace standalone
}  // namespace kiln::llvm_backend
