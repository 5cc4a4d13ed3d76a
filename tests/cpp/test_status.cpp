#include "runtime/status.h"

#include <gtest/gtest.h>

namespace torch_tpu::runtime {
namespace {

TEST(Status, OutOfMemoryMessageNamesRequestFreeAndCapacity) {
  const OutOfMemoryError error(0, 1610612736, size_t{512} << 20, size_t{16} << 30);
  EXPECT_STREQ(error.what(),
               "tpu:0 out of memory: tried to allocate 1.50 GiB (1610612736 bytes); "
               "512.00 MiB free of 16.00 GiB capacity");
  EXPECT_EQ(error.requested(), 1610612736u);
  EXPECT_EQ(error.free_bytes(), size_t{512} << 20);
  EXPECT_EQ(error.capacity(), size_t{16} << 30);
}

TEST(Status, OutOfMemoryMessageUsesBytesBelowOneKiB) {
  const OutOfMemoryError error(3, 100, 0, 2048);
  EXPECT_STREQ(error.what(),
               "tpu:3 out of memory: tried to allocate 100 bytes (100 bytes); "
               "0 bytes free of 2.00 KiB capacity");
}

TEST(Status, OutOfMemoryIsARuntimeError) {
  try {
    throw OutOfMemoryError(1, 1, 0, 1);
  } catch (const RuntimeError& error) {
    EXPECT_NE(std::string(error.what()).find("tpu:1 out of memory"), std::string::npos);
  }
}

TEST(Status, AsyncOpErrorNamesTheOp) {
  const AsyncOpError error("aten::add", "shape mismatch");
  EXPECT_STREQ(error.what(), "error in asynchronously executed op 'aten::add': shape mismatch");
  EXPECT_EQ(error.op_name(), "aten::add");
}

TEST(Status, AsyncOpErrorNamesWhereTheOpWasIssued) {
  const AsyncOpError error("aten::add", "shape mismatch", false, "train.py:12 in step");
  EXPECT_STREQ(error.what(),
               "error in asynchronously executed op 'aten::add' (issued at train.py:12 in step): "
               "shape mismatch");
  EXPECT_EQ(error.issued_at(), "train.py:12 in step");
  EXPECT_EQ(issued_at_note(nullptr), "");
  EXPECT_EQ(issued_at_note(""), "");
}

}  // namespace
}  // namespace torch_tpu::runtime
