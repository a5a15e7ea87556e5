// Tiered execution and kiln's compile thread (see the header).
#include "cache/tiered_compile.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <thread>
#include <utility>

#include "core/array_impl.h"
#include "ops/common/apply.h"
#include "ops/common/rules.h"
#include "trace/trace.h"

namespace kiln {

namespace cache {

TieredExecutable::TieredExecutable(std::shared_ptr<const runtime::Executable> first_tier)
    : first_tier_(std::move(first_tier)) {}

std::vector<Array> TieredExecutable::run(std::span<const Array> arguments, std::span<const Array> implicit_inputs,
                                         std::span<const char> donated) const {
  if (const runtime::Executable* optimized = optimized_.load(std::memory_order_acquire))
    return optimized->run(arguments, implicit_inputs, donated);
  struct EndsFirstRun {
    const TieredExecutable& tiered;
    ~EndsFirstRun() {
      std::lock_guard lock(tiered.mutex_);
      tiered.first_run_ended_ = true;
      tiered.first_run_.notify_all();
    }
  } ends{*this};
  return first_tier_->run(arguments, implicit_inputs, donated);
}

void TieredExecutable::wait_for_first_run(std::chrono::milliseconds longest) const {
  auto until = std::chrono::steady_clock::now() + longest;
  std::unique_lock lock(mutex_);
  while (!first_run_ended_ && !runtime::compiles_abandoned() && std::chrono::steady_clock::now() < until)
    first_run_.wait_for(lock, std::chrono::milliseconds(10));
}

std::optional<runtime::OutputPlan> TieredExecutable::plan_outputs(std::span<const Array> arguments,
                                                                  std::span<const Array> implicit_inputs) const {
  // The tier that runs the call may be the other one: both compute the same
  // values, and an output planned as a passed input equals the input.
  if (const runtime::Executable* optimized = optimized_.load(std::memory_order_acquire))
    return optimized->plan_outputs(arguments, implicit_inputs);
  return first_tier_->plan_outputs(arguments, implicit_inputs);
}

std::string_view TieredExecutable::backend() const {
  const runtime::Executable* optimized = optimized_.load(std::memory_order_acquire);
  return optimized ? optimized->backend() : first_tier_->backend();
}

void TieredExecutable::when_done(std::function<void(const TierOutcome&)> done) const {
  std::unique_lock lock(mutex_);
  if (!outcome_) {
    waiting_.push_back(std::move(done));
    return;
  }
  TierOutcome outcome = *outcome_;
  lock.unlock();
  done(outcome);
}

void TieredExecutable::finish(std::shared_ptr<const runtime::Executable> optimized, const TierOutcome& outcome) const {
  std::vector<std::function<void(const TierOutcome&)>> waiting;
  {
    std::lock_guard lock(mutex_);
    if (optimized) {
      optimized_owner_ = std::move(optimized);
      optimized_.store(optimized_owner_.get(), std::memory_order_release);
    }
    outcome_ = outcome;
    waiting.swap(waiting_);
  }
  for (auto& done : waiting) done(outcome);
}

namespace {
using GraphNode = std::pair<const ir::Graph*, const ir::Node*>;

// The same operation on the same types runs the same kernel: a chain of 333
// tanh needs one, not a traced graph of 333 (4 ms of tracing and planning).
bool same_kernel(GraphNode a, GraphNode b) {
  auto [graph_a, node_a] = a;
  auto [graph_b, node_b] = b;
  if (node_a->op != node_b->op || !(node_a->attrs == node_b->attrs) || node_a->type.dtype != node_b->type.dtype ||
      node_a->type.shape != node_b->type.shape || node_a->inputs.size() != node_b->inputs.size())
    return false;
  for (size_t k = 0; k < node_a->inputs.size(); ++k) {
    const ir::Node& input_a = graph_a->nodes[static_cast<size_t>(node_a->inputs[k])];
    const ir::Node& input_b = graph_b->nodes[static_cast<size_t>(node_b->inputs[k])];
    if (input_a.type.dtype != input_b.type.dtype || input_a.type.shape != input_b.type.shape) return false;
  }
  return true;
}

// The nodes whose eager code must be compiled: those rounding otherwise than
// their reference kernels, save what the backend runs interpreted.
void collect_rounding_nodes(const ir::Graph& graph, const runtime::Backend& backend, std::vector<GraphNode>& nodes) {
  for (const ir::Node& node : graph.nodes) {
    for (const auto& body : node.bodies) collect_rounding_nodes(*body, backend, nodes);
    if (node.inputs.empty() || !ops::native_differs_from_reference(ops::rules(node.op), node.type.dtype)) continue;
    if (backend.interprets(graph, node)) continue;
    GraphNode candidate{&graph, &node};
    if (std::none_of(nodes.begin(), nodes.end(), [&](GraphNode held) { return same_kernel(held, candidate); }))
      nodes.push_back(candidate);
  }
}
}  // namespace

void compile_first_tier_kernels(const ir::Graph& graph, const runtime::Backend& backend) {
  if (ir::is_symbolic(graph)) return;  // its nodes' sizes are known per call only
  std::vector<GraphNode> nodes;
  collect_rounding_nodes(graph, backend, nodes);
  if (nodes.size() < 2) return;  // one compiles alone as cheaply
  auto record = [&](detail::TraceSession& session) {
    std::vector<Array> outputs;
    for (auto [owner, node] : nodes) {
      std::vector<Array> placeholders;
      for (ir::ValueId input : node->inputs)
        placeholders.push_back(session.argument(detail::allocate(owner->nodes[static_cast<size_t>(input)].type)));
      outputs.push_back(detail::apply(node->op, placeholders, node->attrs, node->where));
    }
    return outputs;
  };
  runtime::CodeQualityScope quick(runtime::CodeQuality::quick);
  backend.compile(detail::shared_ir(detail::trace("first tier kernels", Location(), record).graph));
}

CompileMode resolve_compile_mode(CompileMode requested) {
  if (requested != CompileMode::Auto) return requested;
  static const CompileMode from_environment = [] {
    const char* text = std::getenv("KILN_COMPILE");
    if (!text || !*text || std::strcmp(text, "background") == 0) return CompileMode::Background;
    if (std::strcmp(text, "sync") == 0) return CompileMode::Sync;
    std::fprintf(stderr, "kiln: KILN_COMPILE=%s is unknown (background or sync); using background\n", text);
    return CompileMode::Background;
  }();
  return from_environment;
}

namespace {

// One thread: a compile uses a core fully, and the calls it serves run on
// the others meanwhile. Never destroyed, so that a process exiting while
// it compiles finds it intact (the exit hook below stops it first).
class CompileThread {
 public:
  static CompileThread& instance() {
    static CompileThread& thread = *new CompileThread;
    return thread;
  }

