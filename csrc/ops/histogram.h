// histc, integer inputs included, as CUDA counts them (histogram.cpp). Registered in
// ops/registration.cpp.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace torch_tpu::ops {

void histc(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack);

}  // namespace torch_tpu::ops
