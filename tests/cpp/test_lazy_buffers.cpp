#include "runtime/lazy_buffers.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "runtime/chip.h"
#include "runtime/status.h"

namespace torch_tpu::runtime {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

int64_t allocated_bytes(const CachingAllocator& allocator) {
  return allocator.stats().allocated_bytes[kAllPools].current;
}

class LazyBuffersTest : public ::testing::Test {
 protected:
  DeviceMemory memory_{0, 64 * kMiB};
  CachingAllocator allocator_{memory_};
  LazyBuffers lazy_{0, allocator_};
};

TEST_F(LazyBuffersTest, AHandleHasNoChipMemoryUntilResolved) {
  const DeviceAddress handle = lazy_.reserve(4 * kMiB, /*stream=*/0);
  ASSERT_NE(handle, 0u);
  EXPECT_TRUE(lazy_.owns(handle));
  EXPECT_FALSE(memory_.contains(handle));
  EXPECT_EQ(chip_of_address(handle), 0);
  EXPECT_FALSE(lazy_.materialized(handle));
  EXPECT_EQ(allocated_bytes(allocator_), 0);
  EXPECT_EQ(lazy_.unmaterialized_bytes(), 4 * kMiB);

  const DeviceAddress real = lazy_.resolve(handle);
  EXPECT_TRUE(memory_.contains(real));
  EXPECT_TRUE(lazy_.materialized(handle));
  EXPECT_EQ(allocated_bytes(allocator_), static_cast<int64_t>(4 * kMiB));
  EXPECT_EQ(lazy_.unmaterialized_bytes(), 0u);
  // Interior addresses keep their offset; later resolves reuse the same block.
  EXPECT_EQ(lazy_.resolve(handle + 4096), real + 4096);
  EXPECT_EQ(lazy_.resolve(handle), real);

  lazy_.release(handle);
  EXPECT_EQ(allocated_bytes(allocator_), 0);
  const LazyBufferStats stats = lazy_.stats();
  EXPECT_EQ(stats.handles, 1);
  EXPECT_EQ(stats.materialized, 1);
  EXPECT_EQ(stats.never_materialized, 0);
}

TEST_F(LazyBuffersTest, AReleasedUnresolvedHandleNeverTookMemory) {
  const DeviceAddress handle = lazy_.reserve(kMiB, 0);
  lazy_.release(handle);
  EXPECT_EQ(allocator_.stats().allocation[kAllPools].allocated, 0);
  const LazyBufferStats stats = lazy_.stats();
  EXPECT_EQ(stats.never_materialized, 1);
  EXPECT_EQ(stats.bytes_never_materialized, static_cast<int64_t>(kMiB));
  EXPECT_EQ(lazy_.unmaterialized_bytes(), 0u);
  // The handle is reused, with no memory again.
  const DeviceAddress again = lazy_.reserve(2 * kMiB, 0);
  EXPECT_EQ(again, handle);
  EXPECT_FALSE(lazy_.materialized(again));
}

TEST_F(LazyBuffersTest, HandlesAreDistinctAndTooLargeRequestsAreRefused) {
  const DeviceAddress a = lazy_.reserve(16, 0);
  const DeviceAddress b = lazy_.reserve(16, 0);
  EXPECT_NE(a, b);
  EXPECT_EQ(b - a, DeviceAddress{1} << LazyBuffers::kSlotShift);
  EXPECT_EQ(lazy_.reserve(LazyBuffers::kMaxBytes + 1, 0), 0u);
  EXPECT_EQ(lazy_.reserve(0, 0), 0u);
}

TEST_F(LazyBuffersTest, LazyBlocksComeFromTheirOwnPoolNotFromEagerlyFreedBlocks) {
  // An eagerly allocated block freed by the host may still be read by queued work: a lazy
  // buffer materialized by a task must not get it.
  const DeviceAddress eager = allocator_.allocate(kMiB, 0);
  allocator_.free(eager);
  const DeviceAddress handle = lazy_.reserve(kMiB, 0);
  EXPECT_NE(lazy_.resolve(handle), eager);
  lazy_.release(handle);
  // Lazy blocks are freed in device time, so the next lazy buffer may reuse them.
  const DeviceAddress next = lazy_.reserve(kMiB, 0);
  const DeviceAddress first_block = lazy_.resolve(next);
  lazy_.release(next);
  const DeviceAddress third = lazy_.reserve(kMiB, 0);
  EXPECT_EQ(lazy_.resolve(third), first_block);
}

TEST_F(LazyBuffersTest, ConcurrentResolvesMaterializeOnce) {
  const DeviceAddress handle = lazy_.reserve(kMiB, 0);
  std::vector<DeviceAddress> seen(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&, i] { seen[i] = lazy_.resolve(handle); });
  }
  for (auto& thread : threads) thread.join();
  for (DeviceAddress address : seen) EXPECT_EQ(address, seen[0]);
  EXPECT_EQ(lazy_.stats().materialized, 1);
}

TEST_F(LazyBuffersTest, ResolvingPastFreeMemoryThrowsOutOfMemory) {
  const DeviceAddress handle = lazy_.reserve(128 * kMiB, 0);
  EXPECT_THROW(lazy_.resolve(handle), OutOfMemoryError);
  lazy_.release(handle);  // still releasable
  EXPECT_EQ(lazy_.unmaterialized_bytes(), 0u);
}

TEST(ChipLazyBuffers, AReleaseWaitsForWorkIssuedBeforeIt) {
  Chip chip(0, 64 * kMiB);
  LazyBuffers& lazy = chip.lazy_buffers();
  const DeviceAddress handle = lazy.reserve(kMiB, kDefaultStreamId);
  std::atomic<bool> gate{false};
  std::atomic<bool> was_live_in_task{false};
  chip.default_stream().enqueue("test::writer", [&] {
    while (!gate.load()) std::this_thread::yield();
    std::memset(chip.host_address(handle), 7, kMiB);
    was_live_in_task = lazy.materialized(handle);
  });
  // The host dropped it; the writer has not run.
  chip.stream(lazy.owner_stream(handle)).after_issued_work([&] { lazy.release(handle); });
  EXPECT_EQ(lazy.stats().never_materialized + lazy.stats().materialized, 0);
  gate = true;
  chip.synchronize();
  EXPECT_TRUE(was_live_in_task.load());
  EXPECT_EQ(lazy.stats().materialized, 1);
  EXPECT_EQ(allocated_bytes(chip.allocator()), 0);  // released after the writer
}

}  // namespace
}  // namespace torch_tpu::runtime
