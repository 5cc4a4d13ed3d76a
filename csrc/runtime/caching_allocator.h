// The per-chip caching allocator: carves blocks out of segments of chip memory, keeps freed
// blocks for reuse (so steady-state training touches no fresh pages), and keeps statistics.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>

#include "runtime/device_memory.h"
#include "runtime/memory_stats.h"

namespace torch_tpu::runtime {

// Requests up to this size come from the small pool (2 MiB segments shared by many blocks).
constexpr size_t kSmallRequestLimit = 1u << 20;
// Block sizes are multiples of this.
constexpr size_t kBlockAlignment = 512;

// Thread-safe; allocate/free may be called from any thread (frees often come from queue
// workers). Never calls into Python.
class CachingAllocator {
 public:
  explicit CachingAllocator(DeviceMemory& memory);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least `bytes` (bytes > 0), 512-byte aligned. Reuses a cached block when one
  // fits; otherwise reserves a segment, emptying the cache once if memory is full. Throws
  // OutOfMemoryError naming the request, the free bytes and the capacity. `count_oom` = false
  // for a first attempt the caller will retry (after freeing memory), so one failure counts once.
  DeviceAddress allocate(size_t bytes, bool count_oom = true);
  // Returns a block from allocate() to the cache. Unknown addresses throw RuntimeError.
  void free(DeviceAddress address);
  // Usable size of a live block.
  size_t block_size(DeviceAddress address) const;

  // Releases every fully free segment back to chip memory.
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

  Block* find_free_block(BlockPool& pool, size_t size);
  Block* reserve_segment_block(size_t segment_size, bool small);
  Block* split_block(Block* block, size_t size, BlockPool& pool);
  void release_free_segments();
  BlockPool& pool_of(const Block* block);

  DeviceMemory& memory_;
  mutable std::mutex mutex_;
  BlockPool small_free_;
  BlockPool large_free_;
  std::unordered_map<DeviceAddress, Block*> live_;
  MemoryStats stats_;
};

}  // namespace torch_tpu::runtime
