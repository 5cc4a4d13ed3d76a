// Converting a boxed op's arguments between worlds: finding the op's tpu device, making Meta
// stand-ins for shape inference, capturing snapshots to queue, and rebuilding CPU arguments
// (zero-copy views of chip memory) where the op runs.
#pragma once

#include <functional>
#include <unordered_map>
#include <vector>

#include <ATen/core/function_schema.h>
#include <ATen/core/ivalue.h>
#include <ATen/core/stack.h>
#include <c10/util/SmallVector.h>

#include "executors/host/tensor_snapshot.h"

namespace torch_tpu::privateuse1 {

// A boxed op's arguments, viewed where they lie: on the dispatcher's stack, or borrowed by an
// unboxed entry point (ops_unboxed.cpp). Reading them copies no tensor; a copy of a
// Python-owned tensor costs a GIL round trip (PyTorch then keeps its Python object alive).
using BoxedArgs = c10::ArrayRef<c10::IValue>;

// The tpu device all tensor arguments live on. Throws the CUDA-style "Expected all tensors to
// be on the same device" error for a mix (CPU 0-dim tensors are allowed, as on CUDA; any CPU
// tensor if `accepts_cpu_tensors`).
c10::Device common_tpu_device(const c10::FunctionSchema& schema, BoxedArgs args,
                              bool accepts_cpu_tensors);

// True if every tensor among `args` lies on one tpu device, but for 0-dim CPU tensors passed
// as tensors (scalars, which are only read): list elements must all be on that device.
bool all_on_one_tpu_device(BoxedArgs args);

// True if a CPU tensor other than a 0-dim scalar is among `args` (an index tensor of an
// indexing op): Meta kernels read its data, and a boolean mask's count shapes the result.
bool has_cpu_data_tensor(BoxedArgs args);

// Meta copies of `args` (same sizes/strides/dtypes); `originals` maps each Meta tensor's impl
// back to the tpu tensor it stands for.
torch::jit::Stack to_meta_args(BoxedArgs args,
                               std::unordered_map<const c10::TensorImpl*, at::Tensor>& originals);

// A queued op's arguments, captured at queue time in one flat block: the host fills it and
// the executor reads it on another core, so it is kept to few allocations and cache lines.
struct CapturedArgs {
  // One tensor element: a snapshot for a tpu tensor, else a host tensor (a CPU tensor cloned
  // at capture, a wrapped Python number as it is, or undefined for a missing optional).
  struct Tensor {
    executors::host::TensorSnapshot snapshot;
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

// Captures `args` at queue time into the empty `captured`: tpu tensors as snapshots, CPU
// tensors cloned (the host may change them before the op runs; wrapped Python numbers, which
// it cannot, are kept), generators swapped for the CPU generators kernels use.
void capture_args(BoxedArgs args, CapturedArgs& captured);
// A CPU view made for a queued op, with the snapshot it came from (for write-back).
using QueuedView = std::pair<const executors::host::TensorSnapshot*, at::Tensor>;

// Rebuilds the CPU argument stack from captured args (call where the op runs); every view made
// is appended to `views`, views over overlapping chip memory sharing one storage, as their tpu
// tensors do (executors/host/aliasing_views.h). With `view_of`, tpu tensor i of
// `captured.tensors` becomes `view_of(i)` instead of its full view (the fused loop engine's
// chunk views).
torch::jit::Stack cpu_args(const CapturedArgs& captured, std::vector<QueuedView>& views,
                           const std::function<at::Tensor(size_t)>* view_of = nullptr);

// A CPU view made now from a live tpu tensor, for the synchronous fallback.
struct LiveView {
  at::Tensor view;
  at::Tensor tpu;
  const void* host_data;  // where the view's element 0 was when made
};

// CPU arguments made now from live tpu tensors (for the synchronous fallback; the chip must be
// idle); every view made is appended to `views`, views over overlapping chip memory sharing
// one storage, as in cpu_args.
torch::jit::Stack cpu_args_now(BoxedArgs args, std::vector<LiveView>& views);

}  // namespace torch_tpu::privateuse1
