// The generic tpu kernel (ops_generic.cpp), for kernels that forward to it under another op.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace torch_tpu::privateuse1 {

// Runs `op` on tpu arguments on the stack (boxed calling convention); see ops_generic.cpp.
void generic_tpu_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                        torch::jit::Stack* stack);

}  // namespace torch_tpu::privateuse1
