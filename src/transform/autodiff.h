// Automatic differentiation as graph transformation. A function is traced to
// a Graph; the graph is replayed in the caller's context (recording into an
// enclosing trace, or computing eagerly) and each primitive's vjp/jvp rule
// emits the derivative with ordinary operations. Derivatives of derivatives
// therefore come for free, and under jit forward and backward end up in one
// graph.
#pragma once

#include <span>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"

namespace kiln::transform {

/// Every value of a replayed graph, by node id.
struct Replay {
  const ir::Graph* graph = nullptr;
  std::vector<Array> values;
  // By scan node: its input carries at every step, stacked (what its reverse pass reads).
  std::unordered_map<ir::ValueId, std::vector<Array>> residuals;
  std::vector<Array> outputs() const;
};

/// Runs `graph`'s nodes as operations on `arguments` and `captures`.
Replay replay(const ir::Graph& graph, std::span<const Array> arguments, std::span<const Array> captures);

/// Reverse pass: the cotangent of each graph argument (empty where none
/// flows) given one cotangent per graph output (empty = zero).
std::vector<Array> backward(const Replay& replay, std::span<const Array> output_cotangents);

/// Forward pass: each output's tangent (empty = zero) given one tangent per
/// argument (empty = zero). Replays the graph on the way.
std::vector<Array> forward(const ir::Graph& graph, std::span<const Array> arguments, std::span<const Array> captures,
                           std::span<const Array> tangents, std::vector<Array>& outputs);

}  // namespace kiln::transform
