// The native backend's shape-generic code against code compiled for one
// size, side by side, without jit's probing (bench_dynamic measures through
// jit): each workload is traced once at a small size with its dynamic
// dimension marked symbolic (s0 = 37) and compiled once, and once at the
// measured size as a static graph; both executables run the same inputs.
//   W1       y = tanh(1.5x + 0.25) * sigmoid(x) - 0.5x^2 over f32[2^24]
//   softmax  over the last axis of f32[4096,1024], the rows dynamic
//   MLP      the demo's training step (examples/mlp.h), the batch (256) dynamic
// Goal: the symbolic executable >= 0.9x the static one's speed (time ratio
// <= 1.11) on every workload.
#include <benchmark/benchmark.h>
#include <kiln/kiln.h>

#include <memory>

#include "backend/llvm/backend.h"
#include "harness.h"
#include "mlp.h"
#include "symbolic_marking.h"
#include "trace/trace.h"

using kiln::Array;

namespace {

constexpr int64_t hint = 37;

struct Traced {
  kiln::Graph graph;
  std::vector<Array> inputs;    // arguments
  std::vector<Array> captures;  // implicit inputs
};

template <class F, class... Args>
Traced trace(const std::string& name, F&& fn, const Args&... args) {
  kiln::detail::TraceSession session(name, kiln::Location::current());
  kiln::Graph graph = session.finish(kiln::tree_leaves(kiln::detail::trace_arguments(session, fn, args...)));
  std::vector<Array> inputs;
  (
      [&](const auto& arg) {
        for (const Array& leaf : kiln::tree_leaves(arg)) inputs.push_back(leaf);
      }(args),
      ...);
  return {graph, inputs, session.captured()};
}

// Registers "<name> static" and "<name> symbolic": `at_size` traced at the
// measured size, `at_hint` at s0 = 37 and marked; both run `at_size`'s inputs.
void add_pair(const std::string& name, const Traced& at_size, const Traced& at_hint,
              const kiln::testing::SymbolMarks& marks) {
  const auto& backend = kiln::llvm_backend::llvm_backend();
  std::shared_ptr<const kiln::runtime::Executable> fixed = backend.compile(kiln::detail::shared_ir(at_size.graph));
  kiln::Graph symbolic = kiln::testing::mark_symbols(at_hint.graph, marks);
  std::shared_ptr<const kiln::runtime::Executable> generic = backend.compile(kiln::detail::shared_ir(symbolic));
  auto inputs = std::make_shared<Traced>(at_size);
  kiln::bench::add(name + " static", [=] { benchmark::DoNotOptimize(fixed->run(inputs->inputs, inputs->captures)); });
  kiln::bench::add(name + " symbolic",
                   [=] { benchmark::DoNotOptimize(generic->run(inputs->inputs, inputs->captures)); });
}

void register_all() {
  auto w1 = [](const Array& x) { return kiln::tanh(x * 1.5f + 0.25f) * kiln::sigmoid(x) - 0.5f * x * x; };
  add_pair("W1 f32[2^24]", trace("w1", w1, kiln::random::normal(kiln::random::key(1), {int64_t{1} << 24})),
           trace("w1", w1, kiln::random::normal(kiln::random::key(1), {hint})), kiln::testing::marks_of_s0(hint));

  auto softmax = [](const Array& x) { return kiln::softmax(x, -1); };
  add_pair("softmax f32[4096,1024]",
           trace("softmax", softmax, kiln::random::normal(kiln::random::key(2), {4096, 1024})),
           trace("softmax", softmax, kiln::random::normal(kiln::random::key(2), {hint, 1024})),
           kiln::testing::marks_of_s0(hint));

  auto step = [](const Mlp& p, const Adam& s, const Array& x, const Array& y) { return mlp::train_step(p, s, x, y); };
  auto keys = kiln::random::split_keys(kiln::random::key(3), 2);
  Mlp params = mlp::init(keys[0]);
  Adam state = mlp::initial_state(params);
  auto batch = [&](int64_t n) {
    return std::pair{kiln::random::normal(keys[1], {n, mlp::inputs}),
                     kiln::random::randint(keys[1], {n}, 0, mlp::classes)};
  };
  auto [x, y] = batch(mlp::batch_size);
  auto [x_hint, y_hint] = batch(hint);
  add_pair("MLP step batch 256", trace("mlp_step", step, params, state, x, y),
           trace("mlp_step", step, params, state, x_hint, y_hint), kiln::testing::marks_of_s0(hint));
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  kiln::bench::run_all(argc, argv);
  const double goal = 1 / 0.9;
  for (const char* name : {"W1 f32[2^24]", "softmax f32[4096,1024]", "MLP step batch 256"})
    kiln::bench::compare(std::string(name) + ": symbolic vs static", std::string(name) + " symbolic",
                         std::string(name) + " static", goal, "symbolic >= 0.9x static's speed");
  return 0;
}
