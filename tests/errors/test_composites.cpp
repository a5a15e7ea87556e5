// Composites speak for the user's call: every node an operation built of
// others records names the user's line (printed IR, explanations, errors
// when it runs), derivatives included, and an error inside one names the
// user's line and the operation the user called, never kiln's own: a shape
// mismatch in hypot is "[hypot]", an absurd zeros is "[zeros]", not the
// broadcast inside it.
#include <gtest/gtest.h>
#include <kiln/kiln.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "ir/graph.h"
#include "support/errors.h"

namespace kiln {
namespace {

using testing::expect_error;

// Every node of `graph` but its inputs is at `line` of this file (any line of
// it when `line` is 0).
::testing::AssertionResult all_at(const Graph& graph, int line) {
  for (const ir::Node& node : detail::ir_of(graph).nodes) {
    if (node.op == ir::Primitive::input) continue;
    std::string file = node.where.file_name();
    bool here =
        file.ends_with("test_composites.cpp") && (line == 0 || node.where.line() == static_cast<unsigned>(line));
    if (!here)
      return ::testing::AssertionFailure() << ir::primitive_name(node.op) << " names " << file << ":"
                                           << node.where.line() << ", not line " << line << " here, in\n"
                                           << graph;
  }
  return ::testing::AssertionSuccess();
}

using Binary = std::function<Array(const Array&, const Array&)>;

struct Case {
  const char* name;
  Binary fn;
  int line;
};

// One composite per line, each on the line it names.
// clang-format off
std::vector<Case> composites() {
  using A = const Array&;
  return {
      {"tan", [](A a, A) { return tan(a); }, __LINE__},
      {"sinh cosh", [](A a, A) { return sinh(a) + cosh(a); }, __LINE__},
      {"arcsin arccos", [](A a, A) { return arcsin(a) + arccos(a); }, __LINE__},
      {"arcsinh arccosh arctanh", [](A a, A b) { return arcsinh(a) + arccosh(b) + arctanh(a); }, __LINE__},
      {"reciprocal degrees radians", [](A a, A) { return reciprocal(a) + degrees(a) + radians(a); }, __LINE__},
      {"isinf isfinite", [](A a, A) { return logical_or(isinf(a), isfinite(a)); }, __LINE__},
      {"logaddexp", [](A a, A b) { return logaddexp(a, b); }, __LINE__},
      {"hypot", [](A a, A b) { return hypot(a, b); }, __LINE__},
      {"erfinv", [](A a, A) { return erfinv(a); }, __LINE__},
      {"softmax", [](A a, A) { return softmax(a); }, __LINE__},
      {"log_softmax logsumexp", [](A a, A) { return log_softmax(a) + logsumexp(a); }, __LINE__},
      {"mean var std", [](A a, A) { return mean(a) + var(a) + std(a, {}, 1); }, __LINE__},
      {"isclose any all", [](A a, A b) { return logical_and(any(isclose(a, b)), all(a)); }, __LINE__},
      {"square relu clip", [](A a, A) { return square(a) + relu(a) + clip(a, -0.5, 0.5); }, __LINE__},
      {"gelu silu", [](A a, A) { return gelu(a) + gelu(a, false) + silu(a); }, __LINE__},
      {"softplus log_sigmoid", [](A a, A) { return softplus(a) + log_sigmoid(a); }, __LINE__},
      {"layer_norm rms_norm", [](A a, A) { return layer_norm(a) + rms_norm(a); }, __LINE__},
      {"einsum", [](A a, A b) { return einsum("i,j->ij", {a, b}); }, __LINE__},
      {"outer kron", [](A a, A b) { return outer(a, b) + reshape(kron(a, b), {3, 3}); }, __LINE__},
      {"inner cross", [](A a, A b) { return inner(a, b) + cross(a, b); }, __LINE__},
      {"tril triu diag", [](A a, A b) { return tril(outer(a, b)) + triu(outer(a, b), 1) + diag(a); }, __LINE__},
      {"diagonal trace", [](A a, A b) { return diagonal(outer(a, b)) + trace(outer(a, b)); }, __LINE__},
      {"median quantile", [](A a, A) { return median(a) + quantile(a, 0.25); }, __LINE__},
      {"norm det", [](A a, A b) { return linalg::norm(a) + linalg::det(outer(a, b) + eye(3)); }, __LINE__},
      {"nan_to_num", [](A a, A) { return nan_to_num(a / 0.0); }, __LINE__},
      {"take_along_axis", [](A a, A) { return take_along_axis(a, arange(2, -1, -1), 0); }, __LINE__},
      {"one_hot", [](A a, A) { return a + sum(one_hot(arange(3), 3), 0); }, __LINE__},
      {"creators", [](A a, A) { return a + linspace(0, 1, 3) + sum(eye(3), 0) + full({3}, 2.0f) + ones({3}); }, __LINE__},
      {"random", [](A a, A) { return a * random::normal(random::key(7), {3}) + random::uniform(random::key(8), {3}); }, __LINE__},
  };
}
// clang-format on

TEST(CompositeLocations, EveryNodeNamesTheCallersLine) {
  Array x = array({0.25f, -0.5f, 0.75f}), y = array({1.5f, 2.0f, 3.0f});
  for (const Case& c : composites()) {
    Graph graph = make_graph(c.name, c.fn, x, y);
    EXPECT_TRUE(all_at(graph, c.line)) << c.name;
  }
}

TEST(CompositeLocations, DerivativesOfCompositesNameTheUsersLines) {
  Array x = array({0.25f, -0.5f, 0.75f}), y = array({1.5f, 2.0f, 3.0f});
  for (const Case& c : composites()) {
    if (!is_floating(c.fn(x, y).dtype())) continue;  // a bool result has no derivative
    auto loss = [&](const Array& a, const Array& b) { return sum(c.fn(a, b)); };
    Graph graph = make_graph(
        c.name, [&](const Array& a, const Array& b) { return grad(loss)(a, b); }, x, y);
    EXPECT_TRUE(all_at(graph, 0)) << c.name;
  }
}

const Array a23 = zeros({2, 3});
const Array a43 = zeros({4, 3});

// clang-format off
TEST(CompositeErrors, NameTheOperationAndTheUsersLine) {
  expect_error(__LINE__, [] { hypot(a23, a43); }, {"[hypot]", "[2,3]", "[4,3]", "do not broadcast"});
  expect_error(__LINE__, [] { logaddexp(a23, a43); }, {"[logaddexp]", "[2,3]", "[4,3]"});
  expect_error(__LINE__, [] { isclose(a23, a43); }, {"[isclose]", "[2,3]", "[4,3]"});
  expect_error(__LINE__, [] { clip(a23, a43, 1.0); }, {"[clip]", "[2,3]", "[4,3]"});
  expect_error(__LINE__, [] { outer(a23, a43) + a23; }, {"[add]", "[6,12]", "[2,3]"});
  auto traced = jit([](const Array& a, const Array& b) { return tan(a) * hypot(a, b); });
  expect_error(__LINE__ - 1, [&] { traced(a23, a43); }, {"[hypot]", "[2,3]", "[4,3]"});
}

// Too large for any array: refused when the shape is known, before any
// memory is asked for, naming the creator the user called.
TEST(CompositeErrors, AbsurdCreationsNameTheCreator) {
  const int64_t huge = int64_t{1} << 62, side = int64_t{1} << 31;
  expect_error(__LINE__, [&] { zeros({huge}); }, {"[zeros]", "f32[4611686018427387904]", "more than one array may hold"});
  expect_error(__LINE__, [&] { ones({huge}, DType::i8); }, {"[ones]", "i8[4611686018427387904]"});
  expect_error(__LINE__, [&] { full({huge / 2, 4}, 1.0f); }, {"[full]", "f32[2305843009213693952,4]"});
  expect_error(__LINE__, [&] { zeros_like(a23) + full({huge}, 2); }, {"[full]", "i32[4611686018427387904]"});
  expect_error(__LINE__, [&] { eye(side); }, {"[eye]", "[2147483648,2147483648]"});
  expect_error(__LINE__, [&] { tri(side); }, {"[tri]", "[2147483648,2147483648]"});
  expect_error(__LINE__, [&] { linspace(0, 1, huge); }, {"[linspace]", "f64[4611686018427387904]"});
  auto jitted = jit([](const Array& x) { return x + zeros({int64_t{1} << 62}); });
  expect_error(__LINE__ - 1, [&] { jitted(a23); }, {"[zeros]", "f32[4611686018427387904]"});
}
// clang-format on

// Within what one array may hold, but more than the system gives (a child
// process whose address space is capped): the refusal names the creator,
// the shape, the bytes and the user's line; the primitive inside goes unnamed.
TEST(CompositeErrorsDeathTest, RefusedCreationsNameTheCreator) {
  // ASan aborts on allocations past its own maximum instead of failing them.
  if (!detail::allocator::caching_enabled()) GTEST_SKIP() << "sanitizer allocators abort on huge requests";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto refused = [] {
    rlimit limit{size_t{8} << 30, size_t{8} << 30};  // 8 GiB of address space
    if (setrlimit(RLIMIT_AS, &limit) != 0) std::_Exit(2);
    const int64_t tib = int64_t{1} << 38;  // f32 elements in a TiB
    struct Creation {
      const char* name;
      std::function<Array()> create;
      std::string bytes;
    };
    const std::vector<Creation> creations = {
        {"[zeros]", [&] { return zeros({tib}); }, "1099511627776 bytes"},
        {"[ones]", [&] { return ones({tib}); }, "1099511627776 bytes"},
        {"[full]", [&] { return full({tib}, 3.0f); }, "1099511627776 bytes"},
        {"[arange]", [&] { return arange(tib); }, "1099511627776 bytes"},
        {"[eye]", [&] { return eye(int64_t{1} << 19); }, "2199023255552 bytes"},
        {"[linspace]", [&] { return linspace(0, 1, tib); }, "2199023255552 bytes"},
    };
    for (const Creation& c : creations) {
      try {
        c.create().block_until_ready();
        std::_Exit(3);
      } catch (const AllocationError& error) {
        std::string text = error.what();
        bool named = text.starts_with(c.name) && text.find(c.bytes) != std::string::npos &&
                     text.find("test_composites.cpp") != std::string::npos &&
                     text.find("[broadcast") == std::string::npos;
        if (!named) {
          std::fprintf(stderr, "%s\n", text.c_str());
          std::_Exit(4);
        }
      }
    }
    std::_Exit(0);
  };
  EXPECT_EXIT(refused(), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace kiln
