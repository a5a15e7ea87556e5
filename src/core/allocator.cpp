// Size-class caching allocator; see allocator.h for the policy.
#include "core/allocator.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <new>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define KILN_ALLOCATOR_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define KILN_ALLOCATOR_SANITIZED 1
#endif
#endif

namespace kiln::detail::allocator {

namespace {

#ifdef KILN_ALLOCATOR_SANITIZED
// A sanitizer can only report a use-after-free (or a read of uninitialized
// memory) in a block it saw freed; a block parked in our cache is live memory
// to it, and a reused one looks initialized. So sanitizer builds cache nothing
// and take every block from aligned_alloc (mmap'd memory is invisible to
// ASan's heap checks), keeping the sanitizers at full power.
constexpr bool caching = false;
#else
constexpr bool caching = true;
#endif

constexpr size_t huge_page_bytes = size_t{2} << 20;
constexpr size_t smallest_class_bytes = 64;
// Powers of two up to here, four classes per doubling above.
constexpr size_t power_of_two_limit = 1024;
constexpr int power_of_two_classes = 5;  // 64, 128, 256, 512, 1024
constexpr int class_count = power_of_two_classes + 4 * (std::countr_zero(max_block_bytes) - 10);

constexpr int class_of(size_t bytes) {
  if (bytes <= smallest_class_bytes) return 0;
  if (bytes <= power_of_two_limit) return std::bit_width(bytes - 1) - 6;
  int exponent = std::bit_width(bytes - 1) - 1;  // 2^exponent < bytes <= 2^(exponent + 1)
  size_t step = size_t{1} << (exponent - 2);
  size_t steps = (bytes + step - 1) / step;  // 5..8
  return power_of_two_classes + 4 * (exponent - 10) + static_cast<int>(steps - 5);
}

constexpr size_t class_bytes(int size_class) {
  if (size_class < power_of_two_classes) return smallest_class_bytes << size_class;
  int offset = size_class - power_of_two_classes;
  int exponent = 10 + offset / 4;
  return static_cast<size_t>(5 + offset % 4) << (exponent - 2);
}

// Not prefaulted (no MAP_POPULATE): the kernel that produces a block writes it
// right after allocation, so the faults land in the thread-pool workers that
// write in parallel rather than serially here; a block rounded up to its class
// never touches (never backs) the unused tail; and with huge pages one fault
// maps 2 MiB, so fresh blocks cost 512 times fewer faults anyway.
void* map_block(size_t bytes) {
  // Over-reserve so the block can start on a huge-page boundary: only aligned
  // 2 MiB ranges can be backed by huge pages.
  size_t reserved = bytes + huge_page_bytes;
  void* mapping = mmap(nullptr, reserved, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) return nullptr;
  auto start = reinterpret_cast<uintptr_t>(mapping);
  uintptr_t aligned = (start + huge_page_bytes - 1) & ~(huge_page_bytes - 1);
  if (aligned > start) munmap(mapping, aligned - start);
  uintptr_t end = start + reserved;
  if (end > aligned + bytes) munmap(reinterpret_cast<void*>(aligned + bytes), end - (aligned + bytes));
  // Fails harmlessly where transparent huge pages are off or unsupported.
  madvise(reinterpret_cast<void*>(aligned), bytes, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(aligned);
}

// Medium blocks share huge-page-backed spans, one size class per span: a
// block under 2 MiB cannot have a huge page of its own without wasting most
// of it, and with 4 KiB pages every fresh block pays a fault per page (10 us
// each in some virtual machines, so a fresh 1.5 MiB array cost 4 ms to
// write). A span's huge pages are backed as its blocks are first touched.
// Blocks given back to the system keep their slot: its pages are returned
// (MADV_DONTNEED) and the slot serves the class's next miss, so address space
// stays bounded by each class's peak.
class Spans {
 public:
  void* take(size_t bytes) {
    std::lock_guard lock(mutex_);
    std::vector<void*>& vacant = vacant_[span_class(bytes)];
    if (vacant.empty()) {
      size_t slots = span_bytes / bytes;
      try {
        vacant.reserve(slots);
      } catch (const std::bad_alloc&) {
        return nullptr;
      }
      void* span = map_block(span_bytes);
      if (!span) return nullptr;
      for (size_t slot = slots; slot-- > 0;) vacant.push_back(static_cast<char*>(span) + slot * bytes);
    }
    void* block = vacant.back();
    vacant.pop_back();
    return block;
  }

  void give_back(void* block, size_t bytes) noexcept {
    madvise(block, bytes, MADV_DONTNEED);
    std::lock_guard lock(mutex_);
    try {
      vacant_[span_class(bytes)].push_back(block);
    } catch (const std::bad_alloc&) {
      // The slot is lost (its pages are returned already): a few bytes of address space.
    }
  }

 private:
  // Four huge pages: six 1.25 MiB blocks fit, where a huge page each would
  // leave 0.75 MiB of every one unused.
  static constexpr size_t span_bytes = 4 * huge_page_bytes;
  static constexpr int first_class = class_of(spanned_block_bytes);
  static int span_class(size_t bytes) { return class_of(bytes) - first_class; }

  std::mutex mutex_;
  std::vector<void*> vacant_[class_of(mapped_block_bytes) - first_class];
};

Spans& spans() {
  static Spans* spans = new Spans();  // never destroyed, as the allocator below
  return *spans;
}

bool spanned(size_t bytes) { return caching && bytes >= spanned_block_bytes && bytes < mapped_block_bytes; }

void* system_allocate(size_t bytes) {
  if (caching && bytes >= mapped_block_bytes) return map_block(bytes);
  if (spanned(bytes)) return spans().take(bytes);
  return std::aligned_alloc(alignment, bytes);  // class sizes are multiples of 64
}

void system_free(void* block, size_t bytes) {
  if (caching && bytes >= mapped_block_bytes) munmap(block, bytes);
  else if (spanned(bytes)) spans().give_back(block, bytes);
  else std::free(block);
}

size_t default_cache_limit() {
  long pages = sysconf(_SC_PHYS_PAGES), page_bytes = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_bytes <= 0) return size_t{4} << 30;
  return static_cast<size_t>(pages) * static_cast<size_t>(page_bytes) / 4;
}

struct CachedBlock {
  void* block;
  uint64_t freed_at;  // global free order, for least-recently-freed release
};

// A ring of cached blocks: reuse takes the newest (back, warmest in cache),
// release under the limit takes the oldest (front). Grows, never shrinks.
class BlockRing {
 public:
  size_t size() const { return count_; }
  const CachedBlock& front() const { return slots_[head_]; }
  void push_back(CachedBlock entry) {
    if (count_ == slots_.size()) grow();
    slots_[(head_ + count_) % slots_.size()] = entry;
    ++count_;
  }
  CachedBlock pop_back() {
    --count_;
    return slots_[(head_ + count_) % slots_.size()];
  }
  CachedBlock pop_front() {
    CachedBlock entry = slots_[head_];
    head_ = (head_ + 1) % slots_.size();
    --count_;
    return entry;
  }

