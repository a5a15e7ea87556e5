// Fusion planning (see the header).
#include "backend/llvm/plan.h"

#include <xxhash.h>

#include <algorithm>
#include <sstream>

#include "backend/llvm/standalone.h"
#include "backend/llvm/symbolic_sizes.h"
#include "ops/common/rules.h"
#include "runtime/folding.h"
#include "transform/simplify.h"

namespace kiln::llvm_backend {

using ir::Primitive;

bool touches_complex(const ir::Graph& graph, const ir::Node& node) {
  if (is_complex(node.type.dtype)) return true;
  for (ir::ValueId input : node.inputs)
    if (is_complex(graph.nodes[static_cast<size_t>(input)].type.dtype)) return true;
  return false;
}

bool is_fusible_elementwise(const ir::Graph& graph, const ir::Node& node) {
  return ops::rules(node.op).fusion == ops::Fusion::elementwise && !touches_complex(graph, node);
}

bool is_fusible_reduction(const ir::Graph& graph, const ir::Node& node) {
  return ops::rules(node.op).fusion == ops::Fusion::reduction && !touches_complex(graph, node);
}

int operation_cost(Primitive op) { return ops::rules(op).cost; }

std::vector<ir::ValueId> step_inputs(const ir::Graph& graph, const Plan& plan, const Step& step) {
  switch (step.kind) {
    case Step::Kind::kernel: return plan.kernels[static_cast<size_t>(step.kernel)].leaves;
    case Step::Kind::matmul: return {step.operand_a, step.operand_b};
    case Step::Kind::constant: return {};
    default: return graph.nodes[static_cast<size_t>(step.value)].inputs;
  }
}

namespace {
bool is_floating_matmul(const ir::Node& node) {
  // (The builders hand f16 and bf16 products to BLAS as f32 ones.)
  return ops::rules(node.op).fusion == ops::Fusion::matmul && is_floating(node.type.dtype) && !is_half(node.type.dtype);
}

bool cheap(const ir::Graph& graph, ir::ValueId id) {
  const ir::Node& node = graph.nodes[static_cast<size_t>(id)];
  if (node.op == Primitive::literal || node.op == Primitive::iota) return true;
  if (node.op == Primitive::broadcast) return cheap(graph, node.inputs[0]);
  return false;
}
}  // namespace

const ir::Node& kernel_space_node(const ir::Graph& graph, const Kernel& kernel) {
  const ir::Node& root = graph.nodes[static_cast<size_t>(kernel.root)];
  if (kernel.kind == Kernel::Kind::reduce) return graph.nodes[static_cast<size_t>(root.inputs[0])];
  return root;
}

const Shape& kernel_space(const ir::Graph& graph, const Kernel& kernel) {
  return kernel_space_node(graph, kernel).type.shape;
}

bool same_shape(const ir::Graph& graph, const ir::Node& a, const ir::Node& b) {
  if (graph.symbols == 0 || (!a.symbolic && !b.symbolic)) return a.type.shape == b.type.shape;
  return ir::symbolic_shape(a) == ir::symbolic_shape(b);
}

bool reads_at_flat_index(const ir::Graph& graph, const Kernel& kernel) {
  const ir::Node& space = kernel_space_node(graph, kernel);
  if (space.type.shape.size() <= 1) return true;  // a rank-1 iota is the flat index itself
  for (ir::ValueId id : kernel.region)
    if (graph.nodes[static_cast<size_t>(id)].op == Primitive::iota) return false;
  for (ir::ValueId leaf : kernel.leaves) {
    const ir::Node& node = graph.nodes[static_cast<size_t>(leaf)];
    if (!same_shape(graph, node, space) && !is_single_value(node)) return false;
  }
  return true;
}

bool is_flat(const ir::Graph& graph, const Kernel& kernel) {
  return kernel.kind == Kernel::Kind::elementwise && reads_at_flat_index(graph, kernel);
}

// Moves each step computing a single value (an optimizer's step size or bias
// correction) to just after the steps producing what it reads, so that
// kernels reading it can merge with kernels that come before it in graph
// order (an Adam update with the moment updates it reads).
void hoist_scalar_steps(const ir::Graph& graph, Plan& plan) {
  std::vector<Step> ordered;
  for (const Step& step : plan.steps) {
    size_t at = ordered.size();
    bool single = shape_size(graph.nodes[static_cast<size_t>(step.value)].type.shape) <= 1;
    if (single && step.kind != Step::Kind::reference && step.kind != Step::Kind::matmul &&
        step.kind != Step::Kind::control) {
      std::vector<ir::ValueId> inputs = step_inputs(graph, plan, step);
      at = 0;
      for (size_t k = 0; k < ordered.size(); ++k)
        if (std::find(inputs.begin(), inputs.end(), ordered[k].value) != inputs.end()) at = k + 1;
    }
    ordered.insert(ordered.begin() + static_cast<std::ptrdiff_t>(at), step);
  }
  plan.steps = std::move(ordered);
}

// Merges a flat elementwise kernel into an earlier one of the same shape when
// it reads that kernel's outputs or shares its inputs and everything else it
// reads exists by then: one loop then reads the shared inputs once and keeps
// the earlier outputs in registers (an optimizer's three updates per
// parameter become one pass).
void merge_flat_kernels(const ir::Graph& graph, Plan& plan) {
  std::vector<int> step_of(graph.nodes.size(), -1);  // the step producing each value
  for (size_t s = 0; s < plan.steps.size(); ++s)
    step_of[static_cast<size_t>(plan.steps[s].value)] = static_cast<int>(s);
  auto available_at = [&](ir::ValueId id, int step) {
    int producer = step_of[static_cast<size_t>(id)];
    return graph.nodes[static_cast<size_t>(id)].op == Primitive::input || (producer >= 0 && producer < step);
  };
  std::vector<char> removed(plan.steps.size(), 0);
  for (size_t a = 0; a < plan.steps.size(); ++a) {
    if (removed[a] || plan.steps[a].kind != Step::Kind::kernel) continue;
    Kernel& first = plan.kernels[static_cast<size_t>(plan.steps[a].kernel)];
    if (!is_flat(graph, first)) continue;
    const ir::Node& root = graph.nodes[static_cast<size_t>(first.root)];
    if (shape_size(root.type.shape) < 2) continue;
    for (size_t b = a + 1; b < plan.steps.size(); ++b) {
      if (removed[b] || plan.steps[b].kind != Step::Kind::kernel) continue;
      const Kernel& second = plan.kernels[static_cast<size_t>(plan.steps[b].kernel)];
      if (!is_flat(graph, second) || !same_shape(graph, graph.nodes[static_cast<size_t>(second.root)], root)) continue;
      std::vector<ir::ValueId> roots{first.root};
      roots.insert(roots.end(), first.extra_roots.begin(), first.extra_roots.end());
      bool related = false, ready = true;
      for (ir::ValueId leaf : second.leaves) {
        bool from_first = std::find(roots.begin(), roots.end(), leaf) != roots.end();
        bool shared = std::find(first.leaves.begin(), first.leaves.end(), leaf) != first.leaves.end();
        related |= from_first || (shared && shape_size(graph.nodes[static_cast<size_t>(leaf)].type.shape) > 1);
        ready &= from_first || available_at(leaf, static_cast<int>(a));
      }
      if (!related || !ready) continue;
      // Merge: the second's reads of the first's outputs become region values.
      first.extra_roots.push_back(second.root);
      std::vector<ir::ValueId> region = first.region;
      region.insert(region.end(), second.region.begin(), second.region.end());
      for (ir::ValueId leaf : second.leaves) {
        if (std::find(roots.begin(), roots.end(), leaf) != roots.end()) continue;
        if (std::find(first.leaves.begin(), first.leaves.end(), leaf) == first.leaves.end())
          first.leaves.push_back(leaf);
      }
      std::sort(region.begin(), region.end());
      region.erase(std::unique(region.begin(), region.end()), region.end());
      first.region = std::move(region);
      std::sort(first.leaves.begin(), first.leaves.end());
      step_of[static_cast<size_t>(second.root)] = static_cast<int>(a);
      removed[b] = 1;
    }
  }
  std::vector<Step> kept;
  std::vector<Kernel> kernels;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    if (removed[s]) continue;
    Step step = plan.steps[s];
    if (step.kind == Step::Kind::kernel) {
      kernels.push_back(std::move(plan.kernels[static_cast<size_t>(step.kernel)]));
      step.kernel = static_cast<int>(kernels.size() - 1);
    }
    kept.push_back(step);
  }
  plan.steps = std::move(kept);
  plan.kernels = std::move(kernels);
}

