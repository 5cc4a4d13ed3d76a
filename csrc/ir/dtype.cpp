#include "ir/dtype.h"

namespace torch_tpu::ir {
namespace {

struct DTypeInfo {
  const char* name;
  int64_t size;
};

// Indexed by the DType's number; unnamed numbers are {nullptr, 0}.
constexpr DTypeInfo kInfo[] = {
    {"u8", 1},       {"i8", 1},       {"i16", 2},     {"i32", 4},      {"i64", 8},
    {"f16", 2},      {"f32", 4},      {"f64", 8},     {"c32", 4},      {"c64", 8},
    {"c128", 16},    {"bool", 1},     {"qi8", 1},     {"qu8", 1},      {"qi32", 4},
    {"bf16", 2},     {nullptr, 0},    {nullptr, 0},   {nullptr, 0},    {nullptr, 0},
    {nullptr, 0},    {nullptr, 0},    {nullptr, 0},   {"f8e5m2", 1},   {"f8e4m3fn", 1},
    {"f8e5m2fnuz", 1}, {"f8e4m3fnuz", 1}, {"u16", 2}, {"u32", 4},      {"u64", 8},
};

const DTypeInfo* info(DType dtype) {
  const auto index = static_cast<int>(dtype);
  if (index < 0 || index >= static_cast<int>(sizeof(kInfo) / sizeof(kInfo[0]))) return nullptr;
  return kInfo[index].name != nullptr ? &kInfo[index] : nullptr;
}

}  // namespace

int64_t element_size(DType dtype) {
  const DTypeInfo* found = info(dtype);
  return found != nullptr ? found->size : 0;
}

std::string dtype_name(DType dtype) {
  const DTypeInfo* found = info(dtype);
  return found != nullptr ? found->name : "dtype<" + std::to_string(static_cast<int>(dtype)) + ">";
}

}  // namespace torch_tpu::ir
