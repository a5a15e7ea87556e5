// The error suite: every kind of bad input throws a kiln::Error whose message
// names the operation, the shapes/dtypes, the user's source line and a fix.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

namespace kiln {
namespace {

struct Expected {
  std::vector<std::string> fragments;
  int line;
};

// Runs `body`, which must throw ErrorType; checks every fragment and the line.
template <class ErrorType = Error, class Body>
void expect_error(Body body, const Expected& expected) {
  try {
    body();
    ADD_FAILURE() << "no error thrown; expected one at line " << expected.line;
  } catch (const ErrorType& error) {
    std::string message = error.what();
    for (const std::string& fragment : expected.fragments)
      EXPECT_NE(message.find(fragment), std::string::npos) << "missing '" << fragment << "' in:\n" << message;
    EXPECT_NE(message.find("(at test_errors.cpp:" + std::to_string(expected.line) + ")"), std::string::npos)
        << "missing the user's line " << expected.line << " in:\n"
        << message;
    EXPECT_NE(message.find("hint: "), std::string::npos) << "missing a hint in:\n" << message;
  }
}

const Array a23 = zeros({2, 3});
const Array a43 = zeros({4, 3});
const Array i3 = array({1, 2, 3});

// Each failing call stays on the line its check names.
// clang-format off
TEST(Errors, OperatorShapeMismatchNamesTheOperatorLine) {
  expect_error([] { Array c = a23 + a43; }, {{"[add]", "[2,3]", "[4,3]", "do not broadcast"}, __LINE__});
  expect_error([] { Array c = a23 * zeros({3, 2}); }, {{"[mul]", "[2,3]", "[3,2]"}, __LINE__});
  expect_error([] { Array c = a23 < a43; }, {{"[less]", "[2,3]", "[4,3]"}, __LINE__});
}

TEST(Errors, BadAxis) {
  expect_error([] { sum(a23, 2); }, {{"[sum]", "axis 2", "[2,3]"}, __LINE__});
  expect_error([] { softmax(a23, -3); }, {{"axis -3", "[2,3]"}, __LINE__});
  expect_error([] { concatenate({a23, a23}, 5); }, {{"[concatenate]", "axis 5"}, __LINE__});
  expect_error([] { argmax(a23, 7); }, {{"[argmax]", "axis 7"}, __LINE__});
}

TEST(Errors, BadPermutation) {
  expect_error([] { transpose(a23, {0, 0}); }, {{"[transpose]", "[0,0]", "[2,3]"}, __LINE__});
  expect_error([] { transpose(a23, {0}); }, {{"[transpose]", "[2,3]"}, __LINE__});
}

TEST(Errors, DtypeNotAllowed) {
  Array flags = array({true, false});
  expect_error([&] { Array n = -flags; }, {{"[neg]", "bool"}, __LINE__});
  expect_error([&] { Array d = flags - flags; }, {{"[sub]", "bool"}, __LINE__});
  expect_error([] { take(a23, a23); }, {{"[take]", "f32"}, __LINE__});
}

TEST(Errors, StaticIndexOutOfRange) {
  expect_error([] { slice(a23, {0, 0, 0}, {}); }, {{"[slice]", "[2,3]"}, __LINE__});
  expect_error([] { dynamic_slice(a23, {0, 0}, {3, 1}); }, {{"[dynamic_slice]", "[2,3]"}, __LINE__});
  expect_error([] { pad(a23, {0}, {1, 1}); }, {{"[pad]", "[2,3]"}, __LINE__});
}

TEST(Errors, ReshapeSizeMismatch) {
  expect_error([] { reshape(a23, {4, 2}); }, {{"[reshape]", "[2,3]", "[4,2]"}, __LINE__});
  expect_error([] { reshape(a23, {-1, -1}); }, {{"[reshape]", "-1"}, __LINE__});
}

TEST(Errors, MatmulMismatch) {
  expect_error([] { matmul(a23, a23); }, {{"[matmul]", "[2,3]"}, __LINE__});
  expect_error([] { matmul(scalar(1.0f), a23); }, {{"[matmul]"}, __LINE__});
}

TEST(Errors, CreationAndData) {
  expect_error([] { array({1.0f, 2.0f, 3.0f}, {2, 2}); }, {{"[array]", "[2,2]"}, __LINE__});
  expect_error([] { zeros({2, -1}); }, {{"negative", "[2,-1]"}, __LINE__});
  expect_error([] { i3.item<int32_t>(); }, {{"[item]", "i32[3]"}, __LINE__});
  expect_error([] { Array empty; exp(empty); }, {{"[exp]", "empty"}, __LINE__});
}

TEST(Errors, TracedErrorsNameTheLineInsideTheFunction) {
  const int line = __LINE__ + 1;
  auto fn = [](const Array& x) { return x + zeros({5}); };
  expect_error([&] { make_graph("bad", fn, a23); }, {{"[add]", "[2,3]", "[5]"}, line});
}
// clang-format on

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// Shapes whose element or byte count does not fit are errors, never a crash
// or a broken array; each names the operation, the shape and the line.
// clang-format off
TEST(Errors, AbsurdShapesAreAllocationErrors) {
  const int64_t huge = int64_t{1} << 62;
  expect_error<AllocationError>([&] { zeros({huge}); }, {{"f32[4611686018427387904]", "more than one array may hold"}, __LINE__});
  expect_error<AllocationError>([&] { full({huge / 2, 4}, 1.0f); }, {{"[full]", "f32[2305843009213693952,4]", "64-bit count"}, __LINE__});
  expect_error<AllocationError>([&] { zeros({huge, huge, 0}); }, {{"more elements than fit in a 64-bit count"}, __LINE__});
  expect_error<AllocationError>([&] { broadcast_to(a23, {huge, 2, 3}); }, {{"[broadcast_to]", "f32[4611686018427387904,2,3]"}, __LINE__});
  Array one = zeros({1});
  expect_error<AllocationError>([&] { pad(one, {huge}, {0}); }, {{"[pad]", "f32[4611686018427387905]"}, __LINE__});
  std::vector<float> two = {1, 2};
  expect_error<AllocationError>([&] { array(two, {huge, huge}); }, {{"[array]", "more elements than fit"}, __LINE__});
  auto jitted = jit([](const Array& x) { return broadcast_to(x, {int64_t{1} << 62}); });
  expect_error<AllocationError>([&] { jitted(one); }, {{"[broadcast_to]", "f32[4611686018427387904]"}, __LINE__ - 1});
}
// clang-format on

}  // namespace
}  // namespace kiln
