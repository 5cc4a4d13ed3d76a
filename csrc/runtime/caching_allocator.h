// The per-chip caching allocator: carves blocks out of segments of chip memory, keeps freed
// blocks for reuse (so steady-state training touches no fresh pages), and keeps statistics.
//
// Reuse is stream-ordered, as in CUDA's caching allocator: each block belongs to the stream
// that was current when it was allocated, and a freed block is handed out again only to
// allocations on that same stream. Work queued on a stream runs in order, so the next owner's
// writes run after every queued use by the previous owner; queued work therefore never needs
// to keep its buffers alive, and a freed block is reusable at once while the host runs ahead.
// A block also used on other streams must be recorded on them (record_stream); its free is then
// deferred until those streams have run past the point of the free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

#include "runtime/device_memory.h"
#include "runtime/event.h"
#include "runtime/memory_stats.h"

namespace torch_tpu::runtime {

// Requests up to this size come from the small pool (2 MiB segments shared by many blocks).
constexpr size_t kSmallRequestLimit = 1u << 20;
// Block sizes are multiples of this.
constexpr size_t kBlockAlignment = 512;

// A stream of the allocator's chip, by id (Stream::id()).
using StreamId = int64_t;

// What allocate() does when no cached block of its stream fits and chip memory is full.
enum class WhenFull {
  // Throw OutOfMemoryError without counting it: queued work may still be using cached blocks,
  // so the caller waits for the chip and retries with kReleaseCache.
  kThrowForRetry,
  // The chip is idle: release every cached segment, retry once, count an OOM if that fails.
  kReleaseCache,
};

// Thread-safe; allocate/free may be called from any thread. Never calls into Python.
class CachingAllocator {
 public:
  // Makes an event marking the current end of the chip's stream `id` (for deferred frees).
  using StreamMarker = std::function<Event(StreamId id)>;

  // `mark_stream` is needed only if record_stream() is used.
  explicit CachingAllocator(DeviceMemory& memory, StreamMarker mark_stream = nullptr);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least `bytes` (bytes > 0), 512-byte aligned, owned by `stream`. Reuses a
  // cached block of that stream when one fits; otherwise reserves a segment. Throws
  // OutOfMemoryError naming the request, the free bytes and the capacity.
  DeviceAddress allocate(size_t bytes, StreamId stream = 0,
                         WhenFull when_full = WhenFull::kReleaseCache);
  // Returns a block from allocate() to its stream's cache at once, or, if it was recorded on
  // other streams, once they have run past this point. Unknown addresses throw RuntimeError.
  void free(DeviceAddress address);
  // Notes that the live block at `address` is used by queued work on `stream` as well as its
  // own, so its eventual free waits for that stream. Unknown addresses throw RuntimeError.
  void record_stream(DeviceAddress address, StreamId stream);
  // Usable size of a live block.
  size_t block_size(DeviceAddress address) const;

  // Releases every fully free segment back to chip memory. Call with the chip idle: a cached
  // block may still be used by queued work of its stream.
  void empty_cache();

  MemoryStats stats() const;
  void reset_peak_stats();
  void reset_accumulated_stats();
  // (free, total) bytes of chip memory, counting cached blocks as used (like cudaMemGetInfo).
  std::pair<size_t, size_t> memory_info() const;

  DeviceMemory& memory() { return memory_; }

 private:
  struct Block;
  struct BlockBySize {
    bool operator()(const Block* a, const Block* b) const;
  };
  using BlockPool = std::set<Block*, BlockBySize>;

  // A freed block waiting for the streams it was recorded on.
  struct DeferredFree {
    Block* block;
    std::vector<Event> marks;
  };

  Block* find_free_block(BlockPool& pool, StreamId stream, size_t size);
  Block* reserve_segment_block(size_t segment_size, bool small, StreamId stream);
  Block* split_block(Block* block, size_t size, BlockPool& pool);
  // Returns a block that is no longer used to its pool, merging free neighbours.
  void cache_block(Block* block);
  // Caches the deferred frees whose streams have run past them (all of them if `chip_idle`).
  void cache_completed_deferred_frees(bool chip_idle);
  void release_free_segments();
  BlockPool& pool_of(const Block* block);
  Block* live_block(DeviceAddress address, const char* what) const;

  DeviceMemory& memory_;
  const StreamMarker mark_stream_;
  mutable std::mutex mutex_;
  BlockPool small_free_;
  BlockPool large_free_;
  std::unordered_map<DeviceAddress, Block*> live_;
  std::vector<DeferredFree> deferred_frees_;
  MemoryStats stats_;
};

}  // namespace torch_tpu::runtime
