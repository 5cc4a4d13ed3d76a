// Lazily allocated buffers (DESIGN §3: a buffer is pending until something runs that needs its
// bytes). In DeferAndFuse a storage gets a *handle*, a stable device address in a range of the
// chip's address space that no memory backs, and chip memory only when a task first reaches
// its bytes (resolve()). A buffer whose only writer was fused away, or which nobody wrote
// before its tensor died, never gets memory at all.
//
// The allocator's state for lazy buffers evolves in device time, as the chip runs: blocks are
// taken when a task first resolves a handle and given back when the stream reaches the point
// where the host dropped the buffer (the engine's after_issued_work). Their blocks come from
// pools of their own (lazy_pool_of), which therefore hold only blocks that no queued task can
// still use, so taking one is safe at any moment, from the host or from a stream's worker.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/caching_allocator.h"
#include "runtime/device_memory.h"

namespace torch_tpu::runtime {

// The allocator pool (a pseudo stream id) of lazy blocks owned by `stream`.
constexpr StreamId lazy_pool_of(StreamId stream) { return stream | (StreamId{1} << 40); }

struct LazyBufferStats {
  int64_t handles = 0;                  // handed out by reserve()
  int64_t materialized = 0;             // handles that got chip memory
  int64_t never_materialized = 0;       // released without ever getting chip memory
  int64_t bytes_never_materialized = 0;
};

// Thread-safe. One per chip.
class LazyBuffers {
 public:
  // Each handle owns 2^kSlotShift bytes of address space (its interior addresses).
  static constexpr int kSlotShift = 34;  // 16 GiB: larger buffers are allocated eagerly
  static constexpr size_t kMaxBytes = size_t{1} << kSlotShift;

  LazyBuffers(int chip_index, CachingAllocator& allocator);
  ~LazyBuffers();
  LazyBuffers(const LazyBuffers&) = delete;
  LazyBuffers& operator=(const LazyBuffers&) = delete;

  // A handle for `bytes` (> 0) owned by `stream`, with no chip memory yet; 0 when the request
  // is larger than kMaxBytes or every handle is in use (the caller then allocates eagerly).
  DeviceAddress reserve(size_t bytes, StreamId stream);
  // Whether `address` lies in this chip's handle range (a handle or an address inside one).
  bool owns(DeviceAddress address) const {
    return address >= base_ && address < base_ + (DeviceAddress{kSlots} << kSlotShift);
  }
  // The chip address behind `address` (a handle or an address inside its buffer). The first
  // call for a handle takes a block from the allocator; throws OutOfMemoryError if none fits.
  DeviceAddress resolve(DeviceAddress address);
  // Whether the handle has chip memory now.
  bool materialized(DeviceAddress handle) const;
  // The stream that was current when the handle was reserved.
  StreamId owner_stream(DeviceAddress handle) const;
  // Notes a use on another stream (see CachingAllocator::record_stream), now or once resolved.
  void record_stream(DeviceAddress handle, StreamId stream);
  // Gives the handle's block (if any) back to the allocator and the handle back for reuse. Call
  // once no queued work can reach the buffer any more (in the owner stream's order).
  void release(DeviceAddress handle);

  // Bytes of live handles that have no chip memory yet.
  size_t unmaterialized_bytes() const { return unmaterialized_bytes_.load(); }
  LazyBufferStats stats() const;

 private:
  static constexpr size_t kSlotsPerChunk = 1024;
  static constexpr size_t kChunks = 128;
  static constexpr size_t kSlots = kSlotsPerChunk * kChunks;

  struct Slot {
    std::atomic<DeviceAddress> address{0};  // 0 until materialized
    size_t bytes = 0;
    StreamId stream = 0;
    std::vector<StreamId> other_streams;  // record_stream()ed before materialization
  };

  Slot& slot_of(DeviceAddress address) const;
  DeviceAddress materialize(Slot& slot);

  CachingAllocator& allocator_;
  const DeviceAddress base_;
  // Slots in chunks created on demand; a chunk pointer never changes once set, so resolve()
  // reads it without the lock.
  std::array<std::atomic<Slot*>, kChunks> chunks_{};
  mutable std::mutex mutex_;  // guards free slots, materialization, release, stats
  std::vector<uint32_t> free_slots_;
  uint32_t next_unused_slot_ = 0;
  std::atomic<size_t> unmaterialized_bytes_{0};
  LazyBufferStats stats_;
};

}  // namespace torch_tpu::runtime
