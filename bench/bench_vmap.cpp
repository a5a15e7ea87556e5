// Per-example gradients of an MLP loss (batch 256): kiln's jit(vmap(grad))
// against a loop of jit(grad) calls, one per example, and against libtorch —
// a loop of autograd calls, one per example (Debian's libtorch has no
// torch.func.vmap in C++), and the per-example gradients written by hand with
// batched products, as a torch user without vmap would. One thread on every
// side. Goal: jit(vmap(grad)) >= 10x faster than the loop of jit(grad).
#include <benchmark/benchmark.h>
#include <kiln/kiln.h>
#include <torch/torch.h>

#include <cstdio>
#include <vector>

#include "harness.h"
#include "runtime/thread_pool.h"

using kiln::Array;

namespace {

constexpr int64_t batch = 256, inputs = 64, hidden = 128, outputs = 10;

struct Mlp {
  Array w1, b1, w2, b2;
};

}  // namespace

KILN_TREE(Mlp, w1, b1, w2, b2);

namespace {

// One example: x [inputs], y [outputs].
Array example_loss(const Mlp& p, const Array& x, const Array& y) {
  Array h = kiln::tanh(kiln::matmul(x, p.w1) + p.b1);
  return kiln::sum(kiln::square(kiln::matmul(h, p.w2) + p.b2 - y));
}

void register_all() {
  auto keys = kiln::random::split_keys(kiln::random::key(0), 4);
  Mlp p{kiln::random::normal(keys[0], {inputs, hidden}) * 0.1f, kiln::zeros({hidden}),
        kiln::random::normal(keys[1], {hidden, outputs}) * 0.1f, kiln::zeros({outputs})};
  Array xs = kiln::random::normal(keys[2], {batch, inputs}), ys = kiln::random::normal(keys[3], {batch, outputs});

  auto per_example = kiln::jit(kiln::vmap(kiln::grad(example_loss), {std::nullopt, 0, 0}));
  kiln::bench::add("kiln jit(vmap(grad))", [=] {
    kiln::runtime::set_thread_limit(1);
    Mlp grads = per_example(p, xs, ys);
    benchmark::DoNotOptimize(grads.w1);
  });

  auto one = kiln::jit(kiln::grad(example_loss));
  auto x_rows = std::make_shared<std::vector<Array>>(kiln::unstack(xs));
  auto y_rows = std::make_shared<std::vector<Array>>(kiln::unstack(ys));
  kiln::bench::add("kiln loop of jit(grad)", [=] {
    kiln::runtime::set_thread_limit(1);
    for (int64_t i = 0; i < batch; ++i) {
      Mlp grads = one(p, (*x_rows)[static_cast<size_t>(i)], (*y_rows)[static_cast<size_t>(i)]);
      benchmark::DoNotOptimize(grads.w1);
    }
  });

  // libtorch: the same weights' shapes, f32.
  auto w1 = torch::randn({inputs, hidden}).mul_(0.1).requires_grad_(), b1 = torch::zeros({hidden}).requires_grad_();
  auto w2 = torch::randn({hidden, outputs}).mul_(0.1).requires_grad_(), b2 = torch::zeros({outputs}).requires_grad_();
  torch::Tensor tx = torch::randn({batch, inputs}), ty = torch::randn({batch, outputs});
  kiln::bench::add("torch loop of autograd", [=] {
    torch::set_num_threads(1);
    kiln::bench::OpenBlasThreads blas(1);
    for (int64_t i = 0; i < batch; ++i) {
      torch::Tensor h = torch::tanh(torch::matmul(tx[i], w1) + b1);
      torch::Tensor loss = (torch::matmul(h, w2) + b2 - ty[i]).square().sum();
      auto grads = torch::autograd::grad({loss}, {w1, b1, w2, b2});
      benchmark::DoNotOptimize(grads[0]);
    }
  });
  kiln::bench::add("torch batched by hand", [=] {
    torch::set_num_threads(1);
    kiln::bench::OpenBlasThreads blas(1);
    torch::NoGradGuard no_grad;
    torch::Tensor h = torch::tanh(torch::matmul(tx, w1) + b1);   // [B, H]
    torch::Tensor d_out = 2 * (torch::matmul(h, w2) + b2 - ty);  // [B, O]
    torch::Tensor g_w2 = h.unsqueeze(2) * d_out.unsqueeze(1);    // [B, H, O]
    torch::Tensor d_h = torch::matmul(d_out, w2.t()) * (1 - h.square());
    torch::Tensor g_w1 = tx.unsqueeze(2) * d_h.unsqueeze(1);  // [B, I, H]
    benchmark::DoNotOptimize(g_w1);
    benchmark::DoNotOptimize(g_w2);
  });
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  kiln::bench::run_all(argc, argv);
  std::printf(
      "\n== Per-example gradients, MLP %lldx%lldx%lld, batch %lld, 1 thread (time ratios; lower is better) ==\n",
      static_cast<long long>(inputs), static_cast<long long>(hidden), static_cast<long long>(outputs),
      static_cast<long long>(batch));
  kiln::bench::compare("jit(vmap(grad)) vs a loop of jit(grad)", "kiln jit(vmap(grad))", "kiln loop of jit(grad)", 0.1,
                       ">= 10x faster than the loop");
  kiln::bench::compare("jit(vmap(grad)) vs libtorch's loop of autograd", "kiln jit(vmap(grad))",
                       "torch loop of autograd", 0.1, ">= 10x faster (the loop torch users write)");
  kiln::bench::compare("jit(vmap(grad)) vs libtorch batched by hand", "kiln jit(vmap(grad))", "torch batched by hand",
                       1.0, "<= 1x (written by hand in torch)");
}
