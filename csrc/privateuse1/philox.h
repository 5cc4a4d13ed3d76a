// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011): a
// counter-based generator, four 32-bit outputs that are a pure function of a 128-bit counter
// and a 64-bit key. CUDA's and XLA's generators are built on it; the tpu generator uses it to
// give each random op a stream that depends only on (seed, offset).
#pragma once

#include <array>
#include <cstdint>

namespace torch_tpu::privateuse1 {

using PhiloxBlock = std::array<uint32_t, 4>;

inline PhiloxBlock philox4x32_10(PhiloxBlock counter, uint64_t key) {
  constexpr uint32_t kMultiplier0 = 0xD2511F53u, kMultiplier1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t product0 = uint64_t{kMultiplier0} * counter[0];
    const uint64_t product1 = uint64_t{kMultiplier1} * counter[2];
    counter = {static_cast<uint32_t>(product1 >> 32) ^ counter[1] ^ k0, static_cast<uint32_t>(product1),
               static_cast<uint32_t>(product0 >> 32) ^ counter[3] ^ k1, static_cast<uint32_t>(product0)};
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return counter;
}

}  // namespace torch_tpu::privateuse1
