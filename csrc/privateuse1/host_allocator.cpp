#include "privateuse1/host_allocator.h"

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

#include <ATen/core/CachingHostAllocator.h>

#include "engine/deferral.h"
#include "engine/launch.h"
#include "runtime/event.h"

namespace torch_tpu::privateuse1 {
namespace {

using EventPtr = std::shared_ptr<runtime::Event>;

// Live pinned ranges (start -> size), for isPinnedPtr.
std::mutex g_ranges_mutex;
std::map<const char*, size_t> g_ranges;

struct TpuHostAllocatorImpl final : public at::CachingHostAllocatorImpl<c10::Stream, EventPtr> {
 private:
  void allocate_host_memory(size_t size, void** ptr) override {
    // Page alignment, as real pinned (DMA-able) memory has.
    TORCH_CHECK_WITH(OutOfMemoryError, posix_memalign(ptr, 4096, size) == 0,
                     "tpu: could not allocate ", size, " bytes of pinned host memory");
    std::lock_guard<std::mutex> lock(g_ranges_mutex);
    g_ranges.emplace(static_cast<const char*>(*ptr), size);
  }

  void free_block(at::HostBlock<c10::Stream>* block) override {
    {
      std::lock_guard<std::mutex> lock(g_ranges_mutex);
      g_ranges.erase(static_cast<const char*>(block->ptr_));
    }
    std::free(block->ptr_);
  }

  void record_stream(std::optional<std::vector<EventPtr>>& events, c10::Stream stream) override {
    auto event = std::make_shared<runtime::Event>();
    engine::record_mark(*event, engine::chip(stream.device_index()).stream(stream.id()));
    events->push_back(std::move(event));
  }

  bool query_event(EventPtr& event) override { return event->query(); }

  c10::Stream get_current_stream() const override {
    const auto device = static_cast<c10::DeviceIndex>(engine::current_device());
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, device),
                       engine::current_stream_id(device));
  }

  bool stream_is_capturing(c10::Stream) const override { return false; }
};

void delete_pinned(void* ctx);

struct TpuHostAllocator final
    : public at::CachingHostAllocatorInterface<TpuHostAllocatorImpl, delete_pinned> {};

TpuHostAllocator g_host_allocator;

void delete_pinned(void* ctx) { g_host_allocator.free(ctx); }

}  // namespace

c10::Allocator* pinned_memory_allocator() { return &g_host_allocator; }

bool is_pinned_ptr(const void* ptr) {
  const auto* address = static_cast<const char*>(ptr);
  std::lock_guard<std::mutex> lock(g_ranges_mutex);
  auto it = g_ranges.upper_bound(address);
  if (it == g_ranges.begin()) return false;
  --it;
  return address < it->first + it->second;
}

REGISTER_HOST_ALLOCATOR(at::kPrivateUse1, &g_host_allocator)

}  // namespace torch_tpu::privateuse1
