// A chip's memory: one contiguous, opaque range of device addresses backed by a host mapping.
// Device addresses are never host addresses (they sit in a non-canonical range, so a host
// dereference faults); the host executor reaches the bytes only through host_address().
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

namespace torch_tpu::runtime {

using DeviceAddress = uint64_t;

// Segments are carved at this granularity (the page size of the backing mapping).
constexpr size_t kSegmentAlignment = 2u << 20;  // 2 MiB

// First device address of chip `index`. Chips are 2^52 bytes apart, far above any capacity.
constexpr DeviceAddress chip_base_address(int index) {
  return (DeviceAddress{0x10} + static_cast<DeviceAddress>(index)) << 52;
}
// Which chip owns a device address (inverse of chip_base_address); -1 if none.
constexpr int chip_of_address(DeviceAddress address) {
  const DeviceAddress hi = address >> 52;
  return hi >= 0x10 && hi < 0x10 + 0x400 ? static_cast<int>(hi - 0x10) : -1;
}

// Reserves `capacity` bytes of address space when the first segment is taken (no memory is
// committed until touched; a chip that never holds a buffer, such as every chip of the PJRT
// runtime, whose executor owns its buffers, maps nothing) and hands out segments of it.
// Thread-safe. Segment release returns the pages to the OS.
class DeviceMemory {
 public:
  DeviceMemory(int chip_index, size_t capacity);
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  // A segment of `bytes` (rounded up to kSegmentAlignment); 0 when no free range is large enough.
  // Throws RuntimeError when the chip's address space cannot be mapped (the first segment).
  DeviceAddress reserve_segment(size_t bytes);
  // Gives a segment back; its contents are lost. `bytes` must be what reserve_segment was given.
  void release_segment(DeviceAddress address, size_t bytes);

  // Host view of a device address inside this chip (host executor only). No bounds check.
  void* host_address(DeviceAddress address) const {
    return host_base_.load(std::memory_order_acquire) + (address - base_);
  }
  bool contains(DeviceAddress address) const {
    return address >= base_ && address < base_ + capacity_;
  }

  int chip_index() const { return chip_index_; }
  size_t capacity() const { return capacity_; }
  size_t reserved_bytes() const;  // sum of live segments
  DeviceAddress base_address() const { return base_; }

 private:
  // Maps the whole capacity; caller holds mutex_. Throws RuntimeError on failure.
  void map_capacity();

  int chip_index_;
  size_t capacity_;
  DeviceAddress base_;
  // Null until the first segment maps the capacity; set once, under mutex_, before any address
  // inside the chip is handed out.
  std::atomic<char*> host_base_{nullptr};
  mutable std::mutex mutex_;
  std::map<size_t, size_t> free_ranges_;  // offset -> length, coalesced
  std::map<size_t, size_t> segments_;     // offset -> length of live segments, to vet releases
  size_t reserved_ = 0;
};

}  // namespace torch_tpu::runtime
