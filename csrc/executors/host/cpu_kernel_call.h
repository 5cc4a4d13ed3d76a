// How the host executor runs an op the generic kernel issued: the CPU kernel to call, its
// captured arguments, and the fresh outputs it writes (through an out= overload, or by copying
// in the kernel's results). Runs as a task on the chip's queue, or chunk by chunk inside a
// fused kernel (fusible_kernel_call.h).
#pragma once

#include <functional>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/util/SmallVector.h>

#include "executors/host/captured_args.h"
#include "executors/host/host_work.h"
#include "executors/host/tensor_snapshot.h"

namespace torch_tpu::executors::host {

struct CpuKernelCall final : HostWork {
  explicit CpuKernelCall(c10::OperatorHandle op) : cpu_op(std::move(op)) {}
  void run() const override;  // run_kernel_call(*this)

  c10::OperatorHandle cpu_op;
  CapturedArgs captured;
  c10::SmallVector<TensorSnapshot, 2> targets;
  // Without the out= overload: per returned tensor (lists flattened), whether it is fresh and
  // so copied into the next target (others are the op's own arguments or views of them).
  c10::SmallVector<bool, 4> fresh_returns;
  bool use_out_variant = false;
};

// Runs a boxed op on CPU arguments, below autograd (the tpu op already recorded autograd).
void call_cpu(const c10::OperatorHandle& op, torch::jit::Stack& stack);

// Runs the call on full views of chip memory. Errors keep PyTorch's message without the C++
// backtrace: they reach Python users at a later sync, where a worker's backtrace only confuses.
void run_kernel_call(const CpuKernelCall& call);

// Runs a pointwise op (out= overload or in place) with `view(i)` as the CPU tensor for tpu
// tensor i: captured tensors first (in order), then targets. For the fused loop engine.
void run_kernel_call_on(const CpuKernelCall& call, const std::function<at::Tensor(size_t)>& view);

}  // namespace torch_tpu::executors::host
