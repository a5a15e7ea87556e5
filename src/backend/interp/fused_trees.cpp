// Fused elementwise trees for a first tier (see the header).
#include "backend/interp/fused_trees.h"

#include <algorithm>
#include <memory>
#include <unordered_map>

#include "ops/common/apply.h"
#include "runtime/compile_profile.h"

namespace kiln::interp {

namespace {

// A tree as its root's kernel runs it.
struct Tree {
  std::vector<const ir::Node*> nodes;  // in graph order, the root last
  // Per node, per operand: the leaf it reads (>= 0), or ~n for tree node n.
  std::vector<std::vector<int>> operands;
  std::vector<Program::Kernel> kernels;  // each node's own, to run it alone
};

// The tree's nodes in order, node n computed by `compute(n, node, operands)`.
template <class Compute>
Array replay(const Tree& tree, std::span<const Array> leaves, Compute&& compute) {
  std::vector<Array> values(tree.nodes.size());
  std::vector<Array> operands;
  for (size_t n = 0; n < tree.nodes.size(); ++n) {
    operands.clear();
    for (int read : tree.operands[n])
      operands.push_back(read >= 0 ? leaves[static_cast<size_t>(read)] : values[static_cast<size_t>(~read)]);
    values[n] = compute(n, *tree.nodes[n], std::span<const Array>(operands));
  }
  return values.back();
}

// By the tree's interpreted program where the backend has one (traced as an
// eager graph, so eager code's cache keeps it), else node by node.
Array run_tree(const Tree& tree, std::span<const Array> leaves, std::span<const char> donated) {
  {
    runtime::CodeQualityScope quick(runtime::CodeQuality::quick);
    if (const detail::EagerCompiler* compiler = detail::eager_compiler_for(tree.nodes.back()->type.size())) {
      auto build = [&](std::span<const Array> placeholders) {
        return replay(tree, placeholders, [](size_t, const ir::Node& node, std::span<const Array> operands) {
          return detail::apply(node.op, operands, node.attrs, node.where);
        });
      };
      if (Array result = compiler->run(leaves, build, false, donated); result.defined()) return result;
    }
  }
  return replay(tree, leaves, [&](size_t n, const ir::Node& node, std::span<const Array> operands) {
    return tree.kernels[n] ? tree.kernels[n](node, operands, {}) : reference_kernel(node, operands, {});
  });
}

}  // namespace

void fuse_trees(const ir::Graph& graph, std::span<const char> fusable, std::vector<Program::Choice>& choices) {
  size_t count = graph.nodes.size();
  auto computes = [&](size_t i) { return fusable[i] && graph.nodes[i].op != ir::Primitive::broadcast; };
  // A value joins its readers' trees when nothing else sees it: not an
  // output, read only by computing tree nodes, and, unless it is a
  // broadcast (which every tree reading it repeats), read once.
  std::vector<int> reads(count, 0);
  std::vector<char> joins(fusable.begin(), fusable.end());
  for (ir::ValueId output : graph.outputs) joins[static_cast<size_t>(output)] = 0;
  for (size_t i = 0; i < count; ++i)
    for (ir::ValueId input : graph.nodes[i].inputs) {
      auto read = static_cast<size_t>(input);
      ++reads[read];
      if (!computes(i)) joins[read] = 0;
    }
  for (size_t i = 0; i < count; ++i)
    if (computes(i) && reads[i] != 1) joins[i] = 0;

  // Each node's own kernel, kept for its trees (a broadcast may be in several).
  std::vector<Program::Kernel> own(count);
  for (size_t i = 0; i < count; ++i)
    if (fusable[i]) own[i] = choices[i].kernel;
  std::vector<int> position(count, -1);  // in the tree being built
  for (size_t root = 0; root < count; ++root) {
    const ir::Node& node = graph.nodes[root];
    if (!computes(root) || joins[root] || std::none_of(node.inputs.begin(), node.inputs.end(), [&](ir::ValueId input) {
          return joins[static_cast<size_t>(input)];
        }))
      continue;
    // The tree's nodes: what the root reads through joining values, in graph order.
    std::vector<size_t> members{root}, pending{root};
    while (!pending.empty()) {
      size_t member = pending.back();
      pending.pop_back();
      for (ir::ValueId input : graph.nodes[member].inputs) {
        auto read = static_cast<size_t>(input);
        if (!joins[read] || position[read] == 0) continue;
        position[read] = 0;  // seen
        members.push_back(read);
        pending.push_back(read);
      }
    }
    std::sort(members.begin(), members.end());
    auto tree = std::make_shared<Tree>();
    std::vector<ir::ValueId> leaves;
    std::unordered_map<ir::ValueId, int> leaf_of;
    for (size_t n = 0; n < members.size(); ++n) position[members[n]] = static_cast<int>(n);
    for (size_t member : members) {
      const ir::Node& tree_node = graph.nodes[member];
      std::vector<int> operands;
      for (ir::ValueId input : tree_node.inputs) {
        auto read = static_cast<size_t>(input);
        if (joins[read]) {
          operands.push_back(~position[read]);
          continue;
        }
        auto [found, added] = leaf_of.try_emplace(input, static_cast<int>(leaves.size()));
        if (added) leaves.push_back(input);
        operands.push_back(found->second);
      }
      tree->nodes.push_back(&tree_node);
      tree->operands.push_back(std::move(operands));
      tree->kernels.push_back(own[member]);
    }
    for (size_t member : members) {
      position[member] = -1;
      if (member != root) choices[member] = {.inlined = true};
    }
    choices[root].kernel = [tree](const ir::Node&, std::span<const Array> inputs, std::span<const char> donated) {
      return run_tree(*tree, inputs, donated);
    };
    choices[root].reads = std::move(leaves);
  }
}

}  // namespace kiln::interp