// A merged kernel stores each value it computes that a later kernel once
// read; when that reader was merged into the same kernel and nothing else
// reads the value, it stays in registers.
void drop_unread_extra_roots(const ir::Graph& graph, Plan& plan) {
  std::vector<char> read(graph.nodes.size(), 0);
  for (ir::ValueId output : graph.outputs) read[static_cast<size_t>(output)] = 1;
  for (const Step& step : plan.steps)
    for (ir::ValueId input : step_inputs(graph, plan, step)) read[static_cast<size_t>(input)] = 1;
  for (Kernel& kernel : plan.kernels) {
    auto unread = [&](ir::ValueId id) { return !read[static_cast<size_t>(id)]; };
    for (ir::ValueId id : kernel.extra_roots)
      if (unread(id)) plan.materialized[static_cast<size_t>(id)] = 0;
    std::erase_if(kernel.extra_roots, unread);
  }
}

// On this kind of host (virtualized, AVX-512), a loop that computes for a
// while per element and streams well beyond the caches gets little help from
// the hardware prefetcher: a W1 loop over 2^24 floats took 0.96 ns per
// element on 2 threads, 0.62 with its input prefetched 4 KiB ahead (kiln's
// W1: 15.7 ms before, 9.0 after). Within the caches (2^20, 2^22) the same
// prefetches cost 4%, and the blocked loop they need costs compile time
// (0.7 ms a kernel), so only flat kernels streaming 64 MiB or more prefetch,
// never those in row groups, whose blocks are cache-sized by design.
// A kernel's size in a symbolic graph has no bound: one whose size depends
// on the symbols always prefetches, paying 4% at sizes within the caches for
// a loop compiled once (holding both loops and choosing per call doubled
// W1's compile time: 27 ms against 13).
constexpr int64_t prefetch_minimum_bytes = int64_t{64} << 20;