 private:
  void grow() {
    std::vector<CachedBlock> larger(slots_.empty() ? 8 : slots_.size() * 2);
    for (size_t i = 0; i < count_; ++i) larger[i] = slots_[(head_ + i) % slots_.size()];
    slots_ = std::move(larger);
    head_ = 0;
  }
  std::vector<CachedBlock> slots_;
  size_t head_ = 0, count_ = 0;
};

// One lock per class: threads allocating different sizes never meet, and the
// counters kept under the lock cost no extra atomic operations.
struct alignas(64) SizeClass {
  std::mutex mutex;
  BlockRing blocks;
  uint64_t hits = 0, misses = 0, live_blocks = 0;
  // freed_at of blocks.front(), readable without the lock so the release scan
  // can find the oldest block across classes; max() when empty.
  std::atomic<uint64_t> oldest{std::numeric_limits<uint64_t>::max()};

  void update_oldest() {
    oldest.store(blocks.size() ? blocks.front().freed_at : std::numeric_limits<uint64_t>::max(),
                 std::memory_order_relaxed);
  }
};

class Allocator {
 public:
  void* allocate(size_t bytes) {
    if (bytes > max_block_bytes) throw std::bad_alloc();
    int index = class_of(bytes);
    SizeClass& size_class = classes_[index];
    size_t size = class_bytes(index);
    {
      std::lock_guard lock(size_class.mutex);
      ++size_class.live_blocks;
      if (size_class.blocks.size()) {
        void* block = size_class.blocks.pop_back().block;
        size_class.update_oldest();
        cached_bytes_.fetch_sub(size, std::memory_order_relaxed);
        ++size_class.hits;
        return block;
      }
      ++size_class.misses;
    }
    void* block = system_allocate(size);
    if (!block) {
      // Memory the cache holds for other sizes may be what the system lacks.
      release(0);
      block = system_allocate(size);
    }
    if (!block) {
      std::lock_guard lock(size_class.mutex);
      --size_class.live_blocks;
      throw std::bad_alloc();
    }
    return block;
  }

