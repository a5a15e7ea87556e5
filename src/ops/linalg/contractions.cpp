// NumPy's contractions and clean-ups as composites of transpose, reshape,
// broadcast, mul, sum, diagonal and matmul: einsum, tensordot, outer, inner,
// kron, cross, nan_to_num. They trace, batch and differentiate through the
// primitives they use. einsum contracts its operands pairwise, left to right,
// each pair lowered to one batched matmul with the batch, free and contracted
// axes moved into place; a pair with nothing to contract is a broadcast multiply.
#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>

#include "core/array_impl.h"
#include "core/error_format.h"
#include "core/location_scope.h"
#include "kiln/half.h"
#include "kiln/ops.h"
#include "ops/common/apply.h"
#include "ops/common/axes.h"

namespace kiln {

using detail::OperationScope;

namespace {

// An axis's label: a letter is its character; dimension k of the broadcast
// ("...") dimensions, counted from the left, is ellipsis_label + k.
using Label = int;
using Labels = std::vector<Label>;
constexpr Label ellipsis_label = 1000;

std::string type_string(const Array& x, const char* operation, Location where) {
  return detail::impl_of(x, operation, where).type.to_string();
}

std::string types_string(const std::vector<Array>& xs, const char* operation, Location where) {
  std::string out;
  for (const Array& x : xs) out += (out.empty() ? "" : ", ") + type_string(x, operation, where);
  return out.empty() ? "no operands" : out;
}

bool contains(const Labels& labels, Label label) {
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

int64_t product(const Shape& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

// Transpose and reshape that record nothing when they would change nothing.
Array permuted(const Array& x, const std::vector<int64_t>& perm, Location where) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return transpose(x, perm, where);
  return x;
}

Array reshaped(const Array& x, const Shape& shape, Location where) {
  return x.shape() == shape ? x : reshape(x, shape, where);
}

// A sum that keeps the dtype (as NumPy's einsum does): integers wrap, bool is "or".
Array summed(const Array& x, const std::vector<int64_t>& axes, Location where) {
  if (axes.empty()) return x;
  Array total = sum(x, Axes(axes), false, where);
  return total.dtype() == x.dtype() ? total : astype(total, x.dtype(), where);
}

// An array with one label per axis.
struct Labelled {
  Array array;
  Labels labels;
};

// Sums out the axes whose labels `keep` lacks.
Labelled keep_only(const Labelled& x, const std::set<Label>& keep, Location where) {
  std::vector<int64_t> axes;
  Labels labels;
  for (size_t i = 0; i < x.labels.size(); ++i) {
    if (keep.count(x.labels[i])) labels.push_back(x.labels[i]);
    else axes.push_back(static_cast<int64_t>(i));
  }
  return {summed(x.array, axes, where), labels};
}

// Contracts two labelled arrays whose shared labels have equal extents. Shared
// labels in `keep` are batch axes, the other shared ones are summed; the
// result's labels are the batch labels, a's own, then b's own.
Labelled contract(Labelled a, Labelled b, const std::set<Label>& keep, Location where) {
  std::set<Label> needed = keep;
  for (Label label : a.labels)
    if (contains(b.labels, label)) needed.insert(label);
  a = keep_only(a, needed, where);
  b = keep_only(b, needed, where);
  auto position = [](const Labels& labels, Label label) {
    return static_cast<int64_t>(std::find(labels.begin(), labels.end(), label) - labels.begin());
  };
  auto extent = [&](const Labelled& x, Label label) {
    return x.array.shape()[static_cast<size_t>(position(x.labels, label))];
  };
  Labels batch, contracted, a_free, b_free;
  for (Label label : a.labels) {
    if (!contains(b.labels, label)) a_free.push_back(label);
    else if (keep.count(label)) batch.push_back(label);
    else contracted.push_back(label);
  }
  for (Label label : b.labels)
    if (!contains(a.labels, label)) b_free.push_back(label);
  auto order = [&](const Labelled& x, std::initializer_list<const Labels*> groups) {
    std::vector<int64_t> perm;
    for (const Labels* group : groups)
      for (Label label : *group) perm.push_back(position(x.labels, label));
    return permuted(x.array, perm, where);
  };
  auto extents = [&](const Labelled& x, const Labels& labels) {
    Shape shape;
    for (Label label : labels) shape.push_back(extent(x, label));
    return shape;
  };
  Shape batch_shape = extents(a, batch), a_shape = extents(a, a_free), b_shape = extents(b, b_free);
  Shape result_shape = batch_shape;
  result_shape.insert(result_shape.end(), a_shape.begin(), a_shape.end());
  result_shape.insert(result_shape.end(), b_shape.begin(), b_shape.end());
  Labels labels = batch;
  labels.insert(labels.end(), a_free.begin(), a_free.end());
  labels.insert(labels.end(), b_free.begin(), b_free.end());
  Array lhs = order(a, {&batch, &a_free, &contracted});
  Array rhs = order(b, {&batch, &contracted, &b_free});
  if (contracted.empty()) {
    // Nothing to sum: an elementwise (outer) product, broadcast.
    Shape lhs_shape = batch_shape, rhs_shape = batch_shape;
    lhs_shape.insert(lhs_shape.end(), a_shape.begin(), a_shape.end());
    lhs_shape.insert(lhs_shape.end(), b_shape.size(), 1);
    rhs_shape.insert(rhs_shape.end(), a_shape.size(), 1);
    rhs_shape.insert(rhs_shape.end(), b_shape.begin(), b_shape.end());
    return {reshaped(lhs, lhs_shape, where) * reshaped(rhs, rhs_shape, where), labels};
  }
  int64_t batches = product(batch_shape), m = product(a_shape), n = product(b_shape);
  int64_t k = product(extents(a, contracted));
  Array products = matmul(reshaped(lhs, {batches, m, k}, where), reshaped(rhs, {batches, k, n}, where), where);
  return {reshaped(products, result_shape, where), labels};
}

// ---- einsum's subscripts --------------------------------------------------------

struct Term {
  Labels letters;  // with ellipsis_label standing for "..." until expanded
  bool ellipsis = false;
};

class EinsumParser {
 public:
  EinsumParser(std::string_view subscripts, const std::vector<Array>& operands, Location where)
      : subscripts_(subscripts), operands_(operands), where_(where) {}

  [[noreturn]] void fail(const std::string& what, const std::string& hint) const {
    detail::raise(
        "einsum",
        what + " in \"" + std::string(subscripts_) + "\" for operands " + types_string(operands_, "einsum", where_),
        where_, hint);
  }

  Term term(std::string_view text, const char* side) const {
    Term term;
    for (size_t i = 0; i < text.size(); ++i) {
      char c = text[i];
      if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
        term.letters.push_back(c);
      } else if (c == '.') {
        if (text.substr(i, 3) != "...")
          fail(std::string("a '.' that is not part of \"...\" in the ") + side,
               "write the broadcast dimensions as exactly three dots, \"...\"");
        if (term.ellipsis)
          fail(std::string("two \"...\" in one term of the ") + side, "each term may broadcast with one \"...\"");
        term.ellipsis = true;
        term.letters.push_back(ellipsis_label);
        i += 2;
      } else if (c != ' ') {
        fail(std::string("the character '") + c + "' in the " + side,
             "subscripts are letters a-z and A-Z, \",\" between operands, \"->\" before the output and \"...\"");
      }
    }
    return term;
  }

 private:
  std::string_view subscripts_;
  const std::vector<Array>& operands_;
  Location where_;
};

// Moves the labels repeated within one operand onto its diagonal.
Labelled take_diagonals(Labelled x, Location where) {
  for (size_t first = 0; first < x.labels.size(); ++first) {
    for (size_t second = first + 1; second < x.labels.size(); ++second) {
      if (x.labels[first] != x.labels[second]) continue;
      Label label = x.labels[first];
      x.array = diagonal(x.array, 0, static_cast<int64_t>(first), static_cast<int64_t>(second), where);
      x.labels.erase(x.labels.begin() + static_cast<std::ptrdiff_t>(second));
      x.labels.erase(x.labels.begin() + static_cast<std::ptrdiff_t>(first));
      x.labels.push_back(label);
      return take_diagonals(std::move(x), where);
    }
  }
  return x;
}

// A label as the subscripts write it.
std::string label_string(Label label) {
  return label >= ellipsis_label ? "..." : std::string(1, static_cast<char>(label));
}

// The input terms, one per operand.
std::vector<Term> input_terms(const EinsumParser& parser, std::string_view inputs_text, size_t operand_count) {
  std::vector<Term> terms;
  for (size_t begin = 0;;) {
    size_t comma = inputs_text.find(',', begin);
    terms.push_back(parser.term(inputs_text.substr(begin, comma - begin), "inputs"));
    if (comma == std::string_view::npos) break;
    begin = comma + 1;
  }
  if (operand_count == 0) parser.fail("no operands", "pass one array per comma-separated input term");
  if (terms.size() != operand_count)
    parser.fail("the subscripts name " + std::to_string(terms.size()) + " operand(s) but " +
                    std::to_string(operand_count) + " were passed",
                "write one comma-separated term of subscripts per operand");
  return terms;
}

// A term's letters with its "..." expanded into `count` broadcast labels,
// aligned from the right within the `broadcast_rank` broadcast dimensions.
Labels expand_ellipsis(const Labels& letters, int64_t count, int64_t broadcast_rank) {
  Labels labels;
  for (Label label : letters) {
    if (label != ellipsis_label) {
      labels.push_back(label);
      continue;
    }
    for (int64_t k = 0; k < count; ++k)
      labels.push_back(ellipsis_label + static_cast<Label>(broadcast_rank - count + k));
  }
  return labels;
}

// The operands with one label per axis: "..." stands for the axes the letters
// leave; the broadcast dimensions align from the right across operands.
std::vector<Labelled> labelled_operands(const EinsumParser& parser, const std::vector<Term>& terms,
                                        const std::vector<Array>& operands, int64_t& broadcast_rank) {
  broadcast_rank = 0;
  std::vector<int64_t> covered(terms.size(), 0);
  for (size_t i = 0; i < terms.size(); ++i) {
    int64_t letters = static_cast<int64_t>(terms[i].letters.size()) - (terms[i].ellipsis ? 1 : 0);
    int64_t rank = operands[i].ndim();
    if (terms[i].ellipsis ? letters > rank : letters != rank)
      parser.fail("operand " + std::to_string(i) + " has " + std::to_string(rank) + " dimension(s) but its term has " +
                      std::to_string(letters) + " letter(s)" + (terms[i].ellipsis ? " and \"...\"" : ""),
                  terms[i].ellipsis ? "give at most as many letters as the operand has dimensions"
                                    : "give one letter per dimension, or \"...\" for the dimensions not named");
    covered[i] = rank - letters;
    broadcast_rank = std::max(broadcast_rank, covered[i]);
  }
  std::vector<Labelled> labelled;
  for (size_t i = 0; i < terms.size(); ++i)
    labelled.push_back({operands[i], expand_ellipsis(terms[i].letters, covered[i], broadcast_rank)});
  return labelled;
}

// The output's labels: explicit after "->", or the letters that appear once,
// sorted, after "...".
Labels output_labels(const EinsumParser& parser, std::optional<std::string_view> output_text,
                     const std::vector<Term>& terms, int64_t broadcast_rank) {
  std::map<Label, int> counts;
  for (const Term& term : terms)
    for (Label label : term.letters)
      if (label != ellipsis_label) ++counts[label];
  if (!output_text) {
    Labels output = expand_ellipsis({ellipsis_label}, broadcast_rank, broadcast_rank);
    for (const auto& [label, count] : counts)
      if (count == 1) output.push_back(label);
    return output;
  }
  Term term = parser.term(*output_text, "output");
  std::set<Label> seen;
  for (Label label : term.letters) {
    if (label == ellipsis_label) continue;
    if (!counts.count(label))
      parser.fail("the output letter '" + label_string(label) + "' is in no input",
                  "the output can only keep letters the inputs name");
    if (!seen.insert(label).second)
      parser.fail("the output letter '" + label_string(label) + "' is repeated",
                  "name each output letter once (a diagonal is taken from a letter repeated in an input)");
  }
  if (broadcast_rank > 0 && !term.ellipsis)
    parser.fail("the inputs broadcast " + std::to_string(broadcast_rank) +
                    " dimension(s) with \"...\" but the output has no \"...\"",
                "put \"...\" in the output where the broadcast dimensions go");
  return expand_ellipsis(term.letters, broadcast_rank, broadcast_rank);
}

// One extent per label; an extent of 1 broadcasts against the others.
std::map<Label, int64_t> label_extents(const EinsumParser& parser, const std::vector<Labelled>& labelled) {
  std::map<Label, int64_t> extents;
  for (size_t i = 0; i < labelled.size(); ++i) {
    const Shape& shape = labelled[i].array.shape();
    for (size_t d = 0; d < shape.size(); ++d) {
      Label label = labelled[i].labels[d];
      for (size_t e = 0; e < d; ++e)
        if (labelled[i].labels[e] == label && shape[e] != shape[d])
          parser.fail("operand " + std::to_string(i) + " repeats '" + label_string(label) + "' over extents " +
                          std::to_string(shape[e]) + " and " + std::to_string(shape[d]),
                      "a letter repeated in one operand takes a diagonal: its axes must have one extent");
      auto [it, inserted] = extents.emplace(label, shape[d]);
      if (inserted || it->second == shape[d] || shape[d] == 1) continue;
      if (it->second != 1)
        parser.fail("'" + label_string(label) + "' has extents " + std::to_string(it->second) + " and " +
                        std::to_string(shape[d]),
                    "one letter is one axis: give its operands equal extents there (or 1, which broadcasts)");
      it->second = shape[d];
    }
  }
  return extents;
}

// Each operand alone: diagonals of repeated letters, broadcast axes of extent
// 1 dropped (the operand is constant along them), then the letters no other
// operand and not the output name summed out.
void reduce_each_operand(std::vector<Labelled>& labelled, const std::map<Label, int64_t>& extents, const Labels& output,
                         Location where) {
  for (Labelled& x : labelled) {
    x = take_diagonals(std::move(x), where);
    Shape shape;
    Labels labels;
    for (size_t d = 0; d < x.labels.size(); ++d) {
      if (x.array.shape()[d] == 1 && extents.at(x.labels[d]) != 1) continue;
      shape.push_back(x.array.shape()[d]);
      labels.push_back(x.labels[d]);
    }
    x = {reshaped(x.array, shape, where), labels};
  }
  for (size_t i = 0; i < labelled.size(); ++i) {
    std::set<Label> keep(output.begin(), output.end());
    for (size_t j = 0; j < labelled.size(); ++j)
      if (j != i) keep.insert(labelled[j].labels.begin(), labelled[j].labels.end());
    labelled[i] = keep_only(labelled[i], keep, where);
  }
}

// Pairwise, left to right, keeping the labels the output or a later operand
// needs; then the output's axes in its order.
Array contract_in_order(const std::vector<Labelled>& labelled, const Labels& output, Location where) {
  Labelled result = labelled[0];
  for (size_t i = 1; i < labelled.size(); ++i) {
    std::set<Label> keep(output.begin(), output.end());
    for (size_t j = i + 1; j < labelled.size(); ++j) keep.insert(labelled[j].labels.begin(), labelled[j].labels.end());
    result = contract(result, labelled[i], keep, where);
  }
  result = keep_only(result, std::set<Label>(output.begin(), output.end()), where);
  KILN_CHECK(result.labels.size() == output.size(), "einsum lost an output label");
  std::vector<int64_t> perm;
  for (Label label : output)
    perm.push_back(std::find(result.labels.begin(), result.labels.end(), label) - result.labels.begin());
  return permuted(result.array, perm, where);
}

}  // namespace

Array einsum(std::string_view subscripts, std::vector<Array> operands, Location where) {
  OperationScope at("einsum", where);
  EinsumParser parser(subscripts, operands, where);
  size_t arrow = subscripts.find("->");
  if (arrow != std::string_view::npos && subscripts.find("->", arrow + 2) != std::string_view::npos)
    parser.fail("two \"->\"", "write one output after a single \"->\"");
  std::vector<Term> terms = input_terms(parser, subscripts.substr(0, arrow), operands.size());
  int64_t broadcast_rank = 0;
  std::vector<Labelled> labelled = labelled_operands(parser, terms, operands, broadcast_rank);
  std::optional<std::string_view> output_text;
  if (arrow != std::string_view::npos) output_text = subscripts.substr(arrow + 2);
  Labels output = output_labels(parser, output_text, terms, broadcast_rank);
  reduce_each_operand(labelled, label_extents(parser, labelled), output, where);
  return contract_in_order(labelled, output, where);
}

// ---- tensordot, outer, inner, kron ------------------------------------------------

Array tensordot(const Array& a, const Array& b, int axes, Location where) {
  OperationScope at("tensordot", where);
  int64_t a_rank = detail::impl_of(a, "tensordot", where).type.ndim();
  int64_t b_rank = detail::impl_of(b, "tensordot", where).type.ndim();
  if (axes < 0 || axes > a_rank || axes > b_rank)
    detail::raise("tensordot",
                  "cannot contract " + std::to_string(axes) + " axes of " + type_string(a, "tensordot", where) +
                      " and " + type_string(b, "tensordot", where),
                  where, "axes counts the last axes of a and the first of b: 0 to the smaller rank");
  std::vector<int64_t> a_axes, b_axes;
  for (int64_t k = 0; k < axes; ++k) {
    a_axes.push_back(a_rank - axes + k);
    b_axes.push_back(k);
  }
  return tensordot(a, b, {a_axes, b_axes}, where);
}

Array tensordot(const Array& a, const Array& b, const std::pair<std::vector<int64_t>, std::vector<int64_t>>& axes,
                Location where) {
  OperationScope at("tensordot", where);
  const Shape& a_shape = detail::impl_of(a, "tensordot", where).type.shape;
  const Shape& b_shape = detail::impl_of(b, "tensordot", where).type.shape;
  auto describe = [&] { return type_string(a, "tensordot", where) + " and " + type_string(b, "tensordot", where); };
  if (axes.first.size() != axes.second.size())
    detail::raise("tensordot",
                  std::to_string(axes.first.size()) + " axes of a against " + std::to_string(axes.second.size()) +
                      " of b, for " + describe(),
                  where, "pair each contracted axis of a with one of b");
  Labels a_labels(a_shape.size()), b_labels(b_shape.size());
  std::iota(a_labels.begin(), a_labels.end(), 0);
  std::iota(b_labels.begin(), b_labels.end(), static_cast<Label>(a_shape.size()));
  std::set<int64_t> a_seen, b_seen;
  for (size_t k = 0; k < axes.first.size(); ++k) {
    int64_t i = ops::normalize_axis(axes.first[k], static_cast<int64_t>(a_shape.size()), "tensordot", a_shape, where);
    int64_t j = ops::normalize_axis(axes.second[k], static_cast<int64_t>(b_shape.size()), "tensordot", b_shape, where);
    if (!a_seen.insert(i).second || !b_seen.insert(j).second)
      detail::raise("tensordot", "an axis is contracted twice, for " + describe(), where, "name each axis once");
    if (a_shape[static_cast<size_t>(i)] != b_shape[static_cast<size_t>(j)])
      detail::raise("tensordot",
                    "axis " + std::to_string(i) + " of a has " + std::to_string(a_shape[static_cast<size_t>(i)]) +
                        " elements but axis " + std::to_string(j) + " of b has " +
                        std::to_string(b_shape[static_cast<size_t>(j)]) + ", for " + describe(),
                    where, "contracted axes must have equal extents");
    b_labels[static_cast<size_t>(j)] = a_labels[static_cast<size_t>(i)];
  }
  std::set<Label> keep;
  for (Label label : a_labels)
    if (!contains(b_labels, label)) keep.insert(label);
  for (Label label : b_labels)
    if (!contains(a_labels, label)) keep.insert(label);
  return contract({a, a_labels}, {b, b_labels}, keep, where).array;
}

Array outer(const Array& a, const Array& b, Location where) {
  OperationScope at("outer", where);
  int64_t m = detail::impl_of(a, "outer", where).type.size(), n = detail::impl_of(b, "outer", where).type.size();
  return reshape(a, {m, 1}) * reshape(b, {1, n});
}

Array inner(const Array& a, const Array& b, Location where) {
  OperationScope at("inner", where);
  const Shape& a_shape = detail::impl_of(a, "inner", where).type.shape;
  const Shape& b_shape = detail::impl_of(b, "inner", where).type.shape;
  if (a_shape.empty() || b_shape.empty()) return a * b;
  if (a_shape.back() != b_shape.back())
    detail::raise("inner",
                  "the last axes differ (" + std::to_string(a_shape.back()) + " and " + std::to_string(b_shape.back()) +
                      ") for " + type_string(a, "inner", where) + " and " + type_string(b, "inner", where),
                  where, "inner contracts the last axis of each: give them equal extents");
  return tensordot(a, b, {{-1}, {-1}}, where);
}

Array kron(const Array& a, const Array& b, Location where) {
  OperationScope at("kron", where);
  Shape a_shape = detail::impl_of(a, "kron", where).type.shape;
  Shape b_shape = detail::impl_of(b, "kron", where).type.shape;
  size_t rank = std::max(a_shape.size(), b_shape.size());
  a_shape.insert(a_shape.begin(), rank - a_shape.size(), 1);
  b_shape.insert(b_shape.begin(), rank - b_shape.size(), 1);
  // Axis d becomes [a_d, b_d]: a varies slowest, b fastest, then they merge.
  Shape a_spread, b_spread, result;
  for (size_t d = 0; d < rank; ++d) {
    a_spread.insert(a_spread.end(), {a_shape[d], 1});
    b_spread.insert(b_spread.end(), {1, b_shape[d]});
    result.push_back(a_shape[d] * b_shape[d]);
  }
  return reshape(reshape(a, a_spread) * reshape(b, b_spread), result);
}

// ---- cross, nan_to_num --------------------------------------------------------------

Array cross(const Array& a, const Array& b, int64_t axis, Location where) {
  OperationScope at("cross", where);
  const Shape& a_shape = detail::impl_of(a, "cross", where).type.shape;
  const Shape& b_shape = detail::impl_of(b, "cross", where).type.shape;
  auto describe = [&] { return type_string(a, "cross", where) + " and " + type_string(b, "cross", where); };
  if (a_shape.empty() || b_shape.empty())
    detail::raise("cross", "needs vectors, got " + describe(), where, "give both operands an axis of 3 components");
  int64_t a_axis = ops::normalize_axis(axis, static_cast<int64_t>(a_shape.size()), "cross", a_shape, where);
  int64_t b_axis = ops::normalize_axis(axis, static_cast<int64_t>(b_shape.size()), "cross", b_shape, where);
  int64_t a_extent = a_shape[static_cast<size_t>(a_axis)], b_extent = b_shape[static_cast<size_t>(b_axis)];
  if (a_extent == 2 || b_extent == 2)
    detail::raise("cross", "takes 3-vectors along axis " + std::to_string(axis) + ", got 2 components in " + describe(),
                  where,
                  "2-vectors (NumPy's z-component) are deprecated in NumPy 2: append a zero component, take the "
                  "cross product and read its last component");
  if (a_extent != 3 || b_extent != 3)
    detail::raise("cross", "takes 3-vectors along axis " + std::to_string(axis) + ", got " + describe(), where,
                  "pick the axis holding the 3 components with axis=");
  Array x = moveaxis(a, a_axis, -1, where), y = moveaxis(b, b_axis, -1, where);
  auto component = [&](const Array& v, int64_t k) {
    std::vector<int64_t> start(static_cast<size_t>(v.ndim()), 0), stop = v.shape();
    start.back() = k;
    stop.back() = k + 1;
    return slice(v, start, stop, {}, where);
  };
  auto term = [&](int64_t i, int64_t j) {
    return component(x, i) * component(y, j) - component(x, j) * component(y, i);
  };
  Array result = concatenate({term(1, 2), term(2, 0), term(0, 1)}, -1, where);
  int64_t destination = ops::normalize_axis(axis, result.ndim(), "cross", result.shape(), where);
  return moveaxis(result, -1, destination, where);
}

Array nan_to_num(const Array& x, double nan, std::optional<double> posinf, std::optional<double> neginf,
                 Location where) {
  OperationScope at("nan_to_num", where);
  DType dtype = detail::impl_of(x, "nan_to_num", where).type.dtype;
  if (!is_floating(dtype)) return x;
  double largest = 0;
  switch (dtype) {
    case DType::f16: largest = static_cast<double>(std::numeric_limits<float16>::max()); break;
    case DType::bf16: largest = static_cast<double>(std::numeric_limits<bfloat16>::max()); break;
    case DType::f32: largest = std::numeric_limits<float>::max(); break;
    default: largest = std::numeric_limits<double>::max(); break;
  }
  Array infinite = isinf(x);
  Array out = kiln::where(isnan(x), nan, x);
  out = kiln::where(logical_and(infinite, x > 0), posinf.value_or(largest), out);
  return kiln::where(logical_and(infinite, x < 0), neginf.value_or(-largest), out);
}

}  // namespace kiln
