// The 16-bit floats against f32 on the same work, in one run: W1
// (y = tanh(0.7x + 0.3) * sigmoid(x) - 0.5x^2) and a short chain
// (y = 0.7x + 0.3x^2) over 2^24 elements, jitted. f16 and bf16 move half the
// bytes and compute in f32 registers, so where f32 is memory-bound they run
// up to 2x faster. Goal: bf16 W1 >= 1.6x faster than f32. The copy rows give
// the bytes-per-second ceiling of the machine for each element size (one
// memcpy thread). On the 2-core development machine f32 W1 takes 2.3x the
// time of copying its bytes: compute-bound, so its bytes are not what 16-bit
// storage could save there; the chain, memory-bound, shows the gain.
#include <benchmark/benchmark.h>
#include <kiln/kiln.h>

#include <cstring>
#include <memory>
#include <string>

#include "harness.h"

using kiln::Array;

namespace {

Array w1(const Array& x) { return kiln::tanh(0.7 * x + 0.3) * kiln::sigmoid(x) - 0.5 * x * x; }
Array chain(const Array& x) { return 0.7 * x + 0.3 * x * x; }

void register_dtype(kiln::DType dtype, int64_t n) {
  std::string name(kiln::dtype_name(dtype));
  if (n != int64_t{1} << 24) name += " 2^16";
  auto x = std::make_shared<Array>(kiln::random::normal(kiln::random::key(1), {n}, dtype));
  auto jitted_w1 = kiln::jit(w1, {.name = "w1_" + name});
  auto jitted_chain = kiln::jit(chain, {.name = "chain_" + name});
  jitted_w1(*x);
  jitted_chain(*x);
  kiln::bench::add("W1 " + name, [=] { benchmark::DoNotOptimize(jitted_w1(*x)); });
  kiln::bench::add("chain " + name, [=] { benchmark::DoNotOptimize(jitted_chain(*x)); });
  size_t bytes = static_cast<size_t>(n) * kiln::dtype_size(dtype);
  auto from = std::shared_ptr<char[]>(new char[bytes]), to = std::shared_ptr<char[]>(new char[bytes]);
  std::memset(from.get(), 1, bytes);
  std::memset(to.get(), 0, bytes);
  kiln::bench::add("copy " + name, [=] { std::memcpy(to.get(), from.get(), bytes); });
}

}  // namespace

int main(int argc, char** argv) {
  for (int64_t n : {int64_t{1} << 24, int64_t{1} << 16})
    for (kiln::DType dtype : {kiln::f32, kiln::bf16, kiln::f16}) register_dtype(dtype, n);
  kiln::bench::run_all(argc, argv);
  std::printf("\n== 16-bit floats against f32, 2^24 elements (time ratios; lower is better) ==\n");
  kiln::bench::compare("W1 bf16 vs W1 f32", "W1 bf16", "W1 f32", 1 / 1.6, "bf16 >= 1.6x faster");
  kiln::bench::compare("W1 f16 vs W1 f32", "W1 f16", "W1 f32", 1 / 1.6, "f16 >= 1.6x faster");
  kiln::bench::compare("chain bf16 vs chain f32", "chain bf16", "chain f32", 1 / 1.6, "bf16 >= 1.6x faster");
  kiln::bench::compare("chain f16 vs chain f32", "chain f16", "chain f32", 1 / 1.6, "f16 >= 1.6x faster");
  kiln::bench::compare("W1 2^16 (in cache) bf16 vs f32", "W1 bf16 2^16", "W1 f32 2^16", 1e9, "(the kernels' compute)");
  kiln::bench::compare("W1 2^16 (in cache) f16 vs f32", "W1 f16 2^16", "W1 f32 2^16", 1e9, "(the kernels' compute)");
  kiln::bench::compare("W1 f32 vs copying its f32 bytes", "W1 f32", "copy f32", 1e9, "(how memory-bound f32 W1 is)");
  kiln::bench::compare("chain f32 vs copying its f32 bytes", "chain f32", "copy f32", 1e9, "(context)");
  kiln::bench::compare("copy bf16 vs copy f32", "copy bf16", "copy f32", 1e9, "(the bandwidth ceiling: 0.5)");
}
