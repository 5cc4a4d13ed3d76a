// Ops with a CPU kernel and also a composite kernel get the generic kernel registered
// explicitly, so they run PyTorch's CPU kernel (see prefer_cpu_kernels.cpp for why).
#pragma once

#include <torch/library.h>

namespace torch_tpu::ops {

// Registers the generic kernel (unboxed for the hottest ops, the multi-tensor kernel for
// `_foreach_*`) in `library` (aten, PrivateUse1) for every aten op that prefers its CPU kernel
// and has no PrivateUse1 kernel yet: call it after the dedicated kernels are registered.
void register_generic_kernel_over_composites(torch::Library& library);

}  // namespace torch_tpu::ops
