#include "privateuse1/device_allocator.h"

#include <cstring>

#include "engine/active_executor.h"
#include "engine/deferral.h"
#include "engine/launch.h"
#include "engine/mode.h"
#include "executors/host/tensor_snapshot.h"

namespace torch_tpu::privateuse1 {
namespace {

// The DataPtr's data and context are both the device address; the owning chip is encoded in
// the address itself, so the deleter needs no other state and may run on any thread.
void delete_device_buffer(void* context) {
  // A forked child's inherited buffers belong to the parent's runtime: left alone.
  if (context == nullptr || runtime::Runtime::in_forked_child()) return;
  const auto address = reinterpret_cast<runtime::DeviceAddress>(context);
  runtime::Chip* chip = runtime::Runtime::instance().chip_of(address);
  if (chip == nullptr) return;
  if (chip->lazy_buffers().owns(address)) {
    // Queued or pending work may still reach it: released in its stream's order.
    runtime::LazyBuffers& lazy = chip->lazy_buffers();
    engine::after_issued_work(chip->stream(lazy.owner_stream(address)),
                              [&lazy, address] { lazy.release(address); });
  } else {
    chip->allocator().free(address);
  }
}

// A buffer of an executor whose buffers are opaque (PJRT): the executor's own, freed through it
// at once (work already queued holds what it bound), or behind fused mode's pending ops, which
// bind their buffers only at the flush: those are on its chip's current stream. Deleters must
// not throw; a buffer the executor no longer knows has nothing left to free.
void delete_opaque_buffer(void* context) {
  if (context == nullptr || runtime::Runtime::in_forked_child()) return;
  const auto address = reinterpret_cast<runtime::DeviceAddress>(context);
  const int chip = engine::active_executor().chip_of(address);
  if (chip < 0) return;
  const auto free_buffer = [address, chip] {
    try {
      engine::active_executor().free(chip, address);
    } catch (const std::exception&) {
    }
  };
  try {
    runtime::Stream& stream = engine::current_stream(chip);
    if (engine::has_pending(stream)) {
      engine::after_issued_work(stream, free_buffer);
      return;
    }
  } catch (const std::exception&) {
  }
  free_buffer();
}

// Fused mode: a handle without chip memory, which gets memory when a task first needs its
// bytes (runtime/lazy_buffers.h), or 0 to allocate now. Lazy only while every unmaterialized
// buffer would fit in the chip memory no segment holds yet: near capacity the request is
// allocated now instead, with Strict's out-of-memory handling (an error at the call). A lazy
// buffer that finds no memory when it runs fails its op with torch.OutOfMemoryError at the
// next sync point.
runtime::DeviceAddress reserve_lazily(runtime::Chip& chip, size_t nbytes,
                                      runtime::StreamId stream) {
  if (!engine::current_policy().allocates_lazily()) return 0;
  runtime::LazyBuffers& lazy = chip.lazy_buffers();
  const size_t unreserved = chip.memory().capacity() - chip.memory().reserved_bytes();
  if (lazy.unmaterialized_bytes() + nbytes > unreserved) return 0;
  return lazy.reserve(nbytes, stream);
}

void copy_stat(const runtime::Stat& from, c10::CachingAllocator::Stat& to) {
  to.current = from.current;
  to.peak = from.peak;
  to.allocated = from.allocated;
  to.freed = from.freed;
}

void copy_stat_array(const runtime::StatArray& from, c10::CachingAllocator::StatArray& to) {
  for (size_t i = 0; i < from.size(); ++i) copy_stat(from[i], to[i]);
}

}  // namespace

c10::DataPtr allocate_on(c10::DeviceIndex device, size_t nbytes) {
  const c10::Device where(c10::DeviceType::PrivateUse1, device);
  if (nbytes == 0) return c10::DataPtr(nullptr, nullptr, &delete_device_buffer, where);
  runtime::Chip& chip = engine::chip(device);
  // The block belongs to the current stream: freed, it is reused in that stream's order.
  const runtime::StreamId stream = engine::current_stream_id(device);
  if (engine::buffers_are_opaque()) {
    void* handle = reinterpret_cast<void*>(engine::translate_errors(
        [&] { return engine::active_executor().allocate(device, nbytes, stream); }));
    return c10::DataPtr(handle, handle, &delete_opaque_buffer, where);
  }
  if (const runtime::DeviceAddress handle = reserve_lazily(chip, nbytes, stream)) {
    void* lazy = reinterpret_cast<void*>(handle);
    return c10::DataPtr(lazy, lazy, &delete_device_buffer, where);
  }
  if (chip.lazy_buffers().unmaterialized_bytes() > 0) {
    // Fused mode near capacity: pending work is owed memory first, or this allocation could
    // take what a lazy buffer needs when its op runs.
    engine::sync_device(device, "memory_pressure");
  }
  const runtime::DeviceAddress address = engine::translate_errors([&] {
    try {
      return chip.allocator().allocate(nbytes, stream, runtime::WhenFull::kThrowForRetry);
    } catch (const runtime::OutOfMemoryError&) {
      // Cached blocks may still be in use by queued work: once the chip is idle they can all be
      // released, so retry then.
      engine::sync_device(device, "out_of_memory_retry");
      return chip.allocator().allocate(nbytes, stream, runtime::WhenFull::kReleaseCache);
    }
  });
  void* handle = reinterpret_cast<void*>(address);
  return c10::DataPtr(handle, handle, &delete_device_buffer, where);
}

c10::DataPtr TpuDeviceAllocator::allocate(size_t nbytes) {
  return allocate_on(static_cast<c10::DeviceIndex>(engine::current_device()), nbytes);
}

c10::DeleterFnPtr TpuDeviceAllocator::raw_deleter() const { return &delete_device_buffer; }

void TpuDeviceAllocator::copy_data(void* dest, const void* src, std::size_t count) const {
  if (count == 0) return;
  if (engine::buffers_are_opaque()) {
    const int device = engine::current_device();
    engine::translate_errors([&] {
      engine::active_executor().copy_on_device(reinterpret_cast<runtime::DeviceAddress>(src),
                                               reinterpret_cast<runtime::DeviceAddress>(dest),
                                               count,
                                               engine::current_stream_flushed(device, "copy"));
    });
    return;
  }
  const int device = runtime::chip_of_address(reinterpret_cast<runtime::DeviceAddress>(dest));
  engine::launch(device, "tpu::copy_data", [dest, src, count] {
    std::memcpy(executors::host::host_address(dest), executors::host::host_address(src), count);
  });
}

void TpuDeviceAllocator::recordStream(const c10::DataPtr& ptr, c10::Stream stream) {
  record_stream_use(ptr.get(), stream);
}

void record_stream_use(const void* data, c10::Stream stream) {
  TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1,
              "record_stream: expected a tpu stream, got one on ", stream.device());
  if (data == nullptr) return;  // an empty storage owns no block
  // Opaque buffers are never reused while queued work holds them.
  if (engine::buffers_are_opaque()) return;
  const auto address = reinterpret_cast<runtime::DeviceAddress>(data);
  TORCH_CHECK(runtime::chip_of_address(address) == stream.device_index(),
              "record_stream: the tensor lives on another tpu than stream ", stream);
  runtime::Chip& chip = engine::chip(stream.device_index());
  engine::translate_errors([&] {
    if (chip.lazy_buffers().owns(address)) {
      chip.lazy_buffers().record_stream(address, stream.id());
    } else {
      chip.allocator().record_stream(address, stream.id());
    }
  });
}

