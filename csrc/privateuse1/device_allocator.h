// The c10::DeviceAllocator for tpu: storages get DataPtrs whose address is a chip device
// address (never a host address; DESIGN §3), backed by the chip's caching allocator. Being a
// DeviceAllocator is what makes torch.accelerator.memory_* and empty_cache work.
#pragma once

#include <c10/core/CachingDeviceAllocator.h>

namespace torch_tpu::privateuse1 {

class TpuDeviceAllocator final : public c10::DeviceAllocator {
 public:
  // Allocates on the calling thread's current chip. Throws torch.OutOfMemoryError when full.
  c10::DataPtr allocate(size_t nbytes) override;
  c10::DeleterFnPtr raw_deleter() const override;
  // Device-to-device copy of `count` bytes, ordered on the current stream.
  void copy_data(void* dest, const void* src, std::size_t count) const override;

  bool initialized() override { return true; }
  void emptyCache(c10::MempoolId_t mempool_id = {0, 0}) override;
  // Marks the block as used by queued work on `stream` too (see record_stream_use).
  void recordStream(const c10::DataPtr& ptr, c10::Stream stream) override;
  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override;
  void resetAccumulatedStats(c10::DeviceIndex device) override;
  void resetPeakStats(c10::DeviceIndex device) override;
  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override;
};

TpuDeviceAllocator& device_allocator();

// A DataPtr of `nbytes` on chip `device` (nullptr DataPtr for 0 bytes), owned by the current
// stream of that chip.
c10::DataPtr allocate_on(c10::DeviceIndex device, size_t nbytes);

// Tensor.record_stream: the block at `data` is used by work queued on `stream` besides its own
// stream's, so when it is freed it is reused only after `stream` has run past that point (as
// with CUDA's caching allocator). Throws for a non-tpu stream or one on another chip.
void record_stream_use(const void* data, c10::Stream stream);

}  // namespace torch_tpu::privateuse1
