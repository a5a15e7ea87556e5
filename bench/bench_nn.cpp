// A ResNet-style 3x3 convolution, 64 channels in and out, 56x56 images,
// batch 32 (channels last for kiln, PyTorch's layout for libtorch): forward,
// and forward with the gradients of input and kernel, against libtorch on the
// same threads. Goal: within 1.5x of libtorch.
#include <benchmark/benchmark.h>
#include <kiln/kiln.h>
#include <torch/torch.h>

#include <cstdio>

#include "harness.h"
#include "runtime/thread_pool.h"

using kiln::Array;

namespace {

constexpr int64_t batch = 32, size = 56, channels = 64;

void register_for_threads(int threads) {
  std::string suffix = " (" + std::to_string(threads) + " thread" + (threads > 1 ? "s)" : ")");
  Array x = kiln::random::normal(kiln::random::key(1), {batch, size, size, channels});
  Array w = kiln::random::normal(kiln::random::key(2), {3, 3, channels, channels}) * 0.05f;
  kiln::ConvOptions options{.padding = kiln::Padding::same()};
  auto forward =
      kiln::jit([options](const Array& images, const Array& kernel) { return kiln::conv(images, kernel, options); });
  auto backward = kiln::jit(kiln::value_and_grad(
      [options](const Array& images, const Array& kernel) { return kiln::sum(kiln::conv(images, kernel, options)); },
      {0, 1}));
  kiln::bench::add("kiln conv forward" + suffix, [=] {
    kiln::runtime::set_thread_limit(threads);
    Array y = forward(x, w);
    benchmark::DoNotOptimize(y);
  });
  kiln::bench::add("kiln conv forward and backward" + suffix, [=] {
    kiln::runtime::set_thread_limit(threads);
    auto [value, grads] = backward(x, w);
    benchmark::DoNotOptimize(std::get<0>(grads));
  });

  torch::Tensor tx = torch::randn({batch, channels, size, size}).requires_grad_();
  torch::Tensor tw = (torch::randn({channels, channels, 3, 3}) * 0.05).requires_grad_();
  kiln::bench::add("torch conv forward" + suffix, [=] {
    torch::set_num_threads(threads);
    kiln::bench::OpenBlasThreads blas(threads);
    torch::NoGradGuard no_grad;
    torch::Tensor y = torch::conv2d(tx, tw, {}, 1, 1);
    benchmark::DoNotOptimize(y.data_ptr());
  });
  kiln::bench::add("torch conv forward and backward" + suffix, [=] {
    torch::set_num_threads(threads);
    kiln::bench::OpenBlasThreads blas(threads);
    torch::Tensor y = torch::conv2d(tx, tw, {}, 1, 1).sum();
    auto grads = torch::autograd::grad({y}, {tx, tw});
    benchmark::DoNotOptimize(grads[0].data_ptr());
  });
}

}  // namespace

int main(int argc, char** argv) {
  for (int threads : {1, 2}) register_for_threads(threads);
  kiln::bench::run_all(argc, argv);
  std::printf("\n== conv2d 3x3, 64 -> 64 channels, 56x56, batch 32 (time ratios; lower is better) ==\n");
  for (std::string suffix : {" (1 thread)", " (2 threads)"}) {
    kiln::bench::compare("forward vs libtorch" + suffix, "kiln conv forward" + suffix, "torch conv forward" + suffix,
                         1.5, "<= 1.5x libtorch");
    kiln::bench::compare("forward and backward vs libtorch" + suffix, "kiln conv forward and backward" + suffix,
                         "torch conv forward and backward" + suffix, 1.5, "<= 1.5x libtorch");
  }
}
