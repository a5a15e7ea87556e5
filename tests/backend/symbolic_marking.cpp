// Symbolic graphs made by hand (see the header).
#include "symbolic_marking.h"

#include <cmath>
#include <memory>
#include <optional>

namespace kiln::testing {

namespace {

int highest_symbol(const ir::DimExpr& expression) {
  int highest = -1;
  for (const ir::DimExpr::Term& term : expression.terms())
    for (int id : term.symbols) highest = std::max(highest, id);
  return highest;
}

class Marker {
 public:
  explicit Marker(const SymbolMarks& marks) : marks_(marks) {
    for (const auto& [value, expression] : marks) symbols_ = std::max(symbols_, highest_symbol(expression) + 1);
  }

  std::shared_ptr<ir::Graph> mark(const ir::Graph& traced) const {
    auto graph = std::make_shared<ir::Graph>(traced);
    bool marked = false;
    for (ir::Node& node : graph->nodes) {
      for (auto& body : node.bodies) {
        std::shared_ptr<ir::Graph> copy = mark(*body);
        marked = marked || copy->symbols > 0;
        body = std::move(copy);
      }
      auto symbolic = std::make_shared<ir::SymbolicNode>();
      positions(node.type.shape, symbolic->shape);
      if (node.op != ir::Primitive::input) positions(node.attrs.ints, symbolic->ints);
      positions(node.attrs.shape, symbolic->attr_shape);
      if (node.op == ir::Primitive::literal) symbolic->literal = literal(node.attrs.scalar.as_double());
      if (*symbolic == ir::SymbolicNode{}) continue;
      node.symbolic = std::move(symbolic);
      marked = true;
    }
    graph->symbols = marked ? symbols_ : 0;
    return graph;
  }

 private:
  const ir::DimExpr* find(int64_t value) const {
    for (const auto& [marked, expression] : marks_)
      if (marked == value) return &expression;
    return nullptr;
  }

  void positions(const std::vector<int64_t>& numbers, std::vector<std::pair<int, ir::DimExpr>>& marked) const {
    for (size_t k = 0; k < numbers.size(); ++k)
      if (const ir::DimExpr* expression = find(numbers[k])) marked.emplace_back(static_cast<int>(k), *expression);
  }

  std::optional<ir::SymbolicLiteral> literal(double value) const {
    for (const auto& [marked, expression] : marks_) {
      if (value == static_cast<double>(marked)) return ir::SymbolicLiteral{expression, false};
      if (std::fabs(value * static_cast<double>(marked) - 1) < 1e-12) return ir::SymbolicLiteral{expression, true};
    }
    return std::nullopt;
  }

  const SymbolMarks& marks_;
  int symbols_ = 0;
};

}  // namespace

Graph mark_symbols(const Graph& graph, const SymbolMarks& marks) {
  return detail::wrap(Marker(marks).mark(detail::ir_of(graph)));
}

SymbolMarks marks_of_s0(int64_t hint, const std::vector<int64_t>& factors) {
  SymbolMarks marks;
  for (int64_t factor : factors) marks.emplace_back(hint * factor, ir::DimExpr::symbol(0) * factor);
  return marks;
}

}  // namespace kiln::testing
