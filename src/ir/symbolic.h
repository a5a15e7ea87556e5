// Symbolic dimensions: what makes one graph serve every size of a dynamic
// dimension.
//
// A symbolic graph is traced at concrete sizes (its *hints*) and keeps them
// in its node types, so every pass that only needs a size to decide (fusion,
// blocking, threading) still has one. Each node whose numbers depend on a
// dynamic dimension also carries a SymbolicNode: for each such number (a
// dimension of its shape, an integer attribute, a literal's value) the
// polynomial in the symbols s0, s1, ... it equals at every size. Hashing,
// equality and printing use the polynomials, not the hints, so two traces
// of one function at different sizes give the same graph and the same keys.
//
// A symbol's value is never 0 or 1 (those sizes change broadcasting, so calls
// with them are specialized); `bind_symbols` reads the values off a call's
// input shapes, and `instantiate` gives the concrete graph for them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kiln/array.h"

namespace kiln::ir {

class Graph;
struct Node;

/// A polynomial with integer coefficients in the symbols s0, s1, ...
class DimExpr {
 public:
  struct Term {
    std::vector<int> symbols;  // sorted; a repeated id is a power
    int64_t coefficient = 0;
    bool operator==(const Term&) const = default;
  };

  DimExpr() = default;  // 0
  static DimExpr constant(int64_t value);
  static DimExpr symbol(int id);

  bool is_constant() const;
  /// The symbol this expression is, if it is exactly one symbol.
  std::optional<int> as_symbol() const;
  int64_t evaluate(std::span<const int64_t> values) const;
  const std::vector<Term>& terms() const { return terms_; }
  /// "s0", "2*s0 + 1", "s0*s1"
  std::string to_string() const;

  DimExpr operator+(const DimExpr& other) const;
  DimExpr operator*(const DimExpr& other) const;
  DimExpr operator*(int64_t factor) const;
  bool operator==(const DimExpr&) const = default;

 private:
  void normalize();
  std::vector<Term> terms_;  // sorted by symbols, no zero coefficients
};

/// A literal's value as a function of the symbols: P(s), or 1 / P(s) (the
/// reciprocal of a count, as a mean over a dynamic axis multiplies by).
struct SymbolicLiteral {
  DimExpr polynomial;
  bool reciprocal = false;
  double evaluate(std::span<const int64_t> values) const;
  std::string to_string() const;
  bool operator==(const SymbolicLiteral&) const = default;
};

/// The numbers of one node that depend on symbols, by position.
struct SymbolicNode {
  std::vector<std::pair<int, DimExpr>> shape;       // dimensions of the node's type
  std::vector<std::pair<int, DimExpr>> ints;        // entries of attrs.ints
  std::vector<std::pair<int, DimExpr>> attr_shape;  // entries of attrs.shape
  std::optional<SymbolicLiteral> literal;           // a literal node's value
  bool operator==(const SymbolicNode&) const = default;
  /// The expression of dimension `dim` of the node's shape, if symbolic.
  const DimExpr* dimension(size_t dim) const;
};

/// A node's shape with its symbolic dimensions: constants where static.
std::vector<DimExpr> symbolic_shape(const Node& node);
/// "f32[s0,64]" (hints replaced by expressions); "f32[4,64]" for static nodes.
std::string symbolic_type_string(const Node& node);
/// "[s0,64]"
std::string symbolic_shape_string(const std::vector<DimExpr>& shape);
/// Same dtype, weak flag and shape as polynomials.
bool same_symbolic_type(const Node& a, const Node& b);
/// Appends what hashing and equality of a node's symbolic numbers see.
void append_symbolic(const Node& node, std::string& bytes);

/// Whether any node of the graph (or of its bodies) carries symbols.
bool is_symbolic(const Graph& graph);

/// The symbols' values for a call whose inputs (arguments, then implicit
/// inputs) have `shapes`: each symbol is read off an input dimension that is
/// exactly that symbol. Throws kiln::Error if the shapes contradict the
/// graph (a static dimension differs, one symbol has two values, or a
/// symbol's value is 0 or 1).
std::vector<int64_t> bind_symbols(const Graph& graph, std::span<const Shape* const> shapes);
std::vector<int64_t> bind_symbols(const Graph& graph, std::span<const Array> arguments,
                                  std::span<const Array> implicit_inputs);

/// The concrete graph at `values`: every symbolic number evaluated, bodies
/// included, no symbols left.
Graph instantiate(const Graph& graph, std::span<const int64_t> values);

}  // namespace kiln::ir
