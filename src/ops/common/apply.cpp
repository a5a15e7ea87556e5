// Recording or eager evaluation of one primitive application.
#include "ops/common/apply.h"

#include <algorithm>
#include <atomic>

#include "core/allocation_guard.h"
#include "core/convert.h"
#include "core/dispatch.h"
#include "core/dispatch_queue.h"
#include "core/error_format.h"
#include "ops/common/rules.h"
#include "trace/trace.h"

namespace kiln::detail {

namespace {
constexpr size_t max_inline_inputs = 8;

std::atomic<const EagerCompiler*> installed_compiler{nullptr};

// Queues `compute` on handles of `arrays` of its own; returns its pending
// result of `type`.
Array queue_eager(std::span<const Array> arrays, AbstractValue type, const char* operation, Location where,
                  std::function<Array(std::span<const Array>)> compute) {
  std::vector<Array> held;
  held.reserve(arrays.size());
  for (const Array& array : arrays) held.push_back(queued_handle(array));
  Array result = pending_array(type);
  // The dispatch thread has no scope open: the name of the public operation
  // the user called (zeros, not its broadcast) goes along.
  enqueue([held = std::move(held), compute = std::move(compute), pending = pending_result(result),
           operation = std::string(scoped_operation(operation)), where]() mutable {
    try {
      // An input whose work failed fails this work with the same error.
      for (const Array& input : held) impl(input)->buffer->wait();
      Array computed = guard_allocation(operation.c_str(), pending.type, where, [&] { return compute(held); });
      held.clear();
      fulfil(pending, std::move(computed));
    } catch (...) {
      pending.buffer->fail(std::current_exception());
      note_queued_error(std::current_exception());
    }
  });
  return result;
}

// The inputs as pointers, so callers holding arrays need not copy them (each
// Array copy is an atomic reference count update, a cost tracing feels).
Array apply_inputs(ir::Primitive op, const Array* const* inputs, size_t count, ir::Attributes attrs, Location where) {
  where = scoped_location(where);
  const char* name = ir::primitive_name(op).data();
  const AbstractValue* small[max_inline_inputs];
  std::vector<const AbstractValue*> large;
  const AbstractValue** types = small;
  if (count > max_inline_inputs) {
    large.resize(count);
    types = large.data();
  }
  for (size_t i = 0; i < count; ++i) types[i] = &impl_of(*inputs[i], name, where).type;

  ir::Node node;
  node.op = op;
  node.attrs = std::move(attrs);
  node.where = where;
  node.type = ops::rules(op).infer(node, std::span<const AbstractValue* const>(types, count));
  check_fits(node.type, name, where);

  if (TraceState* trace = current_trace()) {
    node.inputs = ir::take_input_storage();
    node.inputs.reserve(count);
    for (size_t i = 0; i < count; ++i) node.inputs.push_back(trace->value_of(*inputs[i], name, where));
    return trace->record(std::move(node), current_trace_shared());
  }
  int64_t elements = node.type.size();
  // Kernels take a contiguous span of arrays; small arities stay off the heap.
  Array inline_arrays[max_inline_inputs];
  std::vector<Array> heap_arrays(count > max_inline_inputs ? count : 0);
  std::span<Array> arrays(count > max_inline_inputs ? heap_arrays.data() : inline_arrays, count);
  bool any_pending = false;
  for (size_t i = 0; i < count; ++i) {
    const ArrayImpl& input = *detail::impl(*inputs[i]);
    if (input.trace) raise_leaked(input, name, where);
    any_pending = any_pending || input.buffer->pending();
    elements = std::max(elements, types[i]->size());
    arrays[i] = *inputs[i];
  }
  bool native_rounding = ops::native_differs_from_reference(ops::rules(op), node.type.dtype);
  // Complex values run their reference kernels in compiled graphs too
  // (backend/llvm/plan.h): compiling one operation would only add a compile.
  bool complex_values = is_complex(node.type.dtype);
  for (size_t i = 0; i < count; ++i) complex_values = complex_values || is_complex(types[i]->dtype);
  const EagerCompiler* compiler =
      count > 0 && !complex_values ? eager_compiler_for(elements, native_rounding) : nullptr;
  auto build = [&](std::span<const Array> placeholders) { return apply(op, placeholders, node.attrs, where); };
  // Queued when the operation is worth a handoff (a compiled kernel), must
  // keep its order with other ranks' (a collective), or reads what queued
  // work computes; small operations on computed arrays run at once.
  bool collective = ir::primitive_family(op) == ir::Family::collective;
  if (compiler) return run_compiled_eager(*compiler, arrays, build, name, node.type, where);
  if ((collective || any_pending) && dispatch_async() && copy_outside_storage_for_queue(arrays)) {
    AbstractValue type = node.type;
    return queue_eager(arrays, std::move(type), name, where, [node = std::move(node)](std::span<const Array> held) {
      return ops::rules(node.op).evaluate(node, held);
    });
  }
  return guard_allocation(name, node.type, where, [&] { return ops::rules(op).evaluate(node, arrays); });
}
}  // namespace

Array apply(ir::Primitive op, std::span<const Array> inputs, ir::Attributes attrs, Location where) {
  const Array* small[max_inline_inputs];
  std::vector<const Array*> large;
  const Array** pointers = small;
  if (inputs.size() > max_inline_inputs) {
    large.resize(inputs.size());
    pointers = large.data();
  }
  for (size_t i = 0; i < inputs.size(); ++i) pointers[i] = &inputs[i];
  return apply_inputs(op, pointers, inputs.size(), std::move(attrs), where);
}

Array apply(ir::Primitive op, const Array& a, ir::Attributes attrs, Location where) {
  const Array* pointers[] = {&a};
  return apply_inputs(op, pointers, 1, std::move(attrs), where);
}

Array apply(ir::Primitive op, const Array& a, const Array& b, ir::Attributes attrs, Location where) {
  const Array* pointers[] = {&a, &b};
  return apply_inputs(op, pointers, 2, std::move(attrs), where);
}

Array apply_compiled(ir::Primitive op, std::span<const Array> inputs, const ir::Attributes& attrs, Location where,
                     bool compile, std::span<const char> donated) {
  int64_t elements = 0;
  for (const Array& input : inputs) {
    if (is_complex(input.dtype())) return Array();
    elements = std::max(elements, input.size());
  }
  // Callers compile the operations that apply compiles at every size.
  const EagerCompiler* compiler = inputs.empty() ? nullptr : eager_compiler_for(elements, compile);
  if (!compiler) return Array();
  auto build = [&](std::span<const Array> placeholders) { return apply(op, placeholders, attrs, where); };
  return compiler->run(inputs, build, compile, donated);
}

Array run_compiled_eager(const EagerCompiler& compiler, std::span<const Array> inputs,
                         FunctionRef<Array(std::span<const Array>)> build, const char* operation,
                         const AbstractValue& type, Location where) {
  if (dispatch_async()) {
    std::vector<Array> arrays(inputs.begin(), inputs.end());
    if (copy_outside_storage_for_queue(arrays)) {
      CompiledEager compiled = compiler.prepare(arrays, build);
      return queue_eager(arrays, std::move(compiled.type), operation, where, std::move(compiled.run));
    }
  }
  return guard_allocation(operation, type, where, [&] { return compiler.run(inputs, build, true, {}); });
}

void install_eager_compiler(const EagerCompiler* compiler) { installed_compiler.store(compiler); }

const EagerCompiler* eager_compiler_for(int64_t elements, bool native_rounding) {
  const EagerCompiler* compiler = installed_compiler.load(std::memory_order_acquire);
  return compiler && compiler->wants(elements, native_rounding) ? compiler : nullptr;
}

Scalar scalar_as(Scalar value, DType dtype) {
  return dispatch(dtype, [&]<class T>() -> Scalar {
    if (value.kind() == Scalar::Kind::complex) return Scalar(convert_element<T>(value.as_complex()));
    if (value.kind() == Scalar::Kind::floating) return Scalar(convert_element<T>(value.as_double()));
    return Scalar(convert_element<T>(value.as_int()));
  });
}

Array literal(Scalar value, DType dtype, bool weak, Location where) {
  ir::Attributes attrs;
  attrs.scalar = scalar_as(value, dtype);
  attrs.dtype = dtype;
  if (weak) attrs.ints = {1};
  return apply(ir::Primitive::literal, {}, std::move(attrs), where);
}

}  // namespace kiln::detail
