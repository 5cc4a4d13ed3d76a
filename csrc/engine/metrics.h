// Counters behind torch_tpu.metrics(): ops launched, CPU fallbacks by op, syncs by reason.
// Thread-safe; the per-op hot path touches one relaxed atomic.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace torch_tpu::engine {

// DeferAndFuse's counters (DESIGN §4): why pending graphs were flushed, how programs were
// planned (or found in the cache), and what running them did.
struct FusionMetrics {
  std::map<std::string, int64_t> flushes;  // reason -> flushes that found pending work
  int64_t programs_planned = 0;            // program cache misses: plans made
  int64_t cache_hits = 0;
  int64_t cache_misses = 0;
  int64_t programs_run = 0;
  int64_t fused_kernels_run = 0;   // clusters of ops run as one pass over memory
  int64_t nodes_executed = 0;      // ops run inside programs (fused or not)
  int64_t bytes_materialized = 0;  // output bytes written to chip memory by fused kernels
  int64_t bytes_avoided = 0;       // intermediate bytes fused kernels never wrote
};

struct MetricsSnapshot {
  int64_t ops_launched = 0;                  // ops queued on a chip (every mode)
  int64_t one_node_runs = 0;                 // Strict and Debug ops run as one-node programs
  std::map<std::string, int64_t> fallbacks;  // op name -> synchronous CPU fallbacks
  // op name -> why the active executor could not compile it (executors::NotSupported), as
  // first said: the reason its calls are among `fallbacks`.
  std::map<std::string, std::string> fallback_reasons;
  std::map<std::string, int64_t> syncs;      // reason -> host waits for a chip
  FusionMetrics fusion;
};

void count_op_launched();
void count_one_node_run();
void count_fallback(const std::string& op_name);
// Keeps the first `reason` given for `op_name` (see MetricsSnapshot::fallback_reasons).
void note_fallback_reason(const std::string& op_name, const std::string& reason);
void count_sync(const char* reason);
// Fused mode: `reason` flushed a program of `nodes` ops; `hit` if its plan came from the cache.
void count_flush(const char* reason, int64_t nodes, bool hit);
// A program ran `fused_kernels` fused clusters, writing `materialized` and skipping `avoided`
// bytes of their outputs.
void count_program_run(int64_t fused_kernels, int64_t materialized, int64_t avoided);
MetricsSnapshot metrics_snapshot();
void reset_metrics();

}  // namespace torch_tpu::engine
