// C++ shape functions for the generic kernel's output specs (see structured_meta.cpp): the
// structured kernels' own meta functions for common ops, instead of the Python meta kernels the
// Meta dispatch key runs.
#pragma once

#include <optional>

#include <ATen/core/boxing/KernelFunction.h>
#include <ATen/core/operator_name.h>

namespace torch_tpu::ops {

// A boxed kernel taking Meta stand-ins of the op's arguments and returning its Meta outputs,
// for `name` if the table has it. Call it with callBoxed(op, DispatchKeySet(Meta), stack).
std::optional<c10::KernelFunction> structured_meta_kernel(const c10::OperatorName& name);

}  // namespace torch_tpu::ops
