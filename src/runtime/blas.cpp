// OpenBLAS-backed matmul (see the header).
#include "runtime/blas.h"

#include <cblas.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "runtime/thread_pool.h"
#include "telemetry/timeline.h"

namespace kiln::runtime {

namespace {
// OpenBLAS's own worker threads spin for a while after each call, competing
// with the pool's threads for the same cores. So kiln splits products across
// its pool and runs each part on one OpenBLAS thread. The setting is
// process-wide and changing it reallocates OpenBLAS's per-thread buffers, so
// it is made once and left (re-made only if other code changed it since).
void use_one_openblas_thread() {
  if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
}

// The extent [start, end) of the mapping holding `address`, from
// /proc/self/maps (sorted by address: the scan stops at the first range
// ending above it); {0, 0} if none does.
std::pair<uintptr_t, uintptr_t> mapping_around(uintptr_t address) {
  int file = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (file < 0) return {0, 0};
  char text[8192];
  size_t held = 0;
  std::pair<uintptr_t, uintptr_t> found{0, 0};
  for (bool done = false; !done;) {
    ssize_t got = ::read(file, text + held, sizeof(text) - 1 - held);
    if (got <= 0) break;
    held += static_cast<size_t>(got);
    text[held] = '\0';
    char* line = text;
    for (char* end; (end = std::strchr(line, '\n')); line = end + 1) {
      char* rest = nullptr;
      uintptr_t start = std::strtoull(line, &rest, 16);
      uintptr_t stop = *rest == '-' ? std::strtoull(rest + 1, nullptr, 16) : 0;
      if (address < stop) {
        if (address >= start) found = {start, stop};
        done = true;
        break;
      }
    }
    held = static_cast<size_t>(text + held - line);
    std::memmove(text, line, held);
  }
  ::close(file);
  return found;
}

// OpenBLAS packs each product's operands into a buffer it maps per thread
// (128 MiB on x86-64) with 4 KiB pages, so a thread's first products pay a
// page fault per 4 KiB they pack into: 340 of the 500 faults of the MLP
// step's first call, 11 us each under some hypervisors (its first product
// took 2.2-7.0 ms a thread, then 1.1). Huge pages make that 1-6 faults a
// thread (1.3-1.8 ms). OpenBLAS offers no option for it, but exports how it
// hands its buffer out: taking the thread's buffer once before its first
// product, marking its mapping for huge pages and handing it back makes the
// products that follow on this thread pack into it. Absent symbols (another
// BLAS) leave the buffer as it is.
void prefer_huge_pages_for_packing() {
  thread_local bool prepared = false;
  if (prepared) return;
  prepared = true;
  using Take = void* (*)(int);
  using GiveBack = void (*)(void*);
  static const auto take = reinterpret_cast<Take>(::dlsym(RTLD_DEFAULT, "blas_memory_alloc"));
  static const auto give_back = reinterpret_cast<GiveBack>(::dlsym(RTLD_DEFAULT, "blas_memory_free"));
  if (!take || !give_back) return;
  void* buffer = take(0);
  if (!buffer) return;
  // Where the mapping ends only the system says (the buffer's size depends on
  // the processor OpenBLAS was built for); starting at the buffer's own page,
  // the advice never reaches memory mapped below it.
  uintptr_t start = reinterpret_cast<uintptr_t>(buffer) & ~uintptr_t{4095};
  uintptr_t end = mapping_around(start).second;
  if (end > start) ::madvise(reinterpret_cast<void*>(start), end - start, MADV_HUGEPAGE);
  give_back(buffer);
}
}  // namespace

bool blas_handles(const ir::Node& node) { return node.op == ir::Primitive::matmul && is_floating(node.type.dtype); }

Array blas_matmul(const ir::Node& node, std::span<const Array> inputs) {
  return blas_matmul(node, inputs[0], false, inputs[1], false);
}

Array blas_matmul(const ir::Node& node, const Array& a_array, bool transpose_a, const Array& b_array,
                  bool transpose_b) {
  const detail::ArrayImpl& a = *detail::impl(a_array);
  const detail::ArrayImpl& b = *detail::impl(b_array);
  Array result = detail::allocate(node.type);
  const Shape& shape = node.type.shape;
  size_t rank = shape.size();
  int64_t m = shape[rank - 2], n = shape[rank - 1];
  const Shape& shape_a = a.type.shape;
  int64_t k = transpose_a ? shape_a[rank - 2] : shape_a[rank - 1];
  int64_t batch = 1;
  for (size_t d = 0; d + 2 < rank; ++d) batch *= shape[d];
  void* out = detail::impl(result)->buffer->data();
  if (m * n == 0) return result;
  if (k == 0) {
    std::memset(out, 0, detail::impl(result)->buffer->bytes());
    return result;
  }
  // Row-major leading dimensions are the stored rows' lengths.
  int lda = static_cast<int>(transpose_a ? m : k), ldb = static_cast<int>(transpose_b ? k : n);
  CBLAS_TRANSPOSE ta = transpose_a ? CblasTrans : CblasNoTrans, tb = transpose_b ? CblasTrans : CblasNoTrans;
  // One product of rows [r0, r1) and columns [c0, c1) of batch entry i. A
  // stored transposed holds row r at column r, B stored transposed holds
  // column c at row c.
  auto gemm = [&](int64_t i, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    int64_t a_offset = i * m * k + (transpose_a ? r0 : r0 * k);
    int64_t b_offset = i * k * n + (transpose_b ? c0 * k : c0);
    int64_t c_offset = i * m * n + r0 * n + c0;
    int rows = static_cast<int>(r1 - r0), columns = static_cast<int>(c1 - c0);
    prefer_huge_pages_for_packing();
    telemetry::timeline::Span span;
    if (telemetry::timeline::recording())
      span.begin("blas", node.type.dtype == DType::f32 ? "sgemm" : "dgemm", {{"m", rows}, {"n", columns}, {"k", k}});
    if (node.type.dtype == DType::f32) {
      cblas_sgemm(CblasRowMajor, ta, tb, rows, columns, static_cast<int>(k), 1.0f, a.data<float>() + a_offset, lda,
                  b.data<float>() + b_offset, ldb, 0.0f, static_cast<float*>(out) + c_offset, static_cast<int>(n));
    } else {
      cblas_dgemm(CblasRowMajor, ta, tb, rows, columns, static_cast<int>(k), 1.0, a.data<double>() + a_offset, lda,
                  b.data<double>() + b_offset, ldb, 0.0, static_cast<double*>(out) + c_offset, static_cast<int>(n));
    }
  };
  use_one_openblas_thread();
  if (batch >= thread_count()) {
    parallel_for(batch, m * n * k, [&](int64_t first, int64_t last) {
      for (int64_t i = first; i < last; ++i) gemm(i, 0, m, 0, n);
    });
  } else {
    // Split the longer side of each product across the pool, one part per
    // thread at most: each part packs the whole other operand again.
    int64_t parts = thread_count();
    for (int64_t i = 0; i < batch; ++i) {
      if (m >= n) {
        parallel_for(
            m, n * k, [&](int64_t first, int64_t last) { gemm(i, first, last, 0, n); }, parts);
      } else {
        parallel_for(
            n, m * k, [&](int64_t first, int64_t last) { gemm(i, 0, m, first, last); }, parts);
      }
    }
  }
  return result;
}

}  // namespace kiln::runtime
