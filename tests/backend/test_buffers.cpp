// Buffer reuse in compiled graphs: donated arguments and dead intermediates
// hold outputs in place; nothing a caller can still see is overwritten.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/array_impl.h"

namespace kiln {
namespace {

const void* data_of(const Array& array) { return array.impl()->buffer->data(); }

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
