// File formats against the real NumPy: .npy written by kiln and read by
// NumPy and the reverse (every dtype, 0-d, zero-size, 3-d, Fortran order,
// format versions); safetensors round trips, read by a small Python reader
// and written by a Python writer; bf16, which NumPy lacks, checked against
// PyTorch's bfloat16; values compared bit for bit; damaged and hostile files;
// tracers.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <sstream>

#include "support/numpy_oracle.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::all_close;

class TemporaryDirectory {
 public:
  TemporaryDirectory() {
    std::string pattern = (fs::temp_directory_path() / "kiln-io-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("cannot create a temporary directory");
    path_ = pattern;
  }
  ~TemporaryDirectory() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  // Removing first makes a fresh file: truncating one in place can make the
  // file system flush, which costs milliseconds per write in the damage loops.
  std::remove(path.c_str());
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// Runs a Python script (NumPy available) with the directory as argv[1];
/// returns its exit status and prints its output on failure.
::testing::AssertionResult python(const std::string& script, const TemporaryDirectory& directory) {
  std::ofstream(directory / "script.py") << script;
  std::string command = std::string("'") + KILN_TEST_PYTHON + "' '" + (directory / "script.py") + "' '" +
                        directory.path() + "' > '" + (directory / "python.log") + "' 2>&1";
  int status = std::system(command.c_str());
  if (status == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "python failed (" << status << "):\n" << read_bytes(directory / "python.log");
}

/// Calls f(T{}) with the C++ element type of `dtype`.
template <class F>
decltype(auto) with_element(DType dtype, F&& f) {
  switch (dtype) {
    case DType::bool_: return f(bool{});
    case DType::i8: return f(int8_t{});
    case DType::i16: return f(int16_t{});
    case DType::i32: return f(int32_t{});
    case DType::i64: return f(int64_t{});
    case DType::u8: return f(uint8_t{});
    case DType::u16: return f(uint16_t{});
    case DType::u32: return f(uint32_t{});
    case DType::u64: return f(uint64_t{});
    case DType::f16: return f(float16{});
    case DType::bf16: return f(bfloat16{});
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
  }
  throw std::logic_error("unknown dtype");
}

/// The elements' bytes, as stored (row-major, little-endian).
std::string raw_bytes(const Array& x) {
  return with_element(x.dtype(), [&]<class T>(T) {
    if constexpr (std::is_same_v<T, bool>) {
      std::string bytes;
      for (bool v : x.to_vector<bool>()) bytes += static_cast<char>(v);
      return bytes;
    } else {
      std::vector<T> v = x.to_vector<T>();
      return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
    }
  });
}

std::string hex(const std::string& bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string text;
  for (unsigned char c : bytes) text += std::string{digits[c >> 4], digits[c & 15]};
  return text;
}

/// A Python float literal that keeps every bit: 17 digits, -0.0 with its sign.
std::string python_float(double v) {
  if (std::isnan(v)) return "float('nan')";
  if (std::isinf(v)) return v > 0 ? "float('inf')" : "float('-inf')";
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", v);
  std::string literal = text;
  if (literal.find_first_of(".e") == std::string::npos) literal += ".0";
  return literal;
}

/// `x` as a Python expression with the same dtype, shape and values: a NumPy
/// array, or for bf16 (which NumPy lacks) a torch.bfloat16 tensor.
std::string numpy_literal(const Array& x) {
  std::ostringstream text;
  std::string shape = "(";
  for (int64_t extent : x.shape()) shape += std::to_string(extent) + ",";
  shape += ")";
  text << (x.dtype() == bf16 ? "bf16_tensor([" : "np.array([");
  if (x.dtype() == bool_) {
    for (bool v : x.to_vector<bool>()) text << (v ? "True," : "False,");
  } else if (is_unsigned(x.dtype())) {
    for (uint64_t v : x.to_vector<uint64_t>()) text << v << ",";
  } else if (!is_floating(x.dtype())) {
    for (int64_t v : x.to_vector<int64_t>()) text << v << ",";
  } else {
    for (double v : x.to_vector<double>()) text << python_float(v) << ",";
  }
  if (x.dtype() == bf16) text << "], " << shape << ")";
  else text << "], dtype=" << testing::numpy_dtype(x.dtype()) << ").reshape(" << shape << ")";
  return text.str();
}

/// x with the dtype's extremes at the front: integers' min and max (u64's
/// 2^64-1, i8's -128), floats' NaN, infinities, -0, largest, smallest subnormal, lowest.
Array with_special_values(const Array& x) {
  if (x.ndim() == 0 || x.dtype() == bool_) return x;
  return with_element(x.dtype(), [&]<class T>(T) {
    std::vector<T> v = x.to_vector<T>();
    std::vector<T> specials;
    using limits = std::numeric_limits<T>;
    if constexpr (std::is_integral_v<T>) specials = {limits::min(), limits::max(), T(0)};
    else
      specials = {
          limits::quiet_NaN(),  limits::infinity(), T(-std::numeric_limits<double>::infinity()), T(-0.0), limits::max(),
          limits::denorm_min(), limits::lowest()};
    for (size_t k = 0; k < std::min(v.size(), specials.size()); ++k) v[k] = specials[k];
    return array(v, x.shape());
  });
}

/// The arrays every format test saves: each dtype as 0-d, zero-size, 1-d and
/// 3-d, with special values at the front.
std::map<std::string, Array> sample_arrays() {
  std::map<std::string, Array> arrays;
  testing::RandomArrays random(3);
  for (DType dtype : testing::every_dtype) {
    for (const Shape& shape : {Shape{}, Shape{0}, Shape{3, 0, 2}, Shape{5}, Shape{2, 3, 4}}) {
      Array x = with_special_values(random.uniform(shape, dtype, -100, 100));
      std::string name =
          std::string(dtype_name(dtype)) + "_" + std::to_string(shape.size()) + "d_" + std::to_string(x.size());
      arrays[name] = x;
    }
  }
  arrays["weak_scalar"] = add(2.5, 0);  // weakly typed: saved as plain f32
  return arrays;
}

/// Same dtype, shape and bytes (so NaN payloads and the sign of zero too).
void expect_identical(const Array& actual, const Array& expected, const std::string& context) {
  EXPECT_EQ(actual.dtype(), expected.dtype()) << context;
  EXPECT_EQ(actual.shape(), expected.shape()) << context;
  EXPECT_FALSE(actual.weak_type()) << context;
  if (actual.dtype() == expected.dtype() && actual.shape() == expected.shape()) {
    EXPECT_TRUE(all_close(actual, expected, 0, 0, context));
    EXPECT_EQ(hex(raw_bytes(actual)), hex(raw_bytes(expected))) << context;
  }
}

struct Expectation {
  Array values;
  std::string bytes;  // hex, as NumPy stores them
};

/// Reads Python's description of an array: dtype name, shape, the bytes in
/// hex, one value per line. Checks `actual` against both the values and the bytes.
Expectation read_expectation(const std::string& path) {
  std::ifstream in(path);
  std::string dtype_text, shape_line, bytes, value;
  std::getline(in, dtype_text);
  std::getline(in, shape_line);
  std::getline(in, bytes);
  Shape shape;
  std::istringstream dims(shape_line);
  for (int64_t extent; dims >> extent;) shape.push_back(extent);
  std::vector<std::string> values;
  while (std::getline(in, value)) values.push_back(value);
  std::vector<double> floats;
  std::vector<int64_t> integers;
  std::vector<uint64_t> naturals;
  for (const std::string& v : values) {
    floats.push_back(std::strtod(v.c_str(), nullptr));
    integers.push_back(std::strtoll(v.c_str(), nullptr, 10));
    naturals.push_back(std::strtoull(v.c_str(), nullptr, 10));
  }
  const std::map<std::string, DType> dtypes = {{"bool", bool_}, {"int8", i8},     {"int16", i16},     {"int32", i32},
                                               {"int64", i64},  {"uint8", u8},    {"uint16", u16},    {"uint32", u32},
                                               {"uint64", u64}, {"float16", f16}, {"bfloat16", bf16}, {"float32", f32},
                                               {"float64", f64}};
  auto found = dtypes.find(dtype_text);
  if (found == dtypes.end()) throw std::runtime_error("unknown dtype " + dtype_text + " in " + path);
  DType dtype = found->second;
  Array x = is_floating(dtype)   ? array(floats, shape)
            : is_unsigned(dtype) ? array(naturals, shape)
                                 : array(integers, shape);
  return {astype(x, dtype), bytes};
}

void expect_matches(const Array& actual, const Expectation& expected, const std::string& context) {
  EXPECT_EQ(actual.dtype(), expected.values.dtype()) << context;
  EXPECT_EQ(actual.shape(), expected.values.shape()) << context;
  EXPECT_FALSE(actual.weak_type()) << context;
  if (actual.dtype() == expected.values.dtype() && actual.shape() == expected.values.shape()) {
    EXPECT_TRUE(all_close(actual, expected.values, 0, 0, context));
    EXPECT_EQ(hex(raw_bytes(actual)), expected.bytes) << context;
  }
}

/// Shared by the Python scripts: deterministic values with special cases, and
/// a text description of an array that read_expectation reads back. NumPy has
/// no bf16: its arrays are '|V2' (two opaque bytes each), made from and
/// checked against torch.bfloat16 tensors.
const char* python_helpers = R"PY(
import json, os, struct, sys
import numpy as np
import torch
d = sys.argv[1]
rng = np.random.default_rng(5)
V2 = np.dtype('V2')

def bf16_tensor(vals, shape):
    """A torch.bfloat16 tensor of values that bf16 holds exactly. NaN is the
    quiet NaN 0x7fc0 (torch's vectorized conversion may give 0xffff)."""
    t = torch.tensor(vals, dtype=torch.float64).to(torch.bfloat16).reshape(shape)
    t.view(torch.int16)[torch.isnan(t)] = 0x7fc0
    return t

def bf16_array(t):
    """A torch.bfloat16 tensor's bits as the '|V2' array kiln reads as bf16."""
    return t.contiguous().view(torch.int16).numpy().copy().view(np.uint16).view(V2)

def to_bf16(a):
    """A '|V2' array as a torch.bfloat16 tensor: its bits read as uint16."""
    bits = a.copy(order='C').view(np.uint16)
    return torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16)

def values(dtype, shape):
    n = int(np.prod(shape, dtype=np.int64))
    if dtype == 'bfloat16':
        v = torch.from_numpy(rng.standard_normal(n) * 100).to(torch.bfloat16)
        specials = [np.nan, np.inf, -np.inf, -0.0, torch.finfo(torch.bfloat16).max, 2.0 ** -133,
                    -torch.finfo(torch.bfloat16).max]
        v[:min(n, 7)] = torch.tensor(specials[:min(n, 7)], dtype=torch.float64).to(torch.bfloat16)
        return bf16_array(v).reshape(shape)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        v = rng.integers(0, 2, n).astype(np.bool_)
    elif dtype.kind in 'iu':
        info = np.iinfo(dtype)
        v = rng.integers(max(int(info.min), -1000), min(int(info.max), 1000), n, endpoint=True).astype(dtype)
        if n >= 2:
            v[0], v[1] = info.min, info.max
    else:
        v = (rng.standard_normal(n) * 100).astype(dtype)
        info = np.finfo(dtype)
        specials = [np.nan, np.inf, -np.inf, -0.0, info.max, info.smallest_subnormal, info.min]
        v[:min(n, 7)] = specials[:min(n, 7)]
    return v.reshape(shape)

def expect(name, x):
    with open(os.path.join(d, name + '.txt'), 'w') as f:
        f.write(('bfloat16' if x.dtype == V2 else x.dtype.name) + '\n')
        f.write(' '.join(str(s) for s in x.shape) + '\n')
        f.write(np.ascontiguousarray(x).tobytes().hex() + '\n')
        flat = to_bf16(x).reshape(-1).tolist() if x.dtype == V2 else np.ascontiguousarray(x).ravel()
        for v in flat:
            f.write((repr(float(v)) if x.dtype.kind in 'fV' else str(int(v))) + '\n')

def same(name, got, expected):
    """got (read by NumPy) holds exactly `expected`: a NumPy array, or a
    torch.bfloat16 tensor for kiln's bf16 ('|V2')."""
    if isinstance(expected, torch.Tensor):
        assert got.dtype == V2, (name, got.dtype)
        assert got.shape == tuple(expected.shape), (name, got.shape, expected.shape)
        t = to_bf16(got)
        assert t.dtype == torch.bfloat16 and t.shape == expected.shape, (name, t.dtype, t.shape)
        bits = lambda x: x.view(torch.int16).reshape(-1).tolist()
        nan = torch.isnan(expected)
        assert torch.equal(torch.isnan(t), nan), (name, t, expected)
        assert torch.equal(t[~nan], expected[~nan]), (name, t, expected)
        assert torch.equal(torch.signbit(t), torch.signbit(expected)), (name, bits(t), bits(expected))
        assert np.ascontiguousarray(got).tobytes() == bf16_array(expected).tobytes(), (name, bits(t), bits(expected))
        return
    assert got.dtype == expected.dtype, (name, got.dtype, expected.dtype)
    assert got.shape == expected.shape, (name, got.shape, expected.shape)
    assert np.array_equal(got, expected, equal_nan=got.dtype.kind == 'f'), (name, got, expected)
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(expected).tobytes(), (name, got, expected)

dtypes = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
          np.float16, 'bfloat16', np.float32, np.float64]
shapes = [(), (0,), (0, 3), (3, 0, 2), (5,), (2, 3, 4)]
)PY";

