#include "engine/metrics.h"

#include <atomic>
#include <mutex>

#include "executors/host/kernel_compiler.h"
#include "executors/host/pointwise_codegen.h"
#include "executors/host/pointwise_loop.h"

namespace torch_tpu::engine {
namespace {

std::atomic<int64_t> g_ops_launched{0};
std::mutex g_mutex;
std::map<std::string, int64_t> g_fallbacks;
std::map<std::string, int64_t> g_syncs;
FusionMetrics g_fusion;
// The executor's own counters run for the whole process: reset_metrics() remembers where
// they stood.
executors::host::KernelCompileStats g_compiles_at_reset;
int64_t g_compiled_runs_at_reset = 0;
int64_t g_interpreted_runs_at_reset = 0;

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
  std::lock_guard<std::mutex> lock(g_mutex);
  snapshot.fallbacks = g_fallbacks;
  snapshot.syncs = g_syncs;
  snapshot.fusion = g_fusion;
  const executors::host::KernelCompileStats compiles = executors::host::kernel_compile_stats();
  snapshot.fusion.kernels_compiled = compiles.compiled - g_compiles_at_reset.compiled;
  snapshot.fusion.kernels_loaded_from_cache =
      compiles.loaded_from_cache - g_compiles_at_reset.loaded_from_cache;
  snapshot.fusion.kernel_compile_failures = compiles.failed - g_compiles_at_reset.failed;
  snapshot.fusion.compiled_kernel_runs =
      executors::host::compiled_kernel_runs() - g_compiled_runs_at_reset;
  snapshot.fusion.interpreted_kernel_runs =
      executors::host::interpreted_kernel_runs() - g_interpreted_runs_at_reset;
  return snapshot;
}

void reset_metrics() {
  g_ops_launched.store(0);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_fallbacks.clear();
  g_syncs.clear();
  g_fusion = FusionMetrics{};
  g_compiles_at_reset = executors::host::kernel_compile_stats();
  g_compiled_runs_at_reset = executors::host::compiled_kernel_runs();
  g_interpreted_runs_at_reset = executors::host::interpreted_kernel_runs();
}

}  // namespace torch_tpu::engine
