// Helpers of the dtype family suites (see dtype_families.h).
#include "dtype_families.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "backend/interp/interpreter.h"
#include "core/dispatch.h"

namespace kiln::testing {

namespace {

template <class T>
std::vector<T> integers(DtypeData& data, int64_t n, Values values) {
  std::vector<T> v(static_cast<size_t>(n));
  constexpr bool is_signed = std::numeric_limits<T>::is_signed;
  const T extremes[] = {std::numeric_limits<T>::min(),
                        std::numeric_limits<T>::max(),
                        T(0),
                        static_cast<T>(is_signed ? -1 : 1),
                        static_cast<T>(std::numeric_limits<T>::max() / 2 + 1),  // 2^63 for u64
                        static_cast<T>(std::numeric_limits<T>::min() + 1)};
  for (T& x : v) {
    int64_t pick = data.integer(0, 9);
    if (values == Values::small || pick < 5) x = static_cast<T>(is_signed ? data.integer(-6, 6) : data.integer(0, 12));
    else if (pick < 7) x = extremes[data.integer(0, 5)];
    else x = static_cast<T>(data.engine()());
  }
  return v;
}

}  // namespace

Array DtypeData::operator()(const Shape& shape, DType dtype, Values values) {
  int64_t n = shape_size(shape);
  if (is_integer(dtype))
    return detail::dispatch(dtype, [&]<class T>() -> Array {
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
        return array(integers<T>(*this, n, values), shape);
      else return Array();
    });
  if (dtype == DType::bool_) {
    std::vector<bool> v(static_cast<size_t>(n));
    for (auto&& b : v) b = engine_() & 1;
    return array(v, shape);
  }
  const double inf = std::numeric_limits<double>::infinity();
  const double big = dtype == DType::f16 ? 60000.0 : 1e30;
  const double tiny = dtype == DType::f16 ? 3e-6 : 1e-39;  // subnormal in both
  const std::vector<double> specials = {std::nan(""), inf, -inf, 0.0, -0.0, 0.5, -2.5, big, -big, tiny, -tiny};
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) {
    x = std::uniform_real_distribution<double>(-4, 4)(engine_);
    if (values == Values::small) x = std::round(x * 4) / 4;
    else if (values == Values::mixed && integer(0, 6) == 0) x = specials[static_cast<size_t>(integer(0, 10))];
  }
  return astype(array(v, shape), dtype);
}

Array DtypeData::range(const Shape& shape, DType dtype, double lo, double hi) {
  std::vector<double> v(static_cast<size_t>(shape_size(shape)));
  for (double& x : v) {
    x = std::uniform_real_distribution<double>(lo, hi)(engine_);
    if (!is_floating(dtype)) x = std::floor(x);
  }
  return astype(array(v, shape), dtype);
}

namespace {

std::string element_string(const Array& x, size_t i) {
  std::ostringstream text;
  text.precision(17);
  if (is_integer(x.dtype()) && is_unsigned(x.dtype())) text << x.to_vector<uint64_t>()[i];
  else if (!is_floating(x.dtype())) text << x.to_vector<int64_t>()[i];
  else text << x.to_vector<double>()[i];
  return text.str();
}

::testing::AssertionResult compare(const Array& actual, const Array& expected, double rtol, double atol, bool exact,
                                   const std::string& context) {
  if (actual.dtype() != expected.dtype())
    return ::testing::AssertionFailure() << context << ": dtype " << actual.dtype() << " vs expected "
                                         << expected.dtype();
  if (actual.shape() != expected.shape())
    return ::testing::AssertionFailure() << context << ": shape " << shape_string(actual.shape()) << " vs expected "
                                         << shape_string(expected.shape());
  std::vector<char> ok(static_cast<size_t>(shape_size(actual.shape())), 1);
  if (!is_floating(actual.dtype())) {
    std::vector<uint64_t> a = actual.to_vector<uint64_t>(), e = expected.to_vector<uint64_t>();
    for (size_t i = 0; i < a.size(); ++i) ok[i] = a[i] == e[i];
  } else {
    std::vector<double> a = actual.to_vector<double>(), e = expected.to_vector<double>();
    for (size_t i = 0; i < a.size(); ++i) {
      if (std::isnan(a[i]) || std::isnan(e[i])) ok[i] = std::isnan(a[i]) && std::isnan(e[i]);
      else if (exact || std::isinf(a[i]) || std::isinf(e[i])) ok[i] = std::memcmp(&a[i], &e[i], sizeof(double)) == 0;
      else ok[i] = std::fabs(a[i] - e[i]) <= atol + rtol * std::fabs(e[i]);
    }
  }
  std::ostringstream mismatches;
  int bad = 0;
  for (size_t i = 0; i < ok.size(); ++i)
    if (!ok[i] && bad++ < 5)
      mismatches << "\n  [" << i << "] got " << element_string(actual, i) << ", expected "
                 << element_string(expected, i);
  if (bad)
    return ::testing::AssertionFailure() << context << ": " << bad << " of " << ok.size() << " elements differ"
                                         << mismatches.str();
  return ::testing::AssertionSuccess();
}

double smallest_normal(DType dtype) {
  switch (dtype) {
    case DType::f16: return std::ldexp(1.0, -14);
    case DType::bf16:
    case DType::f32: return std::ldexp(1.0, -126);
    default: return std::ldexp(1.0, -1022);
  }
}

}  // namespace