/// Checks `run` throws kiln::Error whose message has every fragment.
template <class F>
void expect_error(F&& run, const std::vector<std::string>& fragments, const std::string& context = "") {
  try {
    run();
    ADD_FAILURE() << "no error: " << context;
  } catch (const Error& error) {
    for (const std::string& fragment : fragments)
      EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos)
          << context << ": missing '" << fragment << "' in: " << error.what();
  } catch (const std::exception& error) {
    ADD_FAILURE() << context << ": not a kiln::Error: " << error.what();
  }
}

/// Loading must either succeed or throw kiln::Error; anything else is a bug.
template <class F>
void expect_load_or_error(F&& load, const std::string& context) {
  try {
    load();
  } catch (const Error&) {
  } catch (const std::exception& error) {
    ADD_FAILURE() << context << ": not a kiln::Error: " << error.what();
  }
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

// ---- .npy ---------------------------------------------------------------------------

TEST(Npy, KilnWritesNumpyReads) {
  TemporaryDirectory directory;
  std::string script = std::string(python_helpers) + R"PY(
def check(name, expected):
    path = os.path.join(d, name + '.npy')
    with open(path, 'rb') as f:
        version = np.lib.format.read_magic(f)
        header = np.lib.format._read_array_header(f, version)
        assert f.tell() % 64 == 0, (name, 'data not 64-byte aligned', f.tell())
    got = np.load(path, allow_pickle=False)
    assert header[2] == got.dtype, (name, header, got.dtype)
    assert got.flags['C_CONTIGUOUS']
    same(name, got, expected)
    checked.add(name)
checked = set()
)PY";
  for (const auto& [name, x] : sample_arrays()) {
    save_npy(directory / (name + ".npy"), x);
    script += "check('" + name + "', " + numpy_literal(x) + ")\n";
  }
  // Every dtype, with its descr: bf16 as two opaque bytes.
  script += R"PY(
descrs = {'bool': '|b1', 'int8': '|i1', 'int16': '<i2', 'int32': '<i4', 'int64': '<i8', 'uint8': '|u1',
          'uint16': '<u2', 'uint32': '<u4', 'uint64': '<u8', 'float16': '<f2', 'bfloat16': '|V2',
          'float32': '<f4', 'float64': '<f8'}
names = {'i8': 'int8', 'i16': 'int16', 'i32': 'int32', 'i64': 'int64', 'u8': 'uint8', 'u16': 'uint16',
         'u32': 'uint32', 'u64': 'uint64', 'f16': 'float16', 'bf16': 'bfloat16', 'f32': 'float32', 'f64': 'float64'}
seen = set()
for name in checked:
    if name == 'weak_scalar':
        continue
    tag = name.split('_')[0]
    seen.add(tag)
    text = open(os.path.join(d, name + '.npy'), 'rb').read(128).decode('latin-1')
    assert "'descr': '%s'" % descrs[names.get(tag, tag)] in text, (name, text)
assert len(seen) == 13, seen
)PY";
  EXPECT_TRUE(python(script, directory));
}

