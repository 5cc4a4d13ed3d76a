// Host kernels on opaque buffers (DESIGN §3). On an executor whose buffers the host cannot
// address (PJRT: on a TPU or GPU they are not host memory at all), what runs on the host -- an
// op without a lowering, an op whose output shape needs data, a copy between host and chip,
// .item() -- works on host copies of the storages it touches, made now, and writes back the
// storages it changed: a device -> host -> device round trip. Synchronous: a copy waits for the
// work queued on the current stream before it.
#pragma once

#include <optional>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Storage.h>

#include "engine/active_executor.h"
#include "ir/dtype.h"

namespace torch_tpu::ops {

// Host copies of tpu storages, one per storage, so CPU tensors made from views of one storage
// alias each other as the tpu tensors do. Not thread-safe; lives for one op.
class HostCopies {
 public:
  // A CPU tensor with `tpu`'s sizes, strides, offset, dtype and conj/neg bits over the host copy
  // of its storage, downloaded on first use (which waits for the current stream).
  at::Tensor cpu(const at::Tensor& tpu);
  // After a host kernel wrote `cpu` (made by cpu(tpu)): brings `tpu` up to date. A kernel that
  // restrided or resized its out= tensor gives `tpu` the new geometry, as CPU's tensor took;
  // the storage is uploaded whole by upload_written().
  void note_written(const at::Tensor& tpu, const at::Tensor& cpu);
  // Uploads every storage note_written() marked, once each.
  void upload_written();
  // The tpu storage whose host copy `cpu`'s storage is, if any (a view a host kernel returned).
  std::optional<c10::Storage> tpu_storage_of(const at::Tensor& cpu) const;

 private:
  struct Copy {
    c10::Storage tpu;
    at::Tensor bytes;  // uint8 CPU tensor, the storage's bytes
    bool written = false;
  };
  Copy& copy_of(const at::Tensor& tpu);
  std::vector<Copy> copies_;  // a few per op: found by a linear search
};

// Writes the CPU tensor `host` into the tpu tensor `tpu` (same shape; dtype converted): whole
// contiguous storages upload directly, anything else round-trips the storage.
void write_to_opaque(const at::Tensor& host, const at::Tensor& tpu);

// Uploads `bytes` (a contiguous CPU tensor of the storage's size) as the whole of `storage`,
// queued on the current stream; the host copy is kept until the stream has used it. `unit`:
// the dtype the storage holds, when one tensor of that dtype covers it (executors keep typed
// buffers so: executors/executor.h).
void upload_storage(const c10::Storage& storage, const at::Tensor& bytes,
                    ir::DType unit = ir::DType::kUInt8);

}  // namespace torch_tpu::ops
