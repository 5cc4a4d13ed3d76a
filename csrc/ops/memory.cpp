// Memory and metadata kernels: tensor creation, resize_, set_ and record_stream (memory.h).
#include "ops/memory.h"

#include <ATen/EmptyTensor.h>
#include <c10/core/DeviceGuard.h>

#include "privateuse1/device_allocator.h"
#include "privateuse1/dtypes.h"
#include "privateuse1/storage_resize.h"

namespace torch_tpu::ops {
namespace {

c10::Device tpu_device(std::optional<c10::Device> device) {
  c10::Device result = device.value_or(c10::Device(c10::DeviceType::PrivateUse1));
  TORCH_CHECK(result.type() == c10::DeviceType::PrivateUse1, "expected a tpu device, got ", result);
  return result;
}

}  // namespace

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> layout,
                               std::optional<c10::Device> device, std::optional<bool> pin_memory,
                               std::optional<c10::MemoryFormat> memory_format) {
  TORCH_CHECK(!pin_memory.value_or(false), "only dense CPU tensors can be pinned, not tpu tensors");
  TORCH_CHECK(layout.value_or(c10::kStrided) == c10::kStrided,
              "not supported on tpu yet: layout ", layout.value_or(c10::kStrided));
  const c10::ScalarType scalar_type = dtype.value_or(c10::get_default_dtype_as_scalartype());
  privateuse1::check_supported_dtype(scalar_type);
  const c10::DeviceGuard guard(tpu_device(device));
  return at::detail::empty_generic(size, &privateuse1::device_allocator(),
                                   c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), scalar_type,
                                   memory_format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride,
                         std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
                         std::optional<c10::Device> device, std::optional<bool> pin_memory) {
  TORCH_CHECK(!pin_memory.value_or(false), "only dense CPU tensors can be pinned, not tpu tensors");
  TORCH_CHECK(layout.value_or(c10::kStrided) == c10::kStrided,
              "not supported on tpu yet: layout ", layout.value_or(c10::kStrided));
  const c10::ScalarType scalar_type = dtype.value_or(c10::get_default_dtype_as_scalartype());
  privateuse1::check_supported_dtype(scalar_type);
  const c10::DeviceGuard guard(tpu_device(device));
  return at::detail::empty_strided_generic(size, stride, &privateuse1::device_allocator(),
                                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                           scalar_type);
}

const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size,
                          std::optional<c10::MemoryFormat> memory_format) {
  return privateuse1::resize_tensor(self, size, memory_format);
}

at::Tensor& set_storage(at::Tensor& self, c10::Storage source, int64_t storage_offset,
                        c10::IntArrayRef size, c10::IntArrayRef stride) {
  TORCH_CHECK(source.device().type() == c10::DeviceType::PrivateUse1,
              "set_: expected a tpu storage, got one on ", source.device());
  c10::TensorImpl* impl = self.unsafeGetTensorImpl();
  impl->set_storage_keep_dtype(std::move(source));
  impl->set_storage_offset(storage_offset);
  if (stride.empty()) {
    impl->set_sizes_contiguous(size);
  } else {
    TORCH_CHECK(size.size() == stride.size(), "set_: size and stride must have the same length");
    impl->set_sizes_and_strides(size, stride);
  }
  privateuse1::ensure_storage_fits(self);
  return self;
}

at::Tensor& set_empty(at::Tensor& self) {
  c10::Storage empty(c10::Storage::use_byte_size_t(), 0, privateuse1::allocate_on(self.device().index(), 0),
                     &privateuse1::device_allocator(), /*resizable=*/true);
  return set_storage(self, std::move(empty), 0, {0}, {});
}

void record_stream(at::Tensor& self, c10::Stream stream) {
  privateuse1::record_stream_use(self.storage().data(), stream);
}

// Module.to() keeps its Parameter objects (setting `.data`) only when this says the new tensor
// is compatible; c10's own check knows only in-tree dense backends, so without this every
// module.to("tpu") made new Parameters and broke weight tying (an LM head tied to its
// embedding got its own copy). A dense tpu tensor is as compatible with a dense CPU (or tpu)
// tensor as a CUDA one is. Found by the Hugging Face sweep.
bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  const auto dense_cpu_or_tpu = [](c10::DispatchKeySet keys) {
    return keys.has(c10::DispatchKey::Dense) &&
           keys.has_any(c10::DispatchKeySet(
               {c10::BackendComponent::CPUBit, c10::BackendComponent::PrivateUse1Bit}));
  };
  const c10::DispatchKeySet self_keys = self.key_set();
  const c10::DispatchKeySet from_keys = from.key_set();
  if (self_keys == from_keys) return true;
  if (dense_cpu_or_tpu(self_keys) && dense_cpu_or_tpu(from_keys)) return true;
  return self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from_keys);
}

// Quantized tensors dispatch to QuantizedPrivateUse1, where no kernel exists; say so clearly.
void reject_quantized(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  std::string dtype = "of quantized tensors";
  const auto& params = op.schema().arguments();
  const auto args = torch::jit::last(*stack, params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    c10::TypePtr type = params[i].real_type();
    if (type->kind() == c10::TypeKind::OptionalType) type = type->containedType(0);
    if (type->kind() == c10::TypeKind::ScalarTypeType && args[i].isInt()) {
      dtype = c10::toString(static_cast<c10::ScalarType>(args[i].toInt()));
    }
  }
  TORCH_CHECK_NOT_IMPLEMENTED(false, "not supported on tpu yet: dtype ", dtype, " (quantized, in ",
                              op.schema().name(), ")");
}

}  // namespace torch_tpu::ops
