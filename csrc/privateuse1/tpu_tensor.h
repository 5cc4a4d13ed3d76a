// Whether a tensor lives on a tpu chip: the one test every layer above uses.
#pragma once

#include <ATen/core/Tensor.h>

namespace torch_tpu::privateuse1 {

// True for a defined tensor on a tpu device (PrivateUse1); false for CPU and undefined ones.
inline bool is_tpu(const at::Tensor& tensor) {
  return tensor.defined() && tensor.device().type() == c10::DeviceType::PrivateUse1;
}

}  // namespace torch_tpu::privateuse1
