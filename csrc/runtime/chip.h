// Software TPU chips: each owns its memory, caching allocator and streams. The Runtime is the
// process-wide set of chips, made on first use from the environment.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/caching_allocator.h"
#include "runtime/device_memory.h"
#include "runtime/event.h"
#include "runtime/lazy_buffers.h"
#include "runtime/stream.h"

namespace torch_tpu::runtime {

// Streams per priority in a chip's pool (pool streams are reused round-robin, like CUDA's).
constexpr int kStreamsPerPool = 4;
constexpr int64_t kDefaultStreamId = 0;
constexpr int64_t kFirstHighPriorityStreamId = 1 + kStreamsPerPool;

// How the caching allocator records its stream marks (for blocks used on several streams).
// A layer that holds work back from streams (the engine's deferral, DESIGN §4) installs one
// that records a mark behind that work; the default is Event::record. Set before chips work.
using MarkRecorder = void (*)(Event& mark, Stream& stream);
void set_mark_recorder(MarkRecorder recorder);

class Chip {
 public:
  Chip(int index, size_t capacity);
  ~Chip();

  int index() const { return index_; }
  std::string name() const;  // e.g. "TPU host-runtime chip"
  DeviceMemory& memory() { return memory_; }
  CachingAllocator& allocator() { return allocator_; }
  LazyBuffers& lazy_buffers() { return lazy_buffers_; }

  // Host view of a chip address or an address inside a lazy buffer (host executor only). A
  // lazy buffer gets its chip memory here, on first use.
  void* host_address(DeviceAddress address) {
    if (lazy_buffers_.owns(address)) address = lazy_buffers_.resolve(address);
    return memory_.host_address(address);
  }

  Stream& default_stream() { return stream(kDefaultStreamId); }
  // Stream by id (0 = default, then the low- and high-priority pools). Throws on unknown ids.
  Stream& stream(int64_t id);
  // Next pool stream of the given priority, round-robin (priority < 0 is high).
  Stream& pool_stream(bool high_priority);

  // Waits for every stream of the chip, then raises the first kept async error.
  void synchronize();

 private:
  const int index_;
  DeviceMemory memory_;
  CachingAllocator allocator_;
  LazyBuffers lazy_buffers_;  // after the allocator, before the streams (whose tasks release)
  std::mutex streams_mutex_;
  // Index 0: default; 1..kStreamsPerPool: low priority; then high priority. Created lazily.
  std::array<std::unique_ptr<Stream>, 1 + 2 * kStreamsPerPool> streams_;
  // streams_[i].get() once created: read without the lock on every op launch.
  std::array<std::atomic<Stream*>, 1 + 2 * kStreamsPerPool> created_{};
  std::atomic<uint32_t> next_low_{0};
  std::atomic<uint32_t> next_high_{0};
};

// Parses a byte count: plain bytes or a number with a binary K/M/G suffix ("16G" = 16 GiB).
// Throws RuntimeError naming `variable` when `text` is not a positive size.
size_t parse_byte_size(const char* text, const char* variable);

class Runtime {
 public:
  // The process-wide runtime. Chip count from TORCH_TPU_HOST_CHIPS, else torchrun's
  // LOCAL_WORLD_SIZE (one chip per local rank), else 1. Capacity per
  // chip from TORCH_TPU_HBM_BYTES (default 16 GiB; suffixes K/M/G accepted). In a process
  // forked after the runtime started it throws RuntimeError: the chips' queue threads did not
  // survive the fork (as CUDA refuses a forked child).
  static Runtime& instance();
  // Whether this process was forked from one whose runtime had started (it then must not use
  // tpu; memory it inherited is left alone, never freed).
  static bool in_forked_child();
  // The chip count of the runtime this process started, or in a forked child its parent's (as
  // CUDA answers device_count there); 0 before any runtime started.
  static int started_chip_count();
  // The chip count the environment asks for (TORCH_TPU_HOST_CHIPS, else LOCAL_WORLD_SIZE), or
  // none (the runtime then starts with one). Throws RuntimeError for a malformed value.
  static std::optional<int> requested_chip_count();
  // Each chip's capacity: TORCH_TPU_HBM_BYTES, else 16 GiB. Throws RuntimeError when malformed.
  static size_t requested_capacity();
  // Makes the runtime start with `count` chips instead of the environment's count: for a
  // runtime selected before first use whose devices decide it (PJRT: one chip per plugin
  // device). Returns false once the runtime has started (its chips are then fixed).
  static bool start_with_chip_count(int count);

  int chip_count() const { return static_cast<int>(chips_.size()); }
  // Throws RuntimeError naming the valid range for a bad index.
  Chip& chip(int index);
  // The chip owning a device address, or nullptr.
  Chip* chip_of(DeviceAddress address);

 private:
  Runtime();
  ~Runtime();
  std::vector<std::unique_ptr<Chip>> chips_;
};

}  // namespace torch_tpu::runtime
