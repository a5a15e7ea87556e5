// Sorting against its peers, one thread each: sort of 2^24 floats against
// std::sort (a copy then the sort, as kiln returns a new array) and libtorch's
// torch::sort; top_k of 16 in each row of f32[256, 65536] against
// torch::topk. Goals: sort within 1.2x of std::sort and at least libtorch's
// speed; top_k at least libtorch's speed.
#include <benchmark/benchmark.h>
#include <kiln/kiln.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "harness.h"
#include "runtime/thread_pool.h"

using kiln::Array;

namespace {

constexpr int64_t elements = int64_t{1} << 24;
constexpr int64_t rows = 256, columns = 65536, k = 16;

void register_all() {
  Array x = kiln::random::normal(kiln::random::key(1), {elements});
  auto values = std::make_shared<std::vector<float>>(x.to_vector<float>());
  kiln::bench::add("kiln sort", [=] {
    kiln::runtime::set_thread_limit(1);
    Array sorted = kiln::sort(x);
    benchmark::DoNotOptimize(sorted);
  });
  auto scratch = std::make_shared<std::vector<float>>(values->size());
  kiln::bench::add("std::sort", [=] {
    std::copy(values->begin(), values->end(), scratch->begin());
    std::sort(scratch->begin(), scratch->end());
    benchmark::DoNotOptimize(scratch->data());
  });
  torch::Tensor tx = torch::from_blob(values->data(), {elements}, torch::kFloat32).clone();
  kiln::bench::add("torch sort", [=] {
    torch::set_num_threads(1);
    auto sorted = std::get<0>(torch::sort(tx));
    benchmark::DoNotOptimize(sorted.data_ptr());
  });

  Array m = kiln::random::normal(kiln::random::key(2), {rows, columns});
  kiln::bench::add("kiln top_k", [=] {
    kiln::runtime::set_thread_limit(1);
    auto [top, indices] = kiln::top_k(m, k);
    benchmark::DoNotOptimize(top);
  });
  auto matrix = std::make_shared<std::vector<float>>(m.to_vector<float>());
  torch::Tensor tm = torch::from_blob(matrix->data(), {rows, columns}, torch::kFloat32).clone();
  kiln::bench::add("torch topk", [=] {
    torch::set_num_threads(1);
    auto top = std::get<0>(torch::topk(tm, k));
    benchmark::DoNotOptimize(top.data_ptr());
  });
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  kiln::bench::run_all(argc, argv);
  std::printf("\n== Sorting, 1 thread (time ratios; lower is better) ==\n");
  kiln::bench::compare("sort 2^24 f32 vs copy + std::sort", "kiln sort", "std::sort", 1.2, "<= 1.2x std::sort");
  kiln::bench::compare("sort 2^24 f32 vs libtorch", "kiln sort", "torch sort", 1.0, "<= 1x libtorch");
  kiln::bench::compare("top_k 16 of each row of f32[256,65536] vs libtorch", "kiln top_k", "torch topk", 1.0,
                       "<= 1x libtorch");
}
