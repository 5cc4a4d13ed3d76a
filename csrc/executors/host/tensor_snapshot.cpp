#include "executors/host/tensor_snapshot.h"

#include <ATen/EmptyTensor.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include "runtime/chip.h"

namespace torch_tpu::executors::host {

void* host_address(const void* device_address) {
  if (device_address == nullptr) return nullptr;
  const auto address = reinterpret_cast<runtime::DeviceAddress>(device_address);
  runtime::Chip* chip = runtime::Runtime::instance().chip_of(address);
  // On an executor whose buffers are opaque (PJRT), host work has no host memory to run on.
  TORCH_CHECK(chip != nullptr, "not supported yet: host kernels on the buffer ", device_address,
              ", which is not host runtime memory (an op without a path to the PJRT runtime's "
              "buffers, such as a collective)");
  return chip->host_address(address);
}

at::Tensor cpu_view_of(const void* device_data, c10::IntArrayRef sizes, c10::IntArrayRef strides,
                       c10::ScalarType dtype) {
  return cpu_view_of_host(host_address(device_data), sizes, strides, dtype);
}

at::Tensor cpu_view_of_host(void* host_data, c10::IntArrayRef sizes, c10::IntArrayRef strides,
                            c10::ScalarType dtype) {
  const auto type = caffe2::TypeMeta::fromScalarType(dtype);
  const size_t nbytes = at::detail::computeStorageNbytes(sizes, strides, type.itemsize());
  // A non-owning DataPtr in a resizable storage: a CPU kernel that resizes its output gets
  // fresh host memory (see write_back_if_moved) instead of an error.
  c10::Storage storage(c10::Storage::use_byte_size_t(), nbytes,
                       c10::DataPtr(host_data, c10::Device(c10::kCPU)),
                       c10::GetCPUAllocator(), /*resizable=*/true);
  at::Tensor view = at::detail::make_tensor<c10::TensorImpl>(
      std::move(storage), c10::DispatchKeySet(c10::DispatchKey::CPU), type);
  view.unsafeGetTensorImpl()->set_sizes_and_strides(sizes, strides);
  return view;
}

namespace {

const void* element0_address(const at::Tensor& tensor) {
  const auto* base = static_cast<const char*>(tensor.storage().data());
  if (base == nullptr) return nullptr;
  return base + tensor.storage_offset() * static_cast<int64_t>(tensor.element_size());
}

}  // namespace

TensorSnapshot::TensorSnapshot(const at::Tensor& tensor)
    : defined_(tensor.defined()) {
  if (!defined_) return;
  device_data_ = const_cast<void*>(element0_address(tensor));
  geometry_.reserve(2 * tensor.dim());
  geometry_.append(tensor.sizes().begin(), tensor.sizes().end());
  geometry_.append(tensor.strides().begin(), tensor.strides().end());
  dtype_ = tensor.scalar_type();
  conj_ = tensor.is_conj();
  neg_ = tensor.is_neg();
}

at::Tensor TensorSnapshot::cpu_view() const {
  if (!defined_) return at::Tensor();
  at::Tensor view = cpu_view_of(device_data_, sizes(), strides(), dtype_);
  if (conj_) view._set_conj(true);
  if (neg_) view._set_neg(true);
  return view;
}

void TensorSnapshot::write_back_if_moved(const at::Tensor& view) const {
  if (!defined_) return;
  const bool moved = moved_off_chip(view, host_address(device_data_));
  // A kernel may also restride its output in place (to its input's memory format): the values
  // then sit in our memory in another layout.
  const bool restrided = !moved && view.strides() != strides();
  if (!moved && !restrided) return;
  TORCH_CHECK(view.sizes() == sizes(), "a CPU kernel resized an output from ", sizes(), " to ",
              view.sizes(), " (expected by its Meta kernel)");
  cpu_view().copy_(restrided ? view.clone() : view);  // a restrided view overlaps the target
}

bool moved_off_chip(const at::Tensor& view, const void* host_data) {
  // Element 0's address: a view may sit at an offset in a storage it shares with the op's other
  // arguments over the same chip memory (executors/host/aliasing_views.h).
  return view.const_data_ptr() != host_data;
}

at::Tensor cpu_view_now(const at::Tensor& tensor) {
  if (!tensor.defined()) return at::Tensor();
  at::Tensor view = cpu_view_of(element0_address(tensor), tensor.sizes(), tensor.strides(),
                                  tensor.scalar_type());
  if (tensor.is_conj()) view._set_conj(true);
  if (tensor.is_neg()) view._set_neg(true);
  return view;
}

}  // namespace torch_tpu::executors::host
