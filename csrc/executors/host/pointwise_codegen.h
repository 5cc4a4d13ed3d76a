// Compiled fused pointwise kernels: once a cluster is hot (TORCH_TPU_CODEGEN_AFTER_MS of loop
// time interpreted, default 50, or 16 runs of one cached plan taking 1 ms in all), its
// register program is turned into one C++ loop that takes every element through all of the
// cluster's ops in vector registers (a load and a store per tensor, not per op; a strided
// program's loop runs row by row over the last dim), compiled in the background
// (executors/host/kernel_compiler.h), and run from then on. The interpreter keeps running the
// cluster until the kernel is ready, so nothing waits for the compiler. Generated kernels
// compute exactly what the interpreter does (same expressions, same rounding, no fast-math),
// so which one ran never changes a result. TORCH_TPU_FUSED_CODEGEN=0 turns this off.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "executors/host/kernel_compiler.h"
#include "executors/host/pointwise_program.h"
#include "executors/host/vector_math.h"

namespace torch_tpu::executors::host {

// A generated kernel. `data` holds the host address of each loaded or stored register (in
// register order), `constants` the program's constants, `math` the interpreter's math
// functions (executors/host/vector_math.h). A flat program's kernel runs elements
// [begin, end); a strided program's runs rows [begin, end) of the iteration shape's last dim,
// from `geometry`: ndim, the shape, then each data register's element strides over it (its
// row-major strides where it has none). Flat kernels ignore `geometry`.
using PointwiseKernelFn = void (*)(char* const* data, const float* constants, int64_t begin,
                                   int64_t end, const VectorMath* math, const int64_t* geometry);

// The most iteration dims a strided program's kernel takes (its row index lives in an array).
constexpr int64_t kMaxStridedKernelDims = 16;

// Whether a program can be generated (float32 and bfloat16 only).
bool codegen_supports(const PointwiseProgram& program);

// The C++ translation unit for `program` (defines extern "C" kPointwiseKernelSymbol).
std::string pointwise_kernel_source(const PointwiseProgram& program);
extern const char* const kPointwiseKernelSymbol;

// Per cluster plan (cached with its program): the kernel compiled for it, once requested.
class PointwiseKernelSlot {
 public:
  // The compiled kernel for `program`, or null (not ready, or compiled for another structure).
  PointwiseKernelFn ready(const PointwiseProgram& program) const;
  // Called after the interpreter ran `program` for `nanoseconds`: requests the compile once
  // the cluster is hot (its time interpreted passes TORCH_TPU_CODEGEN_AFTER_MS, or it has run
  // often enough for a loop and for long enough to repay the compile).
  void interpreted(const PointwiseProgram& program, int64_t nanoseconds);

 private:
  mutable std::mutex mutex_;
  std::atomic<bool> requested_{false};
  int64_t interpreted_ns_ = 0;
  int64_t interpreted_runs_ = 0;
  std::vector<int32_t> structure_;
  std::shared_ptr<const CompiledKernel> kernel_;
};

// Kernel runs that used compiled code (for torch_tpu.metrics()).
int64_t compiled_kernel_runs();
void count_compiled_kernel_run();

}  // namespace torch_tpu::executors::host
