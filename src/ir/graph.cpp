// Graph hashing, structural equality, printing and verification.
#include "ir/graph.h"

#include <xxhash.h>

#include <cstring>
#include <sstream>
#include <stdexcept>

#include "core/error_format.h"
#include "ops/rules.h"

namespace kiln::ir {

std::string_view primitive_name(Primitive op) {
  static constexpr std::string_view names[] = {
#define KILN_PRIMITIVE(name, family) #name,
#include "ir/primitives.def"
#undef KILN_PRIMITIVE
  };
  return names[static_cast<size_t>(op)];
}

std::string_view primitive_family(Primitive op) {
  static constexpr std::string_view families[] = {
#define KILN_PRIMITIVE(name, family) #family,
#include "ir/primitives.def"
#undef KILN_PRIMITIVE
  };
  return families[static_cast<size_t>(op)];
}

namespace {

// Appends trivially copyable values to one byte string, hashed once at the
// end: a single XXH3 call over a buffer is far cheaper than many small updates.
class ByteWriter {
 public:
  explicit ByteWriter(std::string& bytes) : bytes_(bytes) { bytes_.clear(); }
  template <class T>
  void add(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes_.append(reinterpret_cast<const char*>(&value), sizeof(T));
  }
  template <class T>
  void add_vector(const std::vector<T>& values) {
    add(static_cast<uint32_t>(values.size()));
    if (!values.empty()) bytes_.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
  }
  uint64_t digest() const { return XXH3_64bits(bytes_.data(), bytes_.size()); }

 private:
  std::string& bytes_;
};

void add_scalar(ByteWriter& writer, const Scalar& value) {
  writer.add(value.kind());
  if (value.kind() == Scalar::Kind::floating) writer.add(value.as_double());
  else writer.add(value.as_int());
}

bool same_structure(const Node& a, const Node& b) {
  return a.op == b.op && a.type == b.type && a.inputs == b.inputs && a.attrs.ints == b.attrs.ints &&
         a.attrs.shape == b.attrs.shape && a.attrs.dtype == b.attrs.dtype &&
         (a.op == Primitive::literal || a.attrs.scalar == b.attrs.scalar);
}

}  // namespace

uint64_t Graph::structure_hash() const {
  thread_local std::string bytes;
  ByteWriter hasher(bytes);
  hasher.add(nodes.size());
  for (const Node& node : nodes) {
    hasher.add(node.op);
    hasher.add(node.type.dtype);
    hasher.add(node.type.weak);
    hasher.add_vector(node.type.shape);
    hasher.add_vector(node.inputs);
    hasher.add_vector(node.attrs.ints);
    hasher.add_vector(node.attrs.shape);
    hasher.add(node.attrs.dtype);
    if (node.op != Primitive::literal) add_scalar(hasher, node.attrs.scalar);
  }
  hasher.add_vector(arguments);
  hasher.add_vector(captures);
  hasher.add_vector(outputs);
  return hasher.digest();
}

uint64_t Graph::literal_hash() const {
  thread_local std::string bytes;
  ByteWriter hasher(bytes);
  for (const Node& node : nodes)
    if (node.op == Primitive::literal) add_scalar(hasher, node.attrs.scalar);
  return hasher.digest();
}

std::vector<Scalar> Graph::literal_values() const {
  std::vector<Scalar> values;
  for (const Node& node : nodes)
    if (node.op == Primitive::literal) values.push_back(node.attrs.scalar);
  return values;
}

bool Graph::same_literals(const Graph& other) const {
  if (nodes.size() != other.nodes.size()) return false;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].op == Primitive::literal && !(nodes[i].attrs.scalar == other.nodes[i].attrs.scalar)) return false;
  return true;
}

bool Graph::structurally_equal(const Graph& other) const {
  if (nodes.size() != other.nodes.size() || arguments != other.arguments || captures != other.captures ||
      outputs != other.outputs)
    return false;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (!same_structure(nodes[i], other.nodes[i])) return false;
  return true;
}

std::string Graph::to_string() const {
  std::ostringstream out;
  auto signature = [&](const std::vector<ValueId>& ids) {
    for (size_t i = 0; i < ids.size(); ++i)
      out << (i ? ", " : "") << "%" << ids[i] << ": " << nodes[static_cast<size_t>(ids[i])].type.to_string();
  };
  out << "graph " << name << "(";
  signature(arguments);
  out << ")";
  if (!captures.empty()) {
    out << " captures(";
    signature(captures);
    out << ")";
  }
  out << " {\n";
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& node = nodes[i];
    std::ostringstream line;
    line << "  %" << i << " = " << primitive_name(node.op);
    if (auto describe = ops::rules(node.op).describe) {
      std::string text = describe(node);
      if (!text.empty()) line << (node.op == Primitive::literal || node.op == Primitive::input ? " " : "[") << text
                               << (node.op == Primitive::literal || node.op == Primitive::input ? "" : "]");
    }
    for (ValueId input : node.inputs) line << " %" << input;
    line << " : " << node.type.to_string();
    std::string text = line.str();
    constexpr size_t comment_column = 48;
    if (text.size() < comment_column) text.append(comment_column - text.size(), ' ');
    out << text << "  # " << detail::location_string(node.where) << "\n";
  }
  out << "  return";
  for (size_t i = 0; i < outputs.size(); ++i) out << (i ? ", %" : " %") << outputs[i];
  out << "\n}\n";
  return out.str();
}

void Graph::verify() const {
  auto fail = [&](size_t index, const std::string& what) {
    throw std::logic_error("graph '" + name + "' node %" + std::to_string(index) + ": " + what);
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& node = nodes[i];
    std::vector<const AbstractValue*> types;
    for (ValueId input : node.inputs) {
      if (input < 0 || static_cast<size_t>(input) >= i) fail(i, "input %" + std::to_string(input) + " is not defined before use");
      types.push_back(&nodes[static_cast<size_t>(input)].type);
    }
    if (node.op == Primitive::input) continue;
    AbstractValue expected;
    try {
      expected = ops::rules(node.op).infer(node, types);
    } catch (const Error& error) {
      fail(i, std::string("rejected by its shape rule: ") + error.what());
    }
    if (!(expected == node.type)) fail(i, "type " + node.type.to_string() + " but its rule gives " + expected.to_string());
  }
  for (ValueId id : arguments)
    if (nodes.at(static_cast<size_t>(id)).op != Primitive::input) fail(static_cast<size_t>(id), "argument is not an input node");
  for (ValueId id : captures)
    if (nodes.at(static_cast<size_t>(id)).op != Primitive::input) fail(static_cast<size_t>(id), "capture is not an input node");
  for (ValueId id : outputs)
    if (id < 0 || static_cast<size_t>(id) >= nodes.size()) fail(0, "output %" + std::to_string(id) + " is undefined");
}

}  // namespace kiln::ir