namespace {
bool prefetch_pays(const ir::Graph& graph, const Kernel& kernel) {
  auto bytes = [&](ir::ValueId id) {
    const ir::Node& node = graph.nodes[static_cast<size_t>(id)];
    int64_t size = shape_size(node.type.shape);
    return size > 1 ? size * static_cast<int64_t>(dtype_size(node.type.dtype)) : 0;
  };
  int64_t streamed = bytes(kernel.root);
  for (ir::ValueId id : kernel.extra_roots) streamed += bytes(id);
  for (ir::ValueId id : kernel.leaves) streamed += bytes(id);
  return streamed >= prefetch_minimum_bytes;
}
}  // namespace

void mark_prefetching(const ir::Graph& graph, Plan& plan) {
  std::vector<char> grouped(plan.kernels.size(), 0);
  for (const RowGroup& group : plan.row_groups)
    for (size_t s = group.first_step; s < group.end_step; ++s)
      if (plan.steps[s].kind == Step::Kind::kernel) grouped[static_cast<size_t>(plan.steps[s].kernel)] = 1;
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    Kernel& kernel = plan.kernels[k];
    if (grouped[k] || !is_flat(graph, kernel)) continue;
    if (has_symbolic_shape(graph.nodes[static_cast<size_t>(kernel.root)])) {
      kernel.prefetch = true;
      continue;
    }
    kernel.prefetch = prefetch_pays(graph, kernel);
  }
}

