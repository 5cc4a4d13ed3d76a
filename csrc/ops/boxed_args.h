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
#include <c10/util/MaybeOwned.h>
#include <c10/util/SmallVector.h>

#include "executors/host/captured_args.h"

namespace torch_tpu::ops {

// A boxed op's arguments, viewed where they lie: on the dispatcher's stack, or borrowed by an
// unboxed entry point (unboxed.cpp). Reading them copies no tensor; a copy of a
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

// One tensor among an op's arguments (flatten_tensors): a tensor argument (borrowed) or a list
// element (owned: a list hands out copies; an absent optional element is undefined), with the
// index of the argument it is or belongs to.
struct FlatTensor {
  c10::MaybeOwned<at::Tensor> tensor;
  size_t arg = 0;
};
using FlatTensors = std::vector<FlatTensor>;
// Every tensor among `args` in order, list elements in place of their list: the one walk over
// an op's tensor arguments (output specs' positions, fused-mode descriptions).
FlatTensors flatten_tensors(BoxedArgs args);

// Meta copies of `args` (same sizes/strides/dtypes); `originals` maps each Meta tensor's impl
// back to the tpu tensor it stands for.
torch::jit::Stack to_meta_args(BoxedArgs args,
                               std::unordered_map<const c10::TensorImpl*, at::Tensor>& originals);

// Captures `args` at queue time into the empty `captured`: tpu tensors as snapshots, CPU
// tensors cloned (the host may change them before the op runs; wrapped Python numbers, which
// it cannot, are kept), generators swapped for the CPU generators kernels use.
void capture_args(BoxedArgs args, executors::host::CapturedArgs& captured);
// A CPU view made now from a live tpu tensor, for the synchronous fallback.
struct LiveView {
  at::Tensor view;
  at::Tensor tpu;
  const void* host_data;  // where the view's element 0 was when made
};

// The arguments as a CPU kernel takes them: each tpu tensor (of argument `index`) replaced by
// `to_cpu(tensor, index)`, tpu generators and devices by their CPU counterparts.
torch::jit::Stack cpu_args_with(
    BoxedArgs args, const std::function<at::Tensor(const at::Tensor&, size_t index)>& to_cpu);

// CPU arguments made now from live tpu tensors (for the synchronous fallback; the chip must be
// idle); every view made is appended to `views`, views over overlapping chip memory sharing
// one storage, as in cpu_args.
torch::jit::Stack cpu_args_now(BoxedArgs args, std::vector<LiveView>& views);

}  // namespace torch_tpu::ops
