// Batching (vmap) as a graph transformation: a graph traced for one lane is
// replayed in the caller's context with each primitive's batching rule, so
// the batched graph traces, compiles and differentiates like user code, and
// vmap composes with grad, jit and itself in any order.
//
// Every batched value carries its batch axis first. A value is batched exactly
// when one of its operands is (control nodes included: all their results are
// batched then), which is what batched_outputs predicts without replaying.
#pragma once

#include <span>
#include <vector>

#include "ir/graph.h"

namespace kiln::transform {

/// A value of a batched replay: with a leading batch axis when `batched`.
struct Batched {
  Array value;
  bool batched = false;
};

/// Replays `graph` over a batch of `size` lanes: arguments and captures
/// marked batched carry the batch axis first. Returns the graph's outputs.
std::vector<Batched> batch_graph(const ir::Graph& graph, std::span<const Batched> arguments,
                                 std::span<const Batched> captures, int64_t size);

/// Which outputs of `graph` batch_graph returns batched, for these batched
/// arguments and captures.
std::vector<char> batched_outputs(const ir::Graph& graph, std::span<const char> arguments,
                                  std::span<const char> captures);

/// Every result of a control node over a batch, one operand batched at least;
/// every result comes back batched (control_batching.cpp).
std::vector<Array> batch_control(const ir::Node& node, std::span<const Batched> operands, int64_t size);

}  // namespace kiln::transform
