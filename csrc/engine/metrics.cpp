#include "engine/metrics.h"

#include <atomic>
#include <mutex>

namespace torch_tpu::engine {
namespace {

std::atomic<int64_t> g_ops_launched{0};
std::mutex g_mutex;
std::map<std::string, int64_t> g_fallbacks;
std::map<std::string, int64_t> g_syncs;

}  // namespace

void count_op_launched() { g_ops_launched.fetch_add(1, std::memory_order_relaxed); }

void count_fallback(const std::string& op_name) {
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_fallbacks[op_name];
}

void count_sync(const char* reason) {
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_syncs[reason];
}

MetricsSnapshot metrics_snapshot() {
  MetricsSnapshot snapshot;
  snapshot.ops_launched = g_ops_launched.load();
  std::lock_guard<std::mutex> lock(g_mutex);
  snapshot.fallbacks = g_fallbacks;
  snapshot.syncs = g_syncs;
  return snapshot;
}

void reset_metrics() {
  g_ops_launched.store(0);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_fallbacks.clear();
  g_syncs.clear();
}

}  // namespace torch_tpu::engine
