// Which dtypes a tpu tensor may have.
#pragma once

#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>

namespace torch_tpu::privateuse1 {

// Throws TypeError naming `dtype` if tpu tensors cannot hold it (quantized and bit-packed types
// have no chip kernels). Other dtypes get whatever kernels PyTorch's CPU backend has for them
// (uint16/32/64 and complex32 only a few), and the CPU's own error for the rest.
inline void check_supported_dtype(c10::ScalarType dtype) {
  const bool supported = !c10::isQIntType(dtype) && !c10::isBitsType(dtype) &&
                         dtype != c10::ScalarType::Undefined;
  TORCH_CHECK_TYPE(supported, "not supported on tpu yet: dtype ", dtype);
}

}  // namespace torch_tpu::privateuse1
