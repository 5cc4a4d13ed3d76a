// Memory and metadata kernels (memory.cpp): tensor creation, resize_, set_, record_stream. Views
// never copy and never reach the chip: they share the base's storage (DESIGN §3), and take
// ATen's own view kernels (ops/registration.cpp). Registered in ops/registration.cpp.
#pragma once

#include <optional>

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/core/Storage.h>
#include <c10/core/Stream.h>

namespace torch_tpu::ops {

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> layout,
                               std::optional<c10::Device> device, std::optional<bool> pin_memory,
                               std::optional<c10::MemoryFormat> memory_format);
at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride,
                         std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
                         std::optional<c10::Device> device, std::optional<bool> pin_memory);
const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size,
                          std::optional<c10::MemoryFormat> memory_format);
at::Tensor& set_storage(at::Tensor& self, c10::Storage source, int64_t storage_offset,
                        c10::IntArrayRef size, c10::IntArrayRef stride);
at::Tensor& set_empty(at::Tensor& self);
void record_stream(at::Tensor& self, c10::Stream stream);
// Whether Module.to() may keep its Parameters when moving `from`'s data into `self`.
bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from);
// The QuantizedPrivateUse1 fallback: a clear error naming the quantized dtype and the op.
void reject_quantized(const c10::OperatorHandle& op, torch::jit::Stack* stack);

}  // namespace torch_tpu::ops
