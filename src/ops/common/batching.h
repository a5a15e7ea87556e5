// What the batching rules of the families share (PrimitiveRules::batch): the
// batch axis is always first, so a rule shifts the axes its attributes name
// by one and gives an unbatched operand a batch axis only where the primitive
// needs operands of one shape.
#pragma once

#include <span>
#include <vector>

#include "ops/common/rules.h"

namespace kiln::ops {

/// `x` with a batch axis of `size` in front: itself when `batched`, else a
/// broadcast (a stride-0 read inside fused code, never a copy per lane there).
Array with_batch_axis(const Array& x, bool batched, int64_t size);

/// The node's primitive and attributes on other operands.
Array apply_node_to(const Node& node, std::span<const Array> inputs);
/// The same with `ints` in place of the node's own.
Array apply_node_to(const Node& node, std::span<const Array> inputs, std::vector<int64_t> ints);

/// Axes of an unbatched operand as they read on its batched form: each + 1.
std::vector<int64_t> shifted_axes(std::span<const int64_t> axes);

/// Elementwise primitives (operands of one shape): unbatched operands get
/// the batch axis, then the primitive runs once.
Array batch_elementwise(const Node& node, std::span<const Array> inputs, std::span<const char> batched, int64_t size);

/// Primitives whose attributes name the axis in ints[0] (the rest kept):
/// every operand gets the batch axis, the axis moves by one.
Array batch_shifting_first_int(const Node& node, std::span<const Array> inputs, std::span<const char> batched,
                               int64_t size);

/// Primitives computed lane by lane (random bits from a batched key): one
/// application per lane, stacked. For operands that decide everything about
/// a lane's values (a key), where no batched form of the kernel exists.
Array batch_lane_by_lane(const Node& node, std::span<const Array> inputs, std::span<const char> batched, int64_t size);

// The indexing family's rules, kept beside its file (indexing_batching.cpp):
// a batch of indices or starts reads a different place in every lane, which
// they turn into one gather over the lanes' rows laid end to end.
Array batch_take(const Node& node, std::span<const Array> inputs, std::span<const char> batched, int64_t size);
Array batch_scatter_add(const Node& node, std::span<const Array> inputs, std::span<const char> batched, int64_t size);
Array batch_dynamic_slice(const Node& node, std::span<const Array> inputs, std::span<const char> batched, int64_t size);
Array batch_dynamic_update_slice(const Node& node, std::span<const Array> inputs, std::span<const char> batched,
                                 int64_t size);

}  // namespace kiln::ops
