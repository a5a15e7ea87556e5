// kiln's IR.
//
// A Graph is a list of nodes in SSA form: node i defines value %i, and its
// inputs are values defined earlier. Every node has one result with a static
// dtype and shape; in a symbolic graph (ir/symbolic.h) the shape holds the
// sizes it was traced at and the node says which numbers are polynomials in
// the graph's symbols. `input` nodes
// are the graph's parameters: explicit arguments first by index, then
// implicit inputs — arrays the traced function read without receiving them,
// which are bound afresh at every call and never copied into the graph.
// `literal` nodes hold C++ numbers; a weakly typed literal adopted the dtype
// of the operation it met. Literal *values* are excluded from the structural
// hash and structural equality and hashed separately, so graphs that differ
// only in numbers can be recognized (and their literals lifted to inputs).
// Every node remembers the user's source line that created it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/array_impl.h"
#include "ir/primitive.h"
#include "ir/symbolic.h"
#include "kiln/graph.h"

namespace kiln::ir {

using ValueId = int32_t;
using detail::AbstractValue;

/// What an input node stands for (its attrs.ints[1]): an argument, a captured
/// array, a lifted literal, or a constant — an array the function made from
/// host data while tracing, bound like a capture but part of the graph's key
/// through the hash of its contents (attrs.ints[2]).
inline constexpr int64_t argument_input = 0, capture_input = 1, lifted_input = 2, constant_input = 3;

/// Static parameters of a node; the meaning of each field per primitive is
/// listed in primitives.def.
struct Attributes {
  std::vector<int64_t> ints;
  Shape shape;
  DType dtype = DType::f32;
  Scalar scalar;  // literal value only

  bool operator==(const Attributes& other) const = default;
};

class Graph;

struct Node {
  Primitive op = Primitive::literal;
  AbstractValue type;
  Attributes attrs;
  std::vector<ValueId> inputs;
  Location where;
  // Control flow nodes only: the sub-graphs they run (loop condition and
  // body, branches), immutable once traced and shared between copies.
  std::vector<std::shared_ptr<const Graph>> bodies;
  // The numbers of this node that depend on dynamic dimensions; null when none do.
  std::shared_ptr<const SymbolicNode> symbolic;
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = default;
  Graph(Graph&&) noexcept = default;
  Graph& operator=(const Graph&) = default;
  Graph& operator=(Graph&&) noexcept = default;
  /// Leaves its node storage to this thread's next trace (take_node_storage).
  ~Graph();

  std::string name;
  std::vector<Node> nodes;
  std::vector<ValueId> arguments;  // explicit inputs, by argument index
  std::vector<ValueId> captures;   // implicit inputs, in order of first use
  std::vector<ValueId> outputs;
  int symbols = 0;  // how many symbols (dynamic dimensions) the graph's nodes use; 0: static

  // Each of these descends into the bodies of control flow nodes: a body's
  // structure is part of its node's, and its literals follow its node's
  // position in node order (a body's literals are the graph's literals).

  /// Hash of primitives, types, attributes and wiring; not literal values.
  uint64_t structure_hash() const;
  /// Hash of literal values in node order.
  uint64_t literal_hash() const;
  /// Equal but for literal values.
  bool structurally_equal(const Graph& other) const;
  std::vector<Scalar> literal_values() const;
  /// The literal nodes in the order of literal_values().
  std::vector<const Node*> literal_nodes() const;
  /// Same literal values node for node (meaningful for structurally equal graphs).
  bool same_literals(const Graph& other) const;
};

/// Whether broadcasting `operand` to `result` only repeats it along leading
/// axes (a bias added to every row, one value everywhere): element i of the
/// result is then element i % size of the operand, which code may read in
/// place rather than from a materialized broadcast.
bool repeats_along_leading_axes(const Shape& operand, const Shape& result);
/// By node id: the transposes swapping the last two axes (batch axes kept)
/// that only nodes `reads_as_flag` accepts read. A matrix product reads such
/// a transpose as a flag to BLAS, so it need not be materialized.
std::vector<char> transposes_read_as_flags(const Graph& graph, bool (*reads_as_flag)(const Node&));

/// An empty node vector with room for `nodes`, reusing the storage of a graph
/// destroyed on this thread when it has the room. A function traced again
/// and again (a stateful jit, grad, vmap) destroys one graph per trace; its
/// few hundred kilobytes of node storage, freed, make the allocator merge
/// every small block freed since, at each trace.
std::vector<Node> take_node_storage(size_t nodes);
/// An empty vector, with the storage of a destroyed graph's node inputs or
/// shapes when this thread has one: a trace takes two per operation, and
/// the graph it replaces gives as many back.
std::vector<ValueId> take_input_storage();
Shape take_shape_storage();

}  // namespace kiln::ir

namespace kiln::detail {

/// The library's access to the graph behind a kiln::Graph, which the public
/// header keeps from users (kiln::Graph befriends this struct and nothing else).
struct GraphAccess {
  static const std::shared_ptr<const ir::Graph>& shared(const Graph& graph) { return graph.graph_; }
  static Graph wrap(std::shared_ptr<const ir::Graph> graph) { return Graph(std::move(graph)); }
};
inline const ir::Graph& ir_of(const Graph& graph) { return *GraphAccess::shared(graph); }
inline const std::shared_ptr<const ir::Graph>& shared_ir(const Graph& graph) { return GraphAccess::shared(graph); }
/// A handle to `graph`.
inline Graph wrap(std::shared_ptr<const ir::Graph> graph) { return GraphAccess::wrap(std::move(graph)); }

}  // namespace kiln::detail
