#include "runtime/chip.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "runtime/status.h"

namespace torch_tpu::runtime {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

std::string error_of(const char* text) {
  try {
    parse_byte_size(text, "TORCH_TPU_HBM_BYTES");
  } catch (const RuntimeError& error) {
    return error.what();
  }
  return "";
}

TEST(ParseByteSize, AcceptsBytesAndBinarySuffixes) {
  EXPECT_EQ(parse_byte_size("1024", "V"), 1024u);
  EXPECT_EQ(parse_byte_size("4k", "V"), 4096u);
  EXPECT_EQ(parse_byte_size("512M", "V"), 512 * kMiB);
  EXPECT_EQ(parse_byte_size("16G", "V"), size_t{16} << 30);
  EXPECT_EQ(parse_byte_size("17179869184", "V"), size_t{16} << 30);
}

TEST(ParseByteSize, RejectsMalformedValuesNamingTheVariable) {
  for (const char* bad : {"", "abc", "12X", "0", "1.5G", "-1", " 16G", "16GB", "G",
                          "99999999999999999999", "18446744073709551615G"}) {
    const std::string message = error_of(bad);
    EXPECT_NE(message.find("TORCH_TPU_HBM_BYTES"), std::string::npos) << "input: " << bad;
    EXPECT_NE(message.find(std::string("'") + bad + "'"), std::string::npos) << message;
  }
}

TEST(Chip, StreamsAreCreatedLazilyWithPoolPriorities) {
  Chip chip(0, 64 * kMiB);
  EXPECT_EQ(chip.name(), "TPU host-runtime chip");
  Stream& default_stream = chip.default_stream();
  EXPECT_EQ(&default_stream, &chip.stream(0));
  EXPECT_EQ(default_stream.id(), kDefaultStreamId);
  EXPECT_EQ(default_stream.priority(), 0);
  for (int64_t id = 1; id <= kStreamsPerPool; ++id) EXPECT_EQ(chip.stream(id).priority(), 0);
  for (int64_t id = kStreamsPerPool + 1; id <= 2 * kStreamsPerPool; ++id) {
    EXPECT_EQ(chip.stream(id).priority(), -1);
    EXPECT_EQ(chip.stream(id).id(), id);
    EXPECT_EQ(chip.stream(id).chip_index(), 0);
  }
  EXPECT_THROW(chip.stream(-1), RuntimeError);
  EXPECT_THROW(chip.stream(2 * kStreamsPerPool + 1), RuntimeError);
}

TEST(Chip, PoolStreamsRotateRoundRobin) {
  Chip chip(0, 64 * kMiB);
  for (int turn = 0; turn < 2 * kStreamsPerPool; ++turn) {
    EXPECT_EQ(chip.pool_stream(false).id(), 1 + turn % kStreamsPerPool);
    EXPECT_EQ(chip.pool_stream(true).id(), 1 + kStreamsPerPool + turn % kStreamsPerPool);
  }
}

TEST(Chip, SynchronizeWaitsForAllStreamsThenRaisesTheFirstError) {
  Chip chip(0, 64 * kMiB);
  std::atomic<bool> slow_done{false};
  chip.stream(1).enqueue("aten::div", [] { throw std::runtime_error("divide failed"); });
  chip.stream(2).enqueue("test::slow", [&slow_done] {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    slow_done = true;
  });
  try {
    chip.synchronize();
    FAIL() << "expected AsyncOpError";
  } catch (const AsyncOpError& error) {
    EXPECT_EQ(error.op_name(), "aten::div");
  }
  EXPECT_TRUE(slow_done.load());
  EXPECT_NO_THROW(chip.synchronize());
}

TEST(Chip, AllocatorServesTheChipsOwnAddresses) {
  Chip chip(2, 64 * kMiB);
  const DeviceAddress address = chip.allocator().allocate(4096);
  EXPECT_EQ(chip_of_address(address), 2);
  EXPECT_TRUE(chip.memory().contains(address));
  chip.allocator().free(address);
}

TEST(Chip, DestructionRunsTasksThatFreeMemory) {
  std::atomic<bool> freed{false};
  {
    Chip chip(0, 64 * kMiB);
    const DeviceAddress address = chip.allocator().allocate(4096);
    chip.default_stream().enqueue("test::free", [&chip, address, &freed] {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      chip.allocator().free(address);
      freed = true;
    });
  }
  EXPECT_TRUE(freed.load());
}

// The only test that touches the process-wide Runtime (ctest runs each test in its own process).
TEST(Runtime, ReadsTheEnvironmentAndRetriesAfterAnInvalidOne) {
  // Without TORCH_TPU_HOST_CHIPS, torchrun's LOCAL_WORLD_SIZE sets the chip count.
  unsetenv("TORCH_TPU_HOST_CHIPS");
  setenv("LOCAL_WORLD_SIZE", "zero", 1);
  try {
    Runtime::instance();
    FAIL() << "expected RuntimeError";
  } catch (const RuntimeError& error) {
    EXPECT_NE(std::string(error.what()).find("LOCAL_WORLD_SIZE"), std::string::npos);
  }
  setenv("LOCAL_WORLD_SIZE", "3", 1);  // TORCH_TPU_HOST_CHIPS, set below, wins
  setenv("TORCH_TPU_HOST_CHIPS", "65", 1);
  EXPECT_THROW(Runtime::instance(), RuntimeError);
  setenv("TORCH_TPU_HOST_CHIPS", "two", 1);
  EXPECT_THROW(Runtime::instance(), RuntimeError);
  setenv("TORCH_TPU_HOST_CHIPS", "2", 1);
  setenv("TORCH_TPU_HBM_BYTES", "64Q", 1);
  try {
    Runtime::instance();
    FAIL() << "expected RuntimeError";
  } catch (const RuntimeError& error) {
    EXPECT_NE(std::string(error.what()).find("TORCH_TPU_HBM_BYTES"), std::string::npos);
  }

  // A throwing constructor leaves the function-local static uninitialized, so this retries.
  setenv("TORCH_TPU_HBM_BYTES", "64M", 1);
  Runtime& runtime = Runtime::instance();
  EXPECT_EQ(&runtime, &Runtime::instance());
  ASSERT_EQ(runtime.chip_count(), 2);
  EXPECT_EQ(runtime.chip(1).index(), 1);
  EXPECT_EQ(runtime.chip(1).memory().capacity(), 64 * kMiB);
  try {
    runtime.chip(2);
    FAIL() << "expected RuntimeError";
  } catch (const RuntimeError& error) {
    EXPECT_STREQ(error.what(), "invalid tpu device index 2: there are 2 chips (valid: 0..1)");
  }
  EXPECT_THROW(runtime.chip(-1), RuntimeError);

  const DeviceAddress address = runtime.chip(1).allocator().allocate(100);
  EXPECT_EQ(runtime.chip_of(address), &runtime.chip(1));
  EXPECT_EQ(runtime.chip_of(0), nullptr);
  EXPECT_EQ(runtime.chip_of(chip_base_address(5)), nullptr);
  runtime.chip(1).allocator().free(address);
}

}  // namespace
}  // namespace torch_tpu::runtime
