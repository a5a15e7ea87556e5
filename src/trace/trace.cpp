// Trace contexts, implicit inputs and leak detection.
#include "trace/trace.h"

#include <xxhash.h>

#include <algorithm>

#include "core/error_format.h"
#include "ir/dead_code.h"
#include "kiln/graph.h"
#include "kiln/jit.h"

namespace kiln::detail {

namespace {
thread_local std::vector<std::shared_ptr<TraceState>> trace_stack;
thread_local size_t nodes_in_last_trace = 0;
}  // namespace

TraceState* current_trace() { return trace_stack.empty() ? nullptr : trace_stack.back().get(); }

bool tracing_active() { return current_trace() != nullptr; }

const std::shared_ptr<TraceState>& current_trace_shared() {
  static const std::shared_ptr<TraceState> none;
  return trace_stack.empty() ? none : trace_stack.back();
}

ir::ValueId TraceState::value_of(const Array& array, const char* operation, Location use) {
  const ArrayImpl& impl = impl_of(array, operation, use);
  if (impl.trace.get() == this) return impl.value;
  if (impl.trace) {
    // A tracer of an enclosing, still active trace on this thread is an
    // implicit input here, like a concrete capture.
    bool enclosing = false;
    for (TraceState* t = parent; t; t = t->parent) enclosing |= (t == impl.trace.get());
    if (!enclosing || !impl.trace->alive) raise_leaked(impl, operation, use);
  }
  auto found = capture_ids.find(&impl);
  if (found != capture_ids.end()) return found->second;
  ir::Node node;
  node.op = ir::Primitive::input;
  node.type = impl.type;
  node.attrs.ints = {static_cast<int64_t>(graph.captures.size()), 1};
  if (!impl.trace && made_within(impl.made_during.get())) {
    const Buffer& buffer = *impl.buffer;
    node.attrs.ints[1] = ir::constant_input;
    node.attrs.ints.push_back(static_cast<int64_t>(XXH3_64bits(buffer.data(), buffer.bytes())));
  }
  node.where = use;
  auto id = static_cast<ir::ValueId>(graph.nodes.size());
  graph.nodes.push_back(std::move(node));
  graph.captures.push_back(id);
  captured.push_back(array);
  capture_ids.emplace(&impl, id);
  return id;
}

bool TraceState::made_within(const TraceContext* context) const {
  // Every TraceContext is a TraceState: the trace layer makes them all.
  for (auto* trace = static_cast<const TraceState*>(context); trace; trace = trace->enclosing.get())
    if (trace == this) return true;
  return false;
}

Array TraceState::record(ir::Node node, const std::shared_ptr<TraceState>& owner) {
  auto impl = std::make_shared<ArrayImpl>();
  impl->type.dtype = node.type.dtype;
  impl->type.weak = node.type.weak;
  impl->type.shape = ir::take_shape_storage();
  impl->type.shape.assign(node.type.shape.begin(), node.type.shape.end());
  impl->trace = owner;
  impl->value = static_cast<int32_t>(graph.nodes.size());
  graph.nodes.push_back(std::move(node));
  return detail::wrap(std::move(impl));
}

// ---- TraceSession ---------------------------------------------------------------

TraceSession::TraceSession(std::string name, Location where) : state_(std::make_shared<TraceState>()) {
  state_->name = name;
  state_->graph.name = std::move(name);
  // Room for as many nodes as this thread's last trace reached: a function
  // is traced again and again (stateful re-traces, grad, vmap), and a
  // vector doubling up to its length moves every node several times.
  state_->graph.nodes = ir::take_node_storage(std::max<size_t>(64, nodes_in_last_trace));
  state_->where = where;
  state_->parent = current_trace();
  if (state_->parent) state_->shape_reads = state_->parent->shape_reads;
  if (!trace_stack.empty()) state_->enclosing = trace_stack.back();
  state_->thread = std::this_thread::get_id();
  trace_stack.push_back(state_);
  set_active_trace(state_);
}

TraceSession::~TraceSession() {
  // Captured arrays may remember this trace (made_during): dropping them here
  // breaks that cycle, so ended traces are freed once no tracer refers to them.
  state_->captured.clear();
  state_->capture_ids.clear();
  state_->alive = false;
  // Sessions nest strictly (RAII), so this one is on top of the stack.
  if (!trace_stack.empty() && trace_stack.back() == state_) trace_stack.pop_back();
  set_active_trace(trace_stack.empty() ? nullptr : trace_stack.back());
}

Array TraceSession::argument(const Array& example) {
  const ArrayImpl& impl = impl_of(example, "trace", state_->where);
  ir::Node node;
  node.op = ir::Primitive::input;
  node.type = impl.type;
  size_t index = state_->graph.arguments.size();
  if (index < argument_shapes_.size()) node.type.shape = argument_shapes_[index];
  node.attrs.ints = {static_cast<int64_t>(index), 0};
  node.where = state_->where;
  state_->graph.arguments.push_back(static_cast<ir::ValueId>(state_->graph.nodes.size()));
  return state_->record(std::move(node), state_);
}

Graph TraceSession::finish(const std::vector<Array>& outputs) {
  for (const Array& output : outputs)
    state_->graph.outputs.push_back(state_->value_of(output, "trace output", state_->where));
  state_->alive = false;
  if (!trace_stack.empty() && trace_stack.back() == state_) trace_stack.pop_back();
  set_active_trace(trace_stack.empty() ? nullptr : trace_stack.back());
  // The tracers keep the state alive for leak reports, which need only the name.
  nodes_in_last_trace = std::min<size_t>(state_->graph.nodes.size(), size_t{1} << 20);
  auto graph = std::make_shared<ir::Graph>(std::move(state_->graph));
  ir::eliminate_dead_nodes(*graph);
  state_->graph = ir::Graph{};
  state_->graph.name = graph->name;
  return detail::wrap(std::move(graph));
}

std::vector<Array> TraceSession::captured() const { return state_->captured; }

void TraceSession::trace_at_shapes(std::vector<Shape> shapes) {
  argument_shapes_ = std::move(shapes);
  state_->shape_reads = std::make_shared<std::vector<std::pair<Shape, Location>>>();
}

std::vector<std::pair<Shape, Location>> TraceSession::shape_reads() const {
  return state_->shape_reads ? *state_->shape_reads : std::vector<std::pair<Shape, Location>>{};
}

// ---- for the templates of kiln/graph.h ------------------------------------------

Array trace_argument(TraceSession& session, const Array& example) { return session.argument(example); }

TracedGraph trace(const std::string& name, Location where, FunctionRef<std::vector<Array>(TraceSession&)> record) {
  TraceSession session(name, where);
  Graph graph = session.finish(record(session));
  return {std::move(graph), session.captured()};
}

}  // namespace kiln::detail
