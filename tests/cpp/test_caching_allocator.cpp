#include "runtime/caching_allocator.h"

#include <gtest/gtest.h>

#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "runtime/event.h"
#include "runtime/status.h"
#include "runtime/stream.h"

namespace torch_tpu::runtime {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

class CachingAllocatorTest : public ::testing::Test {
 protected:
  DeviceMemory memory_{0, 64 * kMiB};
  CachingAllocator allocator_{memory_};
};

TEST_F(CachingAllocatorTest, FreedBlockIsReusedWithoutNewSegment) {
  const DeviceAddress a = allocator_.allocate(1000);
  allocator_.free(a);
  EXPECT_EQ(allocator_.allocate(1000), a);
  EXPECT_EQ(allocator_.stats().num_device_alloc, 1);
  const DeviceAddress big = allocator_.allocate(8 * kMiB);
  allocator_.free(big);
  EXPECT_EQ(allocator_.allocate(8 * kMiB), big);
  EXPECT_EQ(allocator_.stats().num_device_alloc, 2);
}

TEST_F(CachingAllocatorTest, SizesRoundToBlockAlignment) {
  const DeviceAddress a = allocator_.allocate(1);
  EXPECT_EQ(allocator_.block_size(a), kBlockAlignment);
  EXPECT_EQ(a % kBlockAlignment, 0u);
  EXPECT_EQ(allocator_.block_size(allocator_.allocate(513)), 1024u);
  EXPECT_THROW(allocator_.allocate(0), RuntimeError);
}

TEST_F(CachingAllocatorTest, SmallBlocksSplitOneSegment) {
  const DeviceAddress a = allocator_.allocate(1000);
  const DeviceAddress b = allocator_.allocate(1000);
  EXPECT_EQ(b, a + 1024);  // carved from the tail left by the first split
  const MemoryStats stats = allocator_.stats();
  EXPECT_EQ(stats.segment[kSmallPool].current, 1);
  EXPECT_EQ(stats.reserved_bytes[kAllPools].current, static_cast<int64_t>(2 * kMiB));
  EXPECT_EQ(stats.inactive_split[kSmallPool].current, 1);
  EXPECT_EQ(stats.inactive_split_bytes[kSmallPool].current,
            static_cast<int64_t>(2 * kMiB - 2048));
}

TEST_F(CachingAllocatorTest, FreeMergesNeighbours) {
  const DeviceAddress a = allocator_.allocate(4096);
  const DeviceAddress b = allocator_.allocate(4096);
  const DeviceAddress c = allocator_.allocate(4096);
  allocator_.free(a);
  allocator_.free(c);  // merges with the segment's free tail
  EXPECT_EQ(allocator_.stats().inactive_split[kAllPools].current, 2);
  allocator_.free(b);  // a, b and the tail become the whole segment again
  MemoryStats stats = allocator_.stats();
  EXPECT_EQ(stats.inactive_split[kAllPools].current, 0);
  EXPECT_EQ(stats.inactive_split_bytes[kAllPools].current, 0);
  // The merged block serves a request larger than any of the pieces.
  EXPECT_EQ(allocator_.allocate(kMiB), a);
  EXPECT_EQ(allocator_.stats().num_device_alloc, 1);
}

TEST_F(CachingAllocatorTest, LargeBlocksSplitOnlyForUsefulRemainders) {
  const DeviceAddress a = allocator_.allocate(3 * kMiB);
  EXPECT_EQ(allocator_.block_size(a), 4 * kMiB);  // a 1 MiB tail is not worth keeping
  const DeviceAddress big = allocator_.allocate(10 * kMiB);
  allocator_.free(big);
  const DeviceAddress head = allocator_.allocate(4 * kMiB);
  EXPECT_EQ(head, big);
  EXPECT_EQ(allocator_.block_size(head), 4 * kMiB);
  EXPECT_EQ(allocator_.allocate(6 * kMiB), big + 4 * kMiB);
  const MemoryStats stats = allocator_.stats();
  EXPECT_EQ(stats.num_device_alloc, 2);
  EXPECT_EQ(stats.segment[kLargePool].current, 2);
  EXPECT_EQ(stats.segment[kSmallPool].current, 0);
}

TEST_F(CachingAllocatorTest, BestFitPrefersTheSmallestBlock) {
  const DeviceAddress big = allocator_.allocate(8 * kMiB);
  const DeviceAddress mid = allocator_.allocate(4 * kMiB);
  allocator_.allocate(2 * kMiB);  // keeps the two free blocks apart
  allocator_.free(big);
  allocator_.free(mid);
  EXPECT_EQ(allocator_.allocate(3 * kMiB), mid);
}

TEST_F(CachingAllocatorTest, StatsTrackCurrentPeakAndResets) {
  const DeviceAddress a = allocator_.allocate(1000);
  allocator_.allocate(1000);
  MemoryStats stats = allocator_.stats();
  EXPECT_EQ(stats.allocation[kAllPools].current, 2);
  EXPECT_EQ(stats.allocated_bytes[kSmallPool].current, 2048);
  EXPECT_EQ(stats.requested_bytes[kAllPools].current, 2000);
  EXPECT_EQ(stats.active_bytes[kAllPools].current, 2048);
  EXPECT_EQ(stats.allocated_bytes[kLargePool].current, 0);

  allocator_.free(a);
  stats = allocator_.stats();
  EXPECT_EQ(stats.allocated_bytes[kAllPools].current, 1024);
  EXPECT_EQ(stats.allocated_bytes[kAllPools].peak, 2048);
  EXPECT_EQ(stats.allocated_bytes[kAllPools].allocated, 2048);
  EXPECT_EQ(stats.allocated_bytes[kAllPools].freed, 1024);
  EXPECT_EQ(stats.requested_bytes[kAllPools].current, 1000);

  allocator_.reset_peak_stats();
  EXPECT_EQ(allocator_.stats().allocated_bytes[kAllPools].peak, 1024);
  allocator_.reset_accumulated_stats();
  stats = allocator_.stats();
  EXPECT_EQ(stats.allocated_bytes[kAllPools].allocated, 0);
  EXPECT_EQ(stats.allocated_bytes[kAllPools].freed, 0);
  EXPECT_EQ(stats.num_device_alloc, 0);
  EXPECT_EQ(stats.allocated_bytes[kAllPools].current, 1024);
}

TEST_F(CachingAllocatorTest, OutOfMemoryReportsNumbersAndAllocatorRecovers) {
  const DeviceAddress a = allocator_.allocate(40 * kMiB);
  try {
    allocator_.allocate(40 * kMiB);
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& error) {
    EXPECT_EQ(error.requested(), 40 * kMiB);
    EXPECT_EQ(error.free_bytes(), 24 * kMiB);
    EXPECT_EQ(error.capacity(), 64 * kMiB);
    EXPECT_NE(std::string(error.what()).find("tried to allocate 40.00 MiB"), std::string::npos);
  }
  MemoryStats stats = allocator_.stats();
  EXPECT_EQ(stats.num_ooms, 1);
  EXPECT_EQ(stats.num_alloc_retries, 1);
  EXPECT_THROW(allocator_.allocate(size_t{1} << 40), OutOfMemoryError);

  // Still usable: the failed requests left no state behind.
  const DeviceAddress b = allocator_.allocate(8 * kMiB);
  allocator_.free(b);
  allocator_.free(a);
  EXPECT_EQ(allocator_.stats().allocation[kAllPools].current, 0);
}

TEST_F(CachingAllocatorTest, AttemptsTheCallerWillRetryDoNotCountAsOoms) {
  const DeviceAddress a = allocator_.allocate(40 * kMiB);
  EXPECT_THROW(allocator_.allocate(40 * kMiB, 0, WhenFull::kThrowForRetry), OutOfMemoryError);
  EXPECT_EQ(allocator_.stats().num_ooms, 0);
  EXPECT_THROW(allocator_.allocate(40 * kMiB), OutOfMemoryError);
  EXPECT_EQ(allocator_.stats().num_ooms, 1);
  allocator_.free(a);
}

TEST_F(CachingAllocatorTest, FullChipRetriesAfterReleasingCachedSegments) {
  allocator_.free(allocator_.allocate(40 * kMiB));
  EXPECT_EQ(memory_.reserved_bytes(), 40 * kMiB);  // cached, not released
  const DeviceAddress a = allocator_.allocate(50 * kMiB);
  EXPECT_NE(a, 0u);
  const MemoryStats stats = allocator_.stats();
  EXPECT_EQ(stats.num_alloc_retries, 1);
  EXPECT_EQ(stats.num_device_free, 1);
  EXPECT_EQ(stats.num_ooms, 0);
  EXPECT_EQ(stats.reserved_bytes[kAllPools].current, static_cast<int64_t>(50 * kMiB));
}

TEST_F(CachingAllocatorTest, EmptyCacheReleasesOnlyFullyFreeSegments) {
  const DeviceAddress small = allocator_.allocate(1000);
  allocator_.free(allocator_.allocate(1000));  // same segment as `small`: stays reserved
  allocator_.free(allocator_.allocate(20 * kMiB));
  EXPECT_EQ(allocator_.memory_info().first, 64 * kMiB - 22 * kMiB);
  allocator_.empty_cache();
  EXPECT_EQ(memory_.reserved_bytes(), 2 * kMiB);
  EXPECT_EQ(allocator_.stats().reserved_bytes[kLargePool].current, 0);
  allocator_.free(small);
  allocator_.empty_cache();
  EXPECT_EQ(memory_.reserved_bytes(), 0u);
  const auto [free, total] = allocator_.memory_info();
  EXPECT_EQ(free, 64 * kMiB);
  EXPECT_EQ(total, 64 * kMiB);
  const MemoryStats stats = allocator_.stats();
  EXPECT_EQ(stats.num_device_free, 2);
  EXPECT_EQ(stats.segment[kAllPools].current, 0);
}

TEST_F(CachingAllocatorTest, UnknownAddressesThrow) {
  EXPECT_THROW(allocator_.free(0x1234), RuntimeError);
  const DeviceAddress a = allocator_.allocate(1000);
  EXPECT_THROW(allocator_.free(a + 512), RuntimeError);
  allocator_.free(a);
  EXPECT_THROW(allocator_.free(a), RuntimeError);  // double free
  EXPECT_THROW(allocator_.block_size(a), RuntimeError);
}

TEST(CachingAllocator, DestructorReturnsSegmentsToChipMemory) {
  DeviceMemory memory(0, 16 * kMiB);
  {
    CachingAllocator allocator(memory);
    allocator.allocate(1000);
    allocator.free(allocator.allocate(3 * kMiB));
    allocator.allocate(6 * kMiB);
    EXPECT_GT(memory.reserved_bytes(), 0u);
  }
  EXPECT_EQ(memory.reserved_bytes(), 0u);
}

TEST_F(CachingAllocatorTest, FreedBlocksAreReusedOnlyByTheirOwnStream) {
  const DeviceAddress on_default = allocator_.allocate(1000, /*stream=*/0);
  allocator_.free(on_default);
  const DeviceAddress on_side = allocator_.allocate(1000, /*stream=*/1);
  EXPECT_NE(on_side, on_default);  // stream 1's writes could overtake stream 0's queued reads
  EXPECT_EQ(allocator_.allocate(1000, /*stream=*/0), on_default);
  allocator_.free(on_side);
  EXPECT_EQ(allocator_.allocate(1000, /*stream=*/1), on_side);
}

TEST_F(CachingAllocatorTest, FullChipReleasesOtherStreamsCachedSegments) {
  allocator_.free(allocator_.allocate(40 * kMiB, /*stream=*/1));
  EXPECT_THROW(allocator_.allocate(40 * kMiB, /*stream=*/0, WhenFull::kThrowForRetry),
               OutOfMemoryError);
  EXPECT_NE(allocator_.allocate(40 * kMiB, /*stream=*/0, WhenFull::kReleaseCache), 0u);
  EXPECT_EQ(allocator_.stats().num_ooms, 0);
}

// A chip-like pair of streams whose marks the allocator can wait for.
class RecordedStreamTest : public ::testing::Test {
 protected:
  Stream side_{0, 1, 0};
  DeviceMemory memory_{0, 64 * kMiB};
  CachingAllocator allocator_{memory_, [this](StreamId id) {
                                EXPECT_EQ(id, 1);
                                Event mark;
                                mark.record(side_);
                                return mark;
                              }};
};

TEST_F(RecordedStreamTest, FreeWaitsForRecordedStreams) {
  std::mutex gate;
  std::unique_lock<std::mutex> hold(gate);
  side_.enqueue("blocked", [&gate] { std::lock_guard<std::mutex> wait(gate); });

  const DeviceAddress a = allocator_.allocate(1000, /*stream=*/0);
  allocator_.record_stream(a, 1);
  allocator_.record_stream(a, 0);  // its own stream: nothing to wait for
  allocator_.free(a);
  EXPECT_EQ(allocator_.stats().allocation[kAllPools].current, 1);  // pending, still counted
  EXPECT_THROW(allocator_.free(a), RuntimeError);  // but no longer live
  EXPECT_NE(allocator_.allocate(1000, /*stream=*/0, WhenFull::kThrowForRetry), a);

  hold.unlock();  // the side stream runs past the free
  side_.synchronize();
  EXPECT_EQ(allocator_.allocate(1000, /*stream=*/0, WhenFull::kThrowForRetry), a);
}

TEST_F(RecordedStreamTest, EmptyCacheOnAnIdleChipReleasesDeferredFrees) {
  const DeviceAddress a = allocator_.allocate(1000);
  allocator_.record_stream(a, 1);
  allocator_.free(a);
  side_.synchronize();
  allocator_.empty_cache();
  EXPECT_EQ(memory_.reserved_bytes(), 0u);
  EXPECT_EQ(allocator_.stats().allocation[kAllPools].current, 0);
}

TEST_F(CachingAllocatorTest, RecordStreamNeedsAStreamMarker) {
  const DeviceAddress a = allocator_.allocate(1000);
  EXPECT_THROW(allocator_.record_stream(a, 1), RuntimeError);
  EXPECT_THROW(allocator_.record_stream(a + 512, 0), RuntimeError);
  allocator_.free(a);
}

TEST_F(CachingAllocatorTest, ConcurrentThreadsGetDisjointBlocks) {
  constexpr int kIterations = 3000;
  auto worker = [&](unsigned seed) {
    std::mt19937 random(seed);
    std::uniform_int_distribution<size_t> size_of(1, 3 * kMiB);
    std::vector<std::pair<DeviceAddress, size_t>> live;
    for (int i = 0; i < kIterations; ++i) {
      if (live.size() < 4 && random() % 2 == 0) {
        const size_t size = size_of(random);
        const DeviceAddress address = allocator_.allocate(size);
        // Stamp the block; overlapping live blocks would overwrite each other's stamps.
        std::memset(memory_.host_address(address), static_cast<int>(seed), size);
        live.emplace_back(address, size);
      } else if (!live.empty()) {
        const auto [address, size] = live.back();
        live.pop_back();
        const auto* bytes = static_cast<const unsigned char*>(memory_.host_address(address));
        ASSERT_EQ(bytes[0], static_cast<unsigned char>(seed));
        ASSERT_EQ(bytes[size - 1], static_cast<unsigned char>(seed));
        allocator_.free(address);
      }
    }
    for (const auto& [address, size] : live) allocator_.free(address);
  };
  std::thread first(worker, 1u);
  std::thread second(worker, 2u);
  first.join();
  second.join();
  const MemoryStats stats = allocator_.stats();
  EXPECT_EQ(stats.allocation[kAllPools].current, 0);
  EXPECT_EQ(stats.allocated_bytes[kAllPools].current, 0);
  EXPECT_EQ(stats.requested_bytes[kAllPools].current, 0);
  EXPECT_EQ(stats.inactive_split[kAllPools].current, 0);  // every segment merged back whole
  allocator_.empty_cache();
  EXPECT_EQ(memory_.reserved_bytes(), 0u);
}

}  // namespace
}  // namespace torch_tpu::runtime