TEST(Npy, NumpyWritesKilnReads) {
  TemporaryDirectory directory;
  std::string script = std::string(python_helpers) + R"PY(
names = []
def save(name, x, version=None):
    if version is None:
        np.save(os.path.join(d, name + '.npy'), x)
    else:
        with open(os.path.join(d, name + '.npy'), 'wb') as f:
            np.lib.format.write_array(f, x, version=version)
    expect(name, x)
    names.append(name)

for dtype in dtypes:
    tag = 'bfloat16' if dtype == 'bfloat16' else np.dtype(dtype).name
    for shape in shapes:
        save('%s_%s' % (tag, 'x'.join(map(str, shape)) or 'scalar'), values(dtype, shape))
    x = values(dtype, (3, 4, 2))
    save(tag + '_fortran3d', np.asfortranarray(x))
    save(tag + '_transposed', values(dtype, (4, 5)).T)
    save(tag + '_fortran_empty', np.asfortranarray(values(dtype, (0, 3))))
    save(tag + '_version2', x, (2, 0))
    save(tag + '_version3', x, (3, 0))
with open(os.path.join(d, 'names.txt'), 'w') as f:
    f.write('\n'.join(names))

# A bf16 file as torch makes one: its bits saved as two opaque bytes.
torch_bf16 = torch.tensor([[1.0, -2.5, 3.0e38], [-0.0, float('inf'), 2.0 ** -133]], dtype=torch.bfloat16)
np.save(os.path.join(d, 'torch_bf16.npy'), torch_bf16.view(torch.int16).numpy().view(np.uint16).view('V2'))

unsupported = {
    'big_endian': np.arange(3, dtype='>f4'),
    'big_endian_half': np.arange(3, dtype='>f2'),
    'big_endian_u16': np.arange(3, dtype='>u2'),
    'big_endian_u64': np.arange(3, dtype='>u8'),
    'complex256': np.zeros(2, np.clongdouble),
    'structured': np.zeros(2, dtype=[('a', '<f4'), ('b', '<i4')]),
    'void4': np.zeros(2, 'V4'),
    'bytes': np.array([b'ab'], 'S2'),
    'longdouble': np.zeros(2, '<f16'),
}
for name, x in unsupported.items():
    np.save(os.path.join(d, name + '.npy'), x)
np.save(os.path.join(d, 'object.npy'), np.array([{'a': 1}], dtype=object), allow_pickle=True)
np.save(os.path.join(d, 'complex.npy'), np.array([1 - 2j, 0.5j], np.complex64))
)PY";
  ASSERT_TRUE(python(script, directory));
  std::vector<std::string> names = lines_of(directory / "names.txt");
  EXPECT_EQ(names.size(), 13u * 11u);
  for (const std::string& name : names)
    expect_matches(load_npy(directory / (name + ".npy")), read_expectation(directory / (name + ".txt")), name);
  Array from_torch = load_npy(directory / "torch_bf16.npy");
  EXPECT_EQ(from_torch.dtype(), bf16);
  EXPECT_EQ(from_torch.shape(), (Shape{2, 3}));
  std::vector<uint16_t> bits;
  for (bfloat16 v : from_torch.to_vector<bfloat16>()) bits.push_back(v.bits());
  // 1, -2.5, 3e38 rounded to bf16 (0x7f62 = 3.0061e38), -0, inf, the smallest subnormal.
  EXPECT_EQ(bits, (std::vector<uint16_t>{0x3f80, 0xc020, 0x7f62, 0x8000, 0x7f80, 0x0001}));
  EXPECT_EQ(astype(from_torch, f64).to_vector<double>(),
            (std::vector<double>{1.0, -2.5, static_cast<double>(bfloat16::from_bits(0x7f62)), -0.0, INFINITY,
                                 std::ldexp(1.0, -133)}));

  // Big-endian files are read and swapped into kiln's byte order: arange(3) in each dtype.
  for (const auto& [name, dtype] : std::vector<std::pair<std::string, DType>>{
           {"big_endian", f32}, {"big_endian_half", f16}, {"big_endian_u16", u16}, {"big_endian_u64", u64}}) {
    Array loaded = load_npy(directory / (name + ".npy"));
    EXPECT_EQ(loaded.dtype(), dtype) << name;
    EXPECT_EQ(astype(loaded, f64).to_vector<double>(), (std::vector<double>{0, 1, 2})) << name;
  }
  const std::vector<std::pair<std::string, std::string>> unsupported = {
      {"complex256", "'<c32'"}, {"object", "'|O'"}, {"structured", "structured dtype"},
      {"void4", "'|V4'"},       {"bytes", "'|S2'"}, {"longdouble", "'<f16'"}};
  for (const auto& [name, fragment] : unsupported)
    expect_error([&] { load_npy(directory / (name + ".npy")); }, {"[load_npy]", name + ".npy", fragment}, name);
  expect_error([&] { load_npy(directory / "complex256.npy"); }, {"bfloat16 ('|V2')"}, "the hint lists every dtype");
  Array complex = load_npy(directory / "complex.npy");
  EXPECT_EQ(complex.dtype(), c64);
  EXPECT_EQ(complex.to_vector<std::complex<float>>(), (std::vector<std::complex<float>>{{1, -2}, {0, 0.5f}}));
}