// In a symbolic graph, a reduction to one value over a symbolic space may
// be long at any call: it runs in slices, as many as its size asks for at
// each call (one below chunked_reduction_minimum).
void mark_chunked(const ir::Graph& graph, Plan& plan) {
  for (Kernel& kernel : plan.kernels) {
    if (kernel.kind != Kernel::Kind::reduce) continue;
    const ir::Node& root = graph.nodes[static_cast<size_t>(kernel.root)];
    bool long_enough = shape_size(kernel_space(graph, kernel)) >= chunked_reduction_minimum ||
                       has_symbolic_shape(kernel_space_node(graph, kernel));
    kernel.chunked = is_single_value(root) && long_enough && reads_at_flat_index(graph, kernel);
  }
}

namespace {
std::vector<int> count_uses(const ir::Graph& graph) {
  std::vector<int> uses(graph.nodes.size(), 0);
  for (const ir::Node& node : graph.nodes)
    for (ir::ValueId input : node.inputs) ++uses[static_cast<size_t>(input)];
  return uses;
}

// By node id: which values are stored in memory rather than computed inside
// the kernels reading them.
std::vector<char> choose_materialized(const ir::Graph& graph, const std::vector<char>& absorbed) {
  size_t count = graph.nodes.size();
  std::vector<char> materialized(count, 0);
  std::vector<int> uses = count_uses(graph);
  auto materialize = [&](ir::ValueId id) { materialized[static_cast<size_t>(id)] = 1; };
  for (ir::ValueId id : graph.outputs) materialize(id);
  std::vector<int> recompute_cost(count, 0);
  for (size_t i = 0; i < count; ++i) {
    const ir::Node& node = graph.nodes[i];
    if (node.op == Primitive::input) materialize(static_cast<ir::ValueId>(i));
    if (!is_fusible_elementwise(graph, node)) {
      // Reductions, views and every other step read their inputs from memory,
      // except that a reduction computes its elementwise producer in place.
      bool skip = absorbed[i] && !materialized[i];
      if (node.op != Primitive::input && !skip) materialize(static_cast<ir::ValueId>(i));
      if (skip) continue;  // its input is materialized by the matmul below
      for (ir::ValueId input : node.inputs) {
        if (is_floating_matmul(node) && absorbed[static_cast<size_t>(input)]) {
          materialize(graph.nodes[static_cast<size_t>(input)].inputs[0]);
          continue;
        }
        const ir::Node& producer = graph.nodes[static_cast<size_t>(input)];
        bool fused_into_reduction = is_fusible_reduction(graph, node) && is_fusible_elementwise(graph, producer);
        if (!fused_into_reduction) materialize(input);
      }
    } else {
      // A value read by several kernels is recomputed in each when that takes
      // only a few operations: arithmetic is cheaper than a round trip
      // through memory. A transcendental function costs tens of vector
      // operations, more than that round trip: softmax's exp(x - max), read
      // by its sum and its division, is stored once (in a row group, to
      // cache; the division then writes over it). The count grows along
      // unmaterialized chains, which bounds the duplication.
      constexpr int recompute_limit = 8;
      recompute_cost[i] = cheap(graph, static_cast<ir::ValueId>(i)) ? 0 : operation_cost(node.op);
      for (ir::ValueId input : node.inputs)
        if (!materialized[static_cast<size_t>(input)]) recompute_cost[i] += recompute_cost[static_cast<size_t>(input)];
      if (uses[i] > 1 && recompute_cost[i] > recompute_limit) materialize(static_cast<ir::ValueId>(i));
      // A broadcast that repeats its input would recompute the input's chain
      // once per repeat: pow(x, y) broadcast to [3, n] costs three pows per
      // element of x fused, one stored (a graph of the compiled-against-eager
      // corpus ran 1.1x slower than eager for it).
      if (node.op == Primitive::broadcast) {
        auto input = static_cast<size_t>(node.inputs[0]);
        if (!materialized[input] && recompute_cost[input] > recompute_limit &&
            shape_size(node.type.shape) > shape_size(graph.nodes[input].type.shape)) {
          materialize(node.inputs[0]);
          recompute_cost[i] = 0;
        }
      }
    }
  }
  return materialized;
}

// By node id: values computed from literals alone (no input or random number
// anywhere upstream) whose folding stays within runtime::max_folding_work.
std::vector<char> find_literal_only(const ir::Graph& graph) {
  size_t count = graph.nodes.size();
  std::vector<char> literal_only(count, 0);
  std::vector<int64_t> folding_work(count, 0);
  for (size_t i = 0; i < count; ++i) {
    const ir::Node& node = graph.nodes[i];
    // Vector math is left to the kernels: folded by the reference kernel
    // (libm), it would differ from the same value computed from an input.
    // A loop or branch runs its bodies at every run, however constant its operands.
    // Communication happens when the graph runs, on every rank alike.
    // A value of symbolic shape, or from a symbolic literal (the 1/n of a
    // mean over a dynamic axis), differs from call to call.
    bool only = !node.symbolic && node.op != Primitive::input && ir::primitive_family(node.op) != ir::Family::random &&
                ops::rules(node.op).fusion != ops::Fusion::control &&
                ops::rules(node.op).fusion != ops::Fusion::collective &&
                !ops::native_differs_from_reference(ops::rules(node.op), node.type.dtype);
    folding_work[i] = node.type.size();
    for (ir::ValueId input : node.inputs) {
      only = only && literal_only[static_cast<size_t>(input)];
      folding_work[i] += folding_work[static_cast<size_t>(input)];
    }
    literal_only[i] = only && folding_work[i] <= runtime::max_folding_work;
  }
  return literal_only;
}

void add_kernel_step(Plan& plan, Kernel kernel) {
  plan.steps.push_back({Step::Kind::kernel, kernel.root, static_cast<int>(plan.kernels.size())});
  plan.kernels.push_back(std::move(kernel));
}

Step matmul_step(const ir::Graph& graph, const Plan& plan, const std::vector<char>& absorbed, ir::ValueId id) {
  const ir::Node& node = graph.nodes[static_cast<size_t>(id)];
  Step step{Step::Kind::matmul, id, -1, node.inputs[0], node.inputs[1], false, false};
  for (int k = 0; k < 2; ++k) {
    ir::ValueId input = node.inputs[static_cast<size_t>(k)];
    if (!absorbed[static_cast<size_t>(input)] || plan.materialized[static_cast<size_t>(input)]) continue;
    (k == 0 ? step.operand_a : step.operand_b) = graph.nodes[static_cast<size_t>(input)].inputs[0];
    (k == 0 ? step.transpose_a : step.transpose_b) = true;
  }
  return step;
}

Kernel standalone_kernel(const ir::Node& node, ir::ValueId id) {
  Kernel kernel;
  kernel.kind = Kernel::Kind::standalone;
  kernel.root = id;
  kernel.region = {id};
  kernel.leaves = node.inputs;
  return kernel;
}

// An elementwise or reduce kernel computing `id` and every unmaterialized
// elementwise value upstream of it; the materialized values it meets are its leaves.
Kernel fused_kernel(const ir::Graph& graph, const Plan& plan, ir::ValueId id) {
  Kernel kernel;
  kernel.kind = is_fusible_reduction(graph, graph.nodes[static_cast<size_t>(id)]) ? Kernel::Kind::reduce
                                                                                  : Kernel::Kind::elementwise;
  kernel.root = id;
  std::vector<char> in_region(graph.nodes.size(), 0);
  std::vector<ir::ValueId> stack{id};
  in_region[static_cast<size_t>(id)] = 1;
  while (!stack.empty()) {
    ir::ValueId current = stack.back();
    stack.pop_back();
    for (ir::ValueId input : graph.nodes[static_cast<size_t>(current)].inputs) {
      auto at = static_cast<size_t>(input);
      if (in_region[at]) continue;
      if (plan.materialized[at]) {
        if (std::find(kernel.leaves.begin(), kernel.leaves.end(), input) == kernel.leaves.end())
          kernel.leaves.push_back(input);
        continue;
      }
      in_region[at] = 1;
      stack.push_back(input);
    }
  }
  for (size_t k = 0; k < in_region.size(); ++k)
    if (in_region[k]) kernel.region.push_back(static_cast<ir::ValueId>(k));
  std::sort(kernel.leaves.begin(), kernel.leaves.end());
  return kernel;
}

// One step per materialized value that is not an input, in graph order.
void build_steps(const ir::Graph& graph, const std::vector<char>& absorbed, const std::vector<char>& literal_only,
                 Plan& plan) {
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const ir::Node& node = graph.nodes[i];
    auto id = static_cast<ir::ValueId>(i);
    if (!plan.materialized[i] || node.op == Primitive::input) continue;
    bool fused = is_fusible_reduction(graph, node) || is_fusible_elementwise(graph, node);
    if (is_floating_matmul(node)) {
      plan.steps.push_back(matmul_step(graph, plan, absorbed, id));
    } else if (ops::rules(node.op).fusion == ops::Fusion::control) {
      plan.steps.push_back({Step::Kind::control, id, -1});
    } else if (ops::rules(node.op).fusion == ops::Fusion::view) {
      plan.steps.push_back({Step::Kind::view, id, -1});
    } else if (literal_only[i] && node.type.size() <= runtime::max_folded_elements) {
      plan.steps.push_back({Step::Kind::constant, id, -1});
    } else if (touches_complex(graph, node)) {
      plan.steps.push_back({Step::Kind::reference, id, -1});  // see touches_complex
    } else if (!fused && standalone_supported(graph, node)) {
      add_kernel_step(plan, standalone_kernel(node, id));
    } else if (ops::rules(node.op).fusion == ops::Fusion::collective) {
      plan.steps.push_back({Step::Kind::reference, id, -1});  // the compiled code calls MPI here
    } else if (!fused) {
      // (A native kernel for fixed sizes only is no missing lowering.)
      plan.steps.push_back({Step::Kind::reference, id, -1});
      std::vector<Primitive>& reference = plan.reference_primitives;
      if (std::find(reference.begin(), reference.end(), node.op) == reference.end() &&
          !standalone_supported_at_fixed_sizes(graph, node))
        reference.push_back(node.op);
    } else {
      add_kernel_step(plan, fused_kernel(graph, plan, id));
    }
  }
}

