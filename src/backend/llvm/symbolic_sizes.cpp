// Sizes in the code of a symbolic graph (see the header).
#include "backend/llvm/symbolic_sizes.h"

#include <cmath>

#include "backend/llvm/loops.h"

namespace kiln::llvm_backend {

SymbolicCount::SymbolicCount(ir::DimExpr size, int64_t divisor) { factors.push_back({std::move(size), divisor}); }

SymbolicCount SymbolicCount::operator*(const SymbolicCount& other) const {
  SymbolicCount product = *this;
  product.factors.insert(product.factors.end(), other.factors.begin(), other.factors.end());
  return product;
}

int64_t SymbolicCount::evaluate(std::span<const int64_t> values) const {
  if (factors.empty()) return 0;
  int64_t product = 1;
  for (const Factor& factor : factors) {
    int64_t size = factor.size.evaluate(values);
    product *= factor.divisor == 1 ? size : (size + factor.divisor - 1) / factor.divisor;
  }
  return product;
}

namespace {
void write_expression(detail::ByteWriter& out, const ir::DimExpr& expression) {
  out.add(static_cast<uint32_t>(expression.terms().size()));
  for (const ir::DimExpr::Term& term : expression.terms()) {
    out.add(term.coefficient);
    out.add_vector(term.symbols);
  }
}

ir::DimExpr read_expression(detail::ByteReader& in) {
  ir::DimExpr expression;
  auto terms = in.read<uint32_t>();
  for (uint32_t t = 0; t < terms; ++t) {
    ir::DimExpr term = ir::DimExpr::constant(in.read<int64_t>());
    auto symbols = in.read<uint32_t>();
    for (uint32_t s = 0; s < symbols; ++s) term = term * ir::DimExpr::symbol(in.read<int>());
    expression = expression + term;
  }
  return expression;
}
}  // namespace

void SymbolicCount::write(detail::ByteWriter& out) const {
  out.add(static_cast<uint32_t>(factors.size()));
  for (const Factor& factor : factors) {
    write_expression(out, factor.size);
    out.add(factor.divisor);
  }
}

SymbolicCount SymbolicCount::read(detail::ByteReader& in) {
  SymbolicCount count;
  auto factors = in.read<uint32_t>();
  for (uint32_t f = 0; f < factors; ++f) {
    ir::DimExpr size = read_expression(in);
    count.factors.push_back({std::move(size), in.read<int64_t>()});
  }
  return count;
}

std::vector<Size> shape_sizes(const ir::Node& node) {
  std::vector<ir::DimExpr> expressions = ir::symbolic_shape(node);
  std::vector<Size> sizes;
  for (size_t d = 0; d < expressions.size(); ++d) sizes.emplace_back(std::move(expressions[d]), node.type.shape[d]);
  return sizes;
}

Size int_size(const ir::Node& node, size_t index) { return {symbolic_int(node, index), node.attrs.ints[index]}; }

Size product(const std::vector<Size>& sizes) {
  Size total = 1;
  for (const Size& size : sizes) total = total * size;
  return total;
}

std::vector<Size> row_major_strides(const std::vector<Size>& shape) {
  std::vector<Size> strides(shape.size(), Size(1));
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

ir::DimExpr symbolic_int(const ir::Node& node, size_t index) {
  if (node.symbolic)
    for (const auto& [position, expression] : node.symbolic->ints)
      if (static_cast<size_t>(position) == index) return expression;
  return ir::DimExpr::constant(node.attrs.ints[index]);
}

ir::DimExpr symbolic_size(const ir::Node& node) {
  ir::DimExpr size = ir::DimExpr::constant(1);
  for (const ir::DimExpr& dim : ir::symbolic_shape(node)) size = size * dim;
  return size;
}

Scalar literal_at(const ir::Node& literal, std::span<const int64_t> values) {
  if (!literal.symbolic || !literal.symbolic->literal || values.empty()) return literal.attrs.scalar;
  double value = literal.symbolic->literal->evaluate(values);
  if (literal.attrs.scalar.kind() == Scalar::Kind::floating) return Scalar(value);
  return Scalar(static_cast<int64_t>(std::llround(value)));
}

SizeEmitter::SizeEmitter(llvm::Function* function, llvm::Value* constants, int64_t first_slot)
    : function_(function), constants_(constants), first_slot_(first_slot) {}

llvm::Value* SizeEmitter::symbol(int id, llvm::IRBuilder<>& builder) {
  auto found = symbols_.find(id);
  if (found != symbols_.end()) return found->second;
  llvm::Value* address =
      builder.CreateConstInBoundsGEP1_64(builder.getInt64Ty(), constants_, static_cast<uint64_t>(first_slot_ + id));
  llvm::Value* value = builder.CreateLoad(builder.getInt64Ty(), address, llvm::Twine("s") + llvm::Twine(id));
  symbols_.emplace(id, value);
  return value;
}

llvm::Value* SizeEmitter::operator()(const ir::DimExpr& size) {
  llvm::LLVMContext& context = function_->getContext();
  if (size.is_constant())
    return llvm::ConstantInt::get(llvm::Type::getInt64Ty(context),
                                  static_cast<uint64_t>(size.evaluate(std::span<const int64_t>{})), true);
  std::string key = size.to_string();
  auto found = computed_.find(key);
  if (found != computed_.end()) return found->second;
  // Before the entry block's branch into the first loop, or at its end
  // while the block is still being built.
  llvm::BasicBlock& entry = function_->getEntryBlock();
  llvm::IRBuilder<> builder(&entry, entry.getTerminator() ? entry.getTerminator()->getIterator() : entry.end());
  llvm::Value* total = nullptr;
  for (const ir::DimExpr::Term& term : size.terms()) {
    llvm::Value* product = nullptr;
    for (int id : term.symbols) {
      llvm::Value* factor = symbol(id, builder);
      product = product ? builder.CreateMul(product, factor, "", false, true) : factor;
    }
    if (!product) {
      product = builder.getInt64(static_cast<uint64_t>(term.coefficient));
    } else if (term.coefficient != 1) {
      product = builder.CreateMul(product, builder.getInt64(static_cast<uint64_t>(term.coefficient)), "", false, true);
    }
    total = total ? builder.CreateAdd(total, product, "", false, true) : product;
  }
  computed_.emplace(std::move(key), total);
  return total;
}

}  // namespace kiln::llvm_backend
