// Loops with small bodies compiled into one native function (native_loop.h)
// against the interpreter: carries written in place or copied, carries that
// swap, results that are old carries, rows of scanned arrays read where they
// lie, folded constants, captures, churning literals, zero trips, and the
// bodies that must take the general path.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include "backend/interp/interpreter.h"
#include "backend/llvm/backend.h"
#include "differential.h"

namespace kiln {
namespace {

using testing::run_differential;
using testing::trace_case;

// A loop compiled whole dumps its own code, as <graph>-<n>-loop<step>.ll
// (graph names in dumps hold no '-').
size_t loops_dumped(const testing::DumpDirectory& dump) {
  size_t loops = 0;
  for (const std::filesystem::path& file : dump.files(".ll"))
    loops += file.filename().string().find("-loop") != std::string::npos;
  return loops;
}

// Runs the case on the native backend against the interpreter and says how
// many of its loops were compiled whole.
size_t native_loops_in(const testing::DifferentialCase& test, const std::vector<testing::Tolerance>& tolerances) {
  testing::DumpDirectory dump;
  EXPECT_EQ(run_differential(test, tolerances, llvm_backend::llvm_backend()), "");
  return loops_dumped(dump);
}

const std::vector<testing::Tolerance> exact{};
std::vector<testing::Tolerance> within(double ulps) { return {testing::ulps(ulps, DType::f32)}; }

TEST(NativeLoops, ForiLoopWithTheCounterInItsBody) {
  auto fn = [](const Array& v) {
    return fori_loop(
        0, 1000, [](const Array& i, const Array& x) { return x * 0.5f + astype(i, f32); }, v);
  };
  EXPECT_EQ(native_loops_in(trace_case("fori", fn, array({1.0f, 2.0f, 3.0f, -4.0f})), exact), 1u);
}

TEST(NativeLoops, CarriesThatSwapOrPassThroughAreCopiedFirst) {
  using State = std::tuple<Array, Array, Array>;
  auto fibonacci = [](const Array& a, const Array& b) {
    return std::get<1>(while_loop([](const State& s) { return std::get<2>(s) < 30; },
                                  [](const State& s) {
                                    auto [x, y, n] = s;
                                    return State{y, x + y, n + 1};
                                  },
                                  State{a, b, zeros({}, i32)}));
  };
  EXPECT_EQ(native_loops_in(trace_case("fibonacci", fibonacci, array({0.0f, 1.0f}), array({1.0f, 1.5f})), exact), 1u);
  auto swap = [](const Array& a, const Array& b) {
    auto [x, y] = fori_loop(
        0, 7,
        [](const Array&, const std::pair<Array, Array>& s) {
          return std::pair{s.second, s.first};
        },
        std::pair{a, b});
    return x - y * 2.0f;
  };
  EXPECT_EQ(native_loops_in(trace_case("swap", swap, array({1.0f, 2.0f}), array({5.0f, 7.0f})), exact), 1u);
}

TEST(NativeLoops, ACarryReadAfterItsNewValueIsComputedKeepsItsOldValue) {
  // b's new value reads a's old one after a's kernel ran; the transpose reads
  // other elements than it writes; the mean reads all of h before h changes.
  auto fn = [](const Array& a, const Array& b, const Array& h) {
    using State = std::tuple<Array, Array, Array>;
    auto [x, y, z] = fori_loop(
        0, 9,
        [](const Array&, const State& s) {
          auto [p, q, m] = s;
          Array next_p = p * 2.0f + 1.0f;
          return State{next_p, p + q, transpose(m) * 0.5f + (m - mean(m))};
        },
        State{a, b, h});
    return std::tuple{x, y, z};
  };
  Array h = reshape(array({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f}), {3, 3});
  auto test = trace_case("reads", fn, array({0.5f, 1.0f}), array({2.0f, 3.0f}), h);
  EXPECT_EQ(native_loops_in(test, within(4)), 1u);
}

TEST(NativeLoops, ScansReadRowsWhereTheyLieAndStackOldCarries) {
  for (bool reverse : {false, true}) {
    auto fn = [reverse](const Array& h0, const Array& xs) {
      auto step = [](const Array& h, const Array& x) {
        Array next = h * 0.9f + x;
        return std::pair{next, std::tuple{h, sum(next)}};
      };
      return scan(step, h0, xs, std::nullopt, reverse);
    };
    auto test = trace_case("scan", fn, array({1.0f, -1.0f, 0.5f}), random::normal(random::key(3), {50, 3}));
    EXPECT_EQ(native_loops_in(test, within(4)), 1u) << reverse;
  }
}

TEST(NativeLoops, ReshapedCarriesAndRowsAreViews) {
  auto fn = [](const Array& c, const Array& xs) {
    auto step = [](const Array& carry, const Array& x) {
      Array flat = reshape(carry, {6}) + reshape(x, {6}) * 2.0f;
      return std::pair{reshape(flat, {2, 3}), reshape(x, {3, 2})};
    };
    return scan(step, c, xs);
  };
  auto test = trace_case("views", fn, zeros({2, 3}), random::normal(random::key(4), {20, 2, 3}));
  EXPECT_EQ(native_loops_in(test, exact), 1u);
}

TEST(NativeLoops, FoldedConstantsAndCapturesAreRead) {
  Array captured = array({1.0f, -2.0f, 3.0f, 0.25f});
  auto fn = [&](const Array& v) {
    return fori_loop(
        0, 12, [&](const Array&, const Array& x) { return x * 0.75f + full({4}, 2.0f) * 3.0f - captured; }, v);
  };
  auto test = trace_case("constants", fn, array({0.0f, 1.0f, 2.0f, 3.0f}));
  EXPECT_EQ(test.captures.size(), 1u);
  EXPECT_EQ(native_loops_in(test, exact), 1u);
}

TEST(NativeLoops, IntegerAndBoolPredicatesAndCarries) {
  // The condition returns an i32 (non-zero continues); a bool rides in the carry.
  auto fn = [](const Array& x) {
    using State = std::tuple<Array, Array, Array>;
    return while_loop([](const State& s) { return astype(std::get<1>(s), i32); },
                      [](const State& s) {
                        auto [v, going, n] = s;
                        Array next = v * 1.5f;
                        return State{next, sum(next) < 100.0f, n + 1};
                      },
                      State{x, full({}, true, bool_), zeros({}, i32)});
  };
  EXPECT_EQ(native_loops_in(trace_case("predicates", fn, array({1.0f, 2.0f})), within(2)), 1u);
}

TEST(NativeLoops, LoopsThatNeverRun) {
  auto never = [](const Array& x) {
    return while_loop([](const Array& v) { return sum(v) < 0.0f; }, [](const Array& v) { return v + 1.0f; }, x);
  };
  EXPECT_EQ(native_loops_in(trace_case("never", never, array({1.0f, 2.0f})), exact), 1u);
  auto empty = [](const Array& x) {
    auto step = [](const Array& v, const std::tuple<>&) { return std::pair{v + 1.0f, v * 2.0f}; };
    return scan(step, x, no_xs, 0);
  };
  EXPECT_EQ(native_loops_in(trace_case("empty", empty, array({1.0f, 2.0f})), exact), 1u);
}

TEST(NativeLoops, LargeBodiesMatmulsAndNestedLoopsTakeTheGeneralPath) {
  auto large = [](const Array& v) {
    return fori_loop(
        0, 3, [](const Array&, const Array& x) { return x * 0.5f + 1.0f; }, v);
  };
  EXPECT_EQ(native_loops_in(trace_case("large", large, zeros({int64_t{1} << 17})), exact), 0u);
  // Swapping two large carries computes nothing but would copy them twice per step.
  auto swap = [](const Array& a, const Array& b) {
    auto [x, y] = fori_loop(
        0, 3,
        [](const Array&, const std::pair<Array, Array>& s) {
          return std::pair{s.second, s.first};
        },
        std::pair{a, b});
    return x - y;
  };
  EXPECT_EQ(native_loops_in(trace_case("swap", swap, zeros({int64_t{1} << 16}), ones({int64_t{1} << 16})), exact), 0u);
  Array w = random::normal(random::key(7), {4, 4}) * 0.3f;
  auto product = [&](const Array& h) {
    return fori_loop(
        0, 5, [&](const Array&, const Array& x) { return tanh(matmul(w, x)); }, h);
  };
  EXPECT_EQ(native_loops_in(trace_case("matmul", product, ones({4})), within(16)), 0u);
  // The outer body holds a loop, so only the inner one is compiled whole.
  auto nested = [](const Array& v) {
    return fori_loop(
        0, 4,
        [](const Array& i, const Array& x) {
          return fori_loop(
              0, 3, [&i](const Array&, const Array& y) { return y * 0.5f + astype(i, f32); }, x);
        },
        v);
  };
  EXPECT_EQ(native_loops_in(trace_case("nested", nested, array({1.0f, 8.0f})), exact), 1u);
}

TEST(NativeLoops, ChurningLiteralsInsideABodyCompileOnce) {
  Array captured = array({0.5f, 0.25f});
  float factor = 0.5f;
  auto body = [&](const Array&, const Array& x) { return x * factor + captured; };
  auto loop = jit([&](const Array& v) { return fori_loop(0, 20, body, v); });
  testing::DumpDirectory dump;
  for (float value : {0.5f, 0.25f, 0.75f, 0.125f}) {
    factor = value;
    Array v = array({1.0f, 2.0f});
    EXPECT_EQ(loop(v).to_vector<float>(), fori_loop(0, 20, body, v).to_vector<float>()) << value;
  }
  EXPECT_EQ(loop.stats().compiles, 2);  // the second value lifts the number to an input
  EXPECT_EQ(loops_dumped(dump), 2u);
}

}  // namespace
}  // namespace kiln
