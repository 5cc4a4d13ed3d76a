#include "runtime/caching_allocator.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "runtime/status.h"

namespace torch_tpu::runtime {
namespace {

// A large-pool block is split only if the remainder could serve another large request;
// smaller tails stay attached, which bounds fragmentation of big segments.
constexpr size_t kLargeSplitRemainder = kSmallRequestLimit;

size_t round_up(size_t value, size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

std::string hex(DeviceAddress address) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(address));
  return text;
}

// Applies a change to the all-pools entry and to the block's own pool.
void add(StatArray& stat, bool small, int64_t amount) {
  for (const int index : {int{kAllPools}, int{small ? kSmallPool : kLargePool}}) {
    if (amount >= 0) {
      stat[index].increase(amount);
    } else {
      stat[index].decrease(-amount);
    }
  }
}

}  // namespace

// A piece of a segment. The blocks of one segment form a doubly linked list in address order,
// so a freed block finds its neighbours in O(1) when merging.
// All blocks of a segment belong to the stream the segment was reserved for.
struct CachingAllocator::Block {
  DeviceAddress address;
  size_t size;
  bool small;
  StreamId stream;
  bool allocated = false;
  size_t requested = 0;  // unrounded request while allocated
  std::vector<StreamId> other_streams;  // record_stream()ed while allocated
  Block* prev = nullptr;
  Block* next = nullptr;

  // A free block that is part of a split segment counts as "inactive split" in the stats.
  bool is_split() const { return prev != nullptr || next != nullptr; }
};

// Pools are ordered by stream first, so one stream's blocks form a contiguous range.
bool CachingAllocator::BlockBySize::operator()(const Block* a, const Block* b) const {
  if (a->stream != b->stream) return a->stream < b->stream;
  return a->size != b->size ? a->size < b->size : a->address < b->address;
}

CachingAllocator::CachingAllocator(DeviceMemory& memory, StreamMarker mark_stream)
    : memory_(memory), mark_stream_(std::move(mark_stream)) {}

CachingAllocator::~CachingAllocator() {
  // Every block is cached in a pool, live, or a deferred free; release each segment once via
  // its head.
  std::vector<Block*> blocks(small_free_.begin(), small_free_.end());
  blocks.insert(blocks.end(), large_free_.begin(), large_free_.end());
  for (const auto& entry : live_) blocks.push_back(entry.second);
  for (const DeferredFree& deferred : deferred_frees_) blocks.push_back(deferred.block);
  for (Block* block : blocks) {
    if (block->prev != nullptr) continue;
    size_t segment_size = 0;
    for (Block* piece = block; piece != nullptr; piece = piece->next) {
      segment_size += piece->size;
    }
    memory_.release_segment(block->address, segment_size);
  }
  for (Block* block : blocks) delete block;
}

DeviceAddress CachingAllocator::allocate(size_t bytes, StreamId stream, WhenFull when_full) {
  if (bytes == 0) throw RuntimeError("CachingAllocator::allocate: size must be positive");
  const bool count_oom = when_full == WhenFull::kReleaseCache;
  if (bytes > memory_.capacity()) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (count_oom) ++stats_.num_ooms;
    throw OutOfMemoryError(memory_.chip_index(), bytes,
                           memory_.capacity() - memory_.reserved_bytes(), memory_.capacity());
  }
  const size_t size = round_up(bytes, kBlockAlignment);
  const bool small = size <= kSmallRequestLimit;
  std::lock_guard<std::mutex> lock(mutex_);
  cache_completed_deferred_frees(/*chip_idle=*/when_full == WhenFull::kReleaseCache);
  BlockPool& pool = small ? small_free_ : large_free_;

  Block* block = find_free_block(pool, stream, size);
  if (block == nullptr) {
    const size_t segment_size = small ? kSegmentAlignment : round_up(size, kSegmentAlignment);
    block = reserve_segment_block(segment_size, small, stream);
    if (block == nullptr && when_full == WhenFull::kReleaseCache) {
      // Cached segments (of any stream) may be what fills the chip: give them back, retry once.
      ++stats_.num_alloc_retries;
      release_free_segments();
      block = reserve_segment_block(segment_size, small, stream);
    }
    if (block == nullptr) {
      if (count_oom) ++stats_.num_ooms;
      throw OutOfMemoryError(memory_.chip_index(), bytes,
                             memory_.capacity() - memory_.reserved_bytes(),
                             memory_.capacity());
    }
  }

  block = split_block(block, size, pool);
  block->allocated = true;
  block->requested = bytes;
  live_.emplace(block->address, block);
  const auto block_bytes = static_cast<int64_t>(block->size);
  add(stats_.allocation, small, 1);
  add(stats_.active, small, 1);
  add(stats_.allocated_bytes, small, block_bytes);
  add(stats_.active_bytes, small, block_bytes);
  add(stats_.requested_bytes, small, static_cast<int64_t>(bytes));
  return block->address;
}