  void submit(std::function<void()> job) {
    // Exit handlers run last registered first: registered again with every
    // job, stopping the compile thread comes before the destruction of every
    // static object the job may use (the allocator, the thread pool, ...),
    // however late that object was made. (32 bytes each; a compile costs
    // milliseconds.)
    std::atexit([] { CompileThread::instance().stop(); });
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    queue_.push_back(std::move(job));
    ++outstanding_;
    if (!started_) {
      started_ = true;
      // At the callers' priority: a lower one (nice 10) let a loop keeping
      // every core busy starve the compile, so that the MLP benchmark ran op
      // by op (23 ms a step instead of 11) for its whole measurement.
      std::thread([this] { work(); }).detach();
    }
    wake_.notify_one();
  }

  void wait_idle() {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [&] { return outstanding_ == 0; });
  }

  // At exit: queued jobs are dropped and the one running is abandoned; this
  // waits for it to reach its next phase, bounded so that a job stuck where
  // it cannot stop (a callback into a finalized interpreter) never holds the exit.
  void stop() {
    runtime::abandon_compiles();
    std::unique_lock lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
    outstanding_ -= static_cast<int64_t>(queue_.size());
    queue_.clear();
    wake_.notify_all();
    idle_.wait_for(lock, std::chrono::seconds(1), [&] { return outstanding_ == 0; });
  }

 private:
  CompileThread() = default;

  void work() {
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      std::function<void()> job = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      job();
      job = nullptr;  // what it holds goes before the job counts as done
      lock.lock();
      --outstanding_;
      idle_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<std::function<void()>> queue_;
  int64_t outstanding_ = 0;  // queued or running
  bool started_ = false, stopping_ = false;
};

std::mutex fault_mutex;
std::function<void(const ir::Graph&)>& fault_storage() {
  static auto& fault = *new std::function<void(const ir::Graph&)>;
  return fault;
}

}  // namespace

void compile_in_background(std::function<void()> job) { CompileThread::instance().submit(std::move(job)); }

void stop_background_compiles() { CompileThread::instance().stop(); }

void set_background_compile_fault(std::function<void(const ir::Graph&)> fault) {
  std::lock_guard lock(fault_mutex);
  fault_storage() = std::move(fault);
}

void background_compile_fault(const ir::Graph& graph) {
  std::function<void(const ir::Graph&)> fault;
  {
    std::lock_guard lock(fault_mutex);
    fault = fault_storage();
  }
  if (fault) fault(graph);
}

}  // namespace cache

void wait_for_background_compiles() { cache::CompileThread::instance().wait_idle(); }

}  // namespace kiln
