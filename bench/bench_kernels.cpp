// The native backend side by side with its peers, in one run:
//   W1  y = tanh(a*x + b) * sigmoid(x) - 0.5*x*x, f32, N = 2^20 and 2^24:
//       jitted kiln vs a -O3 -march=native -ffast-math hand loop (1 thread and
//       all threads), the copy bandwidth of the same bytes, libtorch eager and
//       an Eigen array expression. Goal: >= 0.9x the hand loop on all threads.
//   W4  row sums of f32[4096,4096] and softmax over the last axis of
//       f32[4096,1024] vs libtorch on the same threads. Goal: >= 1.1x libtorch.
//       Row sums also against a hand loop: the read bandwidth of the input.
//   W5  f32 matmul 1024^3 and 2048^3 vs OpenBLAS called directly. Goal >= 95%.
//   Compile time, cold, of a 100-node graph and of an MLP forward+backward
//   graph. Goal <= 50 ms each.
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <kiln/kiln.h>
#include <sys/mman.h>
#include <torch/torch.h>

#include <Eigen/Core>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

#include "backend/llvm/codegen.h"
#include "backend/llvm/kernel_cache.h"
#include "hand_loops.h"
#include "harness.h"
#include "runtime/thread_pool.h"

extern "C" void openblas_set_num_threads(int);

using kiln::Array;

