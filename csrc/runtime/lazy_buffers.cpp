#include "runtime/lazy_buffers.h"

#include <algorithm>

#include "runtime/status.h"

namespace torch_tpu::runtime {

// The upper half of the chip's address range: far above any capacity, so a handle is never
// a chip address.
LazyBuffers::LazyBuffers(int chip_index, CachingAllocator& allocator)
    : allocator_(allocator),
      base_(chip_base_address(chip_index) + (DeviceAddress{1} << 51)) {
  static_assert((kSlots << kSlotShift) == (size_t{1} << 51), "handles fill the upper half");
}

LazyBuffers::~LazyBuffers() {
  for (auto& chunk : chunks_) delete[] chunk.load();
}

LazyBuffers::Slot& LazyBuffers::slot_of(DeviceAddress address) const {
  const size_t index = static_cast<size_t>((address - base_) >> kSlotShift);
  Slot* chunk = chunks_[index / kSlotsPerChunk].load(std::memory_order_acquire);
  if (chunk == nullptr) throw RuntimeError("not a live tpu buffer handle");
  return chunk[index % kSlotsPerChunk];
}

DeviceAddress LazyBuffers::reserve(size_t bytes, StreamId stream) {
  if (bytes == 0 || bytes > kMaxBytes) return 0;
  std::lock_guard<std::mutex> lock(mutex_);
  uint32_t index;
  if (!free_slots_.empty()) {
    index = free_slots_.back();
    free_slots_.pop_back();
  } else if (next_unused_slot_ < kSlots) {
    index = next_unused_slot_++;
    auto& chunk = chunks_[index / kSlotsPerChunk];
    if (chunk.load(std::memory_order_relaxed) == nullptr) {
      chunk.store(new Slot[kSlotsPerChunk], std::memory_order_release);
    }
  } else {
    return 0;
  }
  const DeviceAddress handle = base_ + (DeviceAddress{index} << kSlotShift);
  Slot& slot = slot_of(handle);
  slot.bytes = bytes;
  slot.stream = stream;
  ++stats_.handles;
  unmaterialized_bytes_.fetch_add(bytes);
  return handle;
}

DeviceAddress LazyBuffers::resolve(DeviceAddress address) {
  Slot& slot = slot_of(address);
  DeviceAddress real = slot.address.load(std::memory_order_acquire);
  if (real == 0) real = materialize(slot);
  return real + (address & (kMaxBytes - 1));
}

DeviceAddress LazyBuffers::materialize(Slot& slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  DeviceAddress real = slot.address.load(std::memory_order_relaxed);
  if (real != 0) return real;  // another thread got there first
  // No waiting for the chip to go idle and retrying here (a worker may be the caller): the
  // lazy pools hold only free blocks, and the host keeps lazy requests within free memory.
  real = allocator_.allocate(slot.bytes, lazy_pool_of(slot.stream), WhenFull::kThrowForRetry);
  for (const StreamId other : slot.other_streams) allocator_.record_stream(real, other);
  slot.other_streams.clear();
  slot.address.store(real, std::memory_order_release);
  unmaterialized_bytes_.fetch_sub(slot.bytes);
  ++stats_.materialized;
  return real;
}

bool LazyBuffers::materialized(DeviceAddress handle) const {
  return slot_of(handle).address.load(std::memory_order_acquire) != 0;
}

StreamId LazyBuffers::owner_stream(DeviceAddress handle) const { return slot_of(handle).stream; }

void LazyBuffers::record_stream(DeviceAddress handle, StreamId stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  Slot& slot = slot_of(handle);
  if (stream == slot.stream) return;
  const DeviceAddress real = slot.address.load(std::memory_order_relaxed);
  if (real != 0) {
    allocator_.record_stream(real, stream);
  } else if (std::find(slot.other_streams.begin(), slot.other_streams.end(), stream) ==
             slot.other_streams.end()) {
    slot.other_streams.push_back(stream);
  }
}

void LazyBuffers::release(DeviceAddress handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  Slot& slot = slot_of(handle);
  const DeviceAddress real = slot.address.exchange(0, std::memory_order_acq_rel);
  if (real != 0) {
    allocator_.free(real);
  } else {
    unmaterialized_bytes_.fetch_sub(slot.bytes);
    ++stats_.never_materialized;
    stats_.bytes_never_materialized += static_cast<int64_t>(slot.bytes);
  }
  slot.other_streams.clear();
  free_slots_.push_back(static_cast<uint32_t>((handle - base_) >> kSlotShift));
}

LazyBufferStats LazyBuffers::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace torch_tpu::runtime
