// The non-template half of include/kiln/vmap.h: checking in_axes against the
// arguments, and running the batched replay of transform/batching.
#include "kiln/vmap.h"

#include "core/error_format.h"
#include "kiln/control.h"
#include "kiln/ops.h"
#include "ops/common/batching.h"
#include "transform/batching.h"

namespace kiln::detail {

namespace {

/// The array leaves of a vmap call, from the arguments to the traced lane.
struct VmapLeaves {
  std::vector<Array> arrays;             // as passed
  std::vector<size_t> argument;          // which argument each belongs to
  std::vector<size_t> leaf_in_argument;  // its position among that argument's leaves
  std::vector<size_t> argument_leaves;   // leaves per argument
  // Filled by prepare_vmap:
  std::vector<char> batched;
  std::vector<Array> lanes_first;  // batched leaves with the batch axis moved first
  std::vector<Array> examples;     // one lane's abstract value, for the trace
  int64_t size = 0;
};

std::string leaf_text(const VmapLeaves& leaves, size_t k) {
  std::string text = "argument " + std::to_string(leaves.argument[k]);
  if (leaves.argument_leaves[leaves.argument[k]] > 1) text += " leaf " + std::to_string(leaves.leaf_in_argument[k]);
  return text + " (" + detail::impl(leaves.arrays[k])->type.to_string() + ")";
}

/// `axis` of an array of `rank` dimensions made non-negative, or an error.
int64_t checked_axis(int axis, int64_t rank, const std::string& what, const std::string& name, Location where,
                     const char* which) {
  if (axis < -rank || axis >= rank)
    raise(name,
          std::string(which) + " " + std::to_string(axis) + " is out of range for " + what + ", which has " +
              std::to_string(rank) + " axes",
          where, "name an axis in [-rank, rank), or std::nullopt for an array that is the same in every lane");
  return axis < 0 ? axis + rank : axis;
}

void add_vmap_argument(VmapLeaves& leaves, std::vector<Array> arrays) {
  size_t argument = leaves.argument_leaves.size();
  for (size_t k = 0; k < arrays.size(); ++k) {
    leaves.arrays.push_back(std::move(arrays[k]));
    leaves.argument.push_back(argument);
    leaves.leaf_in_argument.push_back(k);
  }
  leaves.argument_leaves.push_back(arrays.size());
}

/// Checks in_axes against the arguments, finds the batch size and moves each
/// batch axis first. Throws kiln::Error naming the argument, the leaf and the
/// sizes for every mismatch.
void prepare_vmap(VmapLeaves& leaves, const InAxes& in_axes, const std::string& name, Location where) {
  size_t arity = leaves.argument_leaves.size();
  if (in_axes.per_argument() && in_axes.size() != arity)
    raise(name,
          "in_axes has " + std::to_string(in_axes.size()) + " entries for " + std::to_string(arity) + " argument" +
              (arity == 1 ? "" : "s"),
          where, "give one entry per argument (an axis, std::nullopt, or BatchAxes::per_leaf), or one axis for all");
  for (size_t argument = 0; argument < arity; ++argument) {
    const BatchAxes& axes = in_axes.of(argument);
    if (axes.is_per_leaf() && axes.leaves().size() != leaves.argument_leaves[argument])
      raise(name,
            "in_axes for argument " + std::to_string(argument) + " lists " + std::to_string(axes.leaves().size()) +
                " axes, but the argument has " + std::to_string(leaves.argument_leaves[argument]) + " array leaves",
            where, "list one axis (or std::nullopt) per array leaf, in the tree's order");
  }
  std::optional<size_t> first;
  for (size_t k = 0; k < leaves.arrays.size(); ++k) {
    const Array& leaf = leaves.arrays[k];
    const AbstractValue& type = impl_of(leaf, name.c_str(), where).type;
    std::optional<int> axis = in_axes.of(leaves.argument[k]).leaf(leaves.leaf_in_argument[k]);
    leaves.batched.push_back(axis.has_value());
    if (!axis) {
      leaves.lanes_first.push_back(leaf);
      leaves.examples.push_back(leaf);
      continue;
    }
    int64_t a = checked_axis(*axis, type.ndim(), leaf_text(leaves, k), name, where, "in_axes");
    int64_t size = type.shape[static_cast<size_t>(a)];
    if (!first) {
      first = k;
      leaves.size = size;
    } else if (size != leaves.size) {
      raise(name,
            "batch sizes differ: " + leaf_text(leaves, *first) + " has " + std::to_string(leaves.size) + " lanes but " +
                leaf_text(leaves, k) + " has " + std::to_string(size) + " along axis " + std::to_string(a),
            where, "batch every argument along an axis of the same length, or mark one std::nullopt in in_axes");
    }
    Array moved = a == 0 ? leaf : moveaxis(leaf, a, 0, where);
    leaves.lanes_first.push_back(moved);
    leaves.examples.push_back(row_placeholder(moved));
  }
  if (!first)
    raise(name, "no argument is batched: in_axes marks every array std::nullopt (or there are no arrays)", where,
          "batch at least one array argument, so that vmap knows the number of lanes");
}

/// Replays the lane's graph over the batch and places each output's batch
/// axis where out_axes says.
std::vector<Array> finish_vmap(const Graph& graph, const std::vector<Array>& captures, const VmapLeaves& leaves,
                               const BatchAxes& out_axes, const std::string& name, Location where) {
  std::vector<transform::Batched> arguments, unbatched_captures;
  for (size_t k = 0; k < leaves.lanes_first.size(); ++k)
    arguments.push_back({leaves.lanes_first[k], leaves.batched[k] != 0});
  for (const Array& capture : captures) unbatched_captures.push_back({capture, false});
  std::vector<transform::Batched> outputs =
      transform::batch_graph(detail::ir_of(graph), arguments, unbatched_captures, leaves.size);
  if (out_axes.is_per_leaf() && out_axes.leaves().size() != outputs.size())
    raise(name,
          "out_axes lists " + std::to_string(out_axes.leaves().size()) + " axes for a result with " +
              std::to_string(outputs.size()) + " array leaves",
          where, "list one axis (or std::nullopt) per array leaf of the result");
  std::vector<Array> result;
  for (size_t k = 0; k < outputs.size(); ++k) {
    std::optional<int> axis = out_axes.leaf(k);
    const AbstractValue& lane = detail::ir_of(graph).nodes[static_cast<size_t>(detail::ir_of(graph).outputs[k])].type;
    std::string what = "result leaf " + std::to_string(k) + " (" + lane.to_string() + " per lane)";
    if (!axis) {
      if (outputs[k].batched)
        raise(name, "out_axes is std::nullopt for " + what + ", but it differs between lanes", where,
              "give it an out axis (e.g. 0), or compute it from unbatched arguments only");
      result.push_back(outputs[k].value);
      continue;
    }
    int64_t a = checked_axis(*axis, lane.ndim() + 1, what, name, where, "out_axes");
    Array value = ops::with_batch_axis(outputs[k].value, outputs[k].batched, leaves.size);
    result.push_back(a == 0 ? value : moveaxis(value, 0, a, where));
  }
  return result;
}

}  // namespace

std::vector<Array> vmap_leaves(const std::vector<std::vector<Array>>& argument_leaves, const InAxes& in_axes,
                               const BatchAxes& out_axes, const std::string& name, Location where,
                               FunctionRef<std::vector<Array>(const std::vector<Array>& placeholders)> lane) {
  VmapLeaves leaves;
  for (const std::vector<Array>& arrays : argument_leaves) add_vmap_argument(leaves, arrays);
  prepare_vmap(leaves, in_axes, name, where);
  auto record = [&](TraceSession& session) {
    std::vector<Array> placeholders;
    for (const Array& example : leaves.examples) placeholders.push_back(trace_argument(session, example));
    return lane(placeholders);
  };
  TracedGraph traced = trace(name, where, record);
  return finish_vmap(traced.graph, traced.captured, leaves, out_axes, name, where);
}

Array basis(const Shape& shape, DType dtype, Location where) {
  int64_t n = 1;
  for (int64_t extent : shape) n *= extent;
  Shape rows{n};
  rows.insert(rows.end(), shape.begin(), shape.end());
  return reshape(eye(n, std::nullopt, 0, dtype, where), rows, where);
}

}  // namespace kiln::detail
