// The IR as a Graphviz DOT picture: one box per node with its primitive,
// type and the user's source line, an edge per input, and the kernels a
// backend fuses drawn as clusters (or, in a large graph, as one box each, so
// that the picture stays readable).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "ir/graph.h"

namespace kiln::ops {

struct DotOptions {
  /// By node id: the fused group (kernel) computing the node, or -1. Empty: no groups.
  std::span<const int32_t> groups;
  /// Above this many nodes, each group is drawn as one box.
  size_t collapse_above = 150;
};

std::string graph_dot(const ir::Graph& graph, const DotOptions& options = {});

/// What a fused group computes, by its primitives in graph order
/// ("exp·mul·add"): literals and broadcasts, in most groups and telling
/// nothing, are left out unless they are all there is; a long chain's name
/// stops after 8 and counts the rest. The timeline names kernels so too.
std::string fused_name(const ir::Graph& graph, std::span<const ir::ValueId> nodes);

}  // namespace kiln::ops
