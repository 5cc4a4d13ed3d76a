#include "ops/host_copies.h"

#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>

#include "engine/active_executor.h"
#include "engine/launch.h"
#include "ops/ir_recording.h"
#include "privateuse1/storage_resize.h"

namespace torch_tpu::ops {
namespace {

runtime::DeviceAddress address_of(const c10::Storage& storage) {
  return reinterpret_cast<runtime::DeviceAddress>(storage.data());
}

// Fused mode's pending ops come first: they may write the storage.
runtime::Stream& stream_of(const c10::Storage& storage) {
  return engine::current_stream_flushed(storage.device().index(), "host_copy");
}

// The whole storage is this one tensor's contiguous elements (the common `.to("tpu")`).
bool covers_storage(const at::Tensor& tensor) {
  return tensor.is_contiguous() && tensor.storage_offset() == 0 && !tensor.is_conj() &&
         !tensor.is_neg() && tensor.nbytes() == tensor.storage().nbytes();
}

}  // namespace

HostCopies::Copy& HostCopies::copy_of(const at::Tensor& tpu) {
  const c10::StorageImpl* impl = tpu.storage().unsafeGetStorageImpl();
  for (Copy& copy : copies_) {
    if (copy.tpu.unsafeGetStorageImpl() == impl) return copy;
  }
  const size_t nbytes = tpu.storage().nbytes();
  Copy copy{tpu.storage(), at::empty({static_cast<int64_t>(nbytes)}, at::kByte)};
  if (nbytes > 0) {
    runtime::Stream& stream = stream_of(copy.tpu);
    engine::translate_errors([&] {
      engine::active_executor().copy_to_host(address_of(copy.tpu), copy.bytes.data_ptr(), nbytes,
                                             stream);
    });
    engine::sync_stream(stream, "host_copy");
  }
  copies_.push_back(std::move(copy));
  return copies_.back();
}

at::Tensor HostCopies::cpu(const at::Tensor& tpu) {
  const Copy& copy = copy_of(tpu);
  at::Tensor view = at::empty({0}, tpu.options().device(c10::kCPU));
  view.set_(copy.bytes.storage(), tpu.storage_offset(), tpu.sizes(), tpu.strides());
  view._set_conj(tpu.is_conj());
  view._set_neg(tpu.is_neg());
  return view;
}

void HostCopies::note_written(const at::Tensor& tpu, const at::Tensor& cpu) {
  Copy& copy = copy_of(tpu);
  const bool same_storage = cpu.storage().unsafeGetStorageImpl() ==
                                copy.bytes.storage().unsafeGetStorageImpl() &&
                            cpu.storage().nbytes() == copy.tpu.nbytes();
  if (!same_storage) {
    // The kernel resized its out= tensor into fresh (or grown) host memory: the tpu tensor
    // takes the new shape and the result's elements.
    privateuse1::resize_tensor(tpu, cpu.sizes(), std::nullopt);
    tpu.unsafeGetTensorImpl()->set_sizes_and_strides(cpu.sizes(), cpu.strides());
    privateuse1::ensure_storage_fits(tpu);
    write_to_opaque(cpu, tpu);
    return;
  }
  if (cpu.sizes() != tpu.sizes() || cpu.strides() != tpu.strides()) {
    tpu.unsafeGetTensorImpl()->set_sizes_and_strides(cpu.sizes(), cpu.strides());
  }
  copy.written = true;
}

void HostCopies::upload_written() {
  for (Copy& copy : copies_) {
    if (!copy.written) continue;
    upload_storage(copy.tpu, copy.bytes);
    copy.written = false;
  }
}

std::optional<c10::Storage> HostCopies::tpu_storage_of(const at::Tensor& cpu) const {
  for (const Copy& copy : copies_) {
    if (copy.bytes.storage().unsafeGetStorageImpl() == cpu.storage().unsafeGetStorageImpl()) {
      return copy.tpu;
    }
  }
  return std::nullopt;
}

void upload_storage(const c10::Storage& storage, const at::Tensor& bytes, ir::DType unit) {
  const size_t nbytes = storage.nbytes();
  TORCH_INTERNAL_ASSERT(bytes.is_contiguous() && static_cast<size_t>(bytes.nbytes()) == nbytes,
                        "upload_storage: ", bytes.nbytes(), " host bytes for a storage of ", nbytes);
  if (nbytes == 0) return;
  runtime::Stream& stream = stream_of(storage);
  engine::translate_errors([&] {
    engine::active_executor().copy_to_device(bytes.const_data_ptr(), address_of(storage), nbytes,
                                             stream, unit);
  });
  // The executor may read the host bytes when the stream reaches the copy.
  stream.enqueue("tpu::release_host_copy", [keep = bytes] {});
}

void write_to_opaque(const at::Tensor& host, const at::Tensor& tpu) {
  if (tpu.numel() == 0) return;
  const c10::DeviceGuard guard(tpu.device());
  if (covers_storage(tpu)) {
    // Staged in fresh bytes: `host` may be the caller's, reused as soon as we return.
    at::Tensor staged = at::empty({static_cast<int64_t>(tpu.nbytes())}, at::kByte);
    at::Tensor typed = at::empty({0}, tpu.options().device(c10::kCPU));
    typed.set_(staged.storage(), 0, tpu.sizes(), tpu.strides());
    typed.copy_(host);
    upload_storage(tpu.storage(), staged, to_ir_dtype(tpu.scalar_type()));
    return;
  }
  HostCopies copies;
  at::Tensor target = copies.cpu(tpu);
  target.copy_(host);
  copies.note_written(tpu, target);
  copies.upload_written();
}

}  // namespace torch_tpu::ops
