// The sort family: sort (the values in order) and argsort (the order itself,
// or only its first k positions: top_k).
// NaN orders after every number, as in NumPy (before every number when
// descending, as torch.sort does), and ties keep their order: argsort is
// stable. Both run their reference kernels everywhere: std::sort over each
// line, already what a native kernel would call. The composites built on
// them (top_k, partition, median, quantile) are at the end.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/convert.h"
#include "core/dispatch.h"
#include "core/error_format.h"
#include "kiln/ops.h"
#include "ops/common/apply.h"
#include "ops/common/axes.h"
#include "ops/common/batching.h"
#include "ops/common/promotion.h"

namespace kiln {
namespace ops {
namespace {

bool descending(const Node& node) { return node.attrs.ints.at(1) != 0; }

AbstractValue check_sort(const Node& node, std::span<const AbstractValue* const> inputs, size_t ints) {
  const char* name = ir::primitive_name(node.op).data();
  if (inputs.size() != 1) detail::raise(name, "takes 1 operand, got " + std::to_string(inputs.size()), node.where);
  const AbstractValue& x = *inputs[0];
  check_ordered(name, x, node.where);
  const std::vector<int64_t>& a = node.attrs.ints;
  if (a.size() != ints || a[0] < 0 || a[0] >= x.ndim() || (a[1] != 0 && a[1] != 1))
    detail::raise(name, "attributes " + ints_string(a) + " do not fit " + x.to_string(), node.where);
  if (ints == 3 && (a[2] < 0 || a[2] > x.shape[static_cast<size_t>(a[0])]))
    detail::raise(name, "k=" + std::to_string(a[2]) + " is outside the axis of " + x.to_string(), node.where);
  return x;
}

/// The index dtype for positions along an axis of `extent`.
DType index_dtype(int64_t extent) { return extent > std::numeric_limits<int32_t>::max() ? DType::i64 : DType::i32; }

AbstractValue infer_sort(const Node& node, std::span<const AbstractValue* const> inputs) {
  return check_sort(node, inputs, 2);
}

AbstractValue infer_argsort(const Node& node, std::span<const AbstractValue* const> inputs) {
  AbstractValue x = check_sort(node, inputs, 3);
  auto axis = static_cast<size_t>(node.attrs.ints[0]);
  DType dtype = index_dtype(x.shape[axis]);
  x.shape[axis] = node.attrs.ints[2];
  return {dtype, false, x.shape};
}

// NaN after every number; the comparison of the descending order puts it first.
// Written with one comparison: `!(a >= b)` holds for a < b and for any NaN.
template <class T>
struct Order {
  bool descending;
  // Always inlined: it is the inner loop of every sort and of top_k, and the
  // kernels instantiated for 13 dtypes otherwise exhaust the unit's inlining budget.
  [[gnu::always_inline]] bool operator()(T a, T b) const {
    if constexpr (detail::is_floating_element<T>)
      return descending ? !(a <= b) && !detail::is_nan_element(b) : !(a >= b) && !detail::is_nan_element(a);
    else return descending ? b < a : a < b;
  }
};

Array evaluate_sort(const Node& node, std::span<const Array> inputs) {
  const detail::ArrayImpl& x = *detail::impl(inputs[0]);
  Array result = detail::allocate(node.type);
  AxisSplit lines = split_at(x.type.shape, node.attrs.ints[0]);
  detail::dispatch(x.type.dtype, [&]<class T>() {
    if constexpr (detail::is_complex_element<T>) {
      KILN_CHECK(false, "complex operands reached a kernel whose shape rule refuses them");
    } else {
      const T* in = x.data<T>();
      T* out = detail::impl(result)->mutable_data<T>();
      std::vector<T> line(static_cast<size_t>(lines.extent));
      Order<T> order{descending(node)};
      lines.each_line([&](int64_t o, int64_t i) {
        int64_t start = o * lines.extent * lines.inner + i;
        for (int64_t j = 0; j < lines.extent; ++j) line[static_cast<size_t>(j)] = in[start + j * lines.inner];
        // NaNs set apart first, so the sort itself compares numbers only.
        auto numbers = std::partition(line.begin(), line.end(),
                                      [&](T v) { return order.descending == detail::is_nan_element(v); });
        auto first = order.descending ? numbers : line.begin();
        auto last = order.descending ? line.end() : numbers;
        if (order.descending) std::sort(first, last, [](T a, T b) { return b < a; });
        else std::sort(first, last);
        for (int64_t j = 0; j < lines.extent; ++j) out[start + j * lines.inner] = line[static_cast<size_t>(j)];
      });
    }
  });
  return result;
}

Array evaluate_argsort(const Node& node, std::span<const Array> inputs) {
  const detail::ArrayImpl& x = *detail::impl(inputs[0]);
  Array result = detail::allocate(node.type);
  AxisSplit lines = split_at(x.type.shape, node.attrs.ints[0]);
  int64_t k = node.attrs.ints[2];
  detail::dispatch(x.type.dtype, [&]<class T>() {
    if constexpr (detail::is_complex_element<T>) {
      KILN_CHECK(false, "complex operands reached a kernel whose shape rule refuses them");
    } else {
      const T* in = x.data<T>();
      using Entry = std::pair<T, int64_t>;
      std::vector<Entry> line;
      Order<T> order{descending(node)};
      // Ties broken by position: a total order, so the result is stable.
      auto before = [&](const Entry& a, const Entry& b) {
        if (order(a.first, b.first)) return true;
        return !order(b.first, a.first) && a.second < b.second;
      };
      detail::dispatch(node.type.dtype, [&]<class I>() {
        if constexpr (std::is_same_v<I, int32_t> || std::is_same_v<I, int64_t>) {
          I* out = detail::impl(result)->mutable_data<I>();
          lines.each_line([&](int64_t o, int64_t i) {
            int64_t start = o * lines.extent * lines.inner + i;
            line.clear();
            if (k == 0) return;
            if (2 * k >= lines.extent) {
              for (int64_t j = 0; j < lines.extent; ++j) line.push_back({in[start + j * lines.inner], j});
              if (k == lines.extent) std::sort(line.begin(), line.end(), before);
              else std::partial_sort(line.begin(), line.begin() + k, line.end(), before);
            } else {
              // A few of many: a heap of the first k so far, whose root (the
              // last of them) each later element must beat to get in.
              // Positions only grow, so a later element ties with none it must
              // beat: one comparison with the root's value, held in a register.
              const T* row = in + start;
              for (int64_t j = 0; j < k; ++j) line.push_back({row[j * lines.inner], j});
              std::make_heap(line.begin(), line.end(), before);
              T threshold = line.front().first;
              for (int64_t j = k; j < lines.extent; ++j) {
                T value = row[j * lines.inner];
                if (!order(value, threshold)) [[likely]]
                  continue;
                std::pop_heap(line.begin(), line.end(), before);
                line.back() = {value, j};
                std::push_heap(line.begin(), line.end(), before);
                threshold = line.front().first;
              }
              std::sort_heap(line.begin(), line.end(), before);
            }
            int64_t out_start = o * k * lines.inner + i;
            for (int64_t j = 0; j < k; ++j)
              out[out_start + j * lines.inner] = static_cast<I>(line[static_cast<size_t>(j)].second);
          });
        }
      });
    }
  });
  return result;
}

std::string describe_sort(const Node& node) {
  std::string text = "axis=" + std::to_string(node.attrs.ints[0]) + (descending(node) ? " descending" : "");
  if (node.op == Primitive::argsort) text += " k=" + std::to_string(node.attrs.ints[2]);
  return text;
}

Array apply_argsort(const Array& x, int64_t axis, bool descending, int64_t k, Location where) {
  ir::Attributes attrs;
  attrs.ints = {axis, descending ? 1 : 0, k};
  return detail::apply(Primitive::argsort, {x}, std::move(attrs), where);
}

// The sorted values are x gathered at argsort's indices: cotangents go back
// through the inverse permutation, tangents come along the permutation.
std::vector<Array> sort_vjp(const Node& node, std::span<const Array> inputs, const Array&, const Array& cotangent) {
  int64_t axis = node.attrs.ints[0], extent = node.type.shape[static_cast<size_t>(axis)];
  Array order = apply_argsort(inputs[0], axis, descending(node), extent, node.where);
  Array inverse = apply_argsort(order, axis, false, extent, node.where);
  return {take_along_axis(cotangent, inverse, axis, node.where)};
}

Array sort_jvp(const Node& node, std::span<const Array> inputs, const Array&, std::span<const Array> tangents) {
  int64_t axis = node.attrs.ints[0], extent = node.type.shape[static_cast<size_t>(axis)];
  Array order = apply_argsort(inputs[0], axis, descending(node), extent, node.where);
  return take_along_axis(tangents[0], order, axis, node.where);
}

constexpr const char* sort_waiver =
    "runs its reference kernel: std::sort over each line, what a native kernel would call";

}  // namespace

void register_sort_rules(RuleTable& table) {
  table[static_cast<size_t>(Primitive::sort)] = {.infer = &infer_sort,
                                                 .evaluate = &evaluate_sort,
                                                 .describe = &describe_sort,
                                                 .vjp = &sort_vjp,
                                                 .jvp = &sort_jvp,
                                                 .batch = &batch_shifting_first_int,
                                                 .fusion = Fusion::kernel,
                                                 .cost = 16,
                                                 .no_native_lowering = sort_waiver};
  table[static_cast<size_t>(Primitive::argsort)] = {.infer = &infer_argsort,
                                                    .evaluate = &evaluate_argsort,
                                                    .describe = &describe_sort,
                                                    .no_derivative = "integer index result",
                                                    .batch = &batch_shifting_first_int,
                                                    .fusion = Fusion::kernel,
                                                    .cost = 16,
                                                    .no_native_lowering = sort_waiver};
}

}  // namespace ops

namespace {

int64_t sort_axis(const Array& x, int64_t axis, const char* operation, Location where) {
  const detail::AbstractValue& type = detail::impl_of(x, operation, where).type;
  if (type.ndim() == 0)
    detail::raise(operation, "needs an array of at least one dimension, got " + type.to_string(), where,
                  "reshape the scalar to [1] first");
  return ops::normalize_axis(axis, type.ndim(), operation, type.shape, where);
}

}  // namespace

Array sort(const Array& x, int64_t axis, bool descending, Location where) {
  int64_t a = sort_axis(x, axis, "sort", where);
  ir::Attributes attrs;
  attrs.ints = {a, descending ? 1 : 0};
  return detail::apply(ops::Primitive::sort, {x}, std::move(attrs), where);
}

Array argsort(const Array& x, int64_t axis, bool descending, Location where) {
  int64_t a = sort_axis(x, axis, "argsort", where);
  return ops::apply_argsort(x, a, descending, x.shape(a), where);
}

std::pair<Array, Array> top_k(const Array& x, int64_t k, Location where) {
  int64_t axis = sort_axis(x, -1, "top_k", where);
  int64_t extent = x.shape(axis);
  if (k < 0 || k > extent)
    detail::raise("top_k",
                  "k=" + std::to_string(k) + " is outside [0, " + std::to_string(extent) + "] for " +
                      detail::impl(x)->type.to_string(),
                  where, "ask for at most as many elements as the last axis holds");
  Array indices = ops::apply_argsort(x, axis, true, k, where);
  return {take_along_axis(x, indices, axis, where), indices};
}

Array argpartition(const Array& x, int64_t kth, int64_t axis, Location where) {
  int64_t a = sort_axis(x, axis, "argpartition", where);
  int64_t extent = x.shape(a);
  if (kth < -extent || kth >= extent)
    detail::raise("argpartition",
                  "kth=" + std::to_string(kth) + " is out of range for axis " + std::to_string(a) + " of " +
                      detail::impl(x)->type.to_string(),
                  where, "kth counts from 0, or from the end when negative");
  // The whole order is one valid partition for every kth (NumPy leaves the
  // order on either side unspecified).
  return ops::apply_argsort(x, a, false, extent, where);
}

Array partition(const Array& x, int64_t kth, int64_t axis, Location where) {
  int64_t a = sort_axis(x, axis, "partition", where);
  return take_along_axis(x, argpartition(x, kth, axis, where), a, where);
}

namespace {

// x (in its floating dtype) with the reduced axes moved last and merged into
// one line of n elements, sorted: [kept..., n].
struct SortedLines {
  Array sorted;
  Shape kept;       // the result's shape without keepdims
  Shape with_ones;  // with keepdims
  int64_t n = 1;
};

SortedLines sorted_lines(const Array& x, const Axes& axes, const char* operation, Location where) {
  const detail::AbstractValue& type = detail::impl_of(x, operation, where).type;
  std::vector<int64_t> reduced = ops::normalize_axes(axes, type.ndim(), operation, type.shape, where);
  SortedLines out;
  std::vector<int64_t> permutation;
  for (int64_t a = 0; a < type.ndim(); ++a) {
    bool is_reduced = std::find(reduced.begin(), reduced.end(), a) != reduced.end();
    out.with_ones.push_back(is_reduced ? 1 : type.shape[static_cast<size_t>(a)]);
    if (!is_reduced) {
      permutation.push_back(a);
      out.kept.push_back(type.shape[static_cast<size_t>(a)]);
    }
  }
  for (int64_t a : reduced) {
    permutation.push_back(a);
    out.n *= type.shape[static_cast<size_t>(a)];
  }
  Shape lines = out.kept;
  lines.push_back(out.n);
  Array values = ops::as_floating(x, type, where);
  out.sorted = sort(reshape(transpose(values, permutation, where), lines, where), -1, false, where);
  return out;
}

// Element `index` of every sorted line.
Array nth(const SortedLines& lines, int64_t index, Location where) {
  Shape start(lines.kept.size() + 1, 0), stop = lines.kept;
  start.back() = index;
  stop.push_back(index + 1);
  return reshape(slice(lines.sorted, start, stop, {}, where), lines.kept, where);
}

// A NaN in a line sorts last and makes its result NaN (NumPy); an empty
// line gives NaN too.
Array finished(const SortedLines& lines, const Array& value, bool keepdims, Location where) {
  Array result = value;
  if (lines.n > 0) {
    Array nan = detail::literal(std::numeric_limits<double>::quiet_NaN(), result.dtype(), true, where);
    result = kiln::where(isnan(nth(lines, lines.n - 1, where)), nan, result);
  }
  return keepdims ? reshape(result, lines.with_ones, where) : result;
}

Array empty_result(const SortedLines& lines, Location where) {
  return full(lines.kept, std::numeric_limits<double>::quiet_NaN(), lines.sorted.dtype(), where);
}

}  // namespace

Array median(const Array& x, Axes axes, bool keepdims, Location where) {
  detail::OperationScope at("median", where);
  SortedLines lines = sorted_lines(x, axes, "median", where);
  if (lines.n == 0) return finished(lines, empty_result(lines, where), keepdims, where);
  Array middle = nth(lines, lines.n / 2, where);
  if (lines.n % 2 == 0) middle = (nth(lines, lines.n / 2 - 1, where) + middle) / 2;
  return finished(lines, middle, keepdims, where);
}

Array quantile(const Array& x, double q, Axes axes, bool keepdims, Location where) {
  detail::OperationScope at("quantile", where);
  if (!(q >= 0 && q <= 1))
    detail::raise("quantile", "q=" + std::to_string(q) + " is outside [0, 1]", where,
                  "pass a fraction (0.5 for the median); for percentiles divide by 100");
  SortedLines lines = sorted_lines(x, axes, "quantile", where);
  if (lines.n == 0) return finished(lines, empty_result(lines, where), keepdims, where);
  // NumPy's linear method: position q (n - 1) between two neighbours, and
  // its two-sided interpolation (exact at both ends).
  double position = q * static_cast<double>(lines.n - 1);
  auto below = static_cast<int64_t>(std::floor(position));
  int64_t above = std::min(below + 1, lines.n - 1);
  double t = position - static_cast<double>(below);
  Array a = nth(lines, below, where), b = nth(lines, above, where);
  Array difference = b - a;
  Array value = t >= 0.5 ? b - difference * (1 - t) : a + difference * t;
  return finished(lines, value, keepdims, where);
}

Array quantile(const Array& x, const std::vector<double>& qs, Axes axes, bool keepdims, Location where) {
  std::vector<Array> each;
  for (double q : qs) each.push_back(quantile(x, q, axes, keepdims, where));
  if (each.empty())
    detail::raise("quantile", "needs at least one q", where, "pass the fractions to compute, e.g. {0.25, 0.5, 0.75}");
  return stack(each, 0, where);
}

}  // namespace kiln
