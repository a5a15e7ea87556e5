// The caching allocator against the system allocator:
//   allocate 64 MiB, write it, free (repeated)   goal <= 1/4 of std::aligned_alloc
//   the same with caching off (mmap + huge pages, fresh pages every time), for reference
//   a warm 4 KiB allocate + free                  goal <= std::aligned_alloc
//   the same from 2 threads at once (one lock per size class under contention)
//   eager x + 1 on f32[16M], cached vs caching off (the reference kernel dominates)
#include <benchmark/benchmark.h>
#include <kiln/kiln.h>

#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "core/allocator.h"
#include "harness.h"

namespace {
namespace allocator = kiln::detail::allocator;

constexpr size_t large_bytes = size_t{64} << 20;
constexpr size_t small_bytes = size_t{4} << 10;
constexpr int thread_count = 2;
constexpr int pairs_per_thread = 20000;

void write_and_keep(void* block, size_t bytes) {
  std::memset(block, 1, bytes);
  benchmark::DoNotOptimize(block);
  benchmark::ClobberMemory();  // or the compiler drops stores into memory about to be freed
}

// Caching off for one call: the uncached workloads restore the limit on the
// way out, so every other workload runs with the default policy whatever
// --benchmark_filter selects.
class CachingOff {
 public:
  CachingOff() : previous_(allocator::set_cache_limit(0)) {}
  ~CachingOff() { allocator::set_cache_limit(previous_); }

 private:
  size_t previous_;
};

template <class Body>
void on_threads(Body body) {
  std::vector<std::thread> threads;
  for (int i = 0; i < thread_count; ++i) threads.emplace_back(body);
  for (std::thread& thread : threads) thread.join();
}
}  // namespace

int main(int argc, char** argv) {
  kiln::bench::add("aligned_alloc 64 MiB write free", [] {
    void* block = std::aligned_alloc(allocator::alignment, large_bytes);
    write_and_keep(block, large_bytes);
    std::free(block);
  });
  kiln::bench::add("kiln allocator 64 MiB write free", [] {
    void* block = allocator::allocate(large_bytes);
    write_and_keep(block, large_bytes);
    allocator::deallocate(block, large_bytes);
  });
  kiln::bench::add("kiln allocator uncached 64 MiB write free", [] {
    CachingOff caching_off;
    void* block = allocator::allocate(large_bytes);
    write_and_keep(block, large_bytes);
    allocator::deallocate(block, large_bytes);
  });

  kiln::bench::add("aligned_alloc 4 KiB alloc free", [] {
    void* block = std::aligned_alloc(allocator::alignment, small_bytes);
    benchmark::DoNotOptimize(block);
    std::free(block);
  });
  kiln::bench::add("kiln allocator 4 KiB alloc free", [] {
    void* block = allocator::allocate(small_bytes);
    benchmark::DoNotOptimize(block);
    allocator::deallocate(block, small_bytes);
  });

  kiln::bench::add("aligned_alloc 4 KiB 2 threads", [] {
    on_threads([] {
      for (int i = 0; i < pairs_per_thread; ++i) {
        void* block = std::aligned_alloc(allocator::alignment, small_bytes);
        benchmark::DoNotOptimize(block);
        std::free(block);
      }
    });
  });
  kiln::bench::add("kiln allocator 4 KiB 2 threads", [] {
    on_threads([] {
      for (int i = 0; i < pairs_per_thread; ++i) {
        void* block = allocator::allocate(small_bytes);
        benchmark::DoNotOptimize(block);
        allocator::deallocate(block, small_bytes);
      }
    });
  });

  kiln::Array x = kiln::full({16 << 20}, 1.5f);
  kiln::bench::add("kiln eager x+1 f32[16M] cached", [=] { benchmark::DoNotOptimize(x + 1.0f); });
  kiln::bench::add("kiln eager x+1 f32[16M] uncached", [=] {
    CachingOff caching_off;
    benchmark::DoNotOptimize(x + 1.0f);
  });

  kiln::bench::run_all(argc, argv);

  std::printf("\n== caching allocator (ratios of time per call; lower is better) ==\n");
  kiln::bench::compare("64 MiB allocate+write+free vs std::aligned_alloc", "kiln allocator 64 MiB write free",
                       "aligned_alloc 64 MiB write free", 0.25, "1/4 of aligned_alloc");
  kiln::bench::compare("64 MiB, caching off (mmap, huge pages) vs aligned_alloc",
                       "kiln allocator uncached 64 MiB write free", "aligned_alloc 64 MiB write free", 1.0, "no worse");
  kiln::bench::compare("warm 4 KiB allocate+free vs std::aligned_alloc", "kiln allocator 4 KiB alloc free",
                       "aligned_alloc 4 KiB alloc free", 1.0, "no worse");
  kiln::bench::compare("4 KiB allocate+free, 2 threads, vs std::aligned_alloc", "kiln allocator 4 KiB 2 threads",
                       "aligned_alloc 4 KiB 2 threads", 1.0, "no worse");
  kiln::bench::compare("eager x+1 f32[16M], cached vs caching off", "kiln eager x+1 f32[16M] cached",
                       "kiln eager x+1 f32[16M] uncached", 1.0, "no worse");
  allocator::Stats stats = allocator::stats();
  std::printf("allocator: %llu hits, %llu misses, %zu bytes cached in %zu blocks, limit %zu bytes\n",
              static_cast<unsigned long long>(stats.hits), static_cast<unsigned long long>(stats.misses),
              stats.cached_bytes, stats.cached_blocks, stats.cache_limit);
}
