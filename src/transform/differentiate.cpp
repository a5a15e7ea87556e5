// The non-template half of include/kiln/grad.h: seeding, checking which
// leaves may be differentiated, and running the passes of transform/autodiff.
#include <algorithm>

#include "core/error_format.h"
#include "kiln/grad.h"
#include "ops/common/apply.h"
#include "transform/autodiff.h"

namespace kiln::detail {

struct ReplayState {
  transform::Replay replay;
  std::shared_ptr<const ir::Graph> graph;  // keeps replay.graph alive
  std::vector<Array> leaves;
};

namespace {
std::vector<Array> implicit_inputs(const TracedFunction& traced) { return traced.captures; }
}  // namespace

std::string location_text(Location where) { return location_string(where); }

void raise_aux_mismatch(const std::string& name, bool has_aux, Location where) {
  if (has_aux)
    raise(name, "has_aux is set, but the function does not return a (loss, aux) pair", where,
          "return std::pair{loss, aux}, or drop has_aux");
  raise(name, "the function returns a pair; is the second element auxiliary data?", where,
        "use value_and_grad_with_aux, or pass has_aux = true with argnums");
}

std::pair<std::vector<Array>, std::vector<Array>> differentiate(const TracedFunction& traced,
                                                                const std::vector<char>& wanted,
                                                                const std::string& name, Location where) {
  const ir::Graph& graph = detail::ir_of(*traced.graph);
  for (size_t k = 0; k < traced.leaves.size(); ++k) {
    const AbstractValue& type = detail::impl(traced.leaves[k])->type;
    if (wanted[k] && !is_floating(type.dtype) && !is_complex(type.dtype))
      raise(name,
            "argument " + std::to_string(traced.leaf_argument[k]) + " has a " + type.to_string() +
                " leaf: integer and bool arrays have no gradient",
            where, "differentiate with respect to floating arguments only (argnums), or convert with astype");
  }
  if (graph.outputs.empty()) raise(name, "the function returns no array to differentiate", where);
  const AbstractValue& loss = graph.nodes[static_cast<size_t>(graph.outputs[0])].type;
  if (is_complex(loss.dtype))
    raise(name, "the function must return a real scalar to differentiate, got " + loss.to_string(), where,
          "differentiate a real function of it (kiln::abs, kiln::real, kiln::imag), as JAX's grad asks; vjp "
          "takes a complex cotangent");
  if (!is_floating(loss.dtype) || !loss.shape.empty())
    raise(name, "the function must return a floating scalar to differentiate, got " + loss.to_string(), where,
          "reduce the result (e.g. kiln::sum or kiln::mean), or use vjp for non-scalar outputs");

  transform::Replay replay = transform::replay(graph, traced.leaves, implicit_inputs(traced));
  std::vector<Array> seeds(graph.outputs.size());
  seeds[0] = literal(1.0, loss.dtype, false, where);
  std::vector<Array> cotangents = transform::backward(replay, seeds);
  for (size_t k = 0; k < cotangents.size(); ++k) {
    if (!wanted[k]) cotangents[k] = Array();
    else if (!cotangents[k].defined()) cotangents[k] = zeros_like(traced.leaves[k], where);
  }
  return {replay.outputs(), std::move(cotangents)};
}

std::shared_ptr<ReplayState> replay_graph(const TracedFunction& traced, std::vector<Array>& outputs) {
  auto state = std::make_shared<ReplayState>();
  state->graph = detail::shared_ir(*traced.graph);
  state->replay = transform::replay(*state->graph, traced.leaves, implicit_inputs(traced));
  outputs = state->replay.outputs();
  state->leaves = traced.leaves;
  return state;
}

std::vector<Array> pull_back(const ReplayState& state, const std::vector<Array>& output_cotangents, Location where) {
  const ir::Graph& graph = *state.graph;
  if (output_cotangents.size() != graph.outputs.size())
    raise("vjp",
          "the cotangent has " + std::to_string(output_cotangents.size()) + " arrays, the value " +
              std::to_string(graph.outputs.size()),
          where, "pass a cotangent with the value's structure");
  for (size_t k = 0; k < output_cotangents.size(); ++k) {
    const AbstractValue& expected = graph.nodes[static_cast<size_t>(graph.outputs[k])].type;
    const AbstractValue& got = impl_of(output_cotangents[k], "vjp", where).type;
    if (got.shape != expected.shape || got.dtype != expected.dtype)
      raise("vjp",
            "cotangent " + std::to_string(k) + " is " + got.to_string() + " but the value is " + expected.to_string(),
            where, "pass a cotangent of the value's shape and dtype");
  }
  std::vector<Array> cotangents = transform::backward(state.replay, output_cotangents);
  for (size_t k = 0; k < cotangents.size(); ++k)
    if (!cotangents[k].defined() && (is_floating(detail::impl(state.leaves[k])->type.dtype) ||
                                     is_complex(detail::impl(state.leaves[k])->type.dtype)))
      cotangents[k] = zeros_like(state.leaves[k]);
  return cotangents;
}

std::vector<Array> push_forward(const TracedFunction& traced, const std::vector<Array>& tangents,
                                std::vector<Array>& outputs, Location where) {
  const ir::Graph& graph = detail::ir_of(*traced.graph);
  if (tangents.size() != traced.leaves.size())
    raise("jvp",
          "got " + std::to_string(tangents.size()) + " tangent arrays for " + std::to_string(traced.leaves.size()) +
              " primal arrays",
          where, "pass tangents with the primals' structure");
  for (size_t k = 0; k < tangents.size(); ++k) {
    const AbstractValue& primal = detail::impl(traced.leaves[k])->type;
    // Integers and bool have no derivative (grad refuses them too): a tangent
    // given for one would be ignored, so it is refused instead.
    if (!is_floating(primal.dtype) && !is_complex(primal.dtype)) {
      if (tangents[k].defined())
        raise("jvp",
              "tangent " + std::to_string(k) + " is " + impl_of(tangents[k], "jvp", where).type.to_string() +
                  " for the primal " + primal.to_string() + ": integer and bool arrays have no derivative",
              where, "pass an empty Array() as the tangent of an integer or bool primal");
      continue;
    }
    const AbstractValue& tangent = impl_of(tangents[k], "jvp", where).type;
    if (tangent.shape != primal.shape || tangent.dtype != primal.dtype)
      raise("jvp",
            "tangent " + std::to_string(k) + " is " + tangent.to_string() + " but its primal is " + primal.to_string(),
            where, "pass tangents of the primals' shapes and dtypes");
  }
  std::vector<Array> result = transform::forward(graph, traced.leaves, implicit_inputs(traced), tangents, outputs);
  for (size_t k = 0; k < result.size(); ++k)
    if (!result[k].defined()) result[k] = zeros_like(outputs[k]);
  return result;
}

void check_argnums(const Argnums& argnums, size_t arity, const std::string& name, Location where) {
  if (!argnums.given()) return;
  const std::vector<int>& list = argnums.list();
  std::string listed = "{";
  for (size_t i = 0; i < list.size(); ++i) listed += (i ? ", " : "") + std::to_string(list[i]);
  listed += "}";
  std::string context =
      "argnums " + listed + " of " + name + " with " + std::to_string(arity) + " argument" + (arity == 1 ? "" : "s");
  if (list.empty()) raise("grad", context + " names no argument", where, "name at least one argument, e.g. {0}");
  std::vector<size_t> seen;
  for (int index : list) {
    auto signed_arity = static_cast<int64_t>(arity);
    if (index >= signed_arity || index < -signed_arity)
      raise("grad", context + ": " + std::to_string(index) + " is out of range", where,
            "argnums count from 0, or from the end with negative numbers (-1 is the last)");
    auto position = static_cast<size_t>(index >= 0 ? index : signed_arity + index);
    if (std::find(seen.begin(), seen.end(), position) != seen.end())
      raise("grad", context + " names argument " + std::to_string(position) + " twice", where,
            "list each argument once");
    seen.push_back(position);
  }
}

}  // namespace kiln::detail
