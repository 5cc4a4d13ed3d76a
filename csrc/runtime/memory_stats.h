// Allocation statistics kept by the caching allocator, shaped like CUDA's so the PyTorch layer
// copies them field by field into c10::CachingDeviceAllocator::DeviceStats.
#pragma once

#include <array>
#include <cstdint>

namespace torch_tpu::runtime {

// One counter: its current value, its high-water mark, and running totals of increases/decreases.
struct Stat {
  int64_t current = 0;
  int64_t peak = 0;
  int64_t allocated = 0;
  int64_t freed = 0;

  void increase(int64_t amount);
  void decrease(int64_t amount);
  void reset_peak() { peak = current; }
  void reset_accumulated() { allocated = 0; freed = 0; }
};

// Indexes of a StatArray: every pool together, the small-block pool, the large-block pool.
enum PoolIndex : int { kAllPools = 0, kSmallPool = 1, kLargePool = 2 };
using StatArray = std::array<Stat, 3>;

struct MemoryStats {
  StatArray allocation;       // live blocks handed to users
  StatArray segment;          // segments reserved from chip memory
  StatArray active;           // blocks in use or waiting to be freed
  StatArray inactive_split;   // free pieces of split segments
  StatArray allocated_bytes;  // bytes in live blocks (rounded sizes)
  StatArray reserved_bytes;   // bytes in reserved segments
  StatArray active_bytes;
  StatArray inactive_split_bytes;
  StatArray requested_bytes;  // bytes users asked for (unrounded)
  int64_t num_alloc_retries = 0;  // allocations that had to empty the cache and retry
  int64_t num_ooms = 0;           // allocations that failed
  int64_t num_device_alloc = 0;   // segments reserved
  int64_t num_device_free = 0;    // segments released

  // Every counter's peak becomes its current value (CUDA's resetPeakStats).
  void reset_peaks();
  // Running totals and event counters restart from zero (CUDA's resetAccumulatedStats).
  void reset_accumulated();
};

}  // namespace torch_tpu::runtime
