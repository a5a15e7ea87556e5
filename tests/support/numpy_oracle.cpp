// Runs NumPy for the oracle tests and compares arrays.
#include "support/numpy_oracle.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kiln::testing {

NumpyOracle::NumpyOracle() {
  std::string pattern = (std::filesystem::temp_directory_path() / "kiln-oracle-XXXXXX").string();
  if (!mkdtemp(pattern.data())) throw std::runtime_error("cannot create a temporary directory for the oracle");
  directory_ = pattern;
}

NumpyOracle::~NumpyOracle() {
  std::error_code ignored;
  std::filesystem::remove_all(directory_, ignored);
}

int NumpyOracle::add(const std::string& expression, const std::vector<Array>& inputs) {
  if (ran_) throw std::logic_error("NumpyOracle::add after run");
  std::string names;
  for (const Array& input : inputs) {
    auto same = std::find_if(saved_.begin(), saved_.end(),
                             [&](const auto& saved) { return detail::impl(saved.first) == detail::impl(input); });
    std::string name;
    if (same != saved_.end()) {
      name = same->second;
    } else {
      name = "in_" + std::to_string(inputs_++) + ".npy";
      save_npy(directory_ + "/" + name, input);
      saved_.emplace_back(input, name);
    }
    names += (names.empty() ? "" : ",") + name;
  }
  cases_ += std::to_string(count_) + "\t" + expression + "\t" + names + "\n";
  return count_++;
}

void NumpyOracle::run() {
  ran_ = true;
  std::ofstream(directory_ + "/cases.txt") << cases_;
  std::string command = std::string("'") + KILN_TEST_PYTHON + "' '" + KILN_ORACLE_SCRIPT + "' '" + directory_ + "'";
  int status = std::system(command.c_str());
  if (status != 0) throw std::runtime_error("the NumPy oracle failed: " + command);
}

std::optional<Array> NumpyOracle::result(int id) const {
  std::string path = directory_ + "/out_" + std::to_string(id) + ".npy";
  if (!std::filesystem::exists(path)) return std::nullopt;
  return load_npy(path);
}

Array NumpyOracle::expected(int id) const {
  std::optional<Array> value = result(id);
  if (!value)
    throw std::runtime_error("the NumPy oracle has no result for case " + std::to_string(id) + ": " + error(id));
  return *value;
}

std::string NumpyOracle::error(int id) const {
  std::ifstream in(directory_ + "/err_" + std::to_string(id) + ".txt");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

double native_rtol(DType dtype) {
  if (dtype == DType::f32) return 8 * std::ldexp(1.0, -24);
  if (dtype == DType::f64) return 8 * std::ldexp(1.0, -53);
  // Fused kernels round f16 and bf16 once where eager rounds every operation.
  if (dtype == DType::f16) return 4 * std::ldexp(1.0, -11);
  if (dtype == DType::bf16) return 4 * std::ldexp(1.0, -8);
  return 0;
}

double default_rtol(DType dtype) {
  switch (dtype) {
    case DType::f16: return 2e-3;
    case DType::bf16: return 1.6e-2;
    case DType::f32: return 2e-5;
    case DType::f64: return 1e-12;
    default: return 0;
  }
}

::testing::AssertionResult all_close(const Array& actual, const Array& expected, double rtol, double atol,
                                     const std::string& context) {
  if (actual.shape() != expected.shape())
    return ::testing::AssertionFailure() << context << ": shape " << shape_string(actual.shape()) << " vs expected "
                                         << shape_string(expected.shape());
  if (is_complex(actual.dtype()) || is_complex(expected.dtype())) {  // part by part
    ::testing::AssertionResult real_part = all_close(real(actual), real(expected), rtol, atol, context + " (real)");
    if (!real_part) return real_part;
    return all_close(imag(actual), imag(expected), rtol, atol, context + " (imaginary)");
  }
  std::vector<double> a = actual.to_vector<double>();
  std::vector<double> e = expected.to_vector<double>();
  bool exact = !is_floating(actual.dtype()) && !is_floating(expected.dtype());
  std::ostringstream mismatches;
  int bad = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    bool ok;
    if (std::isnan(a[i]) || std::isnan(e[i])) ok = std::isnan(a[i]) && std::isnan(e[i]);
    else if (std::isinf(a[i]) || std::isinf(e[i]) || exact) ok = a[i] == e[i];
    else ok = std::fabs(a[i] - e[i]) <= atol + rtol * std::fabs(e[i]);
    if (!ok && bad++ < 5) mismatches << "\n  [" << i << "] got " << a[i] << ", expected " << e[i];
  }
  if (bad)
    return ::testing::AssertionFailure() << context << ": " << bad << " of " << a.size() << " elements differ"
                                         << mismatches.str();
  return ::testing::AssertionSuccess();
}

