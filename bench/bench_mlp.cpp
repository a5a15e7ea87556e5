// The MLP training step (784 -> 512 -> 512 -> 10, batch 256, ReLU, softmax
// cross-entropy, Adam), side by side:
//   kiln: the main demo's jitted step (examples/mlp.h: forward + backward +
//         Adam in one graph)
//   libtorch eager: the same model with autograd and torch::optim::Adam
//   OpenBLAS alone: the step's eight matrix products, nothing else
// Goals: kiln >= 1.1x libtorch's steps per second on the same threads, and a
// kiln step <= 1.15x its matrix products alone.
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <kiln/kiln.h>
#include <torch/torch.h>

#include "harness.h"
#include "mlp.h"
#include "runtime/thread_pool.h"
#include "torch_mlp.h"

extern "C" void openblas_set_num_threads(int);

using kiln::Array;
using namespace mlp;

namespace {
auto make_step() {
  return kiln::jit(
      [](const Mlp& p, const Adam& s, const Array& x, const Array& y) { return mlp::train_step(p, s, x, y); },
      {.name = "mlp_step", .donate_argnums = {0, 1}});
}

void register_for_threads(int threads) {
  std::string suffix = " (" + std::to_string(threads) + " thread" + (threads > 1 ? "s)" : ")");
  // kiln
  auto step = std::make_shared<decltype(make_step())>(make_step());
  auto key = kiln::random::split_keys(kiln::random::key(0), 2);
  auto params = std::make_shared<Mlp>(init(key[0]));
  auto state = std::make_shared<Adam>(initial_state(*params));
  Array x = kiln::random::normal(key[1], {batch_size, inputs});
  Array y = kiln::random::randint(key[1], {batch_size}, 0, classes);
  kiln::bench::add("kiln mlp step" + suffix, [=] {
    kiln::runtime::set_thread_limit(threads);  // kiln splits matmuls across its own threads
    Array value;
    std::tie(*params, *state, value) = (*step)(*params, *state, x, y);
    benchmark::DoNotOptimize(value);
  });

  // libtorch eager
  auto model = std::make_shared<TorchMlp>();
  auto optimizer = std::make_shared<torch::optim::Adam>(model->parameters(), torch::optim::AdamOptions(learning_rate));
  torch::Tensor tx = torch::randn({batch_size, inputs}), ty = torch::randint(0, classes, {batch_size});
  kiln::bench::add("torch mlp step" + suffix, [=] {
    torch::set_num_threads(threads);
    kiln::bench::OpenBlasThreads blas(threads);  // libtorch's products run on this same OpenBLAS
    optimizer->zero_grad();
    torch::Tensor value = torch::nn::functional::cross_entropy(model->forward(tx), ty);
    value.backward();
    optimizer->step();
  });

  // The eight matrix products of one step, through OpenBLAS directly.
  auto buffers = std::make_shared<std::vector<std::vector<float>>>();
  for (int64_t size : {batch_size * inputs, inputs * hidden, batch_size * hidden, hidden * hidden, hidden * classes,
                       batch_size * classes, batch_size * hidden, batch_size * hidden})
    buffers->emplace_back(static_cast<size_t>(size), 0.01f);
  kiln::bench::add("openblas mlp matmuls" + suffix, [=] {
    openblas_set_num_threads(threads);
    auto& b = *buffers;
    float *xb = b[0].data(), *w1 = b[1].data(), *h1 = b[2].data(), *w2 = b[3].data(), *w3 = b[4].data(),
          *out = b[5].data(), *h2 = b[6].data(), *scratch = b[7].data();
    auto gemm = [](CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                   const float* bb, int64_t ldb, float* c, int64_t ldc) {
      cblas_sgemm(CblasRowMajor, ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0f, a,
                  static_cast<int>(lda), bb, static_cast<int>(ldb), 0.0f, c, static_cast<int>(ldc));
    };
    gemm(CblasNoTrans, CblasNoTrans, batch_size, hidden, inputs, xb, inputs, w1, hidden, h1, hidden);         // x w1
    gemm(CblasNoTrans, CblasNoTrans, batch_size, hidden, hidden, h1, hidden, w2, hidden, h2, hidden);         // h1 w2
    gemm(CblasNoTrans, CblasNoTrans, batch_size, classes, hidden, h2, hidden, w3, classes, out, classes);     // h2 w3
    gemm(CblasTrans, CblasNoTrans, hidden, classes, batch_size, h2, hidden, out, classes, w3, classes);       // dw3
    gemm(CblasNoTrans, CblasTrans, batch_size, hidden, classes, out, classes, w3, classes, scratch, hidden);  // dh2
    gemm(CblasTrans, CblasNoTrans, hidden, hidden, batch_size, h1, hidden, scratch, hidden, w2, hidden);      // dw2
    gemm(CblasNoTrans, CblasTrans, batch_size, hidden, hidden, scratch, hidden, w2, hidden, h2, hidden);      // dh1
    gemm(CblasTrans, CblasNoTrans, inputs, hidden, batch_size, xb, inputs, h2, hidden, w1, hidden);           // dw1
    benchmark::DoNotOptimize(w1);
  });
}
}  // namespace

int main(int argc, char** argv) {
  for (int threads : {1, 2}) register_for_threads(threads);
  kiln::bench::run_all(argc, argv);
  std::printf("\n== MLP training step (time ratios; lower is better) ==\n");
  for (std::string suffix : {" (1 thread)", " (2 threads)"}) {
    // >= 1.1x libtorch's steps per second  <=>  time ratio <= 1/1.1
    kiln::bench::compare("kiln step vs libtorch eager step" + suffix, "kiln mlp step" + suffix,
                         "torch mlp step" + suffix, 1.0 / 1.1, ">= 1.1x libtorch steps/s");
    kiln::bench::compare("kiln step vs its matmuls alone (OpenBLAS)" + suffix, "kiln mlp step" + suffix,
                         "openblas mlp matmuls" + suffix, 1.15, "<= 1.15x the matmuls");
  }
}