TEST(Npy, RoundTripAndOverwrite) {
  TemporaryDirectory directory;
  for (const auto& [name, x] : sample_arrays()) {
    std::string path = directory / "x.npy";
    save_npy(path, x);  // overwrites the previous array
    expect_identical(load_npy(path), x, name);
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(directory.path()), fs::directory_iterator()), 1)
      << "temporary files must not be left behind";
}

/// A .npy file with the given header text (version 1.0) and data bytes.
std::string npy_file(const std::string& header, const std::string& data = "") {
  std::string text = header + "\n";
  std::string file = std::string("\x93NUMPY\x01\x00", 8);
  file += static_cast<char>(text.size() & 0xff);
  file += static_cast<char>(text.size() >> 8);
  return file + text + data;
}

TEST(Npy, DamagedAndHostileFilesAreErrors) {
  TemporaryDirectory directory;
  std::string path = directory / "bad.npy";
  auto header = [](const std::string& descr, const std::string& order, const std::string& shape) {
    return "{'descr': '" + descr + "', 'fortran_order': " + order + ", 'shape': " + shape + ", }";
  };
  const std::string eight(8, '\0');
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"empty file", "", "truncated"},
      {"bad magic", "\x93NUMPZ\x01\x00\x10\x00" + std::string(16, ' '), "bad magic"},
      {"version 4", std::string("\x93NUMPY\x04\x00\x10\x00", 10) + std::string(16, ' '), "version 4"},
      {"header past the end", std::string("\x93NUMPY\x01\x00\xff\x7f", 10) + "{}", "truncated"},
      {"huge v2 header", std::string("\x93NUMPY\x02\x00\xff\xff\xff\xff", 12), "implausible"},
      {"negative dimension", npy_file(header("<f8", "False", "(2, -3)"), eight), "shape entry"},
      {"huge dimension", npy_file(header("<f8", "False", "(99999999999999999999,)")), "too large"},
      {"overflowing shape", npy_file(header("<f8", "False", "(4294967296, 4294967296)")), "impossible shape"},
      {"shape past the data", npy_file(header("<f8", "False", "(1000000000000,)"), eight), "truncated"},
      {"truncated data", npy_file(header("<f8", "False", "(2,)"), eight), "truncated"},
      {"extra key", npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), 'x': 1}", eight), "'x'"},
      {"repeated key", npy_file("{'descr': '<f8', 'descr': '<f4', 'fortran_order': False, 'shape': ()}", eight),
       "'descr'"},
      {"missing key", npy_file("{'descr': '<f8', 'shape': (1,)}", eight), "lacks"},
      {"not a dict", npy_file("[1, 2]", eight), "malformed"},
      {"unterminated", npy_file("{'descr': '<f8", eight), "unterminated"},
      {"bad boolean", npy_file(header("<f8", "Maybe", "(1,)"), eight), "True or False"},
      {"float dimension", npy_file(header("<f8", "False", "(1.5,)"), eight), "malformed"},
      {"trailing text", npy_file(header("<f8", "False", "(1,)") + " x", eight), "after the header"},
  };
  for (const auto& [what, bytes, fragment] : cases) {
    write_bytes(path, bytes);
    expect_error([&] { load_npy(path); }, {"[load_npy]", "bad.npy", fragment, "test_io.cpp:"}, what);
  }
  expect_error([&] { load_npy(directory / "missing.npy"); }, {"[load_npy]", "missing.npy"});
  expect_error([&] { load_npy(directory.path()); }, {"[load_npy]", "not a readable file"});

  // Every truncation of a valid file, and random byte damage.
  save_npy(path, array({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}, {2, 3}));
  std::string valid = read_bytes(path);
  for (size_t length = 0; length < valid.size(); ++length) {
    write_bytes(path, valid.substr(0, length));
    expect_error([&] { load_npy(path); }, {"[load_npy]"}, "truncated to " + std::to_string(length));
  }
  std::mt19937 engine(9);
  for (int trial = 0; trial < 3000; ++trial) {
    std::string damaged = valid;
    for (int flips = 1 + trial % 3; flips > 0; --flips)
      damaged[engine() % 128] = static_cast<char>(engine() % 256);  // magic, lengths and header
    write_bytes(path, damaged);
    expect_load_or_error([&] { load_npy(path); }, "damage trial " + std::to_string(trial));
  }
}

