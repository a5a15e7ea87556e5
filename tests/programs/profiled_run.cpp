// A run recorded by KILN_PROFILE=FILE, which the profile writes as the
// process exits: a layer compiled on kiln's compile thread while its first
// call runs op by op, then run compiled on arrays large enough for the
// thread pool to split its kernels.
#include <kiln/kiln.h>

#include <cstdio>

int main() {
  using namespace kiln;
  auto layer = jit(
      [](const Array& x, const Array& w) {
        Array activations = tanh(matmul(x, w));
        return sum(exp(x) * 0.5f + x, {1}) + sum(activations * activations, {1});
      },
      {.name = "profiled_layer", .compile_mode = CompileMode::Background});
  Array x = full({1024, 1024}, 0.25f), w = full({1024, 64}, 0.01f);
  float first = layer(x, w).to_vector<float>()[0];
  wait_for_background_compiles();
  float second = 0;
  for (int call = 0; call < 3; ++call) second = layer(x, w).to_vector<float>()[0];
  std::printf("profiled run done (%g, %g)\n", first, second);
}
