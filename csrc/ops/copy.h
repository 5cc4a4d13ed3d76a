// Copies between host and chip and between chips, and reading one value to the host
// (copy.cpp). Registered in ops/registration.cpp.
#pragma once

#include <ATen/core/Tensor.h>

namespace torch_tpu::ops {

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking);
at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst);
at::Scalar local_scalar_dense(const at::Tensor& self);

}  // namespace torch_tpu::ops
