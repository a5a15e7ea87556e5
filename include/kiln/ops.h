// Every array operation, as free functions and operators. Semantics follow
// NumPy (broadcasting, axes, matmul); dtype promotion follows JAX, with C++
// numbers weakly typed. Each function records the caller's source line.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/array.h"

namespace kiln {

/// An Array or a C++ number, remembering the line where the user wrote it.
/// Operators take Operands so that `a * b` reports the line of `a * b`.
///
/// Like std::string_view, an Operand made from a named array refers to it
/// (a temporary one is moved in and held): an operation's operands then cost
/// no reference count updates, which tracing feels at every operation. It is
/// a parameter type: keep the named arrays alive while an Operand refers to them.
class Operand {
 public:
  Operand(const Array& array, Location where = Location::current()) : array_(&array), where_(where) {}
  Operand(Array&& array, Location where = Location::current())
      : held_(std::move(array)), array_(&held_), where_(where) {}
  template <Number T>
  Operand(T value, Location where = Location::current()) : number_(value), is_number_(true), where_(where) {}

  Operand(const Operand& other)
      : held_(other.held_),
        array_(other.holds() ? &held_ : other.array_),
        number_(other.number_),
        is_number_(other.is_number_),
        where_(other.where_) {}
  Operand(Operand&& other) noexcept
      : held_(std::move(other.held_)),
        array_(other.holds() ? &held_ : other.array_),
        number_(other.number_),
        is_number_(other.is_number_),
        where_(other.where_) {}
  Operand& operator=(const Operand& other) {
    if (this != &other) *this = Operand(other);
    return *this;
  }
  Operand& operator=(Operand&& other) noexcept {
    held_ = std::move(other.held_);
    array_ = other.holds() ? &held_ : other.array_;
    number_ = other.number_;
    is_number_ = other.is_number_;
    where_ = other.where_;
    return *this;
  }

  bool is_number() const { return is_number_; }
  const Array& array() const { return array_ ? *array_ : held_; }
  const Scalar& number() const { return number_; }
  Location where() const { return where_; }

 private:
  bool holds() const { return array_ == &held_; }

  Array held_;                    // a temporary array, or none
  const Array* array_ = nullptr;  // the array: held_ or a named one; null for numbers
  Scalar number_;
  bool is_number_ = false;
  Location where_;
};

/// A set of axes for reductions, squeeze, flip. Default-constructed means
/// "all axes"; negative axes count from the end.
class Axes {
 public:
  Axes() = default;
  Axes(int axis) : axes_{axis}, all_(false) {}
  Axes(int64_t axis) : axes_{axis}, all_(false) {}
  Axes(std::initializer_list<int64_t> axes) : axes_(axes), all_(false) {}
  Axes(std::vector<int64_t> axes) : axes_(std::move(axes)), all_(false) {}
  static Axes all() { return Axes(); }

  bool is_all() const { return all_; }
  const std::vector<int64_t>& list() const { return axes_; }

