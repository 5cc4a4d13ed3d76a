#include "executors/host/kernel_metrics.h"

#include <mutex>

#include "executors/host/kernel_compiler.h"
#include "executors/host/pointwise_codegen.h"
#include "executors/host/pointwise_loop.h"

namespace torch_tpu::executors::host {
namespace {

// The counters run for the whole process: a reset remembers where they stood.
std::mutex g_mutex;
KernelCompileStats g_compiles_at_reset;
int64_t g_compiled_runs_at_reset = 0;
int64_t g_interpreted_runs_at_reset = 0;

}  // namespace

KernelMetrics kernel_metrics() {
  const KernelCompileStats compiles = kernel_compile_stats();
  std::lock_guard<std::mutex> lock(g_mutex);
  KernelMetrics metrics;
  metrics.kernels_compiled = compiles.compiled - g_compiles_at_reset.compiled;
  metrics.kernels_loaded_from_cache = compiles.loaded_from_cache - g_compiles_at_reset.loaded_from_cache;
  metrics.kernel_compile_failures = compiles.failed - g_compiles_at_reset.failed;
  metrics.compiled_kernel_runs = compiled_kernel_runs() - g_compiled_runs_at_reset;
  metrics.interpreted_kernel_runs = interpreted_kernel_runs() - g_interpreted_runs_at_reset;
  return metrics;
}

void reset_kernel_metrics() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_compiles_at_reset = kernel_compile_stats();
  g_compiled_runs_at_reset = compiled_kernel_runs();
  g_interpreted_runs_at_reset = interpreted_kernel_runs();
}

}  // namespace torch_tpu::executors::host
