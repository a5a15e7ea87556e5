// A small run with a cache history worth a report: a layer whose batch size
// changes (a dynamic dimension), a function recompiled by changing dtypes
// until it storms, and a hot function with many hits. Run with KILN_TRACE=DIR.
#include <kiln/kiln.h>

#include <cstdio>

int main() {
  using namespace kiln;
  auto layer = jit(
      [](const Array& x, const Array& w) {
        Array h = tanh(matmul(x, w));
        Array shifted = exp(h - max(h, {1}, true));
        return shifted / sum(shifted, {1}, true);
      },
      {.name = "softmax_layer"});
  Array w = full({64, 32}, 0.01f);
  for (int64_t rows : {8, 8, 16, 24, 32}) layer(full({rows, 64}, 0.5f), w);

  auto churn = jit([](const Array& x) { return x * 2 + 1; }, {.name = "churn", .recompile_limit = 3});
  for (DType dtype : {f32, f64, i32, i64, i16}) churn(astype(full({16}, 1.0f), dtype));

  auto hot = jit([](const Array& x) { return sin(x) * 2.0f; }, {.name = "hot"});
  float total = 0;
  for (int i = 0; i < 200; ++i) total += sum(hot(full({256}, 0.5f))).item<float>();
  wait_for_background_compiles();
  std::printf("traced run done (%g)\n", total);
}
