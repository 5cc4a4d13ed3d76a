// An op queued on a chip by the generic kernel: the CPU kernel to run, its captured arguments,
// and the fresh outputs it writes (through an out= overload, or by copying in the kernel's
// results). Runs on the chip's queue, or chunk by chunk inside a fused kernel.
#pragma once

#include <functional>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/util/SmallVector.h>

#include "executors/host/tensor_snapshot.h"
#include "privateuse1/boxed_args.h"

namespace torch_tpu::privateuse1 {

struct QueuedOp {
  explicit QueuedOp(c10::OperatorHandle op) : cpu_op(std::move(op)) {}

  c10::OperatorHandle cpu_op;
  CapturedArgs captured;
  c10::SmallVector<executors::host::TensorSnapshot, 2> targets;
  // Without the out= overload: per returned tensor (lists flattened), whether it is fresh and
  // so copied into the next target (others are the op's own arguments or views of them).
  c10::SmallVector<bool, 4> fresh_returns;
  bool use_out_variant = false;
};

// Runs a boxed op on CPU arguments, below autograd (the tpu op already recorded autograd).
void call_cpu(const c10::OperatorHandle& op, torch::jit::Stack& stack);

// Runs the op on full views of chip memory. Errors keep PyTorch's message without the C++
// backtrace: they reach Python users at a later sync, where a worker's backtrace only confuses.
void run_queued(const QueuedOp& queued);

// Runs a pointwise op (out= overload or in place) with `view(i)` as the CPU tensor for tpu
// tensor i: captured tensors first (in order), then targets. For the fused loop engine.
void run_queued_on(const QueuedOp& queued, const std::function<at::Tensor(size_t)>& view);

}  // namespace torch_tpu::privateuse1
