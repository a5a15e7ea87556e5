// Buffer reuse in compiled graphs: donated arguments and dead intermediates
// hold outputs in place; nothing a caller can still see is overwritten.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "core/array_impl.h"
#include "support/errors.h"

namespace kiln {
namespace {

const void* data_of(const Array& array) { return detail::impl(array)->buffer->data(); }

TEST(Buffers, DonatedArgumentHoldsTheOutput) {
  auto step = jit([](const Array& params, const Array& grads) { return params - grads * 0.5f; },
                  {.name = "sgd_in_place", .donate_argnums = {0}});
  Array params = full({4096}, 1.0f), grads = full({4096}, 2.0f);
  const void* before = data_of(params);
  Array updated = step(params, grads);
  EXPECT_EQ(data_of(updated), before);  // written in place
  EXPECT_EQ(updated.to_vector<float>()[7], 0.0f);
  EXPECT_THROW(params + 1, DonatedArrayError);
  EXPECT_EQ(grads.to_vector<float>()[0], 2.0f);  // not donated: untouched
}

TEST(Buffers, EveryOutputOfAMergedUpdateTakesADonatedBuffer) {
  // An optimizer step: the moment and the parameter come out of one loop,
  // and each is written over a donated input instead of fresh memory.
  auto step = jit(
      [](const Array& params, const Array& moment, const Array& grads) {
        Array updated_moment = moment * 0.9f + grads;
        return std::make_pair(params - updated_moment * 0.1f, updated_moment);
      },
      {.name = "momentum_in_place", .donate_argnums = {0, 1}});
  Array params = full({4096}, 1.0f), moment = full({4096}, 2.0f), grads = full({4096}, 3.0f);
  std::vector<const void*> donated = {data_of(params), data_of(moment)};
  auto [new_params, new_moment] = step(params, moment, grads);
  std::vector<const void*> written = {data_of(new_params), data_of(new_moment)};
  std::sort(donated.begin(), donated.end());
  std::sort(written.begin(), written.end());
  EXPECT_EQ(written, donated);
  EXPECT_FLOAT_EQ(new_moment.to_vector<float>()[9], 4.8f);
  EXPECT_FLOAT_EQ(new_params.to_vector<float>()[9], 1.0f - 0.48f);
  EXPECT_EQ(grads.to_vector<float>()[0], 3.0f);
}

TEST(Buffers, ArgumentsNotDonatedAreNeverOverwritten) {
  auto step = jit([](const Array& params, const Array& grads) { return params - grads * 0.5f; });
  Array params = full({4096}, 1.0f), grads = full({4096}, 2.0f);
  Array updated = step(params, grads);
  EXPECT_NE(data_of(updated), data_of(params));
  EXPECT_EQ(params.to_vector<float>()[0], 1.0f);
}

TEST(Buffers, DonatedArgumentSharedWithAnotherInputIsCopied) {
  auto step = jit([](const Array& a, const Array& b) { return a * b; }, {.donate_argnums = {0}});
  Array x = full({4096}, 3.0f);
  Array y = x;  // the same array passed twice: writing over it would corrupt `b`
  Array product = step(x, y);
  EXPECT_EQ(product.to_vector<float>()[5], 9.0f);
  EXPECT_NE(data_of(product), data_of(y));
}

TEST(Buffers, DeadIntermediateHoldsALaterValue) {
  // t is used twice (materialized); the final kernel may write over it.
  auto f = jit([](const Array& x) {
    Array t = exp(x) + 1.0f;
    return t * t - t;
  });
  Array x = full({8192}, 0.5f);
  float t = std::exp(0.5f) + 1.0f;
  std::vector<float> got = f(x).to_vector<float>();
  EXPECT_NEAR(got[100], t * t - t, 1e-5);
  EXPECT_EQ(x.to_vector<float>()[0], 0.5f);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

using testing::expect_error;

auto donating_step() {
  return jit([](const Array& params, const Array& grads) { return params - grads * 0.5f; },
             {.name = "donating_step", .donate_argnums = {0}});
}

// Every array that can still observe a donated buffer keeps its values: the
// buffer is taken over only when nothing else refers to it.
TEST(Donation, AViewOfADonatedArrayKeepsItsValues) {
  auto step = donating_step();
  Array params = full({4096}, 1.0f), grads = full({4096}, 2.0f);
  Array view = reshape(params, {64, 64});
  Array updated = step(params, grads);
  EXPECT_EQ(updated.to_vector<float>()[3], 0.0f);
  EXPECT_EQ(sum(view).item<float>(), 4096.0f);
  EXPECT_NE(data_of(updated), data_of(view));
}

TEST(Donation, ADonatedViewLeavesItsBaseIntact) {
  auto step = donating_step();
  Array base = full({64, 64}, 1.0f), grads = full({4096}, 2.0f);
  Array view = reshape(base, {4096});
  Array updated = step(view, grads);
  EXPECT_EQ(updated.to_vector<float>()[0], 0.0f);
  EXPECT_EQ(sum(base).item<float>(), 4096.0f);
  EXPECT_EQ(sum(expand_dims(base, 0)).item<float>(), 4096.0f);
}

TEST(Donation, EveryUseOfADonatedArrayRaisesNamingTheLine) {
  auto step = donating_step();
  Array params = full({4096}, 1.0f), grads = full({4096}, 2.0f);
  Array copy = params;  // a second handle of the same array
  step(params, grads);
  for (const Array* handle : {&params, &copy}) {
    const Array& donated = *handle;
    expect_error(__LINE__, [&] { (void)(donated + 1); }, {"[add]", "donated to jitted 'donating_step'"});
    expect_error(__LINE__, [&] { (void)donated.to_vector<float>(); }, {"[to_vector]", "f32[4096]"});
    expect_error(__LINE__, [&] { (void)reshape(donated, {64, 64}); }, {"[reshape]", "donated"});
    expect_error(__LINE__, [&] { (void)donated.shape(); }, {"[shape]", "donated"});
    expect_error(__LINE__, [&] { (void)sum(donated).item<float>(); }, {"[sum]", "donated"});
    EXPECT_THROW(
        {
          std::ostringstream text;
          text << donated;
        },
        DonatedArrayError);
  }
  Array scalar_param = full({1}, 1.0f);
  auto scalar_step = jit([](const Array& p) { return p * 2.0f; }, {.name = "scalar_step", .donate_argnums = {0}});
  scalar_step(scalar_param);
  expect_error(__LINE__, [&] { (void)scalar_param.item<float>(); }, {"[item]", "donated to jitted 'scalar_step'"});
}

TEST(Donation, ASecondCallWithADonatedArrayNamesTheFunctionAndItsLine) {
  auto step = donating_step();
  Array params = full({4096}, 1.0f), grads = full({4096}, 2.0f);
  step(params, grads);
  try {
    step(params, grads);
    ADD_FAILURE() << "a second call with a donated array did not throw";
  } catch (const DonatedArrayError& error) {
    std::string text = error.what();
    EXPECT_NE(text.find("donated to jitted 'donating_step' (jit at test_buffers.cpp:"), std::string::npos) << text;
    EXPECT_EQ(text.find("signature.cpp"), std::string::npos) << text;
  }
}

TEST(Donation, DonateArgnumsOutOfRangeOrRepeatedRaise) {
  auto out_of_range = jit([](const Array& x) { return x + 1; }, {.name = "one_argument", .donate_argnums = {1}});
  expect_error(__LINE__ - 1, [&] { out_of_range(full({4}, 1.0f)); },
               {"[jit]", "donate_argnums of 'one_argument' names argument 1, but the call has 1 argument"});
  auto negative = jit([](const Array& x) { return x + 1; }, {.name = "negative", .donate_argnums = {-1}});
  expect_error(__LINE__ - 1, [&] { negative(full({4}, 1.0f)); }, {"names argument -1"});
  auto twice = jit([](const Array& x) { return x + 1; }, {.name = "twice", .donate_argnums = {0, 0}});
  expect_error(__LINE__ - 1, [&] { twice(full({4}, 1.0f)); }, {"names argument 0 twice"});
}

}  // namespace
}  // namespace kiln