// Each region in the order a depth-first walk from the kernel's outputs
// finishes its nodes (inputs first, in input order): a topological order that
// depends on what the kernel computes, not on the order the graph was traced
// in. Kernels computing the same thing then have the same key and compile
// once: the MLP step's Adam update of its second bias came in another order
// than the other five parameters' updates and compiled a kernel of its own.
void canonical_regions(const ir::Graph& graph, Plan& plan) {
  std::vector<char> state(graph.nodes.size(), 0);  // per node: 1 in this region, 3 on the stack, 2 placed
  for (Kernel& kernel : plan.kernels) {
    for (ir::ValueId id : kernel.region) state[static_cast<size_t>(id)] = 1;
    std::vector<ir::ValueId> ordered;
    std::vector<std::pair<ir::ValueId, size_t>> stack;  // a node and the next input to visit
    auto walk_from = [&](ir::ValueId start) {
      if (state[static_cast<size_t>(start)] != 1) return;
      state[static_cast<size_t>(start)] = 3;  // on the stack
      stack.push_back({start, 0});
      while (!stack.empty()) {
        auto& [id, next] = stack.back();
        const std::vector<ir::ValueId>& inputs = graph.nodes[static_cast<size_t>(id)].inputs;
        if (next < inputs.size()) {
          ir::ValueId input = inputs[next++];
          if (state[static_cast<size_t>(input)] == 1) {
            state[static_cast<size_t>(input)] = 3;  // on the stack
            stack.push_back({input, 0});
          }
          continue;
        }
        state[static_cast<size_t>(id)] = 2;
        ordered.push_back(id);
        stack.pop_back();
      }
    };
    walk_from(kernel.root);
    for (ir::ValueId extra : kernel.extra_roots) walk_from(extra);
    for (ir::ValueId id : kernel.region)  // anything no output reads stays, in graph order
      if (state[static_cast<size_t>(id)] == 1) ordered.push_back(id);
    for (ir::ValueId id : kernel.region) state[static_cast<size_t>(id)] = 0;
    kernel.region = std::move(ordered);
  }
}
}  // namespace

