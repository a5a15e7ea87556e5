// Recording or eager evaluation of one primitive application.
#include "trace/apply.h"

#include <algorithm>

#include "core/convert.h"
#include "core/dispatch.h"
#include "core/error_format.h"
#include "ops/rules.h"
#include "runtime/eager.h"
#include "trace/trace.h"

namespace kiln::detail {

namespace {
constexpr size_t max_inline_inputs = 8;

AbstractValue infer(const ir::Node& node, std::span<const Array> inputs) {
  const AbstractValue* small[max_inline_inputs];
  std::vector<const AbstractValue*> large;
  const AbstractValue** types = small;
  if (inputs.size() > max_inline_inputs) {
    large.resize(inputs.size());
    types = large.data();
  }
  for (size_t i = 0; i < inputs.size(); ++i) types[i] = &inputs[i].impl()->type;
  return ops::rules(node.op).infer(node, std::span<const AbstractValue* const>(types, inputs.size()));
}
}  // namespace

Array apply(ir::Primitive op, std::span<const Array> inputs, ir::Attributes attrs, Location where) {
  const char* name = ir::primitive_name(op).data();
  for (const Array& input : inputs) impl_of(input, name, where);

  ir::Node node;
  node.op = op;
  node.attrs = std::move(attrs);
  node.where = where;
  node.type = infer(node, inputs);

  if (TraceState* trace = current_trace()) {
    node.inputs.reserve(inputs.size());
    for (const Array& input : inputs) node.inputs.push_back(trace->value_of(input, name, where));
    return trace->record(std::move(node), current_trace_shared());
  }
  int64_t elements = node.type.size();
  for (const Array& input : inputs) {
    if (input.impl()->trace) raise_leaked(*input.impl(), name, where);
    elements = std::max(elements, input.impl()->type.size());
  }
  if (!inputs.empty() && runtime::eager_compiled(elements)) {
    auto build = [&](std::span<const Array> placeholders) { return apply(op, placeholders, node.attrs, where); };
    return runtime::run_compiled(inputs, build);
  }
  return ops::rules(op).evaluate(node, inputs);
}

Scalar scalar_as(Scalar value, DType dtype) {
  return dispatch(dtype, [&]<class T>() -> Scalar {
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
