// Element types of IR values. Numbered as PyTorch numbers its ScalarType, so the ops layer
// converts with a cast (checked at compile time there) and the IR needs no torch headers.
#pragma once

#include <cstdint>
#include <string>

namespace torch_tpu::ir {

enum class DType : int8_t {
  kUInt8 = 0,
  kInt8 = 1,
  kInt16 = 2,
  kInt32 = 3,
  kInt64 = 4,
  kFloat16 = 5,
  kFloat32 = 6,
  kFloat64 = 7,
  kComplex32 = 8,
  kComplex64 = 9,
  kComplex128 = 10,
  kBool = 11,
  kQInt8 = 12,
  kQUInt8 = 13,
  kQInt32 = 14,
  kBFloat16 = 15,
  kFloat8E5M2 = 23,
  kFloat8E4M3FN = 24,
  kFloat8E5M2FNUZ = 25,
  kFloat8E4M3FNUZ = 26,
  kUInt16 = 27,
  kUInt32 = 28,
  kUInt64 = 29,
};

// Bytes per element; 0 for a number this file does not name (sub-byte and packed types).
int64_t element_size(DType dtype);
// Short name as the printer writes it: "f32", "bf16", "i64", "bool", ...; "dtype<N>" for an
// unnamed number.
std::string dtype_name(DType dtype);

}  // namespace torch_tpu::ir
