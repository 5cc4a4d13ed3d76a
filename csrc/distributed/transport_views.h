// What a host transport (Gloo) reads and writes for a tpu collective: CPU tensors in the
// tpu tensors' layouts, made inside the task that runs the call on the communication stream.
// On the host runtime chip memory is host memory, and the views alias it (no copy). On an
// executor whose buffers are opaque (PJRT), each storage the call touches is copied into host
// memory when the task runs, the views are made over those copies (tensors of one storage share
// one copy, so an all-gather whose input is a slice of its output sees both), and the storages
// of the written tensors are copied back after the call.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

#include "executors/host/tensor_snapshot.h"
#include "runtime/device_memory.h"

namespace torch_tpu::distributed {

class TransportViews {
 public:
  // Captures the layouts now, at issue time; `written` are the tensors the call writes.
  TransportViews(const std::vector<at::Tensor>& read, const std::vector<at::Tensor>& written);

  // Inside the task, in its stream's order: CPU tensors for `read` and `written`, in order.
  void open();
  std::vector<at::Tensor>& read() { return read_views_; }
  std::vector<at::Tensor>& written() { return written_views_; }
  // Inside the task, after the call: makes what it wrote the tpu tensors' contents.
  void close();

 private:
  // A tensor on opaque buffers: its storage and its layout in it.
  struct Placement {
    runtime::DeviceAddress storage = 0;
    size_t storage_bytes = 0;
    int64_t storage_offset = 0;  // in elements
    std::vector<int64_t> sizes, strides;
    c10::ScalarType dtype = c10::ScalarType::Undefined;
  };
  struct Staged {
    runtime::DeviceAddress storage;
    at::Tensor bytes;  // the storage's copy in host memory
    bool written;
  };
  at::Tensor view_of(const Placement& placement, bool written);

  bool opaque_;
  std::vector<executors::host::TensorSnapshot> read_snapshots_, written_snapshots_;
  std::vector<Placement> read_placements_, written_placements_;
  std::vector<Staged> staged_;
  std::vector<at::Tensor> read_views_, written_views_;
};

}  // namespace torch_tpu::distributed