::testing::AssertionResult same_values(const Array& actual, const Array& expected, const std::string& context) {
  return compare(actual, expected, 0, 0, true, context);
}

::testing::AssertionResult close_values(const Array& actual, const Array& expected, double rtol,
                                        const std::string& context, double atol) {
  if (rtol == 0 && atol == 0) return same_values(actual, expected, context);
  return compare(actual, expected, rtol, atol == 0 ? smallest_normal(actual.dtype()) : atol, false, context);
}

std::string numpy_round_to_bf16(const std::string& x) {
  // frexp: x = m * 2^e with m in [0.5, 1); bf16 keeps 8 significant bits,
  // down to the quantum 2^-133 of its subnormals.
  return "(lambda x: (lambda q: np.where(np.isfinite(x), np.ldexp(np.round(np.ldexp(x, -q)), q), x))"
         "(np.maximum(np.frexp(x)[1] - 8, -133)).astype(np.float32))(np.asarray(" +
         x + ", dtype=np.float64))";
}

void DtypeBatch::add(DtypeCheck check) {
  Array eager = check.fn(check.inputs);
  // bf16 inputs become float32 arrays; a bf16 result is rounded from float32
  // by torch, any other result converted to kiln's dtype.
  std::string parameters, arguments;
  const char* letters = "abcdefghijklmnopqrstuvwxyz";
  for (size_t i = 0; i < check.inputs.size(); ++i) {
    std::string letter(1, letters[i]);
    parameters += (i ? ", " : "") + letter;
    arguments +=
        (i ? ", " : "") + (check.inputs[i].dtype() == DType::bf16 ? "bf16(" + letter + ").float().numpy()" : letter);
  }
  std::string value = "(lambda " + parameters + ": " + check.numpy + ")(" + arguments + ")";
  if (check.inputs.empty()) value = check.numpy;
  std::string expression;
  if (eager.dtype() == DType::bf16)
    expression = "from_bf16(__import__('torch').from_numpy(np.array(" + value + ", dtype=np.float32)))";
  else expression = "np.asarray(" + value + ").astype(" + numpy_dtype(eager.dtype()) + ")";
  int id = oracle_.add(expression, check.inputs);
  pending_.push_back({std::move(check), eager, id});
}

void DtypeBatch::run() {
  oracle_.run();
  for (Pending& p : pending_) {
    const DtypeCheck& c = p.check;
    std::string context = c.name;
    for (const Array& input : c.inputs) context += " " + std::string(dtype_name(input.dtype()));
    SCOPED_TRACE(context);
    // Traced through the interpreter.
    Graph graph = make_graph(c.name, c.fn, c.inputs);
    Array traced = detail::interpret(graph, c.inputs, {}).at(0);
    EXPECT_EQ(traced.weak_type(), p.eager.weak_type()) << context;
    double traced_rtol = c.transcendental ? native_rtol(p.eager.dtype()) : 0;
    EXPECT_TRUE(close_values(traced, p.eager, traced_rtol, context + " (interpreter vs eager)"));
    // Jitted: one operation compiled is the eager one exactly.
    auto jitted = jit(c.fn);
    Array compiled = jitted(c.inputs);
    EXPECT_TRUE(same_values(compiled, p.eager, context + " (jit vs eager)"));
    // The oracle.
    std::optional<Array> expected = oracle_.result(p.id);
    if (!expected) {
      ADD_FAILURE() << context << ": NumPy raised\n" << oracle_.error(p.id) << "\n";
      continue;
    }
    EXPECT_TRUE(close_values(p.eager, *expected, c.rtol, context + " (eager vs NumPy)"));
  }
  pending_.clear();
}

}  // namespace kiln::testing
