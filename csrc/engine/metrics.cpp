#include "engine/metrics.h"

#include <atomic>
#include <mutex>


namespace torch_tpu::engine {
namespace {

std::atomic<int64_t> g_ops_launched{0};
std::atomic<int64_t> g_one_node_runs{0};
std::mutex g_mutex;
std::map<std::string, int64_t> g_fallbacks;
std::map<std::string, std::string> g_fallback_reasons;
std::map<std::string, int64_t> g_syncs;
FusionMetrics g_fusion;

}  // namespace

void count_op_launched() { g_ops_launched.fetch_add(1, std::memory_order_relaxed); }
void count_one_node_run() { g_one_node_runs.fetch_add(1, std::memory_order_relaxed); }

void count_fallback(const std::string& op_name) {
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_fallbacks[op_name];
}

void note_fallback_reason(const std::string& op_name, const std::string& reason) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_fallback_reasons.emplace(op_name, reason);
}

void count_sync(const char* reason) {
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_syncs[reason];
}

void count_flush(const char* reason, int64_t nodes, bool hit) {
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_fusion.flushes[reason];
  ++(hit ? g_fusion.cache_hits : g_fusion.cache_misses);
  if (!hit) ++g_fusion.programs_planned;
  g_fusion.nodes_executed += nodes;
}

void count_program_run(int64_t fused_kernels, int64_t materialized, int64_t avoided) {
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_fusion.programs_run;
  g_fusion.fused_kernels_run += fused_kernels;
  g_fusion.bytes_materialized += materialized;
  g_fusion.bytes_avoided += avoided;
}

MetricsSnapshot metrics_snapshot() {
  MetricsSnapshot snapshot;
  snapshot.ops_launched = g_ops_launched.load();
  snapshot.one_node_runs = g_one_node_runs.load();
  std::lock_guard<std::mutex> lock(g_mutex);
  snapshot.fallbacks = g_fallbacks;
  snapshot.fallback_reasons = g_fallback_reasons;
  snapshot.syncs = g_syncs;
  snapshot.fusion = g_fusion;
  return snapshot;
}

void reset_metrics() {
  g_ops_launched.store(0);
  g_one_node_runs.store(0);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_fallbacks.clear();
  g_fallback_reasons.clear();
  g_syncs.clear();
  g_fusion = FusionMetrics{};
}

}  // namespace torch_tpu::engine
