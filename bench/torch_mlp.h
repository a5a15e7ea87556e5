// The demo's MLP (examples/mlp.h) in libtorch, for side-by-side benchmarks:
// the same layers, trained with autograd and torch::optim::Adam.
#pragma once

#include <torch/torch.h>

#include "mlp.h"

struct TorchMlp : torch::nn::Module {
  torch::nn::Linear l1{nullptr}, l2{nullptr}, l3{nullptr};
  TorchMlp() {
    l1 = register_module("l1", torch::nn::Linear(mlp::inputs, mlp::hidden));
    l2 = register_module("l2", torch::nn::Linear(mlp::hidden, mlp::hidden));
    l3 = register_module("l3", torch::nn::Linear(mlp::hidden, mlp::classes));
  }
  torch::Tensor forward(torch::Tensor x) { return l3(torch::relu(l2(torch::relu(l1(x))))); }
};
