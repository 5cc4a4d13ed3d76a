// Counters behind torch_tpu.metrics(): ops launched, CPU fallbacks by op, syncs by reason.
// Thread-safe; the per-op hot path touches one relaxed atomic.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace torch_tpu::engine {

struct MetricsSnapshot {
  int64_t ops_launched = 0;                  // ops queued on a chip (Strict and Debug)
  std::map<std::string, int64_t> fallbacks;  // op name -> synchronous CPU fallbacks
  std::map<std::string, int64_t> syncs;      // reason -> host waits for a chip
};

void count_op_launched();
void count_fallback(const std::string& op_name);
void count_sync(const char* reason);
MetricsSnapshot metrics_snapshot();
void reset_metrics();

}  // namespace torch_tpu::engine
