// The host executor's view of a tpu tensor: its geometry captured when an op is queued, and a
// zero-copy CPU tensor over the same chip memory made when the op runs. Capturing at queue time
// matters: later host-side resize_/set_ must not change what an already-queued op reads.
// A snapshot holds no reference to the tensor's buffer: the caching allocator reuses a freed
// block only in its stream's order (runtime/caching_allocator.h), so the memory stays the
// queued op's until it has run, without the host and the executor sharing refcounts.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Storage.h>
#include <c10/util/SmallVector.h>

namespace torch_tpu::executors::host {

class TensorSnapshot {
 public:
  TensorSnapshot() = default;
  // Captures `tensor` (a tpu tensor).
  explicit TensorSnapshot(const at::Tensor& tensor);

  // A CPU tensor aliasing the captured chip memory (no copy). Call where the op runs.
  at::Tensor cpu_view() const;
  // If a CPU kernel resized `view` (made by cpu_view) and so moved it to host memory, or
  // restrided it in place, copies its final contents back into chip memory in the captured
  // layout. Throws if its final shape is not the captured one.
  void write_back_if_moved(const at::Tensor& view) const;
  bool defined() const { return defined_; }
  c10::IntArrayRef sizes() const { return {geometry_.data(), geometry_.size() / 2}; }
  c10::IntArrayRef strides() const {
    return {geometry_.data() + geometry_.size() / 2, geometry_.size() / 2};
  }
  c10::ScalarType dtype() const { return dtype_; }
  const void* device_data() const { return device_data_; }

 private:

  void* device_data_ = nullptr;  // device address of element 0, as of capture
  c10::SmallVector<int64_t, 8> geometry_;  // sizes, then strides (inline up to 4 dims)
  c10::ScalarType dtype_ = c10::ScalarType::Undefined;
  bool defined_ = false;
  // Lazy conjugation / negation bits, carried onto the CPU view so CPU kernels honour them.
  bool conj_ = false;
  bool neg_ = false;
};

// Host address of a device address (nullptr stays nullptr). Throws for non-device addresses.
void* host_address(const void* device_address);

// A CPU tensor over chip memory at `device_data` with the given geometry (no copy).
at::Tensor cpu_view_of(const void* device_data, c10::IntArrayRef sizes, c10::IntArrayRef strides,
                       c10::ScalarType dtype);
// The same over a host address already resolved by host_address().
at::Tensor cpu_view_of_host(void* host_data, c10::IntArrayRef sizes, c10::IntArrayRef strides,
                            c10::ScalarType dtype);

// A CPU tensor aliasing a tpu tensor's chip memory right now (no copy). Only valid while the
// chip's queue is idle or inside a task on it.
at::Tensor cpu_view_now(const at::Tensor& tensor);

// CPU views are resizable (some CPU kernels resize their outputs, even temporarily): a resize
// moves the view into fresh host memory. This says whether that happened to `view`, made over
// host address `host_data`.
bool moved_off_chip(const at::Tensor& view, const void* host_data);

}  // namespace torch_tpu::executors::host
