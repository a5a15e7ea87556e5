// The native backend on symbolic graphs: one executable, compiled once, runs
// at every size of the dynamic dimensions (2, 3, 17, ..., 1000) and agrees
// with the interpreter running the function traced at that size: exactly
// for integers, within a few ulps for floats where vector math differs.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <functional>
#include <sstream>
#include <thread>

#include "backend/interp/interpreter.h"
#include "backend/llvm/backend.h"
#include "differential.h"
#include "dynamic_random_graph.h"
#include "symbolic_marking.h"
#include "transform/symbolic_fit.h"

namespace kiln::testing {
namespace {

using Arguments = std::vector<Array>;
using Function = std::function<std::vector<Array>(const Arguments&)>;
using Maker = std::function<Arguments(int64_t)>;

// The size the graphs are traced at: s0's hint.
constexpr int64_t hint = 37;
const std::vector<int64_t> every_size = {2, 3, 17, hint, 64, 1000};

Array normal(const Shape& shape, uint32_t seed) { return random::normal(random::key(seed), shape); }
Array integers(const Shape& shape, uint32_t seed) {
  return random::randint(random::key(seed), shape, -1000, 1000, DType::i32);
}

struct Check {
  std::string name;
  Function function;
  Maker arguments;  // the arguments at s0 = n
  SymbolMarks marks = marks_of_s0(hint);
  Tolerance tolerance = {};  // exact
  std::vector<int64_t> sizes = every_size;
};

// Runs `executable` (of the check's function, symbolic) at every size, as
// is and with its arguments donated, against the interpreter running the
// function traced at that size. Empty when every output matches; otherwise
// what differed. `executable` is made by `make` after the references:
// making arguments and references compiles eager operations.
std::string run_every_size(const Check& check, const Graph& symbolic,
                           const std::function<std::shared_ptr<const runtime::Executable>()>& make) {
  struct AtSize {
    DifferentialCase reference;
    std::vector<Array> expected, copies;
  };
  std::vector<AtSize> cases;
  for (int64_t n : check.sizes) {
    AtSize& at = cases.emplace_back(AtSize{trace_case(check.name, check.function, check.arguments(n)), {}, {}});
    at.expected = detail::interpret(at.reference.graph, at.reference.arguments, at.reference.captures);
    for (const Array& argument : at.reference.arguments) at.copies.push_back(detail::copy_of(argument));
  }
  std::shared_ptr<const runtime::Executable> executable = make();
  size_t compiled = llvm_backend::modules_compiled();
  std::vector<std::vector<Array>> outputs;
  std::ostringstream failures;
  for (size_t c = 0; c < cases.size(); ++c) {
    const AtSize& at = cases[c];
    std::vector<char> donated(at.copies.size(), 1);
    for (int donating = 0; donating < 2; ++donating) {
      try {
        outputs.push_back(donating ? executable->run(at.copies, at.reference.captures, donated)
                                   : executable->run(at.reference.arguments, at.reference.captures));
      } catch (const std::exception& error) {
        failures << "s0 = " << check.sizes[c] << ": threw " << error.what() << "\n";
        outputs.emplace_back();
      }
    }
  }
  if (llvm_backend::modules_compiled() != compiled)
    failures << "code was compiled again while running at other sizes\n";
  for (size_t c = 0; c < cases.size(); ++c) {
    const std::vector<Array>& expected = cases[c].expected;
    for (int donating = 0; donating < 2; ++donating) {
      const std::vector<Array>& got = outputs[2 * c + static_cast<size_t>(donating)];
      std::string at = "s0 = " + std::to_string(check.sizes[c]) + (donating ? " (donated)" : "");
      if (got.size() != expected.size()) {
        failures << at << ": " << got.size() << " outputs, expected " << expected.size() << "\n";
        continue;
      }
      for (size_t k = 0; k < got.size(); ++k) {
        std::string mismatch = compare_arrays(got[k], expected[k], check.tolerance);
        if (!mismatch.empty()) failures << at << ", output " << k << ": " << mismatch << "\n";
      }
    }
  }
  std::string text = failures.str();
  if (!text.empty()) text += "--- symbolic graph\n" + symbolic.to_string() + "--- plan\n" + describe_plan(symbolic);
  return text;
}

Graph traced_symbolic(const Check& check, int64_t at = hint) {
  return mark_symbols(trace_case(check.name, check.function, check.arguments(at)).graph, check.marks);
}

// Compiles the check's function traced at the hint once, and runs that one
// executable at every size (run_every_size).
std::string run_check(const Check& check) {
  Graph symbolic = traced_symbolic(check);
  if (detail::ir_of(symbolic).symbols == 0) return "nothing was marked symbolic";
  return run_every_size(check, symbolic,
                        [&] { return llvm_backend::llvm_backend().compile(detail::shared_ir(symbolic)); });
}

Tolerance float_ulps(double count) { return ulps(count, DType::f32); }

TEST(SymbolicNative, ElementwiseChainsBroadcastAgainstStaticOperands) {
  Check flat{"flat chain", [](const Arguments& a) { return std::vector<Array>{exp(a[0] * 0.5f) - a[0] / 3.0f}; },
             [](int64_t n) {
               return Arguments{normal({n, 64}, 1)};
             }};
  flat.tolerance = float_ulps(4);
  EXPECT_EQ(run_check(flat), "");
  // Rows of x against a static row and a dynamic column: a kernel by rows.
  Check rows{"broadcast chain",
             [](const Arguments& a) { return std::vector<Array>{tanh(a[0] * a[1] + a[2]) - 0.5f * a[0]}; },
             [](int64_t n) {
               return Arguments{normal({n, 24}, 2), normal({24}, 3), normal({n, 1}, 4)};
             }};
  // tanh(...) - 0.5 x cancels: the difference keeps the operands' absolute error.
  rows.tolerance = {.absolute = 2e-7, .relative = 4 * epsilon(DType::f32)};
  EXPECT_EQ(run_check(rows), "");
  Check integer{
      "integer chain",
      [](const Arguments& a) { return std::vector<Array>{remainder(a[0] * 3 + a[1], 7) - maximum(a[0], a[1])}; },
      [](int64_t n) {
        return Arguments{integers({5, n}, 5), integers({n}, 6)};
      }};
  EXPECT_EQ(run_check(integer), "");
}

TEST(SymbolicNative, BroadcastsAroundADynamicMiddleAxisAndTwoSymbols) {
  // Rows of [4, s0, 8]: the row index splits by s0 when the kernel runs.
  Check middle{"middle axis",
               [](const Arguments& a) {
                 return std::vector<Array>{a[0] * a[1] + a[2], sum(a[0] * a[1], 1)};
               },
               [](int64_t n) {
                 return Arguments{normal({4, n, 8}, 50), normal({n, 1}, 51), normal({4, 1, 8}, 52)};
               }};
  middle.tolerance = {.absolute = 1e-5, .relative = 1e-5};
  EXPECT_EQ(run_check(middle), "");
  // s0 rows and s1 = s0 + 4 columns, each bound by its own input dimension.
  Check two{"two symbols",
            [](const Arguments& a) {
              return std::vector<Array>{sum(a[0], 0), max(a[0] * 2.0f, 1), matmul(a[0], a[1]), transpose(a[0]) + 1.0f};
            },
            [](int64_t n) {
              return Arguments{normal({n, n + 4}, 53), normal({n + 4, 8}, 54)};
            }};
  two.marks = {{hint, ir::DimExpr::symbol(0)}, {hint + 4, ir::DimExpr::symbol(1)}};
  two.tolerance = {.absolute = 1e-4, .relative = 1e-5};
  EXPECT_EQ(run_check(two), "");
}

TEST(SymbolicNative, W1) {
  Check w1{"w1",
           [](const Arguments& a) {
             const Array& x = a[0];
             return std::vector<Array>{tanh(x * 1.5f + 0.25f) * sigmoid(x) - 0.5f * x * x};
           },
           [](int64_t n) { return Arguments{normal({n}, 7)}; }};
  w1.tolerance = {.absolute = 2e-7, .relative = 4 * epsilon(DType::f32)};
  w1.sizes.push_back(int64_t{1} << 20);
  EXPECT_EQ(run_check(w1), "");
}

TEST(SymbolicNative, SoftmaxOverADynamicAxisAndOverAStaticAxisWithDynamicRows) {
  Function softmax_last = [](const Arguments& a) { return std::vector<Array>{softmax(a[0], -1)}; };
  Check dynamic_axis{"softmax dynamic axis", softmax_last, [](int64_t n) { return Arguments{normal({8, n}, 8)}; }};
  dynamic_axis.tolerance = {.absolute = 1e-6, .relative = 1e-5};
  EXPECT_EQ(run_check(dynamic_axis), "");
  Check dynamic_rows{"softmax dynamic rows", softmax_last, [](int64_t n) { return Arguments{normal({n, 300}, 9)}; }};
  dynamic_rows.tolerance = {.absolute = 1e-6, .relative = 1e-5};
  EXPECT_EQ(run_check(dynamic_rows), "");
  // Enough rows at the hint to run as a row group.
  Check grouped{"softmax row group", softmax_last, [](int64_t n) { return Arguments{normal({n, 1024}, 10)}; }};
  grouped.tolerance = {.absolute = 1e-6, .relative = 1e-5};
  std::string plan =
      describe_plan(mark_symbols(trace_case("softmax", softmax_last, grouped.arguments(hint)).graph, grouped.marks));
  EXPECT_NE(plan.find("row group of s0 rows"), std::string::npos) << plan;
  EXPECT_EQ(run_check(grouped), "");
}

TEST(SymbolicNative, ReductionsOverTheDynamicAxisAndKeepingIt) {
  auto reductions = [](int64_t axis) {
    return [axis](const Arguments& a) {
      return std::vector<Array>{sum(a[0], axis), max(a[0], axis), mean(a[0], axis), min(a[0] * a[0], axis)};
    };
  };
  Tolerance summed = {.absolute = 1e-5, .relative = 1e-5};
  for (int64_t axis : {0, 1}) {
    Check check{"reductions " + std::to_string(axis), reductions(axis), [](int64_t n) {
                  return Arguments{normal({n, 24}, 11)};
                }};
    check.tolerance = summed;
    EXPECT_EQ(run_check(check), "") << "axis " << axis;
  }
  // Over the dynamic axis with kept axes after it (rows accumulated), and to one value.
  Check middle{"reduce middle",
               [](const Arguments& a) {
                 return std::vector<Array>{sum(a[0], 1), mean(a[0])};
               },
               [](int64_t n) {
                 return Arguments{normal({3, n, 40}, 12)};
               }};
  middle.marks = marks_of_s0(hint, {1, 120});  // mean divides by 120 s0
  middle.tolerance = summed;
  EXPECT_EQ(run_check(middle), "");
  Check integer{"integer sums",
                [](const Arguments& a) {
                  return std::vector<Array>{sum(a[0], 0), sum(a[0], 1), max(a[0])};
                },
                [](int64_t n) {
                  return Arguments{integers({n, 9}, 13)};
                }};
  EXPECT_EQ(run_check(integer), "");
}

TEST(SymbolicNative, MatmulWithADynamicBatchAndADynamicContractedDimension) {
  Check batch{"matmul dynamic batch", [](const Arguments& a) { return std::vector<Array>{matmul(a[0], a[1]) + a[2]}; },
              [](int64_t n) {
                return Arguments{normal({n, 32}, 14), normal({32, 16}, 15), normal({16}, 16)};
              }};
  batch.tolerance = {.absolute = 1e-5, .relative = 1e-5};
  EXPECT_EQ(run_check(batch), "");
  Check contracted{"matmul dynamic contraction",
                   [](const Arguments& a) { return std::vector<Array>{matmul(a[0], a[1])}; },
                   [](int64_t n) {
                     return Arguments{normal({16, n}, 17), normal({n, 8}, 18)};
                   }};
  contracted.tolerance = {.absolute = 1e-4, .relative = 1e-5};
  EXPECT_EQ(run_check(contracted), "");
}

TEST(SymbolicNative, ReshapesMergeAndSplitADynamicDimension) {
  Check merge{"reshape merge",
              [](const Arguments& a) { return std::vector<Array>{reshape(a[0] * 2.0f, {8 * a[0].shape()[0]}) + 1.0f}; },
              [](int64_t n) {
                return Arguments{normal({n, 8}, 19)};
              }};
  merge.marks = marks_of_s0(hint, {1, 8});
  EXPECT_EQ(run_check(merge), "");
  // (s0 is bound by the second argument: 8 s0 is no symbol itself.)
  Check split{"reshape split",
              [](const Arguments& a) {
                Array rows = reshape(a[0], {a[1].shape()[0], 8});
                return std::vector<Array>{sum(rows * rows, 1) + a[1]};
              },
              [](int64_t n) {
                return Arguments{normal({8 * n}, 20), normal({n}, 21)};
              }};
  split.marks = marks_of_s0(hint, {1, 8});
  split.tolerance = {.absolute = 1e-5, .relative = 1e-5};
  EXPECT_EQ(run_check(split), "");
}

TEST(SymbolicNative, MovementAndIndexing) {
  // A transpose of a dynamic matrix, tiled at the hint, and one keeping rows.
  Check transposed{"transpose", [](const Arguments& a) { return std::vector<Array>{transpose(a[0]) * 2.0f}; },
                   [](int64_t n) {
                     return Arguments{normal({n, 48}, 21)};
                   }};
  EXPECT_EQ(run_check(transposed), "");
  Check heads{"transpose heads",
              [](const Arguments& a) {
                return std::vector<Array>{transpose(a[0], {1, 0, 2}) + 1.0f};
              },
              [](int64_t n) {
                return Arguments{normal({n, 4, 16}, 22)};
              }};
  EXPECT_EQ(run_check(heads), "");
  Check sliced{"slice",
               [](const Arguments& a) {
                 return std::vector<Array>{slice(a[0], {1, 2}, {2, 10}) * 3.0f};
               },
               [](int64_t n) {
                 return Arguments{normal({4, n}, 23)};
               }};
  sliced.sizes = {17, hint, 64, 1000};  // the slice's static bounds need 10 columns
  EXPECT_EQ(run_check(sliced), "");
  Check columns{"slice columns",
                [](const Arguments& a) {
                  return std::vector<Array>{slice(a[0], {0, 3}, {a[0].shape()[0], 11}) - 1.0f};
                },
                [](int64_t n) {
                  return Arguments{normal({n, 16}, 24)};
                }};
  EXPECT_EQ(run_check(columns), "");
  Check joined{"concatenate",
               [](const Arguments& a) {
                 return std::vector<Array>{concatenate({a[0], a[1] * 2.0f}, 0) + 1.0f};
               },
               [](int64_t n) {
                 return Arguments{normal({n, 8}, 25), normal({n, 8}, 26)};
               }};
  joined.marks = marks_of_s0(hint, {1, 2});
  EXPECT_EQ(run_check(joined), "");
  Check padded{"pad",
               [](const Arguments& a) {
                 return std::vector<Array>{pad(a[0] + 1.0f, {2, 1}, {3, 0}, 5.0f)};
               },
               [](int64_t n) {
                 return Arguments{normal({n, 6}, 27)};
               }};
  padded.marks = marks_of_s0(hint);
  padded.marks.emplace_back(hint + 5, ir::DimExpr::symbol(0) + ir::DimExpr::constant(5));
  EXPECT_EQ(run_check(padded), "");
  // take: dynamic rows of a table by static indices (clamped to the call's
  // extent), and a static table by a dynamic number of indices.
  Check taken{"take", [](const Arguments& a) { return std::vector<Array>{take(a[0] * 1.0f, a[1], 0)}; },
              [](int64_t n) {
                return Arguments{normal({n, 16}, 28), array({0, 1, 40, -1, 5})};
              }};
  EXPECT_EQ(run_check(taken), "");
  Check gathered{"take indices", [](const Arguments& a) { return std::vector<Array>{take(a[0], a[1], 0) + 1.0f}; },
                 [](int64_t n) {
                   return Arguments{normal({32, 8}, 29), random::randint(random::key(30), {n}, -40, 40, DType::i32)};
                 }};
  EXPECT_EQ(run_check(gathered), "");
}

TEST(SymbolicNative, ReversedAndFixedSizeKernelsOnSymbolicNodes) {
  // flip is a strided gather that serves every size; cumsum, argmax and
  // sort have native kernels for fixed sizes, and here run their reference kernels.
  Check flipped{"flip", [](const Arguments& a) { return std::vector<Array>{flip(a[0], 0) * 2.0f}; },
                [](int64_t n) {
                  return Arguments{normal({n, 5}, 36)};
                }};
  EXPECT_EQ(run_check(flipped), "");
  Check others{"fixed size kernels",
               [](const Arguments& a) {
                 return std::vector<Array>{cumsum(a[0], 0), argmax(a[0], 0), sort(a[0] * 2.0f, 0)};
               },
               [](int64_t n) {
                 return Arguments{normal({n, 7}, 37)};
               }};
  EXPECT_EQ(run_check(others), "");
}

TEST(SymbolicNative, AttentionOverADynamicSequence) {
  // Scores [s0, s0] masked below the diagonal (iotas along both dynamic axes).
  Check attention{"attention",
                  [](const Arguments& a) {
                    Array scores = tril(matmul(a[0], transpose(a[1])) * 0.25f);
                    return std::vector<Array>{matmul(softmax(scores, -1), a[2])};
                  },
                  [](int64_t n) {
                    return Arguments{normal({n, 16}, 55), normal({n, 16}, 56), normal({n, 16}, 57)};
                  }};
  attention.tolerance = {.absolute = 1e-5, .relative = 1e-4};
  EXPECT_EQ(run_check(attention), "");
}

// The function traced at the probe points around s0 = `at` and fitted, as
// jit's dynamic dimensions do: sizes such as s0 - 2 come out as polynomials.
Graph fitted(const Check& check, int64_t at) {
  std::vector<Graph> traces;
  std::vector<const ir::Graph*> graphs;
  transform::ProbeGrid grid = testing::probe_grid_above({at});
  for (const std::vector<int64_t>& point : grid.points())
    traces.push_back(trace_case(check.name, check.function, check.arguments(point[0])).graph);
  for (const Graph& trace : traces) graphs.push_back(&detail::ir_of(trace));
  transform::FitResult fit = transform::fit_symbols(graphs, grid);
  EXPECT_TRUE(fit.graph) << fit.failure;
  return fit.graph ? detail::wrap(fit.graph) : traces[0];
}

std::string run_fitted(const Check& check, int64_t at) {
  Graph symbolic = fitted(check, at);
  if (detail::ir_of(symbolic).symbols == 0) return "nothing was fitted symbolic";
  return run_every_size(check, symbolic,
                        [&] { return llvm_backend::llvm_backend().compile(detail::shared_ir(symbolic)); });
}

TEST(SymbolicNative, SizesThatAreZeroOrOneAtTheHintsAndMoreElsewhere) {
  // Fitted at s0 = 2: the slices have s0 - 1 and s0 - 2 rows, 1 and 0 at the
  // hints, and neither is a broadcast nor an empty array at other sizes.
  Check check{"small at the hints",
              [](const Arguments& a) {
                int64_t n = a[0].shape()[0];
                Array rest = slice(a[0], {1, 0}, {n, 8});
                Array middle = slice(a[0], {1, 0}, {n - 1, 8});
                Array column = slice(a[1], {1, 0}, {n, 1});
                return std::vector<Array>{rest * column + 1.0f, sum(middle, 0), transpose(middle) * 2.0f,
                                          concatenate({middle, rest}, 0), pad(middle, {1, 0}, {1, 0}, -1.0f)};
              },
              [](int64_t n) {
                return Arguments{normal({n, 8}, 60), normal({n, 1}, 61)};
              }};
  check.sizes = {2, 3, 17, 100};
  check.tolerance = {.absolute = 1e-6, .relative = 1e-6};
  EXPECT_EQ(run_fitted(check, 2), "");
}

TEST(SymbolicNative, FixedSizeKernelsBesideSymbolicOnes) {
  // The cumsum and argmax of a static operand are kernels of fixed size in a
  // symbolic graph (their ranges are numbers, not formulas).
  Check check{"fixed beside symbolic",
              [](const Arguments& a) {
                return std::vector<Array>{a[0] * sum(cumsum(a[1], 0)), astype(argmax(a[1], 0), DType::f32) + a[0]};
              },
              [](int64_t n) {
                return Arguments{normal({n, 6}, 62), normal({5, 6}, 63)};
              }};
  check.tolerance = {.absolute = 1e-5, .relative = 1e-5};
  EXPECT_EQ(run_check(check), "");
  EXPECT_EQ(run_fitted(check, 4), "");
}

TEST(SymbolicNative, MlpStep) {
  Check mlp{"mlp",
            [](const Arguments& a) {
              Array hidden = relu(matmul(a[0], a[1]) + a[2]);
              Array logits = matmul(hidden, a[3]);
              return std::vector<Array>{-mean(sum(log_softmax(logits, -1) * a[4], -1))};
            },
            [](int64_t n) {
              return Arguments{normal({n, 20}, 31), normal({20, 32}, 32) * 0.2f, normal({32}, 33) * 0.1f,
                               normal({32, 10}, 34) * 0.2f, one_hot(random::randint(random::key(35), {n}, 0, 10), 10)};
            }};
  mlp.tolerance = {.absolute = 1e-5, .relative = 1e-5};
  EXPECT_EQ(run_check(mlp), "");
}

TEST(SymbolicNative, LoopsAndScansRunTheirBodiesAtTheCallsSizes) {
  Check loop{"fori_loop",
             [](const Arguments& a) {
               auto body = [](const Array& i, const Array& x) { return tanh(x) * 0.5f + astype(i, DType::f32); };
               return std::vector<Array>{fori_loop(0, 5, body, a[0])};
             },
             [](int64_t n) {
               return Arguments{normal({n, 8}, 40)};
             }};
  loop.tolerance = float_ulps(8);
  EXPECT_EQ(run_check(loop), "");
  // A scan over the dynamic axis: its length is s0.
  Check scanned{"scan",
                [](const Arguments& a) {
                  auto step = [](const Array& h, const Array& x) {
                    Array next = h * 0.9f + x;
                    return std::pair{next, sum(next * next)};
                  };
                  auto [last, ys] = scan(step, a[1], a[0]);
                  return std::vector<Array>{last, ys};
                },
                [](int64_t n) {
                  return Arguments{normal({n, 3}, 41), normal({3}, 42)};
                }};
  scanned.tolerance = {.absolute = 1e-5, .relative = 1e-5};
  EXPECT_EQ(run_check(scanned), "");
  Check looped{"while_loop",
               [](const Arguments& a) {
                 using State = std::pair<Array, Array>;
                 auto more = [](const State& state) { return state.first < 4; };
                 auto step = [](const State& state) { return State{state.first + 1, state.second * 2.0f - 1.0f}; };
                 return std::vector<Array>{while_loop(more, step, State{zeros({}, DType::i32), a[0]}).second};
               },
               [](int64_t n) { return Arguments{normal({n}, 43)}; }};
  EXPECT_EQ(run_check(looped), "");
}

TEST(SymbolicNative, LongKernelsPrefetchAndSliceAtTheCallsSize) {
  // Traced at 37 elements, run at 2 to 2^23: the flat kernel of symbolic
  // size prefetches at every size, and the sum to one value runs in slices
  // across threads.
  Check long_call{"long call",
                  [](const Arguments& a) {
                    Array y = tanh(a[0] * 1.5f + 0.25f) * sigmoid(a[0]);
                    return std::vector<Array>{y, sum(a[0] * a[0])};
                  },
                  [](int64_t n) { return Arguments{normal({n}, 44)}; }};
  long_call.sizes = {2, 1000, int64_t{1} << 23};
  long_call.tolerance = {.absolute = 2e-7, .relative = 1e-5};
  std::string plan = describe_plan(traced_symbolic(long_call));
  EXPECT_NE(plan.find("prefetching ahead"), std::string::npos) << plan;
  EXPECT_NE(plan.find("in slices across threads"), std::string::npos) << plan;
  EXPECT_EQ(run_check(long_call), "");
}

TEST(SymbolicNative, SavedCodeLoadsForTheGraphTracedAtOtherSizes) {
  Check check{"saved",
              [](const Arguments& a) {
                return std::vector<Array>{softmax(a[0], -1) + transpose(a[1]), sum(a[0], 0), take(a[0], a[2], 0)};
              },
              [](int64_t n) {
                return Arguments{normal({n, 64}, 45), normal({64, n}, 46), array({0, 3, -1, 30})};
              }};
  check.tolerance = {.absolute = 1e-5, .relative = 1e-5};
  Graph at_hint = traced_symbolic(check);
  Check other = check;
  other.marks = marks_of_s0(41);
  Graph at_other_hint = traced_symbolic(other, 41);
  // Neither the plan nor what is saved depends on the sizes traced at.
  EXPECT_EQ(describe_plan(at_hint), describe_plan(at_other_hint));
  const runtime::Backend& backend = llvm_backend::llvm_backend();
  std::string saved = backend.save(*backend.compile(detail::shared_ir(at_hint)));
  ASSERT_FALSE(saved.empty());
  bool linked_only = false;
  auto load = [&] {
    size_t compiled = llvm_backend::modules_compiled();
    std::shared_ptr<const runtime::Executable> loaded = backend.load(detail::shared_ir(at_other_hint), saved);
    linked_only = llvm_backend::modules_compiled() == compiled;
    return loaded;
  };
  EXPECT_EQ(run_every_size(check, at_other_hint, load), "");
  EXPECT_TRUE(linked_only);
}

TEST(SymbolicNative, CallsAtManySizesFromManyThreads) {
  Check check{"threads", [](const Arguments& a) { return std::vector<Array>{softmax(a[0] * 2.0f, -1)}; },
              [](int64_t n) {
                return Arguments{normal({n, 16}, 47)};
              }};
  Graph symbolic = traced_symbolic(check);
  auto executable = llvm_backend::llvm_backend().compile(detail::shared_ir(symbolic));
  // More sizes than the executable keeps instances for, each thread its own order.
  std::vector<int64_t> sizes;
  for (int64_t n = 2; n < 40; ++n) sizes.push_back(n);
  std::vector<std::vector<Array>> arguments, expected;
  for (int64_t n : sizes) {
    DifferentialCase reference = trace_case(check.name, check.function, check.arguments(n));
    arguments.push_back(reference.arguments);
    expected.push_back(detail::interpret(reference.graph, reference.arguments, reference.captures));
  }
  std::vector<std::string> failures(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < failures.size(); ++t)
    threads.emplace_back([&, t] {
      for (size_t round = 0; round < 3; ++round)
        for (size_t k = 0; k < sizes.size(); ++k) {
          size_t at = (k * (t + 1) + round) % sizes.size();
          std::vector<Array> got = executable->run(arguments[at], {});
          std::string mismatch = compare_arrays(got[0], expected[at][0], {.absolute = 1e-6, .relative = 1e-5});
          if (!mismatch.empty()) failures[t] += "s0 = " + std::to_string(sizes[at]) + ": " + mismatch + "\n";
        }
    });
  for (std::thread& thread : threads) thread.join();
  for (const std::string& failure : failures) EXPECT_EQ(failure, "");
}

}  // namespace
}  // namespace kiln::testing
