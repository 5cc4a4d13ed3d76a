// Values over storages, in StableHLO (DESIGN §3, immutable buffers): each program storage is a
// 1-D array of its unit: the dtype of every value over it when they all share one (the common
// case: `tensor<Nxf32>`, read and written with no conversion, which on a TPU would be a relayout
// of every input and output), else bytes (`tensor<Nxui8>`, for a storage viewed as several
// dtypes). A value is its layout (dtype, sizes, strides, offset) over the storage. Reading it
// slices and gathers its elements (from bytes: reinterpreted first); writing one produces the
// storage's next array (functionalized: nothing is updated in place). Every byte <-> typed
// conversion of the lowering lives here. Torch-free.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "executors/pjrt/lowering/mlir_text.h"
#include "ir/program.h"

namespace torch_tpu::executors::pjrt::lowering {

// The unit of a storage of `bytes` bytes over which a program's values have `value_dtypes`:
// their dtype when they share one that has a StableHLO element type and divides the bytes
// (bool excepted), else kUInt8.
ir::DType storage_unit(const std::vector<ir::DType>& value_dtypes, int64_t bytes);

// True when `type`'s elements are row-major and dense from its offset (size-1 dimensions'
// strides do not matter): reading it is a slice and a reshape, writing it a slice update.
bool is_contiguous(const ir::TensorType& type);

// The value of layout `type` over `storage` (1-D, of type.dtype or ui8), shaped type.sizes.
// Contiguous layouts are a slice (+ bitcast from bytes) + reshape; nested strides (transposes,
// step slices, expanded views) a padded reshape, a slice and a transpose; others a gather.
Tensor read_value(FunctionBuilder& builder, const Tensor& storage, const ir::TensorType& type);

// A storage of `bytes` bytes and unit `unit` after writing `value` (shaped type.sizes, of
// type.dtype) at layout `type`: the whole array when the layout covers it, a
// dynamic_update_slice for a contiguous part, a scatter of each element's units otherwise.
// `storage` holds its contents before the write (absent: not written yet; zeros are made only
// if a part survives). Throws "not supported yet" for a layout whose elements overlap (a stride
// 0 over a size above 1).
Tensor write_value(FunctionBuilder& builder, const std::optional<Tensor>& storage, int64_t bytes,
                   ir::DType unit, const ir::TensorType& type, const Tensor& value);

// `value`'s elements as bytes (little-endian, as the host lays them out), a 1-D ui8 tensor.
Tensor to_bytes(FunctionBuilder& builder, const Tensor& value);

// A module taking a storage of `bytes` bytes as `from` units and returning the same bytes as
// `to` units: what a buffer written by one program needs before a program that chose another
// unit for its storage reads it.
std::string conversion_module(ir::DType from, ir::DType to, int64_t bytes);

}  // namespace torch_tpu::executors::pjrt::lowering
