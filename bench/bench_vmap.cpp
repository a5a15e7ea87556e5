// Per-example gradients of MLP losses (batch 256): kiln's jit(vmap(grad))
// against a loop of jit(grad) calls, one per example, and against libtorch —
// a loop of autograd calls, one per example (Debian's libtorch has no
// torch.func.vmap in C++), and the per-example gradients written by hand with
// batched products, as a torch user without vmap would. One thread on every
// side. Goal: jit(vmap(grad)) >= 10x faster than the loop of jit(grad).
// The floor: the per-example gradients are 256 copies of the parameters
// (9.6 MB for the larger MLP), which must be written; a memset of that many
// bytes into one buffer, reused as kiln's allocator reuses its blocks,
// against the loop says how much room the goal leaves.
#include <benchmark/benchmark.h>
#include <kiln/kiln.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "harness.h"
#include "runtime/thread_pool.h"

using kiln::Array;

namespace {

constexpr int64_t batch = 256;

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

struct Sizes {
  int64_t inputs, hidden, outputs;
  std::string suffix() const {
    return " (" + std::to_string(inputs) + "x" + std::to_string(hidden) + "x" + std::to_string(outputs) + ")";
  }
};

void register_all(Sizes sizes) {
  auto [inputs, hidden, outputs] = sizes;
  std::string suffix = sizes.suffix();
  auto keys = kiln::random::split_keys(kiln::random::key(0), 4);
  Mlp p{kiln::random::normal(keys[0], {inputs, hidden}) * 0.1f, kiln::zeros({hidden}),
        kiln::random::normal(keys[1], {hidden, outputs}) * 0.1f, kiln::zeros({outputs})};
  Array xs = kiln::random::normal(keys[2], {batch, inputs}), ys = kiln::random::normal(keys[3], {batch, outputs});

  auto per_example = kiln::jit(kiln::vmap(kiln::grad(example_loss), {std::nullopt, 0, 0}));
  kiln::bench::add("kiln jit(vmap(grad))" + suffix, [=] {
    kiln::runtime::set_thread_limit(1);
    Mlp grads = per_example(p, xs, ys);
    benchmark::DoNotOptimize(grads.w1);
  });

  auto one = kiln::jit(kiln::grad(example_loss));
  auto x_rows = std::make_shared<std::vector<Array>>(kiln::unstack(xs));
  auto y_rows = std::make_shared<std::vector<Array>>(kiln::unstack(ys));
  kiln::bench::add("kiln loop of jit(grad)" + suffix, [=] {
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
  kiln::bench::add("torch loop of autograd" + suffix, [=] {
    torch::set_num_threads(1);
    kiln::bench::OpenBlasThreads blas(1);
    for (int64_t i = 0; i < batch; ++i) {
      torch::Tensor h = torch::tanh(torch::matmul(tx[i], w1) + b1);
      torch::Tensor loss = (torch::matmul(h, w2) + b2 - ty[i]).square().sum();
      auto grads = torch::autograd::grad({loss}, {w1, b1, w2, b2});
      benchmark::DoNotOptimize(grads[0]);
    }
  });
  kiln::bench::add("torch batched by hand" + suffix, [=] {
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

  // The floor: writing the gradients' bytes, nothing computed.
  int64_t gradient_bytes = batch * (inputs * hidden + hidden + hidden * outputs + outputs) * 4;
  auto buffer = std::make_shared<std::vector<char>>(static_cast<size_t>(gradient_bytes));
  kiln::bench::add("memset of the gradients' bytes" + suffix, [=] {
    std::memset(buffer->data(), 1, buffer->size());
    benchmark::DoNotOptimize(buffer->data());
  });
}

}  // namespace

int main(int argc, char** argv) {
  // The MLP of the size of the demo's layers, and a small one where each
  // example is a few thousand operations and dispatch dominates the loop.
  std::vector<Sizes> all{{64, 128, 10}, {16, 32, 4}};
  for (const Sizes& sizes : all) register_all(sizes);
  kiln::bench::run_all(argc, argv);
  for (const Sizes& sizes : all) {
    std::string s = sizes.suffix();
    std::printf("\n== Per-example gradients, MLP%s, batch %lld, 1 thread (time ratios; lower is better) ==\n",
                s.c_str(), static_cast<long long>(batch));
    kiln::bench::compare("jit(vmap(grad)) vs a loop of jit(grad)" + s, "kiln jit(vmap(grad))" + s,
                         "kiln loop of jit(grad)" + s, 0.1, ">= 10x faster than the loop");
    kiln::bench::compare("jit(vmap(grad)) vs libtorch's loop of autograd" + s, "kiln jit(vmap(grad))" + s,
                         "torch loop of autograd" + s, 0.1, ">= 10x faster (the loop torch users write)");
    kiln::bench::compare("jit(vmap(grad)) vs libtorch batched by hand" + s, "kiln jit(vmap(grad))" + s,
                         "torch batched by hand" + s, 1.0, "<= 1x (written by hand in torch)");
    kiln::bench::compare("memset of the gradients' bytes vs the loop (the floor of the first ratio)" + s,
                         "memset of the gradients' bytes" + s, "kiln loop of jit(grad)" + s, 0.1,
                         "the goal's room: below 0.1 leaves some");
  }
}