Array RandomArrays::uniform(Shape shape, DType dtype, double lo, double hi) {
  int64_t n = shape_size(shape);
  std::uniform_real_distribution<double> real(lo, hi);
  switch (dtype) {
    case DType::bool_: {
      std::vector<bool> v(static_cast<size_t>(n));
      for (auto&& x : v) x = engine_() & 1;
      return array(v, shape);
    }
    case DType::f32: {
      std::vector<float> v(static_cast<size_t>(n));
      for (auto& x : v) x = static_cast<float>(real(engine_));
      return array(v, shape);
    }
    default: break;
  }
  // Integers are floor(x) (unsigned: of |x|); f16 and bf16 round x.
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) {
    x = real(engine_);
    if (is_integer(dtype)) x = std::floor(is_unsigned(dtype) ? std::fabs(x) : x);
  }
  return dtype == DType::f64 ? array(v, shape) : astype(array(v, shape), dtype);
}

int64_t RandomArrays::integer(int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(engine_);
}

Shape RandomArrays::shape(int min_rank, int max_rank, int max_extent, bool allow_zero) {
  Shape shape(static_cast<size_t>(integer(min_rank, max_rank)));
  for (auto& extent : shape) {
    extent = integer(allow_zero ? 0 : 1, max_extent);
    if (extent == 0 && integer(0, 3) != 0) extent = 1;  // zero-size dims: present but not dominant
  }
  return shape;
}

Shape RandomArrays::broadcastable(const Shape& shape) {
  Shape result(shape.begin() + integer(0, static_cast<int64_t>(shape.size())), shape.end());
  for (auto& extent : result)
    if (integer(0, 2) == 0) extent = 1;
  return result;
}

std::string numpy_dtype(DType dtype) {
  switch (dtype) {
    case DType::bool_: return "np.bool_";
    case DType::i8: return "np.int8";
    case DType::i16: return "np.int16";
    case DType::i32: return "np.int32";
    case DType::i64: return "np.int64";
    case DType::u8: return "np.uint8";
    case DType::u16: return "np.uint16";
    case DType::u32: return "np.uint32";
    case DType::u64: return "np.uint64";
    case DType::f16: return "np.float16";
    case DType::bf16: return "np.dtype('V2')";  // NumPy has no bf16: the oracle's bf16() reads it
    case DType::f32: return "np.float32";
    case DType::f64: return "np.float64";
    case DType::c64: return "np.complex64";
    case DType::c128: return "np.complex128";
  }
  return "";
}

void expect_cases_match(const NumpyOracle& oracle, const std::vector<OracleCase>& cases) {
  for (const OracleCase& c : cases) {
    std::optional<Array> expected = oracle.result(c.id);
    ASSERT_TRUE(expected) << c.context << ": NumPy raised\n" << oracle.error(c.id);
    EXPECT_EQ(c.actual.dtype(), expected->dtype()) << c.context;
    EXPECT_TRUE(all_close(c.actual, *expected, c.rtol, c.rtol, c.context));
  }
}

}  // namespace kiln::testing
