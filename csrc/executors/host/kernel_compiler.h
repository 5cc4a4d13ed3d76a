// Compiles generated C++ into shared objects and loads them: the host runtime's "programs are
// compiled once and cached" for fused kernels (the role XLA plays on a real chip). Compiles run
// on one background thread, so the caller keeps running its interpreted version meanwhile.
// Results are cached in memory by source, and on disk (one .so per source, compiler flags and
// CPU) so later processes load instead of compiling.
//
// Environment:
//   TORCH_TPU_KERNEL_COMPILER   the C++ compiler (default: $CXX, else c++)
//   TORCH_TPU_KERNEL_CACHE_DIR  where .so files go (default: $XDG_CACHE_HOME or ~/.cache,
//                               then torch_tpu/kernels)
// A compiler that is missing or fails leaves the kernel interpreted, with one warning.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace torch_tpu::executors::host {

class CompiledKernel {
 public:
  // The loaded symbol, or null until the compile is done (or if it failed).
  void* symbol() const { return symbol_.load(std::memory_order_acquire); }
  bool done() const { return done_.load(std::memory_order_acquire); }

 private:
  friend class KernelCompiler;
  std::atomic<void*> symbol_{nullptr};
  std::atomic<bool> done_{false};
};

// Queues a compile of `source` (a translation unit defining extern "C" `symbol`), or returns
// the kernel already compiled or queued for the same source.
std::shared_ptr<const CompiledKernel> compile_kernel(const std::string& source,
                                                     const std::string& symbol);

// Blocks until every queued compile is done (benchmarks and tests time steady state).
void wait_for_kernel_compiles();

struct KernelCompileStats {
  int64_t compiled = 0;          // compiler runs that produced a kernel
  int64_t loaded_from_cache = 0;  // kernels found on disk
  int64_t failed = 0;
};
KernelCompileStats kernel_compile_stats();

}  // namespace torch_tpu::executors::host
