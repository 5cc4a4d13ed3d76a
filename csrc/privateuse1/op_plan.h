// What the generic kernel knows about an op, worked out once per op and cached: its printable
// name (interned, for errors), how it runs (queued with shapes from its Meta kernel, or as a
// synchronous CPU fallback), and its out= overload.
#pragma once

#include <optional>
#include <string>

#include <ATen/core/dispatch/Dispatcher.h>

namespace torch_tpu::privateuse1 {

enum class OpStrategy {
  kQueued,       // output shapes from the Meta kernel; runs on the chip's queue
  kSyncFallback  // returns a non-tensor value read from chip data (equal, is_nonzero), or
                 // CPU and Meta kernels disagree on output shapes; calls whose output shapes
                 // need data are marked per call in the shape cache instead
};

struct OpPlan {
  std::string name;  // "aten::add.Tensor"; stable address for the op's lifetime
  OpStrategy strategy = OpStrategy::kQueued;
  bool mutates_args = false;                     // in-place or out= op
  std::optional<c10::OperatorHandle> out_variant;  // for functional ops
};

// The cached plan of `op` (thread-safe; the reference stays valid).
OpPlan& plan_of(const c10::OperatorHandle& op);

}  // namespace torch_tpu::privateuse1
