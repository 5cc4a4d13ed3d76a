#include "runtime/memory_stats.h"

#include <algorithm>

namespace torch_tpu::runtime {

void Stat::increase(int64_t amount) {
  current += amount;
  peak = std::max(peak, current);
  allocated += amount;
}

void Stat::decrease(int64_t amount) {
  current -= amount;
  freed += amount;
}

void MemoryStats::reset_peaks() {
  for (StatArray* array : {&allocation, &segment, &active, &inactive_split, &allocated_bytes,
                           &reserved_bytes, &active_bytes, &inactive_split_bytes,
                           &requested_bytes}) {
    for (Stat& stat : *array) stat.reset_peak();
  }
}

void MemoryStats::reset_accumulated() {
  for (StatArray* array : {&allocation, &segment, &active, &inactive_split, &allocated_bytes,
                           &reserved_bytes, &active_bytes, &inactive_split_bytes,
                           &requested_bytes}) {
    for (Stat& stat : *array) stat.reset_accumulated();
  }
  num_alloc_retries = 0;
  num_ooms = 0;
  num_device_alloc = 0;
  num_device_free = 0;
}

}  // namespace torch_tpu::runtime
