// Values over storages, in StableHLO (DESIGN §3, immutable buffers): each program storage is a
// byte array `tensor<Nxui8>`; a value is its layout (dtype, sizes, strides, offset) over those
// bytes. Reading a value reinterprets the bytes it spans and gathers its elements; writing one
// produces the storage's next byte array (functionalized: nothing is updated in place). Every
// byte <-> typed conversion of the lowering lives here. Torch-free.
#pragma once

#include <cstdint>
#include <optional>

#include "executors/pjrt/lowering/mlir_text.h"
#include "ir/program.h"

namespace torch_tpu::executors::pjrt::lowering {

// True when `type`'s elements are row-major and dense from its offset (size-1 dimensions'
// strides do not matter): reading it is a slice and a reshape, writing it a slice update.
bool is_contiguous(const ir::TensorType& type);

// The value of layout `type` over `storage` (a 1-D ui8 tensor), shaped type.sizes. Contiguous
// layouts are a slice + bitcast + reshape; any other non-negative strides a gather.
Tensor read_value(FunctionBuilder& builder, const Tensor& storage, const ir::TensorType& type);

// A storage of `bytes` bytes after writing `value` (shaped type.sizes, of type.dtype) at layout
// `type`: the whole array when the layout covers it, a dynamic_update_slice for a contiguous
// part, a scatter of each element's bytes otherwise. `storage` holds its bytes before the write
// (absent: not written yet; zeros are made only if a part survives). Throws "not supported
// yet" for a layout whose elements overlap (a stride 0 over a size above 1).
Tensor write_value(FunctionBuilder& builder, const std::optional<Tensor>& storage, int64_t bytes,
                   const ir::TensorType& type, const Tensor& value);

// `value`'s elements as bytes (little-endian, as the host lays them out), a 1-D ui8 tensor.
Tensor to_bytes(FunctionBuilder& builder, const Tensor& value);

}  // namespace torch_tpu::executors::pjrt::lowering
