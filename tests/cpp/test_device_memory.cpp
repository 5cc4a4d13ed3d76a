#include "runtime/device_memory.h"

#include <gtest/gtest.h>

#include <cstring>

#include "runtime/status.h"

namespace torch_tpu::runtime {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(DeviceMemory, CapacityRoundsUpToSegmentAlignment) {
  DeviceMemory memory(0, 3 * kMiB);
  EXPECT_EQ(memory.capacity(), 4 * kMiB);
  EXPECT_EQ(memory.reserved_bytes(), 0u);
  EXPECT_EQ(memory.base_address(), chip_base_address(0));
}

TEST(DeviceMemory, ZeroCapacityIsRejected) {
  EXPECT_THROW(DeviceMemory(0, 0), RuntimeError);
}

TEST(DeviceMemory, AddressesAreOpaqueAndBelongToTheChip) {
  DeviceMemory memory(3, 8 * kMiB);
  const DeviceAddress address = memory.reserve_segment(1);
  ASSERT_NE(address, 0u);
  EXPECT_EQ(address, chip_base_address(3));
  EXPECT_EQ(chip_of_address(address), 3);
  EXPECT_TRUE(memory.contains(address));
  EXPECT_FALSE(memory.contains(address + memory.capacity()));
  EXPECT_EQ(chip_of_address(0x1234), -1);
  // A device address is never the host address of the same bytes.
  EXPECT_NE(reinterpret_cast<uintptr_t>(memory.host_address(address)), address);
}

TEST(DeviceMemory, ReserveRoundsAndFailsWhenFull) {
  DeviceMemory memory(0, 6 * kMiB);
  const DeviceAddress a = memory.reserve_segment(kMiB);  // rounds to 2 MiB
  const DeviceAddress b = memory.reserve_segment(2 * kMiB);
  const DeviceAddress c = memory.reserve_segment(2 * kMiB);
  EXPECT_EQ(b, a + 2 * kMiB);
  EXPECT_EQ(c, a + 4 * kMiB);
  EXPECT_EQ(memory.reserved_bytes(), 6 * kMiB);
  EXPECT_EQ(memory.reserve_segment(1), 0u);
  EXPECT_EQ(memory.reserve_segment(size_t{1} << 62), 0u);
}

TEST(DeviceMemory, ReleasedRangesCoalesce) {
  DeviceMemory memory(0, 6 * kMiB);
  const DeviceAddress a = memory.reserve_segment(2 * kMiB);
  const DeviceAddress b = memory.reserve_segment(2 * kMiB);
  const DeviceAddress c = memory.reserve_segment(2 * kMiB);
  memory.release_segment(b, 2 * kMiB);
  EXPECT_EQ(memory.reserve_segment(4 * kMiB), 0u);  // only 2 MiB holes so far
  memory.release_segment(a, 2 * kMiB);
  EXPECT_EQ(memory.reserve_segment(4 * kMiB), a);  // a+b merged into one range
  memory.release_segment(a, 4 * kMiB);
  memory.release_segment(c, 2 * kMiB);
  EXPECT_EQ(memory.reserved_bytes(), 0u);
  EXPECT_EQ(memory.reserve_segment(6 * kMiB), a);  // everything merged back
}

TEST(DeviceMemory, FirstFitTakesTheLowestHole) {
  DeviceMemory memory(0, 8 * kMiB);
  const DeviceAddress a = memory.reserve_segment(2 * kMiB);
  const DeviceAddress b = memory.reserve_segment(2 * kMiB);
  memory.reserve_segment(2 * kMiB);
  memory.release_segment(a, 2 * kMiB);
  memory.release_segment(b, 2 * kMiB);
  EXPECT_EQ(memory.reserve_segment(2 * kMiB), a);
}

TEST(DeviceMemory, BadReleasesThrow) {
  DeviceMemory memory(0, 8 * kMiB);
  const DeviceAddress a = memory.reserve_segment(4 * kMiB);
  EXPECT_THROW(memory.release_segment(a, 2 * kMiB), RuntimeError);        // wrong size
  EXPECT_THROW(memory.release_segment(a + 2 * kMiB, 2 * kMiB), RuntimeError);  // interior
  EXPECT_THROW(memory.release_segment(0x42, 2 * kMiB), RuntimeError);     // foreign
  memory.release_segment(a, 4 * kMiB);
  EXPECT_THROW(memory.release_segment(a, 4 * kMiB), RuntimeError);        // double release
  EXPECT_EQ(memory.reserved_bytes(), 0u);
}

TEST(DeviceMemory, ReleaseReturnsPagesSoContentsAreLost) {
  DeviceMemory memory(0, 4 * kMiB);
  const DeviceAddress a = memory.reserve_segment(2 * kMiB);
  auto* bytes = static_cast<unsigned char*>(memory.host_address(a));
  std::memset(bytes, 0xAB, 2 * kMiB);
  memory.release_segment(a, 2 * kMiB);
  ASSERT_EQ(memory.reserve_segment(2 * kMiB), a);
  // MADV_DONTNEED drops the pages; anonymous memory comes back zero-filled.
  EXPECT_EQ(bytes[0], 0);
  EXPECT_EQ(bytes[2 * kMiB - 1], 0);
}

}  // namespace
}  // namespace torch_tpu::runtime