Plan plan_graph(const ir::Graph& graph) {
  Plan plan;
  // Transposes read only by BLAS matmuls are folded into the call (BLAS reads
  // the operand transposed) unless stored anyway.
  std::vector<char> absorbed = ir::transposes_read_as_flags(graph, &is_floating_matmul);
  plan.materialized = choose_materialized(graph, absorbed);
  build_steps(graph, absorbed, find_literal_only(graph), plan);
  hoist_scalar_steps(graph, plan);
  merge_flat_kernels(graph, plan);
  drop_unread_extra_roots(graph, plan);
  mark_chunked(graph, plan);
  plan.row_groups = find_row_groups(graph, plan);
  mark_prefetching(graph, plan);
  canonical_regions(graph, plan);
  return plan;
}

// Only the values upstream of constant steps are evaluated (the plan made
// them literal-only and bounded the work upstream of each).
std::vector<Array> fold_constants(const ir::Graph& graph, const Plan& plan) {
  std::vector<char> needed(graph.nodes.size(), 0);
  for (const Step& step : plan.steps)
    if (step.kind == Step::Kind::constant) needed[static_cast<size_t>(step.value)] = 1;
  for (size_t i = graph.nodes.size(); i-- > 0;)
    if (needed[i])
      for (ir::ValueId input : graph.nodes[i].inputs) needed[static_cast<size_t>(input)] = 1;
  std::vector<Array> values(graph.nodes.size()), inputs, constants(graph.nodes.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (!needed[i]) continue;
    inputs.clear();
    for (ir::ValueId input : graph.nodes[i].inputs) inputs.push_back(values[static_cast<size_t>(input)]);
    values[i] = ops::rules(graph.nodes[i].op).evaluate(graph.nodes[i], inputs);
  }
  for (const Step& step : plan.steps)
    if (step.kind == Step::Kind::constant)
      constants[static_cast<size_t>(step.value)] = values[static_cast<size_t>(step.value)];
  return constants;
}