void TpuDeviceAllocator::emptyCache(c10::MempoolId_t) {
  if (engine::buffers_are_opaque()) return;  // such an executor caches no buffers
  auto& runtime = runtime::Runtime::instance();
  for (int i = 0; i < runtime.chip_count(); ++i) {
    // A cached block may still be used by queued work of its stream (reuse is stream-ordered),
    // so its segment can be released only once the chip is idle.
    engine::sync_device(i, "empty_cache");
    runtime.chip(i).allocator().empty_cache();
  }
}

c10::CachingDeviceAllocator::DeviceStats TpuDeviceAllocator::getDeviceStats(
    c10::DeviceIndex device) {
  engine::chip(device);  // checks the index
  const runtime::MemoryStats stats = engine::active_executor().memory_stats(device);
  c10::CachingDeviceAllocator::DeviceStats out;
  copy_stat_array(stats.allocation, out.allocation);
  copy_stat_array(stats.segment, out.segment);
  copy_stat_array(stats.active, out.active);
  copy_stat_array(stats.inactive_split, out.inactive_split);
  copy_stat_array(stats.allocated_bytes, out.allocated_bytes);
  copy_stat_array(stats.reserved_bytes, out.reserved_bytes);
  copy_stat_array(stats.active_bytes, out.active_bytes);
  copy_stat_array(stats.inactive_split_bytes, out.inactive_split_bytes);
  copy_stat_array(stats.requested_bytes, out.requested_bytes);
  out.num_alloc_retries = stats.num_alloc_retries;
  out.num_ooms = stats.num_ooms;
  out.num_device_alloc = stats.num_device_alloc;
  out.num_device_free = stats.num_device_free;
  return out;
}

void TpuDeviceAllocator::resetAccumulatedStats(c10::DeviceIndex device) {
  engine::chip(device);  // checks the index
  engine::active_executor().reset_memory_stats(device,
                                               executors::Executor::StatsReset::kAccumulated);
}

void TpuDeviceAllocator::resetPeakStats(c10::DeviceIndex device) {
  engine::chip(device);  // checks the index
  engine::active_executor().reset_memory_stats(device, executors::Executor::StatsReset::kPeaks);
}

std::pair<size_t, size_t> TpuDeviceAllocator::getMemoryInfo(c10::DeviceIndex device) {
  if (engine::buffers_are_opaque()) {
    engine::chip(device);  // checks the index
    const executors::Executor& executor = engine::active_executor();
    const size_t capacity = executor.memory_capacity(device);
    const auto used = static_cast<size_t>(
        executor.memory_stats(device).allocated_bytes[runtime::kAllPools].current);
    return {capacity - used, capacity};
  }
  return engine::chip(device).allocator().memory_info();
}

TpuDeviceAllocator& device_allocator() {
  static TpuDeviceAllocator allocator;
  return allocator;
}

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &device_allocator());

}  // namespace torch_tpu::privateuse1
