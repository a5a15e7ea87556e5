// The caching allocator behind array storage: reuse, alignment, size classes,
// concurrency, the cache limit, extreme sizes and sanitizer builds.
#include <gtest/gtest.h>
#include <kiln/kiln.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>
#include <new>
#include <random>
#include <thread>
#include <vector>

#include "core/allocator.h"
#include "core/array_impl.h"

namespace kiln::detail {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool address_sanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool address_sanitized = true;
#else
constexpr bool address_sanitized = false;
#endif
#else
constexpr bool address_sanitized = false;
#endif

constexpr size_t mebibyte = size_t{1} << 20;

// Restores the process-wide cache limit, so a test that lowers it cannot
// change the behaviour of the tests after it.
class CacheLimitGuard {
 public:
  explicit CacheLimitGuard(size_t limit) : previous_(allocator::set_cache_limit(limit)) {}
  ~CacheLimitGuard() { allocator::set_cache_limit(previous_); }

 private:
  size_t previous_;
};

bool aligned(const void* pointer, size_t alignment) { return reinterpret_cast<uintptr_t>(pointer) % alignment == 0; }

// mincore fails with ENOMEM on addresses that are no longer mapped.
bool mapped(void* block, size_t bytes) {
  std::vector<unsigned char> residency((bytes + getpagesize() - 1) / getpagesize());
  return mincore(block, bytes, residency.data()) == 0 || errno != ENOMEM;
}

#define SKIP_WITHOUT_CACHING() \
  if (!allocator::caching_enabled()) GTEST_SKIP() << "caching is off in sanitizer builds"

TEST(Allocator, FreedBlockIsReusedBySameSizeClass) {
  SKIP_WITHOUT_CACHING();
  allocator::Stats before = allocator::stats();
  void* first = allocator::allocate(3000);
  std::memset(first, 7, 3000);
  allocator::deallocate(first, 3000);
  void* again = allocator::allocate(3000);
  EXPECT_EQ(again, first);
  allocator::deallocate(again, 3000);
  // 2900 bytes falls in the same class as 3000 (3072).
  void* smaller = allocator::allocate(2900);
  EXPECT_EQ(smaller, first);
  allocator::deallocate(smaller, 2900);
  allocator::Stats after = allocator::stats();
  EXPECT_GE(after.hits - before.hits, 2u);
  EXPECT_EQ(after.live_bytes, before.live_bytes);
  EXPECT_GE(after.cached_bytes, allocator::block_size(3000));
}

TEST(Allocator, ReuseIsLastFreedFirst) {
  SKIP_WITHOUT_CACHING();
  constexpr size_t bytes = 5000;
  void* a = allocator::allocate(bytes);
  void* b = allocator::allocate(bytes);
  allocator::deallocate(a, bytes);
  allocator::deallocate(b, bytes);
  // The most recently freed block is the likeliest to still be in cache.
  void* first = allocator::allocate(bytes);
  void* second = allocator::allocate(bytes);
  EXPECT_EQ(first, b);
  EXPECT_EQ(second, a);
  allocator::deallocate(first, bytes);
  allocator::deallocate(second, bytes);
}

TEST(Allocator, MissesGoToTheSystemAndAreCounted) {
  allocator::Stats before = allocator::stats();
  constexpr size_t bytes = 777777;
  void* block = allocator::allocate(bytes);
  allocator::Stats during = allocator::stats();
  EXPECT_EQ(during.live_bytes - before.live_bytes, allocator::block_size(bytes));
  allocator::deallocate(block, bytes);
  allocator::Stats after = allocator::stats();
  EXPECT_EQ(after.live_bytes, before.live_bytes);
  EXPECT_GE(after.misses + after.hits, before.misses + before.hits + 1);
  if (!allocator::caching_enabled()) {
    EXPECT_EQ(after.hits, before.hits);
    EXPECT_EQ(after.cached_bytes, 0u);
  }
}

TEST(Allocator, BlocksAreAlignedAndFullyWritable) {
  for (size_t bytes :
       {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{100}, size_t{1000}, size_t{1025}, size_t{4097},
        size_t{100000}, mebibyte, 2 * mebibyte - 1, 2 * mebibyte, 3 * mebibyte + 5, 9 * mebibyte}) {
    void* block = allocator::allocate(bytes);
    ASSERT_NE(block, nullptr) << bytes;
    EXPECT_TRUE(aligned(block, allocator::alignment)) << bytes;
    // Mapped blocks start on a huge-page boundary so they can be backed by huge pages.
    if (allocator::caching_enabled() && allocator::block_size(bytes) >= allocator::mapped_block_bytes) {
      EXPECT_TRUE(aligned(block, 2 * mebibyte)) << bytes;
    }
    std::memset(block, 0x5a, allocator::block_size(bytes));
    allocator::deallocate(block, bytes);
  }
}

TEST(Allocator, MediumBlocksAreCarvedFromHugePageSpansAndReusedAfterRelease) {
  SKIP_WITHOUT_CACHING();
  allocator::release_cached();
  // Every medium class: blocks taken while the cache is empty are fresh
  // slots of huge-page spans. Each is filled with its own byte: a slot that
  // overlapped another would show the other's byte.
  for (size_t bytes = allocator::spanned_block_bytes; bytes < allocator::mapped_block_bytes; bytes += bytes / 4) {
    size_t size = allocator::block_size(bytes);
    std::vector<void*> blocks;
    for (int k = 0; k < 9; ++k) {  // more than one span holds for every class
      blocks.push_back(allocator::allocate(bytes));
      ASSERT_TRUE(aligned(blocks.back(), getpagesize())) << bytes;
      std::memset(blocks.back(), k + 1, size);
    }
    for (int k = 0; k < 9; ++k) {
      auto* bytes_of = static_cast<unsigned char*>(blocks[static_cast<size_t>(k)]);
      EXPECT_EQ(bytes_of[0], k + 1) << bytes;
      EXPECT_EQ(bytes_of[size - 1], k + 1) << bytes;
    }
    // Released blocks give their pages back and their slots serve the next misses.
    for (void* block : blocks) allocator::deallocate(block, bytes);
    allocator::release_cached();
    allocator::Stats before = allocator::stats();
    EXPECT_EQ(before.cached_bytes, 0u);
    void* again = allocator::allocate(bytes);
    EXPECT_NE(std::find(blocks.begin(), blocks.end(), again), blocks.end()) << bytes;
    std::memset(again, 0x77, size);
    EXPECT_EQ(allocator::stats().misses, before.misses + 1);
    allocator::deallocate(again, bytes);
  }
  allocator::release_cached();
}

TEST(Allocator, SizeClassesBoundTheWaste) {
  size_t previous = 0;
  for (size_t bytes = 0; bytes < 70000; bytes += 1 + bytes / 50) {
    size_t block = allocator::block_size(bytes);
    EXPECT_GE(block, bytes);
    EXPECT_GE(block, previous) << "classes must grow with the request, at " << bytes;
    EXPECT_EQ(block % allocator::alignment, 0u) << bytes;
    if (bytes > 1024) {
      EXPECT_LE(block, bytes + bytes / 4) << bytes;
    }
    previous = block;
  }
  EXPECT_EQ(allocator::block_size(0), 64u);
  EXPECT_EQ(allocator::block_size(65), 128u);
  EXPECT_EQ(allocator::block_size(1025), 1280u);
  EXPECT_EQ(allocator::block_size(3 * mebibyte), 3 * mebibyte);
  EXPECT_EQ(allocator::block_size(64 * mebibyte + 1), 80 * mebibyte);
  EXPECT_EQ(allocator::block_size(allocator::max_block_bytes), allocator::max_block_bytes);
}

TEST(Allocator, ConcurrentAllocationAndFreeKeepBlocksPrivate) {
  allocator::Stats before = allocator::stats();
  constexpr int thread_count = 4, iterations = 3000;
  const size_t sizes[] = {65, 200, 1000, 3000, 20000, 300000, 3 * mebibyte};
  std::atomic<int> corrupted{0};
  // Blocks freed by a thread other than the one that allocated them.
  std::mutex handoff_mutex;
  std::vector<std::pair<void*, size_t>> handoff;
  auto work = [&](int thread) {
    std::mt19937 random(thread);
    std::vector<std::pair<void*, size_t>> held;
    auto check_and_free = [&](void* block, size_t bytes) {
      auto* bytes_view = static_cast<unsigned char*>(block);
      unsigned char mark = bytes_view[0];
      if (bytes_view[bytes - 1] != mark || bytes_view[bytes / 2] != mark) corrupted.fetch_add(1);
      allocator::deallocate(block, bytes);
    };
    for (int i = 0; i < iterations; ++i) {
      size_t bytes = sizes[random() % std::size(sizes)];
      void* block = allocator::allocate(bytes);
      // Mark first, middle and last byte: a block handed to two owners at
      // once would show another owner's mark.
      auto mark = static_cast<unsigned char>(thread * 31 + i);
      auto* bytes_view = static_cast<unsigned char*>(block);
      bytes_view[0] = bytes_view[bytes / 2] = bytes_view[bytes - 1] = mark;
      held.push_back({block, bytes});
      if (held.size() > 8) {
        auto [old_block, old_bytes] = held[random() % held.size()];
        std::erase(held, std::pair{old_block, old_bytes});
        if (random() % 4 == 0) {
          std::lock_guard lock(handoff_mutex);
          handoff.push_back({old_block, old_bytes});
        } else {
          check_and_free(old_block, old_bytes);
        }
      }
      {
        std::pair<void*, size_t> foreign{nullptr, 0};
        {
          std::lock_guard lock(handoff_mutex);
          if (!handoff.empty()) foreign = handoff.back(), handoff.pop_back();
        }
        if (foreign.first) check_and_free(foreign.first, foreign.second);
      }
    }
    for (auto [block, bytes] : held) check_and_free(block, bytes);
  };
  std::vector<std::thread> threads;
  for (int thread = 0; thread < thread_count; ++thread) threads.emplace_back(work, thread);
  for (std::thread& thread : threads) thread.join();
  for (auto [block, bytes] : handoff) allocator::deallocate(block, bytes);

  EXPECT_EQ(corrupted.load(), 0);
  allocator::Stats after = allocator::stats();
  EXPECT_EQ(after.live_bytes, before.live_bytes);
  EXPECT_EQ(after.hits + after.misses - before.hits - before.misses, uint64_t{thread_count * iterations});
  if (allocator::caching_enabled()) {
    EXPECT_GT(after.hits, before.hits);
  }
}

TEST(Allocator, LimitReleasesLeastRecentlyFreedBlocks) {
  SKIP_WITHOUT_CACHING();
  CacheLimitGuard guard(8 * mebibyte);
  allocator::release_cached();
  constexpr size_t bytes = 3 * mebibyte;  // a mapped class of exactly this size
  void* a = allocator::allocate(bytes);
  void* b = allocator::allocate(bytes);
  void* c = allocator::allocate(bytes);
  allocator::Stats before = allocator::stats();
  allocator::deallocate(a, bytes);
  allocator::deallocate(b, bytes);
  allocator::deallocate(c, bytes);  // 9 MiB > 8 MiB: the oldest (a) goes back

  allocator::Stats after = allocator::stats();
  EXPECT_EQ(after.cached_bytes, 6 * mebibyte);
  EXPECT_EQ(after.released_blocks - before.released_blocks, 1u);
  EXPECT_FALSE(mapped(a, bytes)) << "the released block should be unmapped";
  EXPECT_TRUE(mapped(b, bytes));

  EXPECT_EQ(allocator::allocate(bytes), c);
  EXPECT_EQ(allocator::allocate(bytes), b);
  allocator::Stats reused = allocator::stats();
  EXPECT_EQ(reused.hits - after.hits, 2u);
  EXPECT_EQ(reused.cached_bytes, 0u);
  allocator::deallocate(b, bytes);
  allocator::deallocate(c, bytes);

  // Lowering the limit releases at once; a block larger than the limit is
  // never cached.
  allocator::set_cache_limit(4 * mebibyte);
  EXPECT_LE(allocator::stats().cached_bytes, 4 * mebibyte);
  void* large = allocator::allocate(16 * mebibyte);
  allocator::deallocate(large, 16 * mebibyte);
  EXPECT_LE(allocator::stats().cached_bytes, 4 * mebibyte);
  allocator::set_cache_limit(0);
  EXPECT_EQ(allocator::stats().cached_bytes, 0u);
  EXPECT_EQ(allocator::stats().cache_limit, 0u);
}

TEST(Allocator, ReleaseCachedEmptiesTheCache) {
  void* block = allocator::allocate(50000);
  allocator::deallocate(block, 50000);
  allocator::release_cached();
  allocator::Stats stats = allocator::stats();
  EXPECT_EQ(stats.cached_bytes, 0u);
  EXPECT_EQ(stats.cached_blocks, 0u);
}

TEST(Allocator, ZeroSizeGivesDistinctMinimalBlocks) {
  void* first = allocator::allocate(0);
  void* second = allocator::allocate(0);
  EXPECT_NE(first, nullptr);
  EXPECT_NE(first, second);
  EXPECT_TRUE(aligned(first, allocator::alignment));
  allocator::deallocate(first, 0);
  allocator::deallocate(second, 0);
  allocator::deallocate(nullptr, 123);  // a no-op, like free(nullptr)
}

TEST(Allocator, OversizedRequestsThrowBadAlloc) {
  allocator::Stats before = allocator::stats();
  EXPECT_THROW(allocator::allocate(allocator::max_block_bytes + 1), std::bad_alloc);
  EXPECT_THROW(allocator::allocate(std::numeric_limits<size_t>::max()), std::bad_alloc);
  EXPECT_THROW(allocator::allocate(std::numeric_limits<size_t>::max() - 63), std::bad_alloc);
  EXPECT_THROW(allocator::block_size(std::numeric_limits<size_t>::max()), std::bad_alloc);
  EXPECT_THROW(Buffer(size_t{1} << 60), std::bad_alloc);
  EXPECT_EQ(allocator::stats().live_bytes, before.live_bytes);
}

// In a child process whose address space is capped (so the system must
// refuse, whatever its overcommit policy), a huge request throws bad_alloc
// and leaves the allocator's accounting as it was; an array that large is an
// AllocationError naming the operation, the shape and the bytes.
TEST(AllocatorDeathTest, RequestsTheSystemRefusesThrowBadAlloc) {
  // ASan aborts on allocations past its own maximum instead of failing them.
  if (!allocator::caching_enabled()) GTEST_SKIP() << "sanitizer allocators abort on huge requests";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto refused = [] {
    rlimit limit{size_t{8} << 30, size_t{8} << 30};  // 8 GiB of address space
    if (setrlimit(RLIMIT_AS, &limit) != 0) std::_Exit(2);
    allocator::Stats before = allocator::stats();
    constexpr size_t bytes = size_t{1} << 40;
    try {
      allocator::allocate(bytes);
      std::_Exit(3);  // granted past the cap
    } catch (const std::bad_alloc&) {
    }
    if (allocator::stats().live_bytes != before.live_bytes) std::_Exit(4);
    try {
      // Queued: the refusal surfaces where the array is first waited for.
      zeros({int64_t{1} << 38}).block_until_ready();  // 1 TiB of f32
      std::_Exit(5);
    } catch (const AllocationError& error) {
      std::string text = error.what();
      bool named = text.find("f32[274877906944]") != std::string::npos &&
                   text.find("1099511627776 bytes") != std::string::npos &&
                   text.find("test_allocator.cpp") != std::string::npos && text.find("[allocate]") == std::string::npos;
      if (!named) {
        std::fprintf(stderr, "%s\n", text.c_str());
        std::_Exit(6);
      }
    }
    std::_Exit(0);
  };
  EXPECT_EXIT(refused(), ::testing::ExitedWithCode(0), "");
}

TEST(Allocator, BufferKeepsSmallArraysInline) {
  allocator::Stats before = allocator::stats();
  {
    Buffer small(Buffer::inline_bytes);
    auto* object = reinterpret_cast<const std::byte*>(&small);
    auto* data = static_cast<const std::byte*>(small.data());
    EXPECT_TRUE(data >= object && data + Buffer::inline_bytes <= object + sizeof(Buffer));
    EXPECT_TRUE(aligned(small.data(), allocator::alignment));
    EXPECT_EQ(allocator::stats().live_bytes, before.live_bytes);

    Buffer large(Buffer::inline_bytes + 1);
    EXPECT_TRUE(aligned(large.data(), allocator::alignment));
    EXPECT_EQ(allocator::stats().live_bytes - before.live_bytes, allocator::block_size(Buffer::inline_bytes + 1));
  }
  EXPECT_EQ(allocator::stats().live_bytes, before.live_bytes);
}

TEST(Allocator, ArraysReuseStorageOfFreedArrays) {
  SKIP_WITHOUT_CACHING();
  AbstractValue type{f32, false, {123, 457}};
  const void* first_data = nullptr;
  {
    Array first = allocate(type);
    first_data = detail::impl(first)->buffer->data();
  }
  allocator::Stats before = allocator::stats();
  Array second = allocate(type);
  EXPECT_EQ(detail::impl(second)->buffer->data(), first_data);
  EXPECT_EQ(allocator::stats().hits - before.hits, 1u);
}

TEST(Allocator, CachingIsOffExactlyInSanitizerBuilds) {
  if (address_sanitized) {
    EXPECT_FALSE(allocator::caching_enabled());
    EXPECT_EQ(allocator::stats().cache_limit, 0u);
  } else {
    EXPECT_TRUE(allocator::caching_enabled());
  }
}

// Without caching, a freed block goes back to ASan's allocator, which then
// reports a write into it, exactly as for memory that was never cached.
TEST(AllocatorDeathTest, AddressSanitizerSeesUseAfterFree) {
  if (!address_sanitized) GTEST_SKIP() << "needs an AddressSanitizer build (-DKILN_SANITIZE=ON)";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        auto* block = static_cast<volatile unsigned char*>(allocator::allocate(1000));
        allocator::deallocate(const_cast<unsigned char*>(block), 1000);
        block[10] = 1;
      },
      "heap-use-after-free");
}

}  // namespace
}  // namespace kiln::detail
