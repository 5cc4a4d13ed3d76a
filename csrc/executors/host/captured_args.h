// An op's arguments as the host executor runs them: captured when the op is issued (tpu
// tensors as snapshots of their geometry, everything else as the CPU kernel takes it), and
// rebuilt as a CPU argument stack of zero-copy views of chip memory where the op runs.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include <ATen/core/ivalue.h>
#include <ATen/core/stack.h>
#include <c10/util/SmallVector.h>

#include "executors/host/tensor_snapshot.h"

namespace torch_tpu::executors::host {

// An op's arguments, captured when it is issued in one flat block: the host fills it and
// the executor reads it on another core, so it is kept to few allocations and cache lines.
struct CapturedArgs {
  // One tensor element: a snapshot for a tpu tensor, else a host tensor (a CPU tensor cloned
  // at capture, a wrapped Python number as it is, or undefined for a missing optional).
  struct Tensor {
    TensorSnapshot snapshot;
    at::Tensor host;
  };
  struct Arg {
    enum class Kind : uint8_t { kValue, kTensor, kTensorList, kOptionalTensorList };
    Kind kind = Kind::kValue;
    uint32_t first_tensor = 0;  // tensor kinds: elements are tensors[first_tensor, +count)
    uint32_t tensor_count = 0;
    c10::IValue value;  // kValue: the argument, with generators and devices already CPU-side
  };
  c10::SmallVector<Arg, 6> args;
  c10::SmallVector<Tensor, 3> tensors;
};

// A CPU view made for a kernel call, with the snapshot it came from (for write-back).
using KernelView = std::pair<const TensorSnapshot*, at::Tensor>;

// Rebuilds the CPU argument stack from captured args (call where the op runs); every view made
// is appended to `views`, views over overlapping chip memory sharing one storage, as their tpu
// tensors do (aliasing_views.h). With `view_of`, tpu tensor i of
// `captured.tensors` becomes `view_of(i)` instead of its full view (the fused loop engine's
// chunk views).
torch::jit::Stack cpu_args(const CapturedArgs& captured, std::vector<KernelView>& views,
                           const std::function<at::Tensor(size_t)>* view_of = nullptr);

}  // namespace torch_tpu::executors::host