TEST(Npy, BoolBytesAreCanonical) {
  TemporaryDirectory directory;
  write_bytes(directory / "b.npy",
              npy_file("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", std::string("\x00\x02\xff", 3)));
  Array b = load_npy(directory / "b.npy");
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{false, true, true}));
  EXPECT_EQ(logical_not(b).to_vector<bool>(), (std::vector<bool>{true, false, false}));
}

// ---- safetensors ----------------------------------------------------------------------

TEST(Safetensors, RoundTrip) {
  TemporaryDirectory directory;
  std::map<std::string, Array> arrays = sample_arrays();
  arrays["names may have spaces, dots.and/slashes"] = scalar(1);
  arrays["ünïcode"] = array({1.5, 2.5});
  save(directory / "model.safetensors", arrays);
  std::map<std::string, Array> loaded = load(directory / "model.safetensors");
  ASSERT_EQ(loaded.size(), arrays.size());
  for (const auto& [name, x] : arrays) {
    ASSERT_EQ(loaded.count(name), 1u) << name;
    expect_identical(loaded.at(name), x, name);
  }
  // Overwriting replaces the file; an empty collection is a valid file.
  save(directory / "model.safetensors", {});
  EXPECT_TRUE(load(directory / "model.safetensors").empty());
  EXPECT_EQ(read_bytes(directory / "model.safetensors").size(), 16u);
  EXPECT_EQ(std::distance(fs::directory_iterator(directory.path()), fs::directory_iterator()), 1)
      << "temporary files must not be left behind";
}

