// Threefry-2x32 with 20 rounds (Salmon et al., "Parallel random numbers: as
// easy as 1, 2, 3", SC 2011; the Random123 library), the block function of
// kiln's counter-based random numbers, as in JAX. All arithmetic is on
// uint32_t, so it wraps without undefined behaviour.
#pragma once

#include <array>
#include <cstdint>

namespace kiln::ops {

using ThreefryWords = std::array<uint32_t, 2>;

/// Encrypts `counter` under `key`.
constexpr ThreefryWords threefry2x32(ThreefryWords key, ThreefryWords counter) {
  constexpr uint32_t rotations[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  // The key schedule's third word makes every injected subkey differ.
  const uint32_t schedule[3] = {key[0], key[1], key[0] ^ key[1] ^ 0x1BD11BDAu};
  uint32_t x0 = counter[0] + schedule[0];
  uint32_t x1 = counter[1] + schedule[1];
  for (uint32_t group = 0; group < 5; ++group) {
    for (uint32_t rotation : rotations[group % 2]) {
      x0 += x1;
      x1 = (x1 << rotation) | (x1 >> (32 - rotation));
      x1 ^= x0;
    }
    // Subkey injection after every four rounds.
    x0 += schedule[(group + 1) % 3];
    x1 += schedule[(group + 2) % 3] + group + 1;
  }
  return {x0, x1};
}

}  // namespace kiln::ops