void CachingAllocator::free(DeviceAddress address) {
  std::vector<StreamId> other_streams;
  Block* block = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    block = live_block(address, "free of");
    live_.erase(address);
    if (block->other_streams.empty()) {
      cache_block(block);
      return;
    }
    other_streams = std::move(block->other_streams);
    block->other_streams.clear();
  }
  // Marked outside the lock: marking queues work on the streams, and their workers may be
  // freeing blocks themselves. Until cached, the block still counts as allocated (as in CUDA).
  DeferredFree deferred{block, {}};
  for (const StreamId other : other_streams) deferred.marks.push_back(mark_stream_(other));
  std::lock_guard<std::mutex> lock(mutex_);
  deferred_frees_.push_back(std::move(deferred));
}

void CachingAllocator::record_stream(DeviceAddress address, StreamId stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  Block* block = live_block(address, "record_stream of");
  if (stream == block->stream) return;
  if (mark_stream_ == nullptr) {
    throw RuntimeError("record_stream: this allocator cannot mark streams");
  }
  auto& others = block->other_streams;
  if (std::find(others.begin(), others.end(), stream) == others.end()) others.push_back(stream);
}

void CachingAllocator::cache_block(Block* block) {
  const bool small = block->small;
  const auto block_bytes = static_cast<int64_t>(block->size);
  add(stats_.allocation, small, -1);
  add(stats_.active, small, -1);
  add(stats_.allocated_bytes, small, -block_bytes);
  add(stats_.active_bytes, small, -block_bytes);
  add(stats_.requested_bytes, small, -static_cast<int64_t>(block->requested));
  block->allocated = false;
  block->requested = 0;

  BlockPool& pool = pool_of(block);
  // Merged neighbours stop being separate inactive pieces; the merged block may become one.
  for (Block* neighbour : {block->prev, block->next}) {
    if (neighbour == nullptr || neighbour->allocated) continue;
    // A neighbour that is a deferred free is not in the pool yet: leave it apart.
    if (pool.find(neighbour) == pool.end()) continue;
    pool.erase(neighbour);
    add(stats_.inactive_split, small, -1);
    add(stats_.inactive_split_bytes, small, -static_cast<int64_t>(neighbour->size));
    Block* first = neighbour == block->prev ? neighbour : block;
    Block* second = first == block ? neighbour : block;
    first->size += second->size;
    first->next = second->next;
    if (second->next != nullptr) second->next->prev = first;
    delete second;
    block = first;
  }
  if (block->is_split()) {
    add(stats_.inactive_split, small, 1);
    add(stats_.inactive_split_bytes, small, static_cast<int64_t>(block->size));
  }
  pool.insert(block);
}

void CachingAllocator::cache_completed_deferred_frees(bool chip_idle) {
  if (deferred_frees_.empty()) return;
  std::vector<DeferredFree> waiting;
  for (DeferredFree& deferred : deferred_frees_) {
    const bool done = chip_idle || std::all_of(deferred.marks.begin(), deferred.marks.end(),
                                               [](const Event& mark) { return mark.query(); });
    if (done) {
      cache_block(deferred.block);
    } else {
      waiting.push_back(std::move(deferred));
    }
  }
  deferred_frees_ = std::move(waiting);
}

