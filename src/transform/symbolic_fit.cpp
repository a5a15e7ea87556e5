// Fitting symbolic dimensions (see the header).
#include "transform/symbolic_fit.h"

#include <cmath>
#include <optional>

#include "core/error_format.h"
#include "ir/primitive.h"

namespace kiln::transform {

namespace {

using ir::DimExpr;
using ir::Graph;
using ir::Node;

// Check point candidates: symbol i moves by a + b*i, first above the call's
// sizes, then below, then further out.
constexpr int64_t check_tiers[][2] = {{3, 2}, {8, 5}, {16, 9}, {32, 17}, {64, 33}};

size_t grid_size(size_t symbols) { return size_t{1} << symbols; }

// The polynomial through the grid values (n + d * bit), in Newton's form:
// the coefficient of prod_{i in S} d_i (s_i - n_i) is the alternating sum of
// the values over the subsets of S (d_i = +-1, so d_i is its own inverse).
DimExpr newton_polynomial(const std::vector<int64_t>& grid, const std::vector<int64_t>& hints,
                          const std::vector<int64_t>& steps) {
  size_t symbols = hints.size();
  DimExpr total;
  for (size_t subset = 0; subset < grid_size(symbols); ++subset) {
    int64_t coefficient = 0;
    for (size_t part = subset;; part = (part - 1) & subset) {
      int sign = (__builtin_popcountll(subset ^ part) % 2) ? -1 : 1;
      coefficient += sign * grid[part];
      if (part == 0) break;
    }
    if (coefficient == 0) continue;
    DimExpr term = DimExpr::constant(coefficient);
    for (size_t i = 0; i < symbols; ++i)
      if (subset >> i & 1)
        term = term * ((DimExpr::symbol(static_cast<int>(i)) + DimExpr::constant(-hints[i])) * steps[i]);
    total = total + term;
  }
  return total;
}

struct Fitter {
  const std::vector<std::vector<int64_t>>& points;
  const std::vector<int64_t>& hints;
  const std::vector<int64_t>& steps;
  FitResult& result;

  bool fail(const Node& node, const std::string& why, const std::vector<int64_t>& values) {
    result.failure =
        std::string(ir::primitive_name(node.op)) + " at " + detail::location_string(node.where) + " " + why;
    // The symbols whose single step changes the traces are the ones to blame;
    // when none does alone, all are.
    for (size_t i = 0; i < hints.size(); ++i)
      if (values[size_t{1} << i] != values[0]) result.culprits.push_back(static_cast<int>(i));
    if (result.culprits.empty())
      for (size_t i = 0; i < hints.size(); ++i) result.culprits.push_back(static_cast<int>(i));
    return false;
  }

  // The polynomial the values follow at every point, if any.
  std::optional<DimExpr> fit_integers(const std::vector<int64_t>& values) {
    std::vector<int64_t> grid(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(grid_size(hints.size())));
    DimExpr polynomial = newton_polynomial(grid, hints, steps);
    for (size_t p = 0; p < points.size(); ++p)
      if (polynomial.evaluate(points[p]) != values[p]) return std::nullopt;
    return polynomial;
  }

  std::optional<ir::SymbolicLiteral> fit_literal(const std::vector<Scalar>& values) {
    bool integral = true;
    for (const Scalar& value : values)
      integral = integral && std::isfinite(value.as_double()) && value.as_double() == std::round(value.as_double()) &&
                 std::abs(value.as_double()) < 0x1p53;
    if (integral) {
      std::vector<int64_t> numbers;
      for (const Scalar& value : values) numbers.push_back(std::llround(value.as_double()));
      if (auto polynomial = fit_integers(numbers)) return ir::SymbolicLiteral{*polynomial, false};
      return std::nullopt;
    }
    if (values[0].kind() != Scalar::Kind::floating) return std::nullopt;
    // A reciprocal of a count, rounded to the literal's precision.
    std::vector<int64_t> counts;
    for (const Scalar& value : values) {
      double count = 1.0 / value.as_double();
      if (!std::isfinite(count) || std::abs(count - std::round(count)) > 1e-4 * std::max(1.0, std::abs(count)))
        return std::nullopt;
      counts.push_back(std::llround(count));
    }
    std::optional<DimExpr> polynomial = fit_integers(counts);
    if (!polynomial) return std::nullopt;
    ir::SymbolicLiteral literal{*polynomial, true};
    for (size_t p = 0; p < points.size(); ++p) {
      double expected = literal.evaluate(points[p]), seen = values[p].as_double();
      if (std::abs(expected - seen) > 1e-6 * std::abs(seen)) return std::nullopt;
    }
    return literal;
  }

  // Fits the numbers at one kind of position (shape, ints, attrs.shape) of
  // node k across the traces.
  template <class Numbers>
  bool fit_positions(const std::vector<const Graph*>& traces, size_t k, Numbers numbers, const char* what,
                     std::vector<std::pair<int, DimExpr>>& out) {
    const auto& first = numbers(traces[0]->nodes[k]);
    for (size_t index = 0; index < first.size(); ++index) {
      std::vector<int64_t> values;
      bool varies = false;
      for (const Graph* trace : traces) {
        values.push_back(numbers(trace->nodes[k])[index]);
        varies = varies || values.back() != values.front();
      }
      if (!varies) continue;
      std::optional<DimExpr> polynomial = fit_integers(values);
      if (!polynomial)
        return fail(traces[0]->nodes[k], std::string("has a ") + what + " entry that no polynomial in the sizes gives",
                    values);
      out.emplace_back(static_cast<int>(index), std::move(*polynomial));
    }
    return true;
  }