  void deallocate(void* block, size_t bytes) noexcept {
    if (!block) return;
    int index = class_of(bytes);
    SizeClass& size_class = classes_[index];
    size_t size = class_bytes(index);
    size_t limit = limit_.load(std::memory_order_relaxed);
    bool keep = caching && size <= limit;
    size_t cached_after = 0;
    {
      std::lock_guard lock(size_class.mutex);
      --size_class.live_blocks;
      if (keep) {
        try {
          size_class.blocks.push_back({block, clock_.fetch_add(1, std::memory_order_relaxed)});
          size_class.update_oldest();
          cached_after = cached_bytes_.fetch_add(size, std::memory_order_relaxed) + size;
        } catch (const std::bad_alloc&) {
          keep = false;
        }
      }
    }
    if (!keep) system_free(block, size);
    else if (cached_after > limit) release(limit);
  }

  // Gives back least recently freed blocks until at most `target` bytes stay cached.
  void release(size_t target) noexcept {
    std::lock_guard release_lock(release_mutex_);
    while (cached_bytes_.load(std::memory_order_relaxed) > target) {
      int oldest_class = -1;
      uint64_t oldest = std::numeric_limits<uint64_t>::max();
      for (int index = 0; index < class_count; ++index) {
        uint64_t freed_at = classes_[index].oldest.load(std::memory_order_relaxed);
        if (freed_at < oldest) oldest = freed_at, oldest_class = index;
      }
      if (oldest_class < 0) return;
      SizeClass& size_class = classes_[oldest_class];
      size_t size = class_bytes(oldest_class);
      void* block;
      {
        std::lock_guard lock(size_class.mutex);
        if (!size_class.blocks.size()) continue;  // reused meanwhile: scan again
        block = size_class.blocks.pop_front().block;
        size_class.update_oldest();
        cached_bytes_.fetch_sub(size, std::memory_order_relaxed);
      }
      released_blocks_.fetch_add(1, std::memory_order_relaxed);
      system_free(block, size);  // outside the class lock: munmap can be slow
    }
  }

  size_t set_limit(size_t bytes) {
    size_t previous = limit_.exchange(bytes);
    release(bytes);
    return previous;
  }

  Stats stats() {
    Stats result;
    for (int index = 0; index < class_count; ++index) {
      SizeClass& size_class = classes_[index];
      std::lock_guard lock(size_class.mutex);
      result.cached_blocks += size_class.blocks.size();
      result.cached_bytes += size_class.blocks.size() * class_bytes(index);
      result.live_bytes += size_class.live_blocks * class_bytes(index);
      result.hits += size_class.hits;
      result.misses += size_class.misses;
    }
    result.cache_limit = limit_.load();
    result.released_blocks = released_blocks_.load();
    return result;
  }

 private:
  SizeClass classes_[class_count];
  std::atomic<size_t> cached_bytes_{0};
  std::atomic<size_t> limit_{caching ? default_cache_limit() : 0};
  std::atomic<uint64_t> clock_{0};
  std::atomic<uint64_t> released_blocks_{0};
  std::mutex release_mutex_;
};

// Never destroyed: arrays held in statics may be freed after this file's
// static destructors have run.
Allocator& instance() {
  static Allocator* allocator = new Allocator();
  return *allocator;
}

}  // namespace

void* allocate(size_t bytes) { return instance().allocate(bytes); }
void deallocate(void* block, size_t bytes) noexcept { instance().deallocate(block, bytes); }

size_t block_size(size_t bytes) {
  if (bytes > max_block_bytes) throw std::bad_alloc();
  return class_bytes(class_of(bytes));
}

Stats stats() { return instance().stats(); }
bool caching_enabled() { return caching; }
size_t set_cache_limit(size_t bytes) { return instance().set_limit(caching ? bytes : 0); }
void release_cached() { instance().release(0); }

}  // namespace kiln::detail::allocator
