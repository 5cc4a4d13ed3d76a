// Growing/shrinking a tpu storage and resizing tensors over it, with chip-ordered copies of the
// old bytes (the host never touches chip memory directly).
#pragma once

#include <optional>

#include <ATen/core/Tensor.h>
#include <c10/core/Storage.h>

namespace torch_tpu::privateuse1 {

// Gives `storage` a new buffer of `new_bytes`, keeping min(old, new) bytes. The old buffer stays
// alive until the queued copy (behind all earlier work on the stream) has read it.
void resize_storage_bytes(const c10::Storage& storage, size_t new_bytes);

// aten::resize_ for tpu tensors: new sizes (contiguous in `memory_format`), storage grown as needed.
const at::Tensor& resize_tensor(const at::Tensor& self, c10::IntArrayRef size,
                                std::optional<c10::MemoryFormat> memory_format);

// Makes sure `self`'s storage holds its current geometry, growing it if not.
void ensure_storage_fits(const at::Tensor& self);

}  // namespace torch_tpu::privateuse1
