// Sizes in the code of a symbolic graph (ir/symbolic.h), compiled once for
// every size of its dynamic dimensions: a kernel's parallel range as a
// formula evaluated per call, and the numbers of a node as polynomials.
// (Extents in generated code are SizeEmitter's, in loops.h.)
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/byte_stream.h"
#include "ir/graph.h"

namespace kiln::llvm_backend {

/// A count that depends on the symbols: the product of ceil(size / divisor)
/// over its factors (elements, rows, tiles or pieces of rows). A static
/// count is one constant factor; a count of no factors is 0 (a kernel with
/// nothing to do).
struct SymbolicCount {
  struct Factor {
    ir::DimExpr size;
    int64_t divisor = 1;
    bool operator==(const Factor&) const = default;
  };
  std::vector<Factor> factors;

  SymbolicCount() = default;
  explicit SymbolicCount(ir::DimExpr size, int64_t divisor = 1);
  SymbolicCount operator*(const SymbolicCount& other) const;
  int64_t evaluate(std::span<const int64_t> values) const;
  bool operator==(const SymbolicCount&) const = default;

  void write(detail::ByteWriter& out) const;
  static SymbolicCount read(detail::ByteReader& in);
};

/// A number of a kernel's geometry (an extent, a stride, an offset): its
/// polynomial in the symbols, a constant in a static graph, and its value at
/// the graph's hints, which choices that hold at every size may read.
struct Size {
  ir::DimExpr expression;
  int64_t hint = 0;

  Size(int64_t value = 0) : expression(ir::DimExpr::constant(value)), hint(value) {}  // NOLINT: numbers are sizes
  Size(ir::DimExpr expression, int64_t hint) : expression(std::move(expression)), hint(hint) {}
  bool is_static() const { return expression.is_constant(); }
  /// Known when compiling to be `value`.
  bool is(int64_t value) const { return is_static() && hint == value; }
  Size operator*(const Size& other) const { return {expression * other.expression, hint * other.hint}; }
  Size operator+(const Size& other) const { return {expression + other.expression, hint + other.hint}; }
  Size operator-() const { return {expression * -1, -hint}; }
  Size operator-(const Size& other) const { return *this + -other; }
  /// Equal at every size.
  bool operator==(const Size& other) const { return expression == other.expression; }
};

/// Whether some dimension of the node depends on the symbols.
inline bool has_symbolic_shape(const ir::Node& node) { return node.symbolic && !node.symbolic->shape.empty(); }
/// Whether the node holds one value at every size. (A polynomial such as
/// s0 - 1 may be 1, or 0, at the hints and more at other sizes: only static
/// extents of 1 broadcast.)
inline bool is_single_value(const ir::Node& node) {
  return shape_size(node.type.shape) == 1 && !has_symbolic_shape(node);
}

/// The node's dimensions as sizes.
std::vector<Size> shape_sizes(const ir::Node& node);
/// Entry `index` of the node's integer attributes as a size.
Size int_size(const ir::Node& node, size_t index);
/// The product of `sizes`.
Size product(const std::vector<Size>& sizes);
/// Element strides of a contiguous row-major array of this shape.
std::vector<Size> row_major_strides(const std::vector<Size>& shape);

/// Entry `index` of the node's integer attributes as a polynomial.
ir::DimExpr symbolic_int(const ir::Node& node, size_t index);
/// The product of the node's dimensions.
ir::DimExpr symbolic_size(const ir::Node& node);
/// A literal's value at the symbols' `values`, as ir::instantiate gives it.
Scalar literal_at(const ir::Node& literal, std::span<const int64_t> values);

}  // namespace kiln::llvm_backend
