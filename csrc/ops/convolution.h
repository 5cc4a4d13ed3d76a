// The convolution entry points PyTorch calls for out-of-tree devices, run as the generic
// kernel of aten::convolution and aten::convolution_backward (convolution.cpp). Registered in
// ops/registration.cpp.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace torch_tpu::ops {

void convolution_forward(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                         torch::jit::Stack* stack);
void convolution_backward(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                          torch::jit::Stack* stack);

}  // namespace torch_tpu::ops
