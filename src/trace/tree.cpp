// Out-of-line helpers of include/kiln/tree.h: hashing of static leaves and
// the error for trees of different shapes given to tree_map.
#include "kiln/tree.h"

#include <xxhash.h>

namespace kiln::tree_detail {

uint64_t hash_bytes(const void* data, size_t size, uint64_t seed) { return XXH3_64bits_withSeed(data, size, seed); }

// `which` counts the extra trees from 1; the user sees trees numbered from 1
// in argument order, so the first tree is "tree 1".
void throw_tree_mismatch(size_t expected, size_t got, size_t which) {
  throw Error("[tree_map] tree " + std::to_string(which + 1) + " has " + std::to_string(got) +
              " array leaves but tree 1 has " + std::to_string(expected) +
              "\n  hint: every tree passed to tree_map needs the same structure (same containers, sizes and keys)");
}

}  // namespace kiln::tree_detail
