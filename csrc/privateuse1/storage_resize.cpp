#include "privateuse1/storage_resize.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include <ATen/EmptyTensor.h>

#include "engine/active_executor.h"
#include "engine/launch.h"
#include "executors/host/tensor_snapshot.h"
#include "privateuse1/device_allocator.h"

namespace torch_tpu::privateuse1 {

void resize_storage_bytes(const c10::Storage& storage, size_t new_bytes) {
  TORCH_CHECK(storage.resizable(), "Trying to resize storage that is not resizable");
  const size_t old_bytes = storage.nbytes();
  if (new_bytes == old_bytes) return;
  const c10::DeviceIndex device = storage.device().index();
  c10::DataPtr fresh = allocate_on(device, new_bytes);
  void* dst = fresh.get();
  c10::DataPtr old = storage.unsafeGetStorageImpl()->set_data_ptr(std::move(fresh));
  storage.unsafeGetStorageImpl()->set_nbytes(new_bytes);
  const size_t keep = std::min(old_bytes, new_bytes);
  if (keep == 0) return;
  if (engine::buffers_are_opaque()) {
    // The executor's queued copy keeps the old buffer until it has read it.
    engine::translate_errors([&] {
      engine::active_executor().copy_on_device(reinterpret_cast<runtime::DeviceAddress>(old.get()),
                                               reinterpret_cast<runtime::DeviceAddress>(dst), keep,
                                               engine::current_stream_flushed(device, "resize"));
    });
    return;
  }
  // `old` is freed on return; its block is reused only after this copy (stream order).
  engine::launch(device, "tpu::resize_storage", [src = old.get(), dst, keep] {
    std::memcpy(executors::host::host_address(dst), executors::host::host_address(src), keep);
  });
}

void ensure_storage_fits(const at::Tensor& self) {
  const size_t needed = at::detail::computeStorageNbytes(
      self.sizes(), self.strides(), self.element_size(), self.storage_offset());
  if (needed > self.storage().nbytes()) resize_storage_bytes(self.storage(), needed);
}

const at::Tensor& resize_tensor(const at::Tensor& self, c10::IntArrayRef size,
                                std::optional<c10::MemoryFormat> memory_format) {
  for (const int64_t dim : size) {
    TORCH_CHECK(dim >= 0, "Trying to create tensor with negative dimension ", dim, ": ", size);
  }
  c10::TensorImpl* impl = self.unsafeGetTensorImpl();
  if (self.sizes() != size) impl->set_sizes_contiguous(size);
  if (memory_format.has_value() && *memory_format != c10::MemoryFormat::Preserve) {
    impl->empty_tensor_restride(*memory_format);
  }
  ensure_storage_fits(self);
  return self;
}

}  // namespace torch_tpu::privateuse1
