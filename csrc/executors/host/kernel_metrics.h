// The host executor's fused-kernel counters behind torch_tpu.metrics()["fusion"]: compiled
// pointwise kernels (pointwise_codegen.h) and how fused kernels ran. Counted since the last
// reset_kernel_metrics(). Thread-safe.
#pragma once

#include <cstdint>

namespace torch_tpu::executors::host {

struct KernelMetrics {
  int64_t kernels_compiled = 0;           // compiler runs that produced a kernel
  int64_t kernels_loaded_from_cache = 0;  // kernels found compiled on disk
  int64_t kernel_compile_failures = 0;
  int64_t compiled_kernel_runs = 0;       // fused kernels that ran compiled code
  int64_t interpreted_kernel_runs = 0;    // fused kernels the register-loop interpreter ran
};

KernelMetrics kernel_metrics();
void reset_kernel_metrics();

}  // namespace torch_tpu::executors::host
