// The native backend on common operations beyond the headline workloads of
// bench_kernels, each jitted and side by side with libtorch on the same
// threads, in one run: reductions along either axis, normalizations, movement,
// indexing, scans, random numbers and matrix products with transposed or
// batched operands.
// A user coming from PyTorch expects none of them to be slower; the goal
// printed is "at least as fast as libtorch".
#include <benchmark/benchmark.h>
#include <kiln/kiln.h>
#include <torch/torch.h>

#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "harness.h"

extern "C" void openblas_set_num_threads(int);

using kiln::Array;

namespace {

struct Workload {
  std::string name;
  std::function<Array(const std::vector<Array>&)> kiln_body;
  std::function<torch::Tensor(const std::vector<torch::Tensor>&)> torch_body;
  std::vector<Array> inputs;
};

// Integers become int64 tensors: PyTorch's indexing operations take no other.
torch::Tensor to_torch(const Array& x) {
  std::vector<int64_t> shape(x.shape().begin(), x.shape().end());
  switch (x.dtype()) {
    case kiln::DType::f32: {
      std::vector<float> values = x.to_vector<float>();
      return torch::from_blob(values.data(), shape, torch::kFloat).clone();
    }
    case kiln::DType::f64: {
      std::vector<double> values = x.to_vector<double>();
      return torch::from_blob(values.data(), shape, torch::kDouble).clone();
    }
    default: {
      std::vector<int64_t> values = x.to_vector<int64_t>();
      return torch::from_blob(values.data(), shape, torch::kLong).clone();
    }
  }
}

void add(const Workload& w) {
  auto inputs = std::make_shared<std::vector<Array>>(w.inputs);
  auto body = w.kiln_body;
  auto f = kiln::jit([body](const std::vector<Array>& xs) { return body(xs); }, {.name = w.name});
  f(*inputs);
  kiln::bench::add(w.name + " kiln jit", [=] { benchmark::DoNotOptimize(f(*inputs)); });
  auto tensors = std::make_shared<std::vector<torch::Tensor>>();
  for (const Array& x : w.inputs) tensors->push_back(to_torch(x));
  auto torch_body = w.torch_body;
  kiln::bench::add(w.name + " libtorch", [=] {
    // libtorch's matrix products run on the OpenBLAS kiln keeps at one thread.
    kiln::bench::OpenBlasThreads blas(torch::get_num_threads());
    benchmark::DoNotOptimize(torch_body(*tensors));
  });
}

Array normal(int seed, kiln::Shape shape) { return kiln::random::normal(kiln::random::key(seed), std::move(shape)); }

std::vector<Workload> workloads() {
  using V = const std::vector<Array>&;
  using T = const std::vector<torch::Tensor>&;
  Array square = normal(1, {4096, 4096});
  Array wide = normal(2, {4096, 1024});
  Array tall = normal(3, {1024, 4096});
  Array gamma = normal(4, {1024}), beta = normal(5, {1024});
  Array a = normal(6, {1024, 1024}), b = normal(7, {1024, 1024});
  Array batch_a = normal(8, {64, 256, 256}), batch_b = normal(9, {64, 256, 256});
  Array column = normal(10, {4096, 1}), row = normal(11, {1, 4096});
  Array rows = kiln::random::randint(kiln::random::key(12), {4096}, 0, 4096);
  Array logits = normal(13, {4096, 1000});
  Array labels = kiln::random::randint(kiln::random::key(14), {4096, 1}, 0, 1000);
  Array flat = normal(15, {1 << 22});
  Array sequence = normal(16, {64, 512, 768}), bias = normal(17, {64, 1, 768});
  Array points = normal(18, {1 << 20, 3}), weights = normal(19, {3});
  Array targets = kiln::random::randint(kiln::random::key(20), {1024}, 0, 4096);
  return {
      {"column sums f32[4096,4096]", [](V x) { return kiln::sum(x[0], 0); }, [](T x) { return x[0].sum(0); }, {square}},
      {"sum of all f32[4096,4096]", [](V x) { return kiln::sum(x[0]); }, [](T x) { return x[0].sum(); }, {square}},
      {"row max f32[4096,4096]",
       [](V x) { return kiln::max(x[0], -1); },
       [](T x) { return std::get<0>(x[0].max(-1)); },
       {square}},
      {"layer norm f32[4096,1024]",
       [](V x) {
         Array mean = kiln::mean(x[0], -1, true);
         Array centered = x[0] - mean;
         Array variance = kiln::mean(centered * centered, -1, true);
         return centered * kiln::rsqrt(variance + 1e-5f) * x[1] + x[2];
       },
       [](T x) { return torch::layer_norm(x[0], {1024}, x[1], x[2], 1e-5); },
       {wide, gamma, beta}},
      {"softmax axis 0 f32[1024,4096]",
       [](V x) { return kiln::softmax(x[0], 0); },
       [](T x) { return torch::softmax(x[0], 0); },
       {tall}},
      {"cross entropy f32[4096,1000]",
       [](V x) { return -kiln::mean(kiln::take_along_axis(kiln::log_softmax(x[0], -1), x[1], -1)); },
       [](T x) { return torch::nll_loss(torch::log_softmax(x[0], -1), x[1].squeeze(1)); },
       {logits, labels}},
      {"transpose f32[4096,4096]",
       [](V x) { return kiln::transpose(x[0]); },
       [](T x) { return x[0].t().contiguous(); },
       {square}},
      {"broadcast add f32[4096,1]+[1,4096]",
       [](V x) { return x[0] + x[1]; },
       [](T x) { return x[0] + x[1]; },
       {column, row}},
      {"gelu (erf) f32[2^22]",
       [](V x) { return 0.5f * x[0] * (1.0f + kiln::erf(x[0] * 0.70710678f)); },
       [](T x) { return torch::gelu(x[0]); },
       {flat}},
      {"cumsum last axis f32[4096,1024]",
       [](V x) { return kiln::cumsum(x[0], -1); },
       [](T x) { return torch::cumsum(x[0], -1); },
       {wide}},
      {"argmax last axis f32[4096,1024]",
       [](V x) { return kiln::argmax(x[0], -1); },
       [](T x) { return torch::argmax(x[0], -1); },
       {wide}},
      {"take rows f32[4096,4096]",
       [](V x) { return kiln::take(x[0], x[1], 0); },
       [](T x) { return torch::index_select(x[0], 0, x[1]); },
       {square, rows}},
      {"concatenate axis 1 2x f32[4096,1024]",
       [](V x) {
         return kiln::concatenate({x[0], x[1]}, 1);
       },
       [](T x) {
         return torch::cat({x[0], x[1]}, 1);
       },
       {wide, wide}},
      {"argmax axis 0 f32[4096,1024]",
       [](V x) { return kiln::argmax(x[0], 0); },
       [](T x) { return torch::argmax(x[0], 0); },
       {wide}},
      {"cumsum axis 0 f32[4096,1024]",
       [](V x) { return kiln::cumsum(x[0], 0); },
       [](T x) { return torch::cumsum(x[0], 0); },
       {wide}},
      {"mean axis 1 f32[64,512,768]",
       [](V x) { return kiln::mean(x[0], 1); },
       [](T x) { return x[0].mean(1); },
       {sequence}},
      {"add f32[64,512,768]+[64,1,768]",
       [](V x) { return x[0] + x[1]; },
       [](T x) { return x[0] + x[1]; },
       {sequence, bias}},
      {"mul f32[2^20,3]*[3]", [](V x) { return x[0] * x[1]; }, [](T x) { return x[0] * x[1]; }, {points, weights}},
      {"scatter_add rows f32[4096,1024]",
       [](V x) { return kiln::scatter_add(x[0], x[1], x[2], 0); },
       [](T x) { return x[0].index_add(0, x[1], x[2]); },
       {wide, targets, normal(21, {1024, 1024})}},
      {"sum over axes 0,2 f32[64,128,512]",
       [](V x) {
         return kiln::sum(x[0], {0, 2});
       },
       [](T x) {
         return x[0].sum(std::vector<int64_t>{0, 2});
       },
       {normal(22, {64, 128, 512})}},
      {"exp f64[2^22]",
       [](V x) { return kiln::exp(x[0]); },
       [](T x) { return torch::exp(x[0]); },
       {kiln::astype(flat, kiln::DType::f64)}},
      {"sum i64[2^24]",
       [](V x) { return kiln::sum(x[0]); },
       [](T x) { return x[0].sum(); },
       {kiln::random::randint(kiln::random::key(23), {1 << 24}, -100, 100, kiln::DType::i64)}},
      {"random normal f32[4096,4096]",
       [](V x) {
         return kiln::random::normal(x[0], {4096, 4096});
       },
       [](T) {
         return torch::randn({4096, 4096});
       },
       {kiln::random::key(24)}},
      {"matmul a @ b.T f32[1024,1024]",
       [](V x) { return kiln::matmul(x[0], kiln::transpose(x[1])); },
       [](T x) { return torch::matmul(x[0], x[1].t()); },
       {a, b}},
      {"batched matmul f32[64,256,256]",
       [](V x) { return kiln::matmul(x[0], x[1]); },
       [](T x) { return torch::matmul(x[0], x[1]); },
       {batch_a, batch_b}},
  };
}

}  // namespace

int main(int argc, char** argv) {
  int all = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  torch::set_num_threads(all);
  openblas_set_num_threads(all);
  std::vector<Workload> list = workloads();
  for (const Workload& w : list) add(w);
  kiln::bench::run_all(argc, argv);
  std::printf("\n== common operations, jitted, %d threads (time ratios; lower is better) ==\n", all);
  for (const Workload& w : list)
    if (kiln::bench::ran(w.name + " kiln jit") && kiln::bench::ran(w.name + " libtorch"))
      kiln::bench::compare(w.name + " vs libtorch", w.name + " kiln jit", w.name + " libtorch", 1.0,
                           "at least as fast as libtorch");
}
