// Which dtypes a tpu tensor may have.
#pragma once

#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>

namespace torch_tpu::privateuse1 {

// Throws TypeError naming `dtype` if tpu tensors cannot hold it (quantized, bit-packed and
// 4-bit-complex types have no chip kernels).
inline void check_supported_dtype(c10::ScalarType dtype) {
  const bool supported = !c10::isQIntType(dtype) && !c10::isBitsType(dtype) &&
                         dtype != c10::ScalarType::ComplexHalf &&
                         !c10::isBarebonesUnsignedType(dtype) && dtype != c10::ScalarType::Undefined;
  TORCH_CHECK_TYPE(supported, "not supported on tpu yet: dtype ", dtype);
}

}  // namespace torch_tpu::privateuse1
