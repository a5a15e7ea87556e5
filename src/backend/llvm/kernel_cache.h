// The process-wide cache of compiled kernels, by kernel key, so that graphs
// sharing a fused loop compile it once. Bounded with least-recently-used
// eviction; thread-safe. Compiled code is never freed: an evicted kernel stays
// valid for every executable holding it, the cache only forgets it, so a later
// graph that needs it compiles it again.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "backend/llvm/codegen.h"

namespace kiln::llvm_backend {

/// The kernel compiled under `key`, if the cache still holds it; marks it
/// most recently used. Quick code (CompiledKernel::quick) only if `accept_quick`.
std::optional<CompiledKernel> find_compiled_kernel(const std::string& key, bool accept_quick);
/// Records a freshly compiled kernel. If a concurrent compile recorded `key`
/// first, that kernel is returned instead, so every graph uses one copy,
/// unless it is quick code and this one optimized: this one replaces it.
CompiledKernel remember_compiled_kernel(const std::string& key, const CompiledKernel& kernel);
void clear_kernel_cache();

size_t kernel_cache_size();
/// Compiled modules still linked: those some executable or cache entry holds.
size_t linked_modules();
/// At most `limit` kernels are kept (the least recently used go first); 0 keeps none.
void set_kernel_cache_limit(size_t limit);

}  // namespace kiln::llvm_backend
