// NumPy as the test oracle: cases are batched, NumPy (Debian python3-numpy)
// evaluates them all in one process, results come back as .npy files.
//
//   NumpyOracle oracle;
//   int id = oracle.add("np.tanh(a)", {x});
//   oracle.run();
//   expect_close(kiln::tanh(x), oracle.result(id));
#pragma once

#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "backend/interp/interpreter.h"
#include "ir/graph.h"
#include "transform/verify.h"

namespace kiln::testing {

class NumpyOracle {
 public:
  NumpyOracle();
  ~NumpyOracle();
  NumpyOracle(const NumpyOracle&) = delete;
  NumpyOracle& operator=(const NumpyOracle&) = delete;

  /// Queues `expression` (Python; inputs are a, b, c, ...; `np` is NumPy;
  /// bf16 arrays arrive as two-byte voids: `bf16(a)` is a torch bfloat16
  /// tensor, `from_bf16(t)` turns one back into a result kiln reads as bf16).
  /// An array passed to several cases is written (and read by NumPy) once.
  int add(const std::string& expression, const std::vector<Array>& inputs);
  /// Evaluates every queued case in one Python process.
  void run();
  /// The result of case `id`, or nullopt if NumPy raised. The rule: never
  /// dereference it unchecked; use expected() unless the test is that NumPy raised.
  std::optional<Array> result(int id) const;
  /// The result of case `id`; throws (failing the test with NumPy's error)
  /// when NumPy raised or wrote nothing.
  Array expected(int id) const;
  /// NumPy's error text for case `id` (empty if it succeeded).
  std::string error(int id) const;

 private:
  std::string directory_;
  std::string cases_;
  int count_ = 0;
  int inputs_ = 0;
  bool ran_ = false;
  std::vector<std::pair<Array, std::string>> saved_;  // kept alive so identity holds
};

/// Same shape; integers and bool exactly equal; floats within
/// |a-b| <= atol + rtol*|b| (NaN equal to NaN, infinities equal). Reports
/// `context` and the first mismatches.
::testing::AssertionResult all_close(const Array& actual, const Array& expected, double rtol, double atol,
                                     const std::string& context = "");

/// Default tolerances for a dtype: exact for integers, ~1e-5 for f32, 1e-12 for f64.
double default_rtol(DType dtype);

/// Between eager (or compiled) results and the interpreter, the libm-based
/// oracle: kiln's native vector math is within 4 ulps of the exact result
/// (test_math_accuracy's bounds) and libm within 1, and floating sums may add
/// in another order, so 8 ulps of the dtype; 0 (exact) for integers and bool.
double native_rtol(DType dtype);

/// Random test data.
class RandomArrays {
 public:
  explicit RandomArrays(uint64_t seed) : engine_(seed) {}
  Array uniform(Shape shape, DType dtype, double lo = -3, double hi = 3);
  /// Random shape of rank in [min_rank, max_rank], extents in [0, max_extent]
  /// (zero only when `allow_zero`).
  Shape shape(int min_rank, int max_rank, int max_extent = 5, bool allow_zero = true);
  /// A shape that broadcasts with `shape` (some dims set to 1, some leading dims dropped).
  Shape broadcastable(const Shape& shape);
  int64_t integer(int64_t lo, int64_t hi);  // inclusive
  std::mt19937_64& engine() { return engine_; }

 private:
  std::mt19937_64 engine_;
};

/// NumPy's name for a dtype ("float32", ...), for use in expressions.
std::string numpy_dtype(DType dtype);

/// The dtypes the operation suites loop over; test_dtypes covers the others
/// (i8, i16, unsigned integers, f16, bf16) on every family.
inline const std::vector<DType> all_dtypes = {DType::bool_, DType::i32, DType::i64, DType::f32, DType::f64};
/// Every dtype kiln has.
inline const std::vector<DType> every_dtype = {DType::bool_, DType::i8,  DType::i16, DType::i32, DType::i64,
                                               DType::u8,    DType::u16, DType::u32, DType::u64, DType::f16,
                                               DType::bf16,  DType::f32, DType::f64};

/// One kiln result waiting for NumPy's answer, compared within `rtol`.
struct OracleCase {
  Array actual;
  int id;
  std::string context;
  double rtol = 0;
};

/// After oracle.run(): each case has NumPy's dtype and values.
void expect_cases_match(const NumpyOracle& oracle, const std::vector<OracleCase>& cases);

/// Runs `fn` eagerly and traced through the interpreter: the results must
/// agree exactly (dtype, weak type, shape, values) and the traced graph must
/// pass the IR verifier. Returns the eager result.
template <class F, class... Args>
Array eager_and_traced(const std::string& context, F fn, const Args&... args) {
  Array eager = fn(args...);
  Graph graph = make_graph("eager_and_traced", fn, args...);
  transform::verify(detail::ir_of(graph));
  std::vector<Array> leaves;
  (
      [&] {
        for (const Array& leaf : tree_leaves(args)) leaves.push_back(leaf);
      }(),
      ...);
  Array traced = detail::interpret(graph, leaves, {}).at(0);
  EXPECT_EQ(traced.dtype(), eager.dtype()) << context;
  EXPECT_EQ(traced.weak_type(), eager.weak_type()) << context;
  EXPECT_EQ(traced.shape(), eager.shape()) << context;
  double rtol = native_rtol(eager.dtype());
  EXPECT_TRUE(all_close(traced, eager, rtol, rtol * 1e-300, context + " (traced vs eager)"));
  return eager;
}

}  // namespace kiln::testing
