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

}  // namespace torch_tpu::runtime