  bool same_shape_of_numbers(const Node& a, const Node& b) {
    return a.op == b.op && a.type.dtype == b.type.dtype && a.type.weak == b.type.weak &&
           a.type.shape.size() == b.type.shape.size() && a.inputs == b.inputs &&
           a.attrs.ints.size() == b.attrs.ints.size() && a.attrs.shape.size() == b.attrs.shape.size() &&
           a.attrs.dtype == b.attrs.dtype && a.attrs.scalar.kind() == b.attrs.scalar.kind() &&
           (a.op == ir::Primitive::literal || a.attrs.scalar == b.attrs.scalar) && a.bodies.size() == b.bodies.size();
  }

  // The first node where two traces record different operations (not just
  // other numbers), or none.
  std::optional<size_t> parting(const Graph& a, const Graph& b) {
    size_t k = 0;
    while (k < a.nodes.size() && k < b.nodes.size() && same_shape_of_numbers(a.nodes[k], b.nodes[k])) ++k;
    bool same = k == a.nodes.size() && k == b.nodes.size() && a.arguments == b.arguments && a.captures == b.captures &&
                a.outputs == b.outputs;
    if (same) return std::nullopt;
    return std::min(k, a.nodes.size() - 1);
  }

  // Fills `out` (a copy of traces[0]) with the symbolic numbers; false on a failure.
  bool fit_graph(const std::vector<const Graph*>& traces, Graph& out) {
    const Graph& first = *traces[0];
    for (const Graph* trace : traces) {
      std::optional<size_t> k = parting(first, *trace);
      if (!k) continue;
      std::vector<int64_t> parts(traces.size(), 0);
      for (size_t p = 0; p < traces.size(); ++p) parts[p] = parting(first, *traces[p]).has_value();
      return fail(first.nodes[*k], "is where the traces at other sizes part: the function records other operations",
                  parts);
    }
    bool any = false;
    for (size_t k = 0; k < first.nodes.size(); ++k) {
      Node& node = out.nodes[k];
      for (size_t b = 0; b < node.bodies.size(); ++b) {
        std::vector<const Graph*> bodies;
        for (const Graph* trace : traces) bodies.push_back(trace->nodes[k].bodies[b].get());
        auto body = std::make_shared<Graph>(*bodies[0]);
        if (!fit_graph(bodies, *body)) return false;
        if (ir::is_symbolic(*body)) {
          node.bodies[b] = std::move(body);
          any = true;
        }
      }
      ir::SymbolicNode symbolic;
      if (!fit_positions(
              traces, k, [](const Node& n) -> const Shape& { return n.type.shape; }, "dimension", symbolic.shape) ||
          !fit_positions(
              traces, k, [](const Node& n) -> const std::vector<int64_t>& { return n.attrs.ints; }, "integer attribute",
              symbolic.ints) ||
          !fit_positions(
              traces, k, [](const Node& n) -> const Shape& { return n.attrs.shape; }, "shape attribute",
              symbolic.attr_shape))
        return false;
      if (node.op == ir::Primitive::literal) {
        std::vector<Scalar> values;
        bool varies = false;
        for (const Graph* trace : traces) {
          values.push_back(trace->nodes[k].attrs.scalar);
          varies = varies || !(values.back() == values.front());
        }
        if (varies) {
          symbolic.literal = fit_literal(values);
          if (!symbolic.literal) {
            std::vector<int64_t> changes;
            for (const Scalar& value : values) changes.push_back(value == values[0] ? 0 : 1);
            return fail(node, "holds a number computed from the sizes that no polynomial (or its reciprocal) gives",
                        changes);
          }
        }
      }
      if (symbolic.shape.empty() && symbolic.ints.empty() && symbolic.attr_shape.empty() && !symbolic.literal) continue;
      node.symbolic = std::make_shared<const ir::SymbolicNode>(std::move(symbolic));
      any = true;
    }
    out.symbols = any ? static_cast<int>(hints.size()) : 0;
    return true;
  }
};

}  // namespace

std::vector<std::vector<int64_t>> ProbeGrid::points() const {
  std::vector<std::vector<int64_t>> all;
  for (size_t subset = 0; subset < grid_size(hints.size()); ++subset) {
    std::vector<int64_t> point = hints;
    for (size_t i = 0; i < hints.size(); ++i) point[i] += (subset >> i & 1) ? steps[i] : 0;
    all.push_back(std::move(point));
  }
  all.insert(all.end(), checks.begin(), checks.end());
  return all;
}

std::vector<int64_t> check_offsets(size_t k, size_t symbols) {
  if (k >= 2 * std::size(check_tiers)) return {};
  const auto& tier = check_tiers[k / 2];
  int64_t side = k % 2 ? -1 : 1;
  std::vector<int64_t> offsets;
  for (size_t i = 0; i < symbols; ++i) offsets.push_back(side * (tier[0] + tier[1] * static_cast<int64_t>(i)));
  return offsets;
}

FitResult fit_symbols(const std::vector<const ir::Graph*>& traces, const ProbeGrid& grid) {
  FitResult result;
  std::vector<std::vector<int64_t>> points = grid.points();
  const std::vector<int64_t>& hints = grid.hints;
  auto graph = std::make_shared<Graph>(*traces[0]);
  Fitter fitter{points, hints, grid.steps, result};
  if (!fitter.fit_graph(traces, *graph)) return result;
  result.graph = std::move(graph);
  return result;
}

}  // namespace kiln::transform