 private:
  std::vector<int64_t> axes_;
  bool all_ = true;
};

// ---- Elementwise, binary (NumPy broadcasting, JAX promotion) -----------------
Array add(Operand a, Operand b);
Array sub(Operand a, Operand b);
Array mul(Operand a, Operand b);
/// True division: integers divide as floats, as in NumPy and JAX.
Array div(Operand a, Operand b);
Array pow(Operand a, Operand b);
/// NaN-propagating, like NumPy.
Array maximum(Operand a, Operand b);
Array minimum(Operand a, Operand b);
Array equal(Operand a, Operand b);
Array not_equal(Operand a, Operand b);
Array less(Operand a, Operand b);
Array less_equal(Operand a, Operand b);
Array greater(Operand a, Operand b);
Array greater_equal(Operand a, Operand b);
Array logical_and(Operand a, Operand b);
Array logical_or(Operand a, Operand b);
/// The angle of the point (x, y) in [-pi, pi] (NumPy's arctan2: C99's signed
/// zeros and infinities, arctan2(+-0, -0) = +-pi).
Array arctan2(Operand y, Operand x);
/// NumPy's floor division and its remainder, which takes the divisor's sign:
/// a == floor_divide(a, b) * b + remainder(a, b). Integers divided by 0 give 0
/// (both), MIN / -1 wraps to MIN; floats divided by 0 give +-inf or NaN (and a
/// NaN remainder). Not for bool.
Array floor_divide(Operand a, Operand b);
Array remainder(Operand a, Operand b);
/// (floor_divide(a, b), remainder(a, b)).
std::pair<Array, Array> divmod(Operand a, Operand b);
/// |a| with the sign bit of b; integers in f32.
Array copysign(Operand a, Operand b);
/// The next representable value after a toward b (b where they are equal); integers in f32.
Array nextafter(Operand a, Operand b);

// ---- Elementwise on bits (integers; bool as one bit) ---------------------------
/// Floats are an error (convert with astype first).
Array bitwise_and(Operand a, Operand b);
Array bitwise_or(Operand a, Operand b);
Array bitwise_xor(Operand a, Operand b);
/// ~x; for bool, logical not (NumPy's invert).
Array bitwise_not(const Array& x, Location where = Location::current());
/// Integers only. A count outside [0, bits) (negative included) shifts every
/// bit out: 0, or -1 for a right shift of a negative value; right shifts are
/// arithmetic (JAX's shift_left and shift_right_arithmetic, NumPy's).
Array left_shift(Operand a, Operand b);
Array right_shift(Operand a, Operand b);

// ---- Elementwise, unary ------------------------------------------------------
// Transcendental functions promote integers and bool to f32 (as JAX does).
Array neg(const Array& x, Location where = Location::current());
Array abs(const Array& x, Location where = Location::current());
Array sign(const Array& x, Location where = Location::current());
Array exp(const Array& x, Location where = Location::current());
Array exp2(const Array& x, Location where = Location::current());
Array log(const Array& x, Location where = Location::current());
Array log2(const Array& x, Location where = Location::current());
Array log10(const Array& x, Location where = Location::current());
Array log1p(const Array& x, Location where = Location::current());
Array expm1(const Array& x, Location where = Location::current());
Array sqrt(const Array& x, Location where = Location::current());
Array rsqrt(const Array& x, Location where = Location::current());
Array square(const Array& x, Location where = Location::current());
Array tanh(const Array& x, Location where = Location::current());
Array sigmoid(const Array& x, Location where = Location::current());
Array erf(const Array& x, Location where = Location::current());
Array sin(const Array& x, Location where = Location::current());
Array cos(const Array& x, Location where = Location::current());
Array arctan(const Array& x, Location where = Location::current());
Array floor(const Array& x, Location where = Location::current());
Array ceil(const Array& x, Location where = Location::current());
/// Rounds half to even, as NumPy does.
Array round(const Array& x, Location where = Location::current());
Array logical_not(const Array& x, Location where = Location::current());
Array isnan(const Array& x, Location where = Location::current());
Array relu(const Array& x, Location where = Location::current());
/// Complex numbers (NumPy's names): the complex conjugate, the real and
/// imaginary parts (f32 of c64, f64 of c128) and the angle in [-pi, pi]
/// (arctan2(imag, real)). Of a real array, conj and real are the array
/// itself, imag is zeros and angle is 0 or pi (0 for NaN's sign bit clear).
Array conj(const Array& x, Location where = Location::current());
Array real(const Array& x, Location where = Location::current());
Array imag(const Array& x, Location where = Location::current());
Array angle(const Array& x, Location where = Location::current());
/// Conversion; floating to integer truncates toward zero, NaN becomes 0 and
/// out-of-range values saturate (defined behaviour, unlike a C++ cast). Real
/// to complex gives a zero imaginary part; complex to real keeps the real part
/// (NumPy's and JAX's astype, which drop the imaginary part).
Array astype(const Array& x, DType dtype, Location where = Location::current());
/// Composites of the primitives above (NumPy's names and special values).
Array tan(const Array& x, Location where = Location::current());
Array sinh(const Array& x, Location where = Location::current());
Array cosh(const Array& x, Location where = Location::current());
/// Inverse trigonometric and hyperbolic functions (NumPy's names, NaN outside
/// their domains), built on arctan2, log1p and sqrt.
Array arcsin(const Array& x, Location where = Location::current());
Array arccos(const Array& x, Location where = Location::current());
Array arcsinh(const Array& x, Location where = Location::current());
Array arccosh(const Array& x, Location where = Location::current());
Array arctanh(const Array& x, Location where = Location::current());
/// 1 / x; integers give floats (true division).
Array reciprocal(const Array& x, Location where = Location::current());
Array degrees(const Array& x, Location where = Location::current());
Array radians(const Array& x, Location where = Location::current());
Array isinf(const Array& x, Location where = Location::current());
Array isfinite(const Array& x, Location where = Location::current());
/// The inverse of erf on [-1, 1] (+-inf at +-1, NaN outside).
Array erfinv(const Array& x, Location where = Location::current());
/// log(exp(a) + exp(b)) without overflow.
Array logaddexp(Operand a, Operand b);
/// sqrt(a*a + b*b) without overflow or underflow in the squares.
Array hypot(Operand a, Operand b);

/// Identity whose derivative is zero.
Array stop_gradient(const Array& x, Location where = Location::current());

/// Elementwise choice: x where cond is true, else y (cond broadcasts too).
Array where(Operand cond, Operand x, Operand y);
Array clip(Operand x, Operand lo, Operand hi);

// ---- Shape -------------------------------------------------------------------
/// One dimension may be -1 and is inferred.
Array reshape(const Array& x, Shape shape, Location where = Location::current());
/// Empty `perm` reverses the axes.
Array transpose(const Array& x, std::vector<int64_t> perm = {}, Location where = Location::current());
Array broadcast_to(const Array& x, Shape shape, Location where = Location::current());
Array expand_dims(const Array& x, Axes axes, Location where = Location::current());
/// Default: every axis of extent 1.
Array squeeze(const Array& x, Axes axes = Axes::all(), Location where = Location::current());
/// Static slicing per axis, NumPy style: negative start/stop count from the
/// end; `step` >= 1 (use `flip` to reverse). Omitted trailing axes are whole.
Array slice(const Array& x, std::vector<int64_t> start, std::vector<int64_t> stop, std::vector<int64_t> step = {},
            Location where = Location::current());
Array concatenate(const std::vector<Array>& xs, int64_t axis = 0, Location where = Location::current());
Array stack(const std::vector<Array>& xs, int64_t axis = 0, Location where = Location::current());
/// Constant padding: `lo[i]`/`hi[i]` elements before/after axis i.
Array pad(const Array& x, std::vector<int64_t> lo, std::vector<int64_t> hi, Scalar value = 0,
          Location where = Location::current());
Array flip(const Array& x, Axes axes = Axes::all(), Location where = Location::current());
/// Pads `axis` with `value` up to the smallest of `buckets` that holds it (by
/// default the next power of two), so a jitted function sees a few shapes
/// instead of one per length. Lengths beyond the largest bucket are an error.
Array pad_to_bucket(const Array& x, int64_t axis, std::vector<int64_t> buckets = {}, Scalar value = 0,
                    Location where = Location::current());

/// NumPy's shape helpers, built from reshape, transpose, slice and concatenate.
Array flatten(const Array& x, Location where = Location::current());
Array ravel(const Array& x, Location where = Location::current());
Array swapaxes(const Array& x, int64_t axis1, int64_t axis2, Location where = Location::current());
/// Moves axis `source` to position `destination`, the others keeping their order.
Array moveaxis(const Array& x, int64_t source, int64_t destination, Location where = Location::current());
Array atleast_1d(const Array& x, Location where = Location::current());
/// A vector [n] becomes [1, n].
Array atleast_2d(const Array& x, Location where = Location::current());
/// [n] becomes [1, n, 1]; [m, n] becomes [m, n, 1].
Array atleast_3d(const Array& x, Location where = Location::current());
/// Elements shifted by `shift` along `axis` (the flattened array without
/// one), wrapping around.
Array roll(const Array& x, int64_t shift, std::optional<int64_t> axis = std::nullopt,
           Location where = Location::current());
/// `sections` equal parts along `axis` (its extent must divide evenly).
std::vector<Array> split(const Array& x, int64_t sections, int64_t axis = 0, Location where = Location::current());
/// Parts cut before each of `indices` along `axis` (NumPy's split with a list).
std::vector<Array> split(const Array& x, const std::vector<int64_t>& indices, int64_t axis = 0,
                         Location where = Location::current());
/// The slices along `axis`, that axis removed.
std::vector<Array> unstack(const Array& x, int64_t axis = 0, Location where = Location::current());
/// x repeated `reps[i]` times along each axis (NumPy's tile).
Array tile(const Array& x, std::vector<int64_t> reps, Location where = Location::current());
/// Each element repeated `repeats` times along `axis` (the flattened array without one).
Array repeat(const Array& x, int64_t repeats, std::optional<int64_t> axis = std::nullopt,
             Location where = Location::current());
/// The lower (upper) triangle of the last two axes: elements with
/// column - row <= k (>= k) kept, the others 0.
Array tril(const Array& x, int64_t k = 0, Location where = Location::current());
Array triu(const Array& x, int64_t k = 0, Location where = Location::current());
/// n x m ones on and below diagonal k.
Array tri(int64_t n, std::optional<int64_t> m = std::nullopt, int64_t k = 0, DType dtype = DType::f32,
          Location where = Location::current());
/// Every array broadcast to their common shape.
std::vector<Array> broadcast_arrays(const std::vector<Array>& xs, Location where = Location::current());
/// Coordinate arrays from 1-d arrays; `xy` indexing swaps the first two
/// output axes (NumPy's default), `ij` keeps them.
/// The diagonal `offset` of the matrices in axes (axis1, axis2), moved last (NumPy).
Array diagonal(const Array& x, int64_t offset = 0, int64_t axis1 = 0, int64_t axis2 = 1,
               Location where = Location::current());
/// The sum of that diagonal.
Array trace(const Array& x, int64_t offset = 0, int64_t axis1 = 0, int64_t axis2 = 1,
            Location where = Location::current());
/// A vector's square matrix with it on diagonal k, or a matrix's diagonal k (NumPy).
Array diag(const Array& x, int64_t k = 0, Location where = Location::current());
std::vector<Array> meshgrid(const std::vector<Array>& xs, bool xy_indexing = true,
                            Location where = Location::current());

// ---- Reductions --------------------------------------------------------------
/// Sum of bool/i32 gives i32 (JAX), i64 stays i64.
Array sum(const Array& x, Axes axes = Axes::all(), bool keepdims = false, Location where = Location::current());
/// Mean of integers is f32.
Array mean(const Array& x, Axes axes = Axes::all(), bool keepdims = false, Location where = Location::current());
Array max(const Array& x, Axes axes = Axes::all(), bool keepdims = false, Location where = Location::current());
Array min(const Array& x, Axes axes = Axes::all(), bool keepdims = false, Location where = Location::current());
Array prod(const Array& x, Axes axes = Axes::all(), bool keepdims = false, Location where = Location::current());
/// Index (i32) of the first maximum; without an axis, of the flattened array.
Array argmax(const Array& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false,
             Location where = Location::current());
Array argmin(const Array& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false,
             Location where = Location::current());
Array logsumexp(const Array& x, Axes axes = Axes::all(), bool keepdims = false, Location where = Location::current());
Array softmax(const Array& x, int64_t axis = -1, Location where = Location::current());
Array log_softmax(const Array& x, int64_t axis = -1, Location where = Location::current());
/// Without an axis, of the flattened array.
Array cumsum(const Array& x, std::optional<int64_t> axis = std::nullopt, Location where = Location::current());
/// Running maximum / minimum along `axis` (the flattened array without one);
/// NaN, once met, stays (np.maximum.accumulate).
Array cummax(const Array& x, std::optional<int64_t> axis = std::nullopt, Location where = Location::current());
Array cummin(const Array& x, std::optional<int64_t> axis = std::nullopt, Location where = Location::current());
/// Running product along `axis` (the flattened array without one), from the
/// end when `reverse`; bool counts as i32 (as cumsum). Its derivative is
/// exact where x holds zeros (as torch.cumprod's).
Array cumprod(const Array& x, std::optional<int64_t> axis = std::nullopt, bool reverse = false,
              Location where = Location::current());

// ---- Statistics and whole-array predicates ----------------------------------
/// Whether any (all) element is nonzero (NaN counts as nonzero); bool. Of
/// nothing: false (true), as NumPy.
Array any(const Array& x, Axes axes = Axes::all(), bool keepdims = false, Location where = Location::current());
Array all(const Array& x, Axes axes = Axes::all(), bool keepdims = false, Location where = Location::current());
/// The number of nonzero elements, i64.
Array count_nonzero(const Array& x, Axes axes = Axes::all(), bool keepdims = false,
                    Location where = Location::current());
/// Variance and standard deviation with NumPy's ddof (divisor n - ddof, or
/// 0 when that is negative); integers in f32 (as mean).
Array var(const Array& x, Axes axes = Axes::all(), int64_t ddof = 0, bool keepdims = false,
          Location where = Location::current());
Array std(const Array& x, Axes axes = Axes::all(), int64_t ddof = 0, bool keepdims = false,
          Location where = Location::current());
/// NumPy's isclose: |a - b| <= atol + rtol * |b| elementwise (broadcasting),
/// infinities close only to themselves, NaN close to NaN only with equal_nan.
Array isclose(const Array& a, const Array& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false,
              Location where = Location::current());
/// all(isclose(...)), a 0-d bool.
Array allclose(const Array& a, const Array& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false,
               Location where = Location::current());
/// Same shape and equal elements (NaN equal to NaN with equal_nan), a 0-d bool.
Array array_equal(const Array& a, const Array& b, bool equal_nan = false, Location where = Location::current());

// ---- Linear algebra and indexing ---------------------------------------------
/// NumPy matmul: 1-d operands are promoted to matrices, batch dims broadcast.
Array matmul(const Array& a, const Array& b, Location where = Location::current());
/// NumPy's einsum: "ij,jk->ik" (explicit output) or "ij,jk" (implicit: the
/// letters that appear once, sorted, after any "..."); a letter repeated in
/// one operand takes its diagonal, letters missing from the output are
/// summed, "..." broadcasts, extents of 1 broadcast. Operands contract
/// pairwise left to right, each pair as one batched matmul (an elementwise
/// product stays a broadcast multiply); the dtype is the operands' promotion.
Array einsum(std::string_view subscripts, std::vector<Array> operands, Location where = Location::current());
/// NumPy's tensordot: the last `axes` axes of a against the first of b.
Array tensordot(const Array& a, const Array& b, int axes = 2, Location where = Location::current());
/// Axes a_axes[k] of a against b_axes[k] of b (negative from the end); the
/// result is a's other axes, then b's.
Array tensordot(const Array& a, const Array& b, const std::pair<std::vector<int64_t>, std::vector<int64_t>>& axes,
                Location where = Location::current());
/// NumPy's outer: both flattened, [a.size, b.size].
Array outer(const Array& a, const Array& b, Location where = Location::current());
/// NumPy's inner: the last axes contracted (a 0-d operand multiplies).
Array inner(const Array& a, const Array& b, Location where = Location::current());
/// NumPy's kron: the block product, ranks padded with leading 1s.
Array kron(const Array& a, const Array& b, Location where = Location::current());
/// NumPy's cross of 3-vectors along `axis` of both (the other axes broadcast).
Array cross(const Array& a, const Array& b, int64_t axis = -1, Location where = Location::current());
/// NumPy's nan_to_num: NaN to `nan`, +inf to `posinf` (default: the dtype's
/// largest), -inf to `neginf` (default: its lowest); integers and bool as they are.
Array nan_to_num(const Array& x, double nan = 0.0, std::optional<double> posinf = std::nullopt,
                 std::optional<double> neginf = std::nullopt, Location where = Location::current());

// ---- Sorting (NumPy: NaN orders after every number; ties keep their order) ----
/// Along `axis`; descending puts NaN first, then largest to smallest (torch.sort).
Array sort(const Array& x, int64_t axis = -1, bool descending = false, Location where = Location::current());
/// The stable order along `axis` as indices (i32, or i64 past 2^31 elements).
Array argsort(const Array& x, int64_t axis = -1, bool descending = false, Location where = Location::current());
/// The k largest along the last axis, largest first (ties: lower index
/// first), and their indices: (values, indices).
std::pair<Array, Array> top_k(const Array& x, int64_t k, Location where = Location::current());
/// Element kth (negative counts from the end) in its sorted place along
/// `axis`, none larger before it, none smaller after it (NumPy's partition);
/// argpartition gives the indices.
Array partition(const Array& x, int64_t kth, int64_t axis = -1, Location where = Location::current());
Array argpartition(const Array& x, int64_t kth, int64_t axis = -1, Location where = Location::current());
/// NumPy's median and quantile (the linear method) over `axes`, in the
/// floating dtype (integers and bool in f32); a NaN in a line makes its result NaN.
Array median(const Array& x, Axes axes = Axes::all(), bool keepdims = false, Location where = Location::current());
Array quantile(const Array& x, double q, Axes axes = Axes::all(), bool keepdims = false,
               Location where = Location::current());
/// One result per q, stacked along a new first axis (NumPy).
Array quantile(const Array& x, const std::vector<double>& qs, Axes axes = Axes::all(), bool keepdims = false,
               Location where = Location::current());
/// Gathers along `axis` (flattened when omitted). Indices are wrapped once if
/// negative, then clamped into range (NumPy would raise for out-of-range).
Array take(const Array& x, const Array& indices, std::optional<int64_t> axis = std::nullopt,
           Location where = Location::current());
Array take_along_axis(const Array& x, const Array& indices, int64_t axis, Location where = Location::current());
/// Slice of static `sizes` at dynamic `starts`, clamped so the slice fits (JAX).
Array dynamic_slice(const Array& x, std::vector<Operand> starts, Shape sizes, Location where = Location::current());
Array dynamic_update_slice(const Array& x, const Array& update, std::vector<Operand> starts,
                           Location where = Location::current());
/// The transpose of `take`: adds `updates` (shape of take(x, indices, axis))
/// into a copy of x at `indices` along `axis`; repeated indices accumulate.
Array scatter_add(const Array& x, const Array& indices, const Array& updates, int64_t axis = 0,
                  Location where = Location::current());
/// tf.gather_nd (JAX's common gather): the windows x[i_0, ..., i_{k-1}] at
/// each position of integer `indices` [..., k]; the result is
/// indices.shape[:-1] + x.shape[k:]. A negative index counts from the end
/// once; an index still outside its axis is clamped into it (as JAX).
Array gather(const Array& x, const Array& indices, Location where = Location::current());
/// The scatter family, JAX's x.at[...] along one axis: `updates` has the
/// shape of take(x, indices, axis) and is written into a copy of x at
/// `indices` along `axis`. scatter assigns (with repeated indices the last
/// update, in row-major order of the indices, wins: deterministic),
/// scatter_mul multiplies, scatter_max / scatter_min keep the extreme (NaN
/// propagates). A negative index counts from the end once; an update whose
/// index is still outside the axis is dropped (as JAX; scatter_add clamps).
Array scatter(const Array& x, const Array& indices, const Array& updates, int64_t axis = 0,
              Location where = Location::current());
Array scatter_mul(const Array& x, const Array& indices, const Array& updates, int64_t axis = 0,
                  Location where = Location::current());
Array scatter_max(const Array& x, const Array& indices, const Array& updates, int64_t axis = 0,
                  Location where = Location::current());
Array scatter_min(const Array& x, const Array& indices, const Array& updates, int64_t axis = 0,
                  Location where = Location::current());
/// np.put_along_axis, functional: x with `values` (broadcast to the shape
/// take_along_axis(x, indices, axis) has) written where take_along_axis
/// would read; out-of-range indices (after wrapping once) are dropped, and
/// repeated ones keep the last value.
Array put_along_axis(const Array& x, const Array& indices, Operand values, int64_t axis,
                     Location where = Location::current());
/// NumPy's indexing, x[...] written kiln::index(x, {...}): an integer
/// (negative counts from the end) drops its axis, Slice{start, stop, step}
/// is Python's start:stop:step (any bound may be omitted, steps may be
/// negative), kiln::newaxis adds an axis of extent 1, kiln::ellipsis stands
/// for every axis not named, and integer Arrays index their axes together
/// (NumPy's advanced indexing: the arrays broadcast against each other, and
/// their dimensions replace the indexed axes where they stand when the
/// arrays and integers are adjacent, else go first). Out-of-range array
/// entries are clamped, as gather's, where NumPy raises. Boolean arrays are
/// refused: the number of elements they select depends on their values.
struct Slice {
  std::optional<int64_t> start, stop;
  int64_t step = 1;
};
struct NewAxis {};
inline constexpr NewAxis newaxis{};
struct Ellipsis {};
inline constexpr Ellipsis ellipsis{};
class Index {
 public:
  enum class Kind { integer, slice, new_axis, ellipsis, array };
  Index(int value) : kind_(Kind::integer), integer_(value) {}
  Index(int64_t value) : kind_(Kind::integer), integer_(value) {}
  Index(Slice value) : kind_(Kind::slice), slice_(value) {}
  Index(NewAxis) : kind_(Kind::new_axis) {}
  Index(Ellipsis) : kind_(Kind::ellipsis) {}
  Index(Array value) : kind_(Kind::array), array_(std::move(value)) {}
  Kind kind() const { return kind_; }
  int64_t integer() const { return integer_; }
  const Slice& slice() const { return slice_; }
  const Array& array() const { return array_; }