namespace {

int threads_available() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

// The hand loops' threads, made once (see HandLoopPool).
void parallel(int threads, int64_t n, const std::function<void(int64_t, int64_t)>& body) {
  static kiln::bench::HandLoopPool pool(threads);
  pool.run(n, body);
}

// Memory for the hand loops and Eigen of the same kind kiln's allocator
// gives large arrays (2 MiB aligned, huge pages asked for), so that a
// comparison is about the loops, not about page sizes: with plain 4 KiB
// pages from std::vector, the hand loop over 2^24 floats ran 2x slower in
// some machine states while kiln was unaffected.
std::shared_ptr<float[]> huge_floats(int64_t n, const float* from = nullptr) {
  constexpr size_t huge_page = size_t{2} << 20;
  size_t bytes = (static_cast<size_t>(n) * sizeof(float) + huge_page - 1) / huge_page * huge_page;
  auto* data = static_cast<float*>(std::aligned_alloc(huge_page, bytes));
  if (!data) throw std::bad_alloc();
  madvise(data, bytes, MADV_HUGEPAGE);
  if (from) std::memcpy(data, from, static_cast<size_t>(n) * sizeof(float));
  else std::memset(data, 0, bytes);
  return std::shared_ptr<float[]>(data, [](float* p) { std::free(p); });
}

std::shared_ptr<float[]> huge_copy(const Array& x) {
  std::vector<float> values = x.to_vector<float>();
  return huge_floats(static_cast<int64_t>(values.size()), values.data());
}

void register_w1(int64_t n, int all) {
  std::string size = n == (1 << 20) ? "2^20" : "2^24";
  auto x = std::make_shared<Array>(kiln::random::normal(kiln::random::key(1), {n}));
  auto w1 = kiln::jit([](const Array& v) { return kiln::tanh(0.7f * v + 0.3f) * kiln::sigmoid(v) - 0.5f * v * v; },
                      {.name = "w1"});
  w1(*x);
  kiln::bench::add("W1 " + size + " kiln jit", [=] { benchmark::DoNotOptimize(w1(*x)); });
  kiln::bench::add("W1 " + size + " kiln eager", [=] {
    const Array& v = *x;
    benchmark::DoNotOptimize(kiln::tanh(0.7f * v + 0.3f) * kiln::sigmoid(v) - 0.5f * v * v);
  });
  std::shared_ptr<float[]> in = huge_copy(*x), out = huge_floats(n);
  kiln::bench::add("W1 " + size + " hand loop 1 thread",
                   [=] { kiln::bench::w1_hand_loop(in.get(), out.get(), 0.7f, 0.3f, 0, n); });
  kiln::bench::add("W1 " + size + " hand loop all threads", [=] {
    parallel(all, n, [&](int64_t b, int64_t e) { kiln::bench::w1_hand_loop(in.get(), out.get(), 0.7f, 0.3f, b, e); });
  });
  kiln::bench::add("W1 " + size + " copy bandwidth", [=] {
    parallel(all, n, [&](int64_t b, int64_t e) {
      std::memcpy(out.get() + b, in.get() + b, static_cast<size_t>(e - b) * sizeof(float));
    });
  });
  auto tx = std::make_shared<torch::Tensor>(torch::from_blob(in.get(), {n}, torch::kFloat).clone());
  kiln::bench::add("W1 " + size + " libtorch eager", [=] {
    torch::Tensor& v = *tx;
    benchmark::DoNotOptimize(torch::tanh(0.7f * v + 0.3f) * torch::sigmoid(v) - 0.5f * v * v);
  });
  kiln::bench::add("W1 " + size + " eigen", [=] {
    Eigen::Map<const Eigen::ArrayXf> v(in.get(), n);
    Eigen::Map<Eigen::ArrayXf> y(out.get(), n);
    y = (0.7f * v + 0.3f).tanh() * (1.0f / (1.0f + (-v).exp())) - 0.5f * v * v;
  });
}

void register_w4(int all) {
  auto x = std::make_shared<Array>(kiln::random::normal(kiln::random::key(2), {4096, 4096}));
  auto rows = kiln::jit([](const Array& v) { return kiln::sum(v, -1); }, {.name = "row_sums"});
  rows(*x);
  kiln::bench::add("W4 row sums kiln jit", [=] { benchmark::DoNotOptimize(rows(*x)); });
  auto tx = std::make_shared<torch::Tensor>(torch::randn({4096, 4096}));
  kiln::bench::add("W4 row sums libtorch", [=] { benchmark::DoNotOptimize(tx->sum(-1)); });
  // The same sums by a -O3 -march=native -ffast-math loop on every thread:
  // what reading these 64 MiB costs on this machine.
  std::shared_ptr<float[]> in = huge_copy(*x), out = huge_floats(4096);
  kiln::bench::add("W4 row sums hand loop", [=] {
    parallel(all, 4096,
             [&](int64_t b, int64_t e) { kiln::bench::row_sums_hand_loop(in.get(), out.get(), 4096, b, e); });
  });
  auto s = std::make_shared<Array>(kiln::random::normal(kiln::random::key(3), {4096, 1024}));
  auto softmax = kiln::jit([](const Array& v) { return kiln::softmax(v, -1); }, {.name = "softmax"});
  softmax(*s);
  kiln::bench::add("W4 softmax kiln jit", [=] { benchmark::DoNotOptimize(softmax(*s)); });
  auto ts = std::make_shared<torch::Tensor>(torch::randn({4096, 1024}));
  kiln::bench::add("W4 softmax libtorch", [=] { benchmark::DoNotOptimize(torch::softmax(*ts, -1)); });
}

void register_w5(int64_t n, int all) {
  std::string size = std::to_string(n);
  auto a = std::make_shared<Array>(kiln::random::normal(kiln::random::key(4), {n, n}));
  auto b = std::make_shared<Array>(kiln::random::normal(kiln::random::key(5), {n, n}));
  auto mm = kiln::jit([](const Array& p, const Array& q) { return kiln::matmul(p, q); }, {.name = "matmul"});
  mm(*a, *b);
  kiln::bench::add("W5 matmul " + size + " kiln jit", [=] { benchmark::DoNotOptimize(mm(*a, *b)); });
  auto pa = std::make_shared<std::vector<float>>(a->to_vector<float>());
  auto pb = std::make_shared<std::vector<float>>(b->to_vector<float>());
  auto pc = std::make_shared<std::vector<float>>(static_cast<size_t>(n * n));
  kiln::bench::add("W5 matmul " + size + " openblas", [=] {
    openblas_set_num_threads(all);  // kiln sets OpenBLAS to one thread for its own calls
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(n), static_cast<int>(n),
                static_cast<int>(n), 1.0f, pa->data(), static_cast<int>(n), pb->data(), static_cast<int>(n), 0.0f,
                pc->data(), static_cast<int>(n));
  });
}

