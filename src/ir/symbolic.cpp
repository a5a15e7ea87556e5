// Symbolic dimensions (see the header).
#include "ir/symbolic.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error_format.h"
#include "ir/graph.h"

namespace kiln::ir {

// ---- DimExpr ----------------------------------------------------------------------

DimExpr DimExpr::constant(int64_t value) {
  DimExpr expr;
  if (value != 0) expr.terms_.push_back({{}, value});
  return expr;
}

DimExpr DimExpr::symbol(int id) {
  DimExpr expr;
  expr.terms_.push_back({{id}, 1});
  return expr;
}

bool DimExpr::is_constant() const { return terms_.empty() || (terms_.size() == 1 && terms_[0].symbols.empty()); }

std::optional<int> DimExpr::as_symbol() const {
  if (terms_.size() == 1 && terms_[0].symbols.size() == 1 && terms_[0].coefficient == 1) return terms_[0].symbols[0];
  return std::nullopt;
}

int64_t DimExpr::evaluate(std::span<const int64_t> values) const {
  int64_t total = 0;
  for (const Term& term : terms_) {
    int64_t product = term.coefficient;
    for (int id : term.symbols) product *= values[static_cast<size_t>(id)];
    total += product;
  }
  return total;
}

std::string DimExpr::to_string() const {
  if (terms_.empty()) return "0";
  std::string text;
  // Highest degree first reads naturally: "2*s0 + 1".
  for (size_t k = terms_.size(); k-- > 0;) {
    const Term& term = terms_[k];
    int64_t coefficient = term.coefficient;
    if (!text.empty()) {
      text += coefficient < 0 ? " - " : " + ";
      coefficient = coefficient < 0 ? -coefficient : coefficient;
    } else if (coefficient < 0 && !term.symbols.empty()) {
      text += "-";
      coefficient = -coefficient;
    }
    std::string factors;
    if (coefficient != 1 || term.symbols.empty()) factors = std::to_string(coefficient);
    for (int id : term.symbols) factors += (factors.empty() ? "" : "*") + ("s" + std::to_string(id));
    text += factors;
  }
  return text;
}

void DimExpr::normalize() {
  std::map<std::vector<int>, int64_t> sums;
  for (Term& term : terms_) {
    std::sort(term.symbols.begin(), term.symbols.end());
    sums[term.symbols] += term.coefficient;
  }
  terms_.clear();
  for (auto& [symbols, coefficient] : sums)
    if (coefficient != 0) terms_.push_back({symbols, coefficient});
}

DimExpr DimExpr::operator+(const DimExpr& other) const {
  DimExpr sum = *this;
  sum.terms_.insert(sum.terms_.end(), other.terms_.begin(), other.terms_.end());
  sum.normalize();
  return sum;
}

DimExpr DimExpr::operator*(const DimExpr& other) const {
  DimExpr product;
  for (const Term& a : terms_)
    for (const Term& b : other.terms_) {
      Term term{a.symbols, a.coefficient * b.coefficient};
      term.symbols.insert(term.symbols.end(), b.symbols.begin(), b.symbols.end());
      product.terms_.push_back(std::move(term));
    }
  product.normalize();
  return product;
}

DimExpr DimExpr::operator*(int64_t factor) const { return *this * constant(factor); }

double SymbolicLiteral::evaluate(std::span<const int64_t> values) const {
  auto value = static_cast<double>(polynomial.evaluate(values));
  return reciprocal ? 1.0 / value : value;
}

std::string SymbolicLiteral::to_string() const {
  std::string text = polynomial.to_string();
  return reciprocal ? "1/(" + text + ")" : text;
}

// ---- nodes ------------------------------------------------------------------------

const DimExpr* SymbolicNode::dimension(size_t dim) const {
  for (const auto& [index, expr] : shape)
    if (static_cast<size_t>(index) == dim) return &expr;
  return nullptr;
}

std::vector<DimExpr> symbolic_shape(const Node& node) {
  std::vector<DimExpr> shape;
  shape.reserve(node.type.shape.size());
  for (size_t d = 0; d < node.type.shape.size(); ++d) {
    const DimExpr* expr = node.symbolic ? node.symbolic->dimension(d) : nullptr;
    shape.push_back(expr ? *expr : DimExpr::constant(node.type.shape[d]));
  }
  return shape;
}

std::string symbolic_shape_string(const std::vector<DimExpr>& shape) {
  std::string text = "[";
  for (size_t d = 0; d < shape.size(); ++d) text += (d ? "," : "") + shape[d].to_string();
  return text + "]";
}

std::string symbolic_type_string(const Node& node) {
  if (!node.symbolic || node.symbolic->shape.empty()) return node.type.to_string();
  return std::string(dtype_name(node.type.dtype)) + symbolic_shape_string(symbolic_shape(node)) +
         (node.type.weak ? "~" : "");
}

bool same_symbolic_type(const Node& a, const Node& b) {
  if (!(a.type == b.type)) return false;
  if (!a.symbolic && !b.symbolic) return true;
  return symbolic_shape(a) == symbolic_shape(b);
}

namespace {
void append_int(std::string& bytes, int64_t value) {
  bytes.append(reinterpret_cast<const char*>(&value), sizeof value);
}

void append_expr(std::string& bytes, const DimExpr& expr) {
  append_int(bytes, static_cast<int64_t>(expr.terms().size()));
  for (const DimExpr::Term& term : expr.terms()) {
    append_int(bytes, term.coefficient);
    append_int(bytes, static_cast<int64_t>(term.symbols.size()));
    for (int id : term.symbols) append_int(bytes, id);
  }
}

void append_positions(std::string& bytes, const std::vector<std::pair<int, DimExpr>>& positions) {
  append_int(bytes, static_cast<int64_t>(positions.size()));
  for (const auto& [index, expr] : positions) {
    append_int(bytes, index);
    append_expr(bytes, expr);
  }
}
}  // namespace

void append_symbolic(const Node& node, std::string& bytes) {
  if (!node.symbolic) {
    bytes.push_back('0');
    return;
  }
  const SymbolicNode& symbolic = *node.symbolic;
  bytes.push_back('S');
  append_positions(bytes, symbolic.shape);
  append_positions(bytes, symbolic.ints);
  append_positions(bytes, symbolic.attr_shape);
  if (symbolic.literal) {
    bytes.push_back(symbolic.literal->reciprocal ? 'r' : 'p');
    append_expr(bytes, symbolic.literal->polynomial);
  }
}

bool is_symbolic(const Graph& graph) { return graph.symbols > 0; }

// ---- binding and instantiating ----------------------------------------------------

std::vector<int64_t> bind_symbols(const Graph& graph, std::span<const Shape* const> shapes) {
  std::vector<int64_t> values(static_cast<size_t>(graph.symbols), -1);
  std::vector<ValueId> inputs = graph.arguments;
  inputs.insert(inputs.end(), graph.captures.begin(), graph.captures.end());
  auto mismatch = [&](const Node& node, const Shape& shape, const std::string& why) {
    detail::raise("jit",
                  "'" + graph.name + "' was compiled for inputs " + symbolic_type_string(node) +
                      ", but an input has shape " + shape_string(shape) + ": " + why,
                  node.where, "this is a bug in kiln's cache: the call's signature should have missed");
  };
  for (size_t k = 0; k < inputs.size() && k < shapes.size(); ++k) {
    const Node& node = graph.nodes[static_cast<size_t>(inputs[k])];
    const Shape& shape = *shapes[k];
    if (shape.size() != node.type.shape.size()) mismatch(node, shape, "the ranks differ");
    for (size_t d = 0; d < shape.size(); ++d) {
      const DimExpr* expr = node.symbolic ? node.symbolic->dimension(d) : nullptr;
      if (!expr) {
        if (shape[d] != node.type.shape[d]) mismatch(node, shape, "static dimension " + std::to_string(d) + " differs");
        continue;
      }
      std::optional<int> id = expr->as_symbol();
      if (!id) continue;
      int64_t& value = values[static_cast<size_t>(*id)];
      if (shape[d] < 2) mismatch(node, shape, "s" + std::to_string(*id) + " is never 0 or 1");
      if (value >= 0 && value != shape[d]) mismatch(node, shape, "s" + std::to_string(*id) + " has two values");
      value = shape[d];
    }
  }
  for (size_t id = 0; id < values.size(); ++id)
    if (values[id] < 0)
      detail::raise("jit", "'" + graph.name + "': symbol s" + std::to_string(id) + " is no dimension of an input",
                    Location{}, "this is a bug in kiln: such a graph should have been compiled for one size");
  return values;
}

std::vector<int64_t> bind_symbols(const Graph& graph, std::span<const Array> arguments,
                                  std::span<const Array> implicit_inputs) {
  std::vector<const Shape*> shapes;
  shapes.reserve(arguments.size() + implicit_inputs.size());
  for (const Array& a : arguments) shapes.push_back(&detail::impl(a)->type.shape);
  for (const Array& a : implicit_inputs) shapes.push_back(&detail::impl(a)->type.shape);
  return bind_symbols(graph, shapes);
}

namespace {
void substitute(std::vector<int64_t>& numbers, const std::vector<std::pair<int, DimExpr>>& positions,
                std::span<const int64_t> values) {
  for (const auto& [index, expr] : positions) numbers[static_cast<size_t>(index)] = expr.evaluate(values);
}
}  // namespace

Graph instantiate(const Graph& graph, std::span<const int64_t> values) {
  Graph concrete = graph;
  concrete.symbols = 0;
  for (Node& node : concrete.nodes) {
    for (auto& body : node.bodies)
      if (is_symbolic(*body)) body = std::make_shared<const Graph>(instantiate(*body, values));
    if (!node.symbolic) continue;
    const SymbolicNode& symbolic = *node.symbolic;
    substitute(node.type.shape, symbolic.shape, values);
    substitute(node.attrs.ints, symbolic.ints, values);
    substitute(node.attrs.shape, symbolic.attr_shape, values);
    if (symbolic.literal) {
      double value = symbolic.literal->evaluate(values);
      if (node.attrs.scalar.kind() == Scalar::Kind::floating) node.attrs.scalar = Scalar(value);
      else node.attrs.scalar = Scalar(static_cast<int64_t>(std::llround(value)));
    }
    node.symbolic = nullptr;
  }
  return concrete;
}

}  // namespace kiln::ir