TEST(Safetensors, PythonReadsKilnFiles) {
  TemporaryDirectory directory;
  std::map<std::string, Array> arrays = sample_arrays();
  save(directory / "kiln.safetensors", arrays);
  std::string script = std::string(python_helpers) + R"PY(
raw = open(os.path.join(d, 'kiln.safetensors'), 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]
assert (8 + n) % 8 == 0, 'data must start 8-byte aligned'
header = json.loads(raw[8:8 + n].decode('utf-8'))
data = raw[8 + n:]
types = {'BOOL': np.bool_, 'I8': '|i1', 'I16': '<i2', 'I32': '<i4', 'I64': '<i8', 'U8': '|u1', 'U16': '<u2',
         'U32': '<u4', 'U64': '<u8', 'F16': '<f2', 'BF16': V2, 'F32': '<f4', 'F64': '<f8'}
spans = sorted(tuple(v['data_offsets']) for k, v in header.items() if k != '__metadata__')
position = 0
for begin, end in spans:
    assert begin == position, ('gap or overlap', begin, position)
    position = end
assert position == len(data), ('trailing bytes', position, len(data))
seen = set()
def check(name, expected):
    seen.add(name)
    info = header[name]
    begin, end = info['data_offsets']
    dtype = np.dtype(types[info['dtype']])
    assert begin % dtype.itemsize == 0, (name, 'misaligned')
    got = np.frombuffer(data[begin:end], dtype=dtype).reshape(info['shape'])
    same(name, got, expected)
    codes.add(info['dtype'])
codes = set()
)PY";
  for (const auto& [name, x] : arrays) script += "check('" + name + "', " + numpy_literal(x) + ")\n";
  script += "assert seen == set(header) - {'__metadata__'}, set(header) ^ seen\n";
  script += "assert codes == set(types), codes ^ set(types)\n";
  EXPECT_TRUE(python(script, directory));
}

TEST(Safetensors, KilnReadsPythonFiles) {
  TemporaryDirectory directory;
  std::string script = std::string(python_helpers) + R"PY(
codes = {'bool': 'BOOL', 'int8': 'I8', 'int16': 'I16', 'int32': 'I32', 'int64': 'I64', 'uint8': 'U8',
         'uint16': 'U16', 'uint32': 'U32', 'uint64': 'U64', 'float16': 'F16', 'void16': 'BF16', 'float32': 'F32',
         'float64': 'F64', 'complex64': 'C64'}

def write(filename, tensors, metadata=None, order=None):
    header = {} if metadata is None else {'__metadata__': metadata}
    blobs, offset = [], 0
    for name in (order or list(tensors)):
        x = tensors[name]
        blob = np.ascontiguousarray(x).astype(x.dtype.newbyteorder('<')).tobytes()
        header[name] = {'dtype': codes[x.dtype.name], 'shape': list(x.shape),
                        'data_offsets': [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    text = json.dumps(header).encode('utf-8')
    text += b' ' * ((8 - len(text) % 8) % 8)
    with open(os.path.join(d, filename), 'wb') as f:
        f.write(struct.pack('<Q', len(text)) + text + b''.join(blobs))

tensors = {}
for dtype in dtypes:
    for shape in shapes:
        tag = 'bfloat16' if dtype == 'bfloat16' else np.dtype(dtype).name
        name = '%s.%s' % (tag, 'x'.join(map(str, shape)) or 'scalar')
        tensors[name] = values(dtype, shape)
        expect(name, tensors[name])
order = list(tensors)
rng.shuffle(order)  # data order differs from key order
write('python.safetensors', tensors, {'format': 'np', 'note': 'written by the test'}, order)
with open(os.path.join(d, 'names.txt'), 'w') as f:
    f.write('\n'.join(tensors))
write('complex.safetensors', {'h': np.zeros(3, np.complex64)})
# A bf16 tensor as torch holds it, its bits stored under the code BF16.
torch_bf16 = torch.tensor([[1.0, -2.5, 3.0e38], [-0.0, float('inf'), 2.0 ** -133]], dtype=torch.bfloat16)
write('torch.safetensors', {'w': bf16_array(torch_bf16)})
with open(os.path.join(d, 'f8.safetensors'), 'wb') as f:
    text = json.dumps({'q': {'dtype': 'F8_E4M3', 'shape': [2], 'data_offsets': [0, 2]}}).encode()
    text += b' ' * ((8 - len(text) % 8) % 8)
    f.write(struct.pack('<Q', len(text)) + text + b'\x00\x00')
)PY";
  ASSERT_TRUE(python(script, directory));
  std::map<std::string, Array> loaded = load(directory / "python.safetensors");
  std::vector<std::string> names = lines_of(directory / "names.txt");
  EXPECT_EQ(names.size(), 13u * 6u);
  EXPECT_EQ(loaded.size(), names.size());
  for (const std::string& name : names) {
    ASSERT_EQ(loaded.count(name), 1u) << name;
    expect_matches(loaded.at(name), read_expectation(directory / (name + ".txt")), name);
  }
  Array from_torch = load(directory / "torch.safetensors").at("w");
  EXPECT_EQ(from_torch.dtype(), bf16);
  EXPECT_EQ(from_torch.shape(), (Shape{2, 3}));
  std::vector<uint16_t> bits;
  for (bfloat16 v : from_torch.to_vector<bfloat16>()) bits.push_back(v.bits());
  EXPECT_EQ(bits, (std::vector<uint16_t>{0x3f80, 0xc020, 0x7f62, 0x8000, 0x7f80, 0x0001}));
  EXPECT_EQ(astype(from_torch, f64).to_vector<double>(),
            (std::vector<double>{1.0, -2.5, static_cast<double>(bfloat16::from_bits(0x7f62)), -0.0, INFINITY,
                                 std::ldexp(1.0, -133)}));
  Array complex = load(directory / "complex.safetensors").at("h");
  EXPECT_EQ(complex.dtype(), c64);
  EXPECT_EQ(complex.to_vector<std::complex<float>>(), (std::vector<std::complex<float>>(3)));
  expect_error([&] { load(directory / "f8.safetensors"); },
               {"[load]", "f8.safetensors", "\"F8_E4M3\"", "'q'", "U64, F16, BF16"});
}

/// A safetensors file from a header text and data (the length prefix computed
/// unless given).
std::string safetensors_file(const std::string& header, const std::string& data = "",
                             std::optional<uint64_t> declared = std::nullopt) {
  uint64_t length = declared.value_or(header.size());
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i) file[static_cast<size_t>(i)] = static_cast<char>((length >> (8 * i)) & 0xff);
  return file + header + data;
}