// Cold compile: the graph and kernel caches are emptied before each round.
double compile_seconds(const std::function<Array(const Array&, float)>& build, const Array& x, int round) {
  kiln::clear_graph_cache();
  kiln::llvm_backend::clear_kernel_cache();  // every compile generates its kernels afresh
  auto start = std::chrono::steady_clock::now();
  auto f = kiln::jit([&](const Array& v) { return build(v, 1.0f + 0.001f * static_cast<float>(round)); });
  f(x);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void report_compile_times() {
  Array x = kiln::random::normal(kiln::random::key(6), {256, 64});
  auto hundred = [](const Array& v, float c) {
    Array y = v;
    for (int i = 0; i < 25; ++i) y = kiln::tanh(y * c + 0.1f * static_cast<float>(i)) - y * 0.5f;  // 4 nodes each
    return kiln::sum(y, -1);
  };
  auto mlp = [](const Array& v, float c) {
    auto loss = [c](const Array& w1, const Array& w2, const Array& input) {
      Array h = kiln::relu(kiln::matmul(input, w1) * c);
      return kiln::mean(kiln::log_softmax(kiln::matmul(h, w2), -1));
    };
    Array w1 = kiln::full({64, 128}, 0.01f), w2 = kiln::full({128, 10}, 0.02f);
    auto [value, grads] = kiln::value_and_grad(loss, {0, 1})(w1, w2, v);
    return value + kiln::sum(std::get<0>(grads)) + kiln::sum(std::get<1>(grads));
  };
  for (auto [label, build] :
       {std::pair{"100-node elementwise graph", std::function<Array(const Array&, float)>(hundred)},
        std::pair{"MLP forward+backward graph", std::function<Array(const Array&, float)>(mlp)}}) {
    std::vector<double> times;
    for (int round = 0; round < 7; ++round) times.push_back(compile_seconds(build, x, round));
    std::sort(times.begin(), times.end());
    kiln::bench::absolute(std::string("cold compile, ") + label, times.front(), times[times.size() / 2], 50e-3,
                          "compile");
  }
}

}  // namespace

int main(int argc, char** argv) {
  int all = threads_available();
  torch::set_num_threads(all);
  openblas_set_num_threads(all);
  register_w1(1 << 20, all);
  register_w1(1 << 24, all);
  register_w4(all);
  register_w5(1024, all);
  register_w5(2048, all);
  kiln::bench::run_all(argc, argv);

  std::printf("\n== native backend, %d threads (time ratios; lower is better) ==\n", all);
  for (std::string size : {"2^20", "2^24"}) {
    std::string w = "W1 " + size;
    kiln::bench::compare(w + " kiln vs hand loop (all threads)", w + " kiln jit", w + " hand loop all threads", 1 / 0.9,
                         ">= 0.9x hand loop");
    kiln::bench::compare(w + " kiln vs hand loop (1 thread)", w + " kiln jit", w + " hand loop 1 thread", 1e9, "info");
    kiln::bench::compare(w + " kiln vs copy bandwidth", w + " kiln jit", w + " copy bandwidth", 1e9, "info");
    // libtorch eager writes a temporary per operation: this measures fusion, not code quality.
    kiln::bench::compare(w + " kiln jit vs libtorch eager (fusion vs temporaries)", w + " kiln jit",
                         w + " libtorch eager", 1 / 20.0, ">= 20x libtorch");
    kiln::bench::compare(w + " kiln vs eigen", w + " kiln jit", w + " eigen", 1e9, "info");
    kiln::bench::compare(w + " kiln eager (op by op) vs libtorch eager", w + " kiln eager", w + " libtorch eager", 1.0,
                         "at least as fast as libtorch eager");
  }
  kiln::bench::compare("W4 row sums f32[4096,4096] vs libtorch", "W4 row sums kiln jit", "W4 row sums libtorch",
                       1 / 1.1, ">= 1.1x libtorch");
  kiln::bench::compare("W4 row sums f32[4096,4096] vs hand loop", "W4 row sums kiln jit", "W4 row sums hand loop", 1e9,
                       "info: the read bandwidth");
  kiln::bench::compare("W4 softmax f32[4096,1024] vs libtorch", "W4 softmax kiln jit", "W4 softmax libtorch", 1 / 1.1,
                       ">= 1.1x libtorch");
  for (std::string size : {"1024", "2048"})
    kiln::bench::compare("W5 matmul " + size + "^3 vs OpenBLAS", "W5 matmul " + size + " kiln jit",
                         "W5 matmul " + size + " openblas", 1 / 0.95, ">= 95% of OpenBLAS");
  report_compile_times();
}
