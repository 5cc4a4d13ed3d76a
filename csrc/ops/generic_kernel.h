// The generic tpu kernel (generic_kernel.cpp), for kernels that forward to it under another op
// and for the unboxed entry points of hot ops (unboxed.cpp).
#pragma once

#include <optional>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <torch/library.h>

#include "ops/boxed_args.h"

namespace torch_tpu::ops {

// Runs `op` on tpu arguments on the stack (boxed calling convention); see generic_kernel.cpp.
void generic_tpu_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                        torch::jit::Stack* stack);

// The same on arguments viewed where they lie; returns the op's results.
torch::jit::Stack run_generic_kernel(const c10::OperatorHandle& op, BoxedArgs args);

// The generic kernel behind `name`'s unboxed signature, for the hottest ops (unboxed.cpp);
// nullopt for other ops, which take the boxed kernel.
std::optional<torch::CppFunction> unboxed_generic_kernel(const c10::OperatorName& name);

// Multi-tensor (`_foreach_*`) ops (foreach.cpp): lists on one chip run as one generic
// kernel call, mixed-device lists as the composite per-tensor loop.
bool is_multi_tensor_op(const c10::OperatorName& name);
void multi_tensor_tpu_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                             torch::jit::Stack* stack);

}  // namespace torch_tpu::ops