TEST(Safetensors, DamagedAndHostileFilesAreErrors) {
  TemporaryDirectory directory;
  std::string path = directory / "bad.safetensors";
  auto tensor = [](const std::string& dtype, const std::string& shape, const std::string& offsets) {
    return "{\"t\": {\"dtype\": \"" + dtype + "\", \"shape\": " + shape + ", \"data_offsets\": " + offsets + "}}";
  };
  const std::string four(4, '\0'), eight(8, '\0');
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"empty file", "", "truncated"},
      {"short prefix", "\x01\x02", "truncated"},
      {"header past the end", safetensors_file("{}", "", 1000), "1000-byte header"},
      {"gigantic header length", safetensors_file("{}", "", ~uint64_t{0}), "header"},
      {"not json", safetensors_file("{\"t\": nope}"), "not valid JSON"},
      {"json list", safetensors_file("[1, 2, 3]"), "not a JSON object"},
      {"entry not object", safetensors_file("{\"t\": 3}"), "not an object"},
      {"missing dtype", safetensors_file("{\"t\": {\"shape\": [], \"data_offsets\": [0, 4]}}", four), "\"dtype\""},
      {"missing shape", safetensors_file("{\"t\": {\"dtype\": \"F32\", \"data_offsets\": [0, 4]}}", four), "\"shape\""},
      {"missing offsets", safetensors_file("{\"t\": {\"dtype\": \"F32\", \"shape\": []}}", four), "\"data_offsets\""},
      {"unknown dtype", safetensors_file(tensor("X9", "[1]", "[0, 4]"), four), "\"X9\""},
      {"dtype not string", safetensors_file("{\"t\": {\"dtype\": 5, \"shape\": [1], \"data_offsets\": [0, 4]}}", four),
       "not a string"},
      {"negative dimension", safetensors_file(tensor("F32", "[-1]", "[0, 4]"), four), "non-negative integer"},
      {"fractional dimension", safetensors_file(tensor("F32", "[1.5]", "[0, 4]"), four), "non-negative integer"},
      {"nested dimension", safetensors_file(tensor("F32", "[[1]]", "[0, 4]"), four), "a list of 1 items"},
      {"shape not list", safetensors_file(tensor("F32", "4", "[0, 4]"), four), "not a list"},
      {"huge dimension", safetensors_file(tensor("F32", "[18446744073709551615]", "[0, 4]"), four), "too large"},
      {"overflowing shape", safetensors_file(tensor("F32", "[4294967296, 4294967296]", "[0, 4]"), four),
       "more elements"},
      {"overflowing bytes", safetensors_file(tensor("F64", "[4611686018427387904]", "[0, 4]"), four), "more bytes"},
      {"one offset", safetensors_file(tensor("F32", "[1]", "[0]"), four), "not [begin, end]"},
      {"reversed offsets", safetensors_file(tensor("F32", "[0]", "[4, 0]"), four), "outside"},
      {"offsets past data", safetensors_file(tensor("F32", "[1]", "[4, 8]"), four), "outside"},
      {"size mismatch", safetensors_file(tensor("F32", "[2]", "[0, 4]"), four), "needs 8 bytes"},
      {"trailing bytes", safetensors_file(tensor("F32", "[1]", "[0, 4]"), eight), "after the last tensor"},
      {"gap", safetensors_file(tensor("F32", "[1]", "[4, 8]"), eight), "after a gap"},
      {"overlap",
       safetensors_file("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}, "
                        "\"b\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}",
                        eight),
       "inside the previous tensor"},
      {"repeated name",
       safetensors_file("{\"t\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}, "
                        "\"t\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}",
                        eight),
       "gap"},
      {"metadata not object", safetensors_file("{\"__metadata__\": [1]}"), "__metadata__"},
      {"metadata not strings", safetensors_file("{\"__metadata__\": {\"k\": 1}}"), "'k'"},
      {"deeply nested", safetensors_file(std::string(200000, '[') + std::string(200000, ']')), "not a JSON object"},
      {"deeply nested entry", safetensors_file("{\"t\": " + std::string(200000, '[') + std::string(200000, ']') + "}"),
       "a list of 1 items"},
  };
  for (const auto& [what, bytes, fragment] : cases) {
    write_bytes(path, bytes);
    expect_error([&] { load(path); }, {"[load]", "bad.safetensors", fragment, "test_io.cpp:"}, what);
  }
  expect_error([&] { load(directory / "missing.safetensors"); }, {"[load]", "missing.safetensors"});

  // Every truncation of a valid file, and random byte damage anywhere.
  save(path, {{"a", array({1.0f, 2.0f})}, {"b", array<int64_t>({7})}, {"c", scalar(true)}});
  std::string valid = read_bytes(path);
  for (size_t length = 0; length < valid.size(); ++length) {
    write_bytes(path, valid.substr(0, length));
    expect_error([&] { load(path); }, {"[load]"}, "truncated to " + std::to_string(length));
  }
  std::mt19937 engine(10);
  for (int trial = 0; trial < 3000; ++trial) {
    std::string damaged = valid;
    for (int flips = 1 + trial % 3; flips > 0; --flips)
      damaged[engine() % damaged.size()] = static_cast<char>(engine() % 256);
    write_bytes(path, damaged);
    expect_load_or_error([&] { load(path); }, "damage trial " + std::to_string(trial));
  }
  // Bool bytes other than 0 and 1 read as true.
  write_bytes(path, safetensors_file("{\"b\": {\"dtype\": \"BOOL\", \"shape\": [3], \"data_offsets\": [0, 3]}}   ",
                                     std::string("\x00\x05\x01", 3)));
  EXPECT_EQ(load(path).at("b").to_vector<bool>(), (std::vector<bool>{false, true, true}));
}

