// Graph hashing and structural equality.
#include "ir/graph.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>

#include "core/byte_stream.h"

namespace kiln::ir {

std::string_view primitive_name(Primitive op) {
  static constexpr std::string_view names[] = {
#define KILN_PRIMITIVE(name, family) #name,
#include "ir/primitives.def"
#undef KILN_PRIMITIVE
  };
  return names[static_cast<size_t>(op)];
}

Family primitive_family(Primitive op) {
  static constexpr Family families[] = {
#define KILN_PRIMITIVE(name, family) Family::family,
#include "ir/primitives.def"
  };
  return families[static_cast<size_t>(op)];
}

namespace {

using detail::ByteWriter;

// Graphs are written to one byte string and hashed once at the end: a single
// XXH3 call over a buffer is far cheaper than many small updates.
uint64_t digest(const ByteWriter& writer) { return XXH3_64bits(writer.bytes().data(), writer.bytes().size()); }

void add_scalar(ByteWriter& writer, const Scalar& value) {
  writer.add(value.kind());
  if (value.kind() == Scalar::Kind::floating) writer.add(value.as_double());
  else if (value.kind() == Scalar::Kind::complex) {
    writer.add(value.as_complex().real());
    writer.add(value.as_complex().imag());
  } else writer.add(value.as_int());
}

// A symbolic node's numbers with the hints at its symbolic positions zeroed:
// hashing and equality see the polynomials instead (append_symbolic).
struct MaskedNumbers {
  Shape shape;
  std::vector<int64_t> ints;
  Shape attr_shape;
};

MaskedNumbers masked(const Node& node) {
  MaskedNumbers numbers{node.type.shape, node.attrs.ints, node.attrs.shape};
  if (!node.symbolic) return numbers;
  for (const auto& position : node.symbolic->shape) numbers.shape[static_cast<size_t>(position.first)] = 0;
  for (const auto& position : node.symbolic->ints) numbers.ints[static_cast<size_t>(position.first)] = 0;
  for (const auto& position : node.symbolic->attr_shape) numbers.attr_shape[static_cast<size_t>(position.first)] = 0;
  return numbers;
}

bool same_numbers(const Node& a, const Node& b) {
  if (!a.symbolic && !b.symbolic)
    return a.type.shape == b.type.shape && a.attrs.ints == b.attrs.ints && a.attrs.shape == b.attrs.shape;
  if (!a.symbolic || !b.symbolic || !(*a.symbolic == *b.symbolic)) return false;
  MaskedNumbers x = masked(a), y = masked(b);
  return x.shape == y.shape && x.ints == y.ints && x.attr_shape == y.attr_shape;
}

bool same_structure(const Node& a, const Node& b) {
  if (!(a.op == b.op && a.type.dtype == b.type.dtype && a.type.weak == b.type.weak &&
        a.type.shape.size() == b.type.shape.size() && a.inputs == b.inputs && same_numbers(a, b) &&
        a.attrs.dtype == b.attrs.dtype && (a.op == Primitive::literal || a.attrs.scalar == b.attrs.scalar) &&
        a.bodies.size() == b.bodies.size()))
    return false;
  for (size_t k = 0; k < a.bodies.size(); ++k)
    if (a.bodies[k] != b.bodies[k] && !a.bodies[k]->structurally_equal(*b.bodies[k])) return false;
  return true;
}

// Literal nodes in node order, each control node's bodies at its position.
template <class F>
void for_each_literal(const Graph& graph, F& fn) {
  for (const Node& node : graph.nodes) {
    if (node.op == Primitive::literal) fn(node);
    for (const auto& body : node.bodies) for_each_literal(*body, fn);
  }
}

}  // namespace

namespace {
// Storage larger than this is not kept for reuse: an idle thread should not
// hold megabytes (8,192 nodes take 1.7 MB).
constexpr size_t largest_spare_nodes = size_t{1} << 13;
// Trivially destructible, so a graph destroyed after this thread's spare
// storage (another thread-local's destructor) can tell.
thread_local bool spare_gone = false;
struct SpareStorage {
  std::vector<Node> nodes;
  std::vector<std::vector<ValueId>> inputs;
  std::vector<Shape> shapes;
  ~SpareStorage() { spare_gone = true; }
};
thread_local SpareStorage spare;

template <class Vector>
void keep(std::vector<Vector>& pool, Vector& storage) {
  if (storage.capacity() != 0 && pool.size() < largest_spare_nodes) pool.push_back(std::move(storage));
}

template <class Vector>
Vector take(std::vector<Vector>& pool) {
  if (spare_gone || pool.empty()) return {};
  Vector storage = std::move(pool.back());
  pool.pop_back();
  storage.clear();
  return storage;
}
}  // namespace

Graph::~Graph() {
  size_t room = nodes.capacity();
  if (room < 256 || room > largest_spare_nodes || spare_gone) return;
  for (Node& node : nodes) {
    keep(spare.inputs, node.inputs);
    keep(spare.shapes, node.type.shape);
  }
  if (room <= spare.nodes.capacity()) return;
  nodes.clear();
  spare.nodes = std::move(nodes);
}

bool repeats_along_leading_axes(const Shape& operand, const Shape& result) {
  size_t leading_ones = 0;
  while (leading_ones < operand.size() && operand[leading_ones] == 1) ++leading_ones;
  size_t kept = operand.size() - leading_ones;
  if (kept > result.size()) return false;
  return std::equal(operand.begin() + static_cast<std::ptrdiff_t>(leading_ones), operand.end(),
                    result.end() - static_cast<std::ptrdiff_t>(kept));
}

namespace {
bool swaps_last_two_axes(const Node& node) {
  if (node.op != Primitive::transpose) return false;
  const std::vector<int64_t>& perm = node.attrs.ints;
  size_t rank = perm.size();
  if (rank < 2) return false;
  for (size_t d = 0; d + 2 < rank; ++d)
    if (perm[d] != static_cast<int64_t>(d)) return false;
  return perm[rank - 2] == static_cast<int64_t>(rank - 1) && perm[rank - 1] == static_cast<int64_t>(rank - 2);
}
}  // namespace

std::vector<char> transposes_read_as_flags(const Graph& graph, bool (*reads_as_flag)(const Node&)) {
  std::vector<char> read_as_flags(graph.nodes.size(), 0);
  for (size_t i = 0; i < graph.nodes.size(); ++i) read_as_flags[i] = swaps_last_two_axes(graph.nodes[i]);
  for (const Node& node : graph.nodes)
    if (!reads_as_flag(node))
      for (ValueId input : node.inputs) read_as_flags[static_cast<size_t>(input)] = 0;
  return read_as_flags;
}

std::vector<Node> take_node_storage(size_t count) {
  std::vector<Node> storage;
  if (!spare_gone && spare.nodes.capacity() >= count) storage = std::move(spare.nodes);
  storage.reserve(count);
  return storage;
}

std::vector<ValueId> take_input_storage() { return take(spare.inputs); }
Shape take_shape_storage() { return take(spare.shapes); }

uint64_t Graph::structure_hash() const {
  thread_local std::string bytes;
  // A body's hash goes in before this graph's bytes are written: the buffer is shared.
  std::vector<uint64_t> body_hashes;
  for (const Node& node : nodes)
    for (const auto& body : node.bodies) body_hashes.push_back(body->structure_hash());
  ByteWriter hasher(bytes);
  hasher.add_vector(body_hashes);
  hasher.add(nodes.size());
  std::string symbolic;
  for (const Node& node : nodes) {
    hasher.add(node.op);
    hasher.add(node.type.dtype);
    hasher.add(node.type.weak);
    hasher.add_vector(node.inputs);
    hasher.add(node.attrs.dtype);
    if (node.op != Primitive::literal) add_scalar(hasher, node.attrs.scalar);
    if (!node.symbolic) {
      hasher.add_vector(node.type.shape);
      hasher.add_vector(node.attrs.ints);
      hasher.add_vector(node.attrs.shape);
      continue;
    }
    MaskedNumbers numbers = masked(node);
    hasher.add_vector(numbers.shape);
    hasher.add_vector(numbers.ints);
    hasher.add_vector(numbers.attr_shape);
    symbolic.clear();
    ir::append_symbolic(node, symbolic);
    hasher.add_string(symbolic);
  }
  hasher.add(symbols);
  hasher.add_vector(arguments);
  hasher.add_vector(captures);
  hasher.add_vector(outputs);
  return digest(hasher);
}

std::vector<const Node*> Graph::literal_nodes() const {
  std::vector<const Node*> out;
  auto collect = [&](const Node& node) { out.push_back(&node); };
  for_each_literal(*this, collect);
  return out;
}

uint64_t Graph::literal_hash() const {
  thread_local std::string bytes;
  ByteWriter hasher(bytes);
  // A symbolic literal's value is its polynomial (in the structure hash), not its hint.
  auto add = [&](const Node& node) {
    if (node.symbolic && node.symbolic->literal) hasher.add(uint8_t{0xff});
    else add_scalar(hasher, node.attrs.scalar);
  };
  for_each_literal(*this, add);
  return digest(hasher);
}

std::vector<Scalar> Graph::literal_values() const {
  std::vector<Scalar> values;
  auto collect = [&](const Node& node) { values.push_back(node.attrs.scalar); };
  for_each_literal(*this, collect);
  return values;
}

bool Graph::same_literals(const Graph& other) const {
  std::vector<const Node*> mine = literal_nodes(), theirs = other.literal_nodes();
  if (mine.size() != theirs.size()) return false;
  for (size_t i = 0; i < mine.size(); ++i) {
    bool symbolic = mine[i]->symbolic && mine[i]->symbolic->literal;
    if (symbolic != (theirs[i]->symbolic && theirs[i]->symbolic->literal)) return false;
    if (!symbolic && !(mine[i]->attrs.scalar == theirs[i]->attrs.scalar)) return false;
  }
  return true;
}

bool Graph::structurally_equal(const Graph& other) const {
  if (nodes.size() != other.nodes.size() || arguments != other.arguments || captures != other.captures ||
      outputs != other.outputs || symbols != other.symbols)
    return false;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (!same_structure(nodes[i], other.nodes[i])) return false;
  return true;
}

}  // namespace kiln::ir
