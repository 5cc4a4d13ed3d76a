#include "executors/host/tensor_snapshot.h"

#include <ATen/ops/from_blob.h>
#include <c10/util/Exception.h>

#include "runtime/chip.h"

namespace torch_tpu::executors::host {

void* host_address(const void* device_address) {
  if (device_address == nullptr) return nullptr;
  const auto address = reinterpret_cast<runtime::DeviceAddress>(device_address);
  runtime::Chip* chip = runtime::Runtime::instance().chip_of(address);
  TORCH_INTERNAL_ASSERT(chip != nullptr, "not a tpu device address: ", device_address);
  return chip->memory().host_address(address);
}

namespace {

at::Tensor make_cpu_view(const void* device_data, c10::IntArrayRef sizes,
                         c10::IntArrayRef strides, c10::ScalarType dtype) {
  return at::from_blob(host_address(device_data), sizes, strides,
                       at::TensorOptions().dtype(dtype).device(c10::kCPU));
}

const void* element0_address(const at::Tensor& tensor) {
  const auto* base = static_cast<const char*>(tensor.storage().data());
  if (base == nullptr) return nullptr;
  return base + tensor.storage_offset() * static_cast<int64_t>(tensor.element_size());
}

}  // namespace

TensorSnapshot::TensorSnapshot(const at::Tensor& tensor)
    : defined_(tensor.defined()) {
  if (!defined_) return;
  storage_ = tensor.storage();
  device_data_ = const_cast<void*>(element0_address(tensor));
  sizes_.assign(tensor.sizes().begin(), tensor.sizes().end());
  strides_.assign(tensor.strides().begin(), tensor.strides().end());
  dtype_ = tensor.scalar_type();
}

at::Tensor TensorSnapshot::cpu_view() const {
  if (!defined_) return at::Tensor();
  return make_cpu_view(device_data_, sizes_, strides_, dtype_);
}

at::Tensor cpu_view_now(const at::Tensor& tensor) {
  if (!tensor.defined()) return at::Tensor();
  return make_cpu_view(element0_address(tensor), tensor.sizes(), tensor.strides(),
                       tensor.scalar_type());
}

}  // namespace torch_tpu::executors::host
