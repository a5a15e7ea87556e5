// cholesky and solve of 1024x1024 f64 matrices against LAPACK called
// directly (LAPACKE over the same OpenBLAS, on a copy of the matrix, as
// kiln's result is a new array): on the row-major data, and on data already
// column-major (no transposes at all). One thread. Goal: within 1.05x.
#include <benchmark/benchmark.h>
#include <kiln/kiln.h>
#include <lapacke.h>

#include <cstdio>
#include <vector>

#include "harness.h"
#include "runtime/thread_pool.h"

using kiln::Array;

namespace {

constexpr int64_t n = 1024;

void register_all() {
  Array a = kiln::random::normal(kiln::random::key(1), {n, n}, kiln::DType::f64);
  Array spd = kiln::matmul(a, kiln::transpose(a)) + kiln::eye(n, std::nullopt, 0, kiln::DType::f64) * double(n);
  Array b = kiln::random::normal(kiln::random::key(2), {n, 1}, kiln::DType::f64);
  kiln::bench::add("kiln cholesky", [=] {
    kiln::runtime::set_thread_limit(1);
    Array l = kiln::linalg::cholesky(spd);
    benchmark::DoNotOptimize(l);
  });
  kiln::bench::add("kiln solve", [=] {
    kiln::runtime::set_thread_limit(1);
    Array x = kiln::linalg::solve(spd, b);
    benchmark::DoNotOptimize(x);
  });
  auto matrix = std::make_shared<std::vector<double>>(spd.to_vector<double>());
  auto rhs = std::make_shared<std::vector<double>>(b.to_vector<double>());
  auto work = std::make_shared<std::vector<double>>(matrix->size());
  auto solution = std::make_shared<std::vector<double>>(rhs->size());
  auto pivots = std::make_shared<std::vector<lapack_int>>(n);
  kiln::bench::add("LAPACKE dpotrf (row major)", [=] {
    kiln::bench::OpenBlasThreads blas(1);
    *work = *matrix;
    LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', n, work->data(), n);
    benchmark::DoNotOptimize(work->data());
  });
  kiln::bench::add("LAPACKE dgesv (row major)", [=] {
    kiln::bench::OpenBlasThreads blas(1);
    *work = *matrix;
    *solution = *rhs;
    LAPACKE_dgesv(LAPACK_ROW_MAJOR, n, 1, work->data(), n, pivots->data(), solution->data(), 1);
    benchmark::DoNotOptimize(solution->data());
  });
  // The same calls on data already in LAPACK's column-major order: no
  // transposes at all, the best a direct call can do.
  kiln::bench::add("LAPACKE dpotrf (column major)", [=] {
    kiln::bench::OpenBlasThreads blas(1);
    *work = *matrix;
    LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', n, work->data(), n);
    benchmark::DoNotOptimize(work->data());
  });
  kiln::bench::add("LAPACKE dgesv (column major)", [=] {
    kiln::bench::OpenBlasThreads blas(1);
    *work = *matrix;
    *solution = *rhs;
    LAPACKE_dgesv(LAPACK_COL_MAJOR, n, 1, work->data(), n, pivots->data(), solution->data(), n);
    benchmark::DoNotOptimize(solution->data());
  });
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  kiln::bench::run_all(argc, argv);
  std::printf("\n== Linear algebra, f64[1024,1024], 1 thread (time ratios; lower is better) ==\n");
  kiln::bench::compare("cholesky vs LAPACKE dpotrf", "kiln cholesky", "LAPACKE dpotrf (row major)", 1.05,
                       "<= 1.05x LAPACK");
  kiln::bench::compare("solve vs LAPACKE dgesv", "kiln solve", "LAPACKE dgesv (row major)", 1.05, "<= 1.05x LAPACK");
  kiln::bench::compare("cholesky vs dpotrf on column-major data", "kiln cholesky", "LAPACKE dpotrf (column major)",
                       1.05, "<= 1.05x LAPACK");
  kiln::bench::compare("solve vs dgesv on column-major data", "kiln solve", "LAPACKE dgesv (column major)", 1.05,
                       "<= 1.05x LAPACK");
}