 private:
  Kind kind_;
  int64_t integer_ = 0;
  Slice slice_;
  Array array_;
};
Array index(const Array& x, const std::vector<Index>& indices, Location where = Location::current());

/// JAX's x.at[...], written x.at({...}): the update of the elements
/// index(x, {...}) selects, returning a new array (x is unchanged). `values`
/// broadcast to the selection's shape and convert to x's dtype. Elements an
/// out-of-range array entry would select are left alone (as JAX drops
/// them); where an element is selected several times, set keeps the last
/// value and add/mul/max/min combine them all.
class IndexUpdate {
 public:
  IndexUpdate(Array x, std::vector<Index> indices) : x_(std::move(x)), indices_(std::move(indices)) {}
  /// index(x, {...}).
  Array get(Location where = Location::current()) const;
  Array set(Operand values, Location where = Location::current()) const;
  Array add(Operand values, Location where = Location::current()) const;
  Array mul(Operand values, Location where = Location::current()) const;
  Array max(Operand values, Location where = Location::current()) const;
  Array min(Operand values, Location where = Location::current()) const;

 private:
  Array x_;
  std::vector<Index> indices_;
};

Array one_hot(const Array& indices, int64_t num_classes, DType dtype = DType::f32,
              Location where = Location::current());

// ---- Operators -----------------------------------------------------------------
Array operator+(Operand a, Operand b);
Array operator-(Operand a, Operand b);
Array operator*(Operand a, Operand b);
Array operator/(Operand a, Operand b);
Array operator<(Operand a, Operand b);
Array operator<=(Operand a, Operand b);
Array operator>(Operand a, Operand b);
Array operator>=(Operand a, Operand b);
Array operator==(Operand a, Operand b);
Array operator!=(Operand a, Operand b);
/// Bitwise, as NumPy's: on bool arrays they are logical and, or, xor and not.
Array operator&(Operand a, Operand b);   // bitwise_and
Array operator|(Operand a, Operand b);   // bitwise_or
Array operator^(Operand a, Operand b);   // bitwise_xor
Array operator~(Operand x);              // bitwise_not
Array operator<<(Operand a, Operand b);  // left_shift
Array operator>>(Operand a, Operand b);  // right_shift
Array operator-(Operand x);
Array operator!(Operand x);

}  // namespace kiln