// ---- Errors when saving ------------------------------------------------------------------

TEST(Io, SavingErrors) {
  TemporaryDirectory directory;
  Array x = array({1.0f});
  std::string missing = directory / "no/such/dir/x";
  const int line = __LINE__ + 1;
  auto save_into_missing = [&] { save(missing + ".safetensors", {{"x", x}}); };
  auto save_npy_into_missing = [&] { save_npy(missing + ".npy", x); };
  expect_error(save_into_missing, {"[save]", "no/such/dir", "test_io.cpp:" + std::to_string(line)});
  expect_error(save_npy_into_missing, {"[save_npy]", "no/such/dir", "test_io.cpp:" + std::to_string(line + 1)});
  expect_error([&] { save(directory / "x.safetensors", {{"", x}}); }, {"[save]", "empty"});
  expect_error([&] { save(directory / "x.safetensors", {{"__metadata__", x}}); }, {"[save]", "reserved"});
  expect_error([&] { save(directory / "x.safetensors", {{"x", Array()}}); }, {"[save]", "empty"});
  expect_error([&] { save(directory / "x.safetensors", {{std::string("\xff\xfe"), x}}); }, {"[save]", "UTF-8"});
  expect_error([&] { save_npy(directory / "x.npy", Array()); }, {"[save_npy]", "empty"});
  EXPECT_FALSE(fs::exists(directory / "x.safetensors"));
  EXPECT_EQ(std::distance(fs::directory_iterator(directory.path()), fs::directory_iterator()), 0)
      << "failed saves must not leave temporary files";
}

TEST(Io, SavingATracerIsAConcretizationError) {
  TemporaryDirectory directory;
  Array x = array({1.0f, 2.0f});
  EXPECT_THROW(make_graph(
                   "f",
                   [&](const Array& t) {
                     save(directory / "t.safetensors", {{"t", t * 2}});
                     return t;
                   },
                   x),
               ConcretizationError);
  EXPECT_THROW(make_graph(
                   "g",
                   [&](const Array& t) {
                     save_npy(directory / "t.npy", t);
                     return t;
                   },
                   x),
               ConcretizationError);
  try {
    make_graph(
        "h",
        [&](const Array& t) {
          save(directory / "t.safetensors", {{"weights", t}});
          return t;
        },
        x);
    ADD_FAILURE() << "saving a traced value did not throw";
  } catch (const ConcretizationError& error) {
    EXPECT_NE(std::string(error.what()).find("'weights' f32[2]"), std::string::npos) << error.what();
  }
  EXPECT_FALSE(fs::exists(directory / "t.safetensors"));
}

}  // namespace
}  // namespace kiln