CachingAllocator::Block* CachingAllocator::live_block(DeviceAddress address,
                                                      const char* what) const {
  const auto it = live_.find(address);
  if (it == live_.end()) {
    throw RuntimeError("tpu:" + std::to_string(memory_.chip_index()) + ": " + what + " " +
                       hex(address) + ", which is not a live allocation");
  }
  return it->second;
}

size_t CachingAllocator::block_size(DeviceAddress address) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_block(address, "size of")->size;
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  cache_completed_deferred_frees(/*chip_idle=*/true);
  release_free_segments();
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void CachingAllocator::reset_peak_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.reset_peaks();
}

void CachingAllocator::reset_accumulated_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  // Same as CUDA's resetAccumulatedStats: the event counters are accumulations too.
  stats_.reset_accumulated();
}

std::pair<size_t, size_t> CachingAllocator::memory_info() const {
  const size_t capacity = memory_.capacity();
  return {capacity - memory_.reserved_bytes(), capacity};
}

// Best fit: the smallest cached block of `stream` that holds `size`, lowest address among
// equals. Removes it from the pool and from the inactive-split stats.
CachingAllocator::Block* CachingAllocator::find_free_block(BlockPool& pool, StreamId stream,
                                                           size_t size) {
  Block key{0, size, false, stream};
  const auto it = pool.lower_bound(&key);
  if (it == pool.end() || (*it)->stream != stream) return nullptr;
  Block* block = *it;
  pool.erase(it);
  if (block->is_split()) {
    add(stats_.inactive_split, block->small, -1);
    add(stats_.inactive_split_bytes, block->small, -static_cast<int64_t>(block->size));
  }
  return block;
}

// A fresh segment as one free block outside any pool; nullptr when chip memory is full.
CachingAllocator::Block* CachingAllocator::reserve_segment_block(size_t segment_size,
                                                                 bool small, StreamId stream) {
  const DeviceAddress address = memory_.reserve_segment(segment_size);
  if (address == 0) return nullptr;
  ++stats_.num_device_alloc;
  add(stats_.segment, small, 1);
  add(stats_.reserved_bytes, small, static_cast<int64_t>(segment_size));
  return new Block{address, segment_size, small, stream};
}

// Cuts `block` (free, outside any pool) down to `size` when the tail is worth caching; the
// tail goes back to `pool`. Returns the block to hand out.
CachingAllocator::Block* CachingAllocator::split_block(Block* block, size_t size,
                                                       BlockPool& pool) {
  const size_t remainder = block->size - size;
  const bool worth_it =
      block->small ? remainder >= kBlockAlignment : remainder > kLargeSplitRemainder;
  if (!worth_it) return block;
  auto* tail = new Block{block->address + size, remainder, block->small, block->stream};
  tail->prev = block;
  tail->next = block->next;
  if (block->next != nullptr) block->next->prev = tail;
  block->next = tail;
  block->size = size;
  pool.insert(tail);
  add(stats_.inactive_split, tail->small, 1);
  add(stats_.inactive_split_bytes, tail->small, static_cast<int64_t>(remainder));
  return block;
}

// Gives every entirely free segment (a cached block with no neighbours) back to chip memory.
void CachingAllocator::release_free_segments() {
  for (BlockPool* pool : {&small_free_, &large_free_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* block = *it;
      if (block->is_split()) {
        ++it;
        continue;
      }
      memory_.release_segment(block->address, block->size);
      ++stats_.num_device_free;
      add(stats_.segment, block->small, -1);
      add(stats_.reserved_bytes, block->small, -static_cast<int64_t>(block->size));
      it = pool->erase(it);
      delete block;
    }
  }
}

CachingAllocator::BlockPool& CachingAllocator::pool_of(const Block* block) {
  return block->small ? small_free_ : large_free_;
}

}  // namespace torch_tpu::runtime
