// The caching allocator behind array storage. Fresh memory is expensive the
// first time it is touched (a page fault and a zeroed page per 4 KiB), so
// freed blocks are kept per size class and handed out again: a program that
// allocates the same shapes step after step touches no fresh pages once warm.
//
// Size classes: powers of two up to 1 KiB, then four classes per doubling
// (steps of 25%), so a block wastes at most a fifth of its size. Blocks of
// 2 MiB and more come from mmap, 2 MiB aligned and advised for transparent
// huge pages; blocks from 256 KiB share such huge-page spans, a size class per
// span; smaller ones come from aligned_alloc. Every block is 64-byte aligned.
// Cached bytes are bounded; past the bound, the least recently freed blocks go
// back to the system.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln::detail::allocator {

inline constexpr size_t alignment = 64;
/// The largest request served; anything larger throws std::bad_alloc without
/// asking the system (half of the 47-bit user address space).
inline constexpr size_t max_block_bytes = size_t{1} << 46;
/// Blocks of at least this size are mapped directly and advised for huge pages.
inline constexpr size_t mapped_block_bytes = size_t{2} << 20;
/// Blocks from this size up to mapped_block_bytes are carved from huge-page spans.
inline constexpr size_t spanned_block_bytes = size_t{256} << 10;

/// A 64-byte aligned block of at least `bytes` bytes (zero is allowed and gives
/// a distinct minimal block). Throws std::bad_alloc when neither the cache nor
/// the system can serve it.
void* allocate(size_t bytes);
/// Returns a block from allocate; `bytes` must be the size it was allocated with.
void deallocate(void* block, size_t bytes) noexcept;
/// The usable size of the block that allocate(bytes) returns (its size class).
size_t block_size(size_t bytes);

struct Stats {
  size_t cached_bytes = 0;  // freed blocks held for reuse
  size_t cached_blocks = 0;
  size_t live_bytes = 0;  // handed out and not yet returned, by block size
  size_t cache_limit = 0;
  uint64_t hits = 0;             // allocations served from the cache
  uint64_t misses = 0;           // allocations that went to the system
  uint64_t released_blocks = 0;  // cached blocks given back to the system
};
Stats stats();

/// False in sanitizer builds: a cached block is still valid memory to the
/// sanitizer, so reuse would hide use-after-free; every block then goes
/// straight back to the system.
bool caching_enabled();

/// Bounds the bytes held in the cache (default: a quarter of physical memory),
/// releasing least recently freed blocks at once if the cache is over it.
/// Zero turns caching off. Returns the previous limit.
size_t set_cache_limit(size_t bytes);
/// Gives every cached block back to the system (the limit is unchanged).
void release_cached();

}  // namespace kiln::detail::allocator