std::string describe(const ir::Graph& graph, const Plan& plan) {
  std::ostringstream out;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    for (const RowGroup& group : plan.row_groups)
      if (group.first_step == s)
        out << "row group of " << (graph.symbols ? group.row_count.to_string() : std::to_string(group.rows))
            << " rows, " << group.end_step - s << " steps:\n";
    const Step& step = plan.steps[s];
    const ir::Node& node = graph.nodes[static_cast<size_t>(step.value)];
    out << "%" << step.value << " " << ir::symbolic_type_string(node) << ": ";
    switch (step.kind) {
      case Step::Kind::matmul:
        out << "matmul (BLAS) %" << step.operand_a << (step.transpose_a ? "^T" : "") << " %" << step.operand_b
            << (step.transpose_b ? "^T" : "");
        break;
      case Step::Kind::view: out << "view (reshape)"; break;
      case Step::Kind::reference: out << "reference kernel " << ir::primitive_name(node.op); break;
      case Step::Kind::constant: out << "constant, folded when compiled"; break;
      case Step::Kind::control: out << ir::primitive_name(node.op) << " (bodies compiled on their own)"; break;
      case Step::Kind::kernel: {
        const Kernel& kernel = plan.kernels[static_cast<size_t>(step.kernel)];
        out << (kernel.kind == Kernel::Kind::reduce       ? "reduce"
                : kernel.kind == Kernel::Kind::standalone ? "standalone"
                                                          : "elementwise")
            << " kernel of " << kernel.region.size() << " nodes [";
        for (size_t k = 0; k < kernel.region.size(); ++k)
          out << (k ? " " : "") << ir::primitive_name(graph.nodes[static_cast<size_t>(kernel.region[k])].op);
        out << "] reading";
        for (ir::ValueId leaf : kernel.leaves) out << " %" << leaf;
        for (ir::ValueId extra : kernel.extra_roots) out << ", also writing %" << extra;
        if (kernel.prefetch) out << ", prefetching ahead";
        if (kernel.chunked) out << ", in slices across threads";
        break;
      }
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace kiln::llvm_backend

namespace kiln::llvm_backend {

namespace {
bool has_rounding_reduction(const ir::Graph& graph) {
  for (const ir::Node& node : graph.nodes) {
    const ops::PrimitiveRules& row = ops::rules(node.op);
    if (row.fusion == ops::Fusion::reduction && ops::native_differs_from_reference(row, node.type.dtype)) return true;
    for (const auto& body : node.bodies)
      if (has_rounding_reduction(*body)) return true;
  }
  return false;
}
}  // namespace

bool reductions_match_op_by_op(const ir::Graph& graph, bool in_loop_body) {
  // Without such a reduction nothing below can fail: no copy, simplify and
  // plan of the graph (2 ms for a 1,000-node chain's first call).
  if (!has_rounding_reduction(graph)) return true;
  ir::Graph simplified = graph;  // what compiling plans
  transform::simplify(simplified);
  Plan plan = plan_graph(simplified);
  for (const Kernel& kernel : plan.kernels) {
    if (kernel.kind != Kernel::Kind::reduce) continue;
    const ir::Node& root = simplified.nodes[static_cast<size_t>(kernel.root)];
    if (!ops::native_differs_from_reference(ops::rules(root.op), root.type.dtype)) continue;
    if (in_loop_body && kernel.chunked) return false;
    if (kernel.region.size() <= 1) continue;  // nothing fused: the reduction eager code runs
    std::vector<size_t> axes;
    for (int64_t axis : root.attrs.ints) axes.push_back(static_cast<size_t>(axis));
    std::sort(axes.begin(), axes.end());
    const Shape& input = simplified.nodes[static_cast<size_t>(root.inputs[0])].type.shape;
    if (accumulates_rows(input, axes, root.type.dtype) && !reads_at_flat_index(simplified, kernel)) return false;
  }
  for (const ir::Node& node : simplified.nodes)
    for (const auto& body : node.bodies)
      if (!reductions_match_op_by_op(*body, true)) return false;
  return true;
}

std::vector<runtime::ProgramStep> program_steps(const ir::Graph& graph, const Plan& plan) {
  std::vector<runtime::ProgramStep> steps;
  steps.reserve(plan.steps.size());
  for (const Step& step : plan.steps) {
    runtime::ProgramStep& described = steps.emplace_back();
    described.reads = step_inputs(graph, plan, step);
    described.defines = step.value;
    if (step.kind == Step::Kind::view)
      described.shares_memory_of = graph.nodes[static_cast<size_t>(step.value)].inputs[0];
  }
  return steps;
}

uint64_t plan_digest(const ir::Graph& graph, const Plan& plan) {
  std::string text = describe(graph, plan);
  return XXH3_64bits(text.data(), text.size());
}

}  // namespace kiln::llvm_backend
