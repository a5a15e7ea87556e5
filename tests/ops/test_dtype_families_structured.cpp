// The dtypes i8, i16, u8, u16, u32, u64, f16 and bf16 through reductions
// (JAX's accumulation dtypes), sorting, movement, gather/scatter, matmul,
// random draws, fused f16/bf16 kernels (a chain rounds once) and gradients:
// eagerly, traced through the interpreter and jitted, against NumPy (bf16:
// f32 rounded by torch).
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <limits>

#include "backend/interp/interpreter.h"
#include "dtype_families.h"

namespace kiln::testing {
namespace {

using Args = std::vector<Array>;

std::string name_of(DType dtype) { return std::string(dtype_name(dtype)); }

/// JAX's sum/prod/cumsum dtype: narrow integers accumulate in 32 bits.
DType accumulation_dtype(DType dtype) {
  switch (dtype) {
    case DType::i8:
    case DType::i16: return DType::i32;
    case DType::u8:
    case DType::u16: return DType::u32;
    default: return dtype;
  }
}

TEST(DtypeFamilies, ReductionsAccumulateLikeJax) {
  DtypeData data(11);
  DtypeBatch batch;
  for (DType dtype : new_dtypes) {
    Array a = data({4, 7}, dtype);
    // Halves: sums of values whose f32 sums are exact, so every order agrees.
    Array s = is_floating(dtype) ? data({4, 7}, dtype, Values::small) : a;
    std::string acc = numpy_dtype(accumulation_dtype(dtype));
    if (is_floating(dtype)) acc = "np.float32";
    bool half = is_floating(dtype);
    EXPECT_EQ(sum(a).dtype(), accumulation_dtype(dtype)) << name_of(dtype);
    EXPECT_EQ(prod(a, 1).dtype(), accumulation_dtype(dtype)) << name_of(dtype);
    EXPECT_EQ(cumsum(a, 0).dtype(), accumulation_dtype(dtype)) << name_of(dtype);
    EXPECT_EQ(mean(a).dtype(), half ? dtype : DType::f32) << name_of(dtype);
    EXPECT_EQ(argmax(a, 1).dtype(), DType::i32) << name_of(dtype);
    auto add = [&](const std::string& name, std::function<Array(const Args&)> fn, const std::string& numpy,
                   const Array& x, double rtol = 0) {
      batch.add({name, std::move(fn), numpy, {x}, rtol, rtol != 0});
    };
    add(
        "sum all", [](const Args& v) { return sum(v[0]); }, "np.sum(a, dtype=" + acc + ")", s);
    add(
        "sum axis 1", [](const Args& v) { return sum(v[0], 1); }, "np.sum(a, axis=1, dtype=" + acc + ")", s);
    add(
        "sum axis 0 keepdims", [](const Args& v) { return sum(v[0], 0, true); },
        "np.sum(a, axis=0, keepdims=True, dtype=" + acc + ")", s);
    add(
        "cumsum axis 1", [](const Args& v) { return cumsum(v[0], 1); }, "np.cumsum(a, axis=1, dtype=" + acc + ")", s);
    add(
        "cumsum flat", [](const Args& v) { return cumsum(v[0]); }, "np.cumsum(a, dtype=" + acc + ")", s);
    add(
        "cummax axis 1", [](const Args& v) { return cummax(v[0], 1); }, "np.maximum.accumulate(a, axis=1)", a);
    add(
        "cummin flat", [](const Args& v) { return cummin(v[0]); }, "np.minimum.accumulate(a.ravel())", a);
    add(
        "max axis 1", [](const Args& v) { return max(v[0], 1); }, "np.max(a, axis=1)", a);
    add(
        "min axis 0", [](const Args& v) { return min(v[0], 0); }, "np.min(a, axis=0)", a);
    add(
        "max all", [](const Args& v) { return max(v[0]); }, "np.max(a)", s);
    add(
        "argmax axis 1", [](const Args& v) { return argmax(v[0], 1); }, "np.argmax(a, axis=1)", a);
    add(
        "argmin axis 0", [](const Args& v) { return argmin(v[0], 0); }, "np.argmin(a, axis=0)", a);
    add(
        "argmax flat", [](const Args& v) { return argmax(v[0]); }, "np.argmax(a)", s);
    if (half) {
      Array p = data.range({4, 7}, dtype, 0.5, 1.5);
      add(
          "prod axis 1", [](const Args& v) { return prod(v[0], 1); }, "np.prod(a, axis=1, dtype=np.float32)", p,
          default_rtol(dtype));
      add(
          "mean axis 1", [](const Args& v) { return mean(v[0], 1); }, "np.mean(a, axis=1, dtype=np.float32)", s,
          default_rtol(dtype));
    } else {
      add(
          "prod axis 1", [](const Args& v) { return prod(v[0], 1); }, "np.prod(a, axis=1, dtype=" + acc + ")", a);
      Array m = data({4, 7}, dtype, Values::small);
      add(
          "mean axis 1", [](const Args& v) { return mean(v[0], 1); }, "np.mean(a, axis=1)", m, 1e-6);
    }
  }
  batch.run();
}

TEST(DtypeFamilies, ExtremesAlongLeadingAxesCompiled) {
  // Reducing a leading axis accumulates whole rows into the output: its
  // elements are 16 bits for f16/bf16 (once read and written as f32).
  DtypeData data(19);
  for (DType dtype : new_dtypes) {
    for (auto [shape, axis] : {std::pair<Shape, int64_t>{{9, 33}, 0}, {{2, 6, 20}, 1}, {{5, 3, 17}, 0}}) {
      Array x = data(shape, dtype, Values::finite);
      std::string where = name_of(dtype) + " " + shape_string(shape) + " axis " + std::to_string(axis);
      auto reduce_max = jit([axis](const Array& y) { return max(y, axis); });
      auto reduce_min = jit([axis](const Array& y) { return min(y, axis); });
      auto fused = jit([axis](const Array& y) { return max(y * 2, axis); });
      EXPECT_TRUE(same_values(reduce_max(x), max(x, axis), where + " max"));
      EXPECT_TRUE(same_values(reduce_min(x), min(x, axis), where + " min"));
      EXPECT_TRUE(same_values(fused(x), max(x * 2, axis), where + " max of a product"));
    }
  }
}

TEST(DtypeFamilies, WideSumsOfHalvesRoundOnce) {
  // 4096 copies of 1 + 2^-7: every partial sum rounded to bf16 would stall at
  // 256; accumulated in f32 and rounded once the sum is 4128.
  for (DType dtype : halves) {
    Array x = full({4096}, 1 + 0x1p-7, dtype);
    Array total = sum(x);
    EXPECT_EQ(total.dtype(), dtype);
    EXPECT_EQ(total.item<double>(), 4128) << name_of(dtype);
    EXPECT_EQ(jit([](const Array& y) { return sum(y); })(x).item<double>(), 4128) << name_of(dtype) << " compiled";
    EXPECT_EQ(mean(x).item<double>(), static_cast<double>(static_cast<float>(4128.0 / 4096))) << name_of(dtype);
  }
  // Narrow integers sum in 32 bits: no wraparound at 8 or 16 bits.
  Array bytes = full({1000}, 200, DType::u8);
  EXPECT_EQ(sum(bytes).item<uint32_t>(), 200000u);
  EXPECT_EQ(jit([](const Array& y) { return sum(y); })(bytes).item<uint32_t>(), 200000u);
  Array shorts = full({1000}, -30000, DType::i16);
  EXPECT_EQ(sum(shorts).item<int32_t>(), -30000000);
}

TEST(DtypeFamilies, SortAndArgsortOrderUnsignedAndNan) {
  DtypeData data(12);
  DtypeBatch batch;
  for (DType dtype : new_dtypes) {
    Array a = data({3, 9}, dtype);
    batch.add({"sort", [](const Args& v) { return sort(v[0]); }, "np.sort(a, axis=-1)", {a}});
    batch.add({"sort axis 0", [](const Args& v) { return sort(v[0], 0); }, "np.sort(a, axis=0)", {a}});
    batch.add({"argsort", [](const Args& v) { return argsort(v[0]); }, "np.argsort(a, axis=-1, kind='stable')", {a}});
    batch.add({"sort descending",
               [](const Args& v) { return sort(v[0], -1, true); },
               "np.flip(np.sort(a, axis=-1), axis=-1)",
               {a}});
    Array small = data({3, 9}, dtype, Values::small);
    batch.add({"top_k values",
               [](const Args& v) { return top_k(v[0], 3).first; },
               "np.flip(np.sort(a, axis=-1), axis=-1)[:, :3]",
               {small}});
  }
  batch.run();
}

TEST(DtypeFamilies, MovementKeepsBits) {
  DtypeData data(13);
  DtypeBatch batch;
  for (DType dtype : new_dtypes) {
    Array a = data({2, 3, 4}, dtype), b = data({2, 1, 4}, dtype);
    Array indices = astype(array<int64_t>({2, 0, 3, 3, 1}), DType::i32);
    auto add = [&](const std::string& name, std::function<Array(const Args&)> fn, const std::string& numpy,
                   Args inputs) {
      batch.add({name, std::move(fn), numpy, std::move(inputs)});
    };
    add("reshape", [](const Args& v) { return reshape(v[0], {4, -1}); }, "a.reshape(4, -1)", {a});
    add("transpose", [](const Args& v) { return transpose(v[0], {2, 0, 1}); }, "a.transpose(2, 0, 1)", {a});
    add("concatenate", [](const Args& v) { return concatenate({v[0], v[1]}, 1); }, "np.concatenate([a, b], 1)", {a, b});
    add("pad",
        [](const Args& v) {
          return pad(v[0], {1, 0, 2}, {0, 2, 1}, 5);
        },
        "np.pad(a, [(1, 0), (0, 2), (2, 1)], constant_values=5)", {a});
    add("slice",
        [](const Args& v) {
          return slice(v[0], {0, 1, -3}, {2, 3, 4}, {1, 1, 2});
        },
        "a[0:2, 1:3, -3:4:2]", {a});
    add("flip", [](const Args& v) { return flip(v[0], {0, 2}); }, "np.flip(a, (0, 2))", {a});
    add("broadcast_to",
        [](const Args& v) {
          return broadcast_to(v[0], {2, 3, 4});
        },
        "np.broadcast_to(a, (2, 3, 4))", {b});
    add("take", [](const Args& v) { return take(v[0], v[1], 2); }, "np.take(a, b, axis=2)", {a, indices});
    add("take flat", [](const Args& v) { return take(v[0], v[1]); }, "np.take(a, b)", {a, indices});
    add("stack", [](const Args& v) { return stack({v[0], v[0]}, 1); }, "np.stack([a, a], 1)", {a});
    add("tril", [](const Args& v) { return tril(v[0]); }, "np.tril(a)", {a});
    add("roll", [](const Args& v) { return roll(v[0], 2, 2); }, "np.roll(a, 2, 2)", {a});
    add("index",
        [](const Args& v) {
          return index(v[0], {Slice{std::nullopt, std::nullopt, -1}, 1, v[1]});
        },
        "a[::-1, 1, b]", {a, indices});
  }
  batch.run();
}

TEST(DtypeFamilies, GatherAndScatter) {
  DtypeData data(14);
  DtypeBatch batch;
  for (DType dtype : new_dtypes) {
    Array x = data({5, 3}, dtype);
    // Repeated indices: updates accumulate; the halves' sums are exact in f32.
    Array indices = astype(array<int64_t>({4, 0, 4, 2, 4, 1}), DType::i32);
    Array updates = data({6, 3}, dtype, Values::small);
    Array base = data({5, 3}, dtype, Values::small);
    Array points = astype(array<int64_t>({4, 2, 0, 1, 3, 0}, {3, 2}), DType::i32);
    auto add = [&](const std::string& name, std::function<Array(const Args&)> fn, const std::string& numpy,
                   Args inputs) {
      batch.add({name, std::move(fn), numpy, std::move(inputs)});
    };
    add("gather", [](const Args& v) { return gather(v[0], v[1]); }, "a[b[:, 0], b[:, 1]]", {x, points});
    add("take_along_axis", [](const Args& v) { return take_along_axis(v[0], v[1], 0); }, "np.take_along_axis(a, b, 0)",
        {x, astype(array<int64_t>({4, 0, 2}, {1, 3}), DType::i32)});
    add("scatter_add", [](const Args& v) { return scatter_add(v[0], v[1], v[2]); },
        "(lambda x: (np.add.at(x, b, c), x)[1])(a.copy())", {base, indices, updates});
    if (!is_floating(dtype))
      add("scatter_add wraps", [](const Args& v) { return scatter_add(v[0], v[1], v[2]); },
          "(lambda x: (np.add.at(x, b, c), x)[1])(a.copy())", {x, indices, data({6, 3}, dtype)});
    add("scatter (last wins)", [](const Args& v) { return scatter(v[0], v[1], v[2]); },
        "(lambda x: [x.__setitem__(i, c[k]) for k, i in enumerate(b)] and x)(a.copy())", {x, indices, updates});
    add("scatter_max", [](const Args& v) { return scatter_max(v[0], v[1], v[2]); },
        "(lambda x: (np.maximum.at(x, b, c), x)[1])(a.copy())", {base, indices, updates});
    add("scatter_min", [](const Args& v) { return scatter_min(v[0], v[1], v[2]); },
        "(lambda x: (np.minimum.at(x, b, c), x)[1])(a.copy())", {base, indices, updates});
    add("at add", [](const Args& v) { return v[0].at({v[1]}).add(v[2]); },
        "(lambda x: (np.add.at(x, b, c), x)[1])(a.copy())", {base, indices, updates});
  }
  batch.run();
}

TEST(DtypeFamilies, MatmulWrapsIntegersAndRoundsHalvesOnce) {
  DtypeData data(15);
  DtypeBatch batch;
  for (DType dtype : new_dtypes) {
    Array a = data({3, 8}, dtype, Values::finite), b = data({8, 4}, dtype, Values::finite);
    Array batched = data({2, 3, 8}, dtype, Values::finite), vector = data({8}, dtype, Values::finite);
    std::string numpy = is_floating(dtype) ? "(a.astype(np.float32) @ b.astype(np.float32)).astype(a.dtype)" : "a @ b";
    double rtol = is_floating(dtype) ? std::ldexp(1.0, dtype == DType::f16 ? -10 : -7) : 0;
    batch.add({"matmul", [](const Args& v) { return matmul(v[0], v[1]); }, numpy, {a, b}, rtol, rtol != 0});
    batch.add(
        {"batched matmul", [](const Args& v) { return matmul(v[0], v[1]); }, numpy, {batched, b}, rtol, rtol != 0});
    batch.add({"matrix-vector", [](const Args& v) { return matmul(v[0], v[1]); }, numpy, {a, vector}, rtol, rtol != 0});
    EXPECT_EQ(matmul(a, b).dtype(), dtype);
    if (is_floating(dtype)) {
      // Values whose f32 products and sums are exact: rounded once, exactly.
      Array sa = data({3, 8}, dtype, Values::small), sb = data({8, 4}, dtype, Values::small);
      batch.add({"exact matmul", [](const Args& v) { return matmul(v[0], v[1]); }, numpy, {sa, sb}});
    }
  }
  batch.run();
}

TEST(DtypeFamilies, RandomDrawsStayInRange) {
  Array key = random::key(7);
  for (DType dtype : halves) {
    Array u = random::uniform(key, {4096}, dtype, -2.0, 3.0);
    EXPECT_EQ(u.dtype(), dtype);
    std::vector<double> values = u.to_vector<double>();
    double lo = *std::min_element(values.begin(), values.end()), hi = *std::max_element(values.begin(), values.end());
    EXPECT_GE(lo, -2.0) << name_of(dtype);
    EXPECT_LT(hi, 3.0) << name_of(dtype);
    EXPECT_LT(lo, -1.9) << name_of(dtype);
    EXPECT_GT(hi, 2.9) << name_of(dtype);
    Array n = random::normal(key, {4096}, dtype);
    EXPECT_EQ(n.dtype(), dtype);
    EXPECT_TRUE(isfinite(n).to_vector<bool>() == std::vector<bool>(4096, true)) << name_of(dtype);
    EXPECT_NEAR(mean(astype(n, DType::f32)).item<float>(), 0, 0.1) << name_of(dtype);
    EXPECT_NEAR(std(astype(n, DType::f32)).item<float>(), 1, 0.1) << name_of(dtype);
    // Compiled, the scaling fuses and rounds once where eager rounds each step.
    auto draw = jit([dtype](const Array& k) { return random::uniform(k, {4096}, dtype, -2.0, 3.0); });
    Array compiled = draw(key);
    EXPECT_TRUE(
        close_values(compiled, u, native_rtol(dtype), name_of(dtype) + " uniform compiled", 3 * native_rtol(dtype)));
    std::vector<double> compiled_values = compiled.to_vector<double>();
    EXPECT_GE(*std::min_element(compiled_values.begin(), compiled_values.end()), -2.0) << name_of(dtype);
    EXPECT_LT(*std::max_element(compiled_values.begin(), compiled_values.end()), 3.0) << name_of(dtype);
    auto draw_normal = jit([dtype](const Array& k) { return random::normal(k, {4096}, dtype); });
    EXPECT_TRUE(close_values(draw_normal(key), n, native_rtol(dtype), name_of(dtype) + " normal compiled",
                             4 * native_rtol(dtype)));
  }
  for (DType dtype : new_integers) {
    // The whole range of the 8-bit types; elsewhere a hundred values.
    bool narrow = dtype_size(dtype) == 1;
    int64_t lo = is_unsigned(dtype) ? (narrow ? 0 : 10) : (narrow ? -128 : -50);
    int64_t hi = narrow ? (is_unsigned(dtype) ? 256 : 128) : lo + 100;
    Array r = random::randint(key, {4096}, lo, hi, dtype);
    EXPECT_EQ(r.dtype(), dtype);
    std::vector<int64_t> values = r.to_vector<int64_t>();
    EXPECT_EQ(*std::min_element(values.begin(), values.end()), lo) << name_of(dtype);
    EXPECT_EQ(*std::max_element(values.begin(), values.end()), hi - 1) << name_of(dtype);
    auto draw = jit([lo, hi, dtype](const Array& k) { return random::randint(k, {4096}, lo, hi, dtype); });
    EXPECT_TRUE(same_values(draw(key), r, name_of(dtype) + " randint compiled"));
  }
}

// ---- Fused f16/bf16 kernels: a chain computes in f32 and rounds once --------------

TEST(DtypeFamilies, FusedHalfChainsRoundOnce) {
  DtypeData data(16);
  for (DType dtype : halves) {
    Array a = data({257}, dtype, Values::finite), b = data({257}, dtype, Values::finite);
    Array c = data({257}, dtype, Values::finite), d = data({257}, dtype, Values::finite);
    auto chain = [](const Array& w, const Array& x, const Array& y, const Array& z) { return maximum(w + x * y, z); };
    Array compiled = jit(chain)(a, b, c, d);
    Array eager = chain(a, b, c, d);
    EXPECT_EQ(compiled.dtype(), dtype);
    // Eager rounds x * y before the addition: an error of the operands' size (at most 16).
    EXPECT_TRUE(close_values(compiled, eager, native_rtol(dtype), name_of(dtype) + " fused chain vs eager",
                             16 * native_rtol(dtype)));
    // +, * and max in f32, rounded once: exactly the compiled chain.
    auto f32 = [](const Array& x) { return astype(x, DType::f32); };
    Array once = astype(chain(f32(a), f32(b), f32(c), f32(d)), dtype);
    EXPECT_TRUE(same_values(compiled, once, name_of(dtype) + " fused chain vs f32 rounded once"));
    // Compiled elementwise chains with transcendentals stay close to eager.
    auto smooth = [](const Array& x, const Array& y) { return tanh(x) * y + exp(-x * x) - sigmoid(y); };
    EXPECT_TRUE(close_values(jit(smooth)(a, b), smooth(a, b), 2 * native_rtol(dtype),
                             name_of(dtype) + " transcendental chain", 2 * native_rtol(dtype)));
    // The interpreter rounds every operation, as eager does.
    Graph graph = make_graph("chain", chain, a, b, c, d);
    EXPECT_TRUE(same_values(detail::interpret(graph, {a, b, c, d}, {}).at(0), eager, name_of(dtype) + " interpreter"));
  }
  // Integers in a fused chain are exact, wrapping as eager.
  DtypeData ints(17);
  for (DType dtype : new_integers) {
    Array a = ints({100}, dtype), b = ints({100}, dtype), c = ints({100}, dtype);
    auto chain = [](const Array& x, const Array& y, const Array& z) {
      return where(x > y, x * y - z, bitwise_xor(x, z) + 3) >> 1;
    };
    EXPECT_TRUE(same_values(jit(chain)(a, b, c), chain(a, b, c), name_of(dtype) + " integer chain"));
  }
}

TEST(DtypeFamilies, GradientsThroughHalves) {
  DtypeData data(18);
  auto loss = [](const Array& x) { return sum(tanh(x) * x); };
  for (DType dtype : halves) {
    Array x = data({64}, dtype, Values::finite);
    Array g = grad(loss)(x);
    EXPECT_EQ(g.dtype(), dtype);
    Array wide = grad(loss)(astype(x, DType::f32));
    double rtol = 4 * default_rtol(dtype);
    EXPECT_TRUE(close_values(astype(g, DType::f32), wide, rtol, name_of(dtype) + " grad vs f32", rtol));
    Array compiled = jit(grad(loss))(x);
    EXPECT_EQ(compiled.dtype(), dtype);
    EXPECT_TRUE(
        close_values(compiled, g, 2 * native_rtol(dtype), name_of(dtype) + " compiled grad", 2 * native_rtol(dtype)));
    // A value-and-grad of a mean squared error through a matmul.
    Array w = data({8, 4}, dtype, Values::finite), in = data({3, 8}, dtype, Values::finite);
    auto mse = [](const Array& weights, const Array& inputs) { return mean(square(matmul(inputs, weights))); };
    Array gw = grad(mse)(w, in);
    EXPECT_EQ(gw.dtype(), dtype);
    Array gw_wide = grad(mse)(astype(w, DType::f32), astype(in, DType::f32));
    EXPECT_TRUE(close_values(astype(gw, DType::f32), gw_wide, rtol, name_of(dtype) + " matmul grad vs f32", rtol * 4));
  }
}

}  // namespace
}  // namespace kiln::testing
