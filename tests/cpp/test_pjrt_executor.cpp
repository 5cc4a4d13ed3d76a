// The PJRT executor end to end on the real CPU plugin (scripts/setup.sh installs it): IR
// programs built here are lowered to StableHLO, compiled, run on a stream, and their results
// compared with values computed in plain C++. Skipped, saying why, without the plugin.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "pjrt_executor_fixture.h"

using namespace torch_tpu;
using namespace torch_tpu::ir;
using namespace torch_tpu::ir::testing;
using executors::RunBindings;
using executors::pjrt::PjrtExecutor;
using executors::pjrt::testing::bind;
using executors::pjrt::testing::iota_floats;
using executors::pjrt::testing::PjrtExecutorTest;
using executors::pjrt::testing::to_bf16;


TEST_F(PjrtExecutorTest, NamesItsPlatform) { EXPECT_EQ(executor_->name(), "pjrt:cpu"); }

TEST_F(PjrtExecutorTest, AddWithTwoAlphasThroughOneExecutable) {
  const std::vector<float> x = iota_floats(32, -3.0f, 0.5f);
  const std::vector<float> w = iota_floats(32, 1.0f, 0.25f);
  const Program program = add_program(1.0);
  const auto executable = executor_->compile(program);
  const runtime::DeviceAddress sx = upload(x), sw = upload(w);
  const runtime::DeviceAddress sy = executor_->allocate(0, 32 * sizeof(float), 0);
  for (const double alpha : {2.0, -0.5}) {
    RunBindings bindings;
    bindings.storages = {sx, sw, sy};
    bindings.scalars = dynamic_scalars(add_program(alpha));
    executor_->run(executable, std::move(bindings), stream_);
    const std::vector<float> y = download<float>(sy, 32);
    for (size_t i = 0; i < 32; ++i) {
      EXPECT_FLOAT_EQ(y[i], x[i] + w[i] * static_cast<float>(alpha)) << "alpha " << alpha << " at " << i;
    }
  }
}

TEST_F(PjrtExecutorTest, MulReluSumChainOfThreeNodes) {
  const int64_t rows = 3, cols = 4;
  const std::vector<float> x = iota_floats(12, -2.0f, 0.5f);
  const std::vector<float> w = iota_floats(12, 1.5f, -0.25f);
  const Program program = mul_relu_sum_program(rows, cols);
  const auto executable = executor_->compile(program);
  const runtime::DeviceAddress total = executor_->allocate(0, rows * sizeof(float), 0);
  // The two scratch storages (s2, s3) are not live out: bound to 0, never materialized.
  executor_->run(executable, bind({upload(x), upload(w), 0, 0, total}), stream_);
  const std::vector<float> y = download<float>(total, rows);
  for (int64_t r = 0; r < rows; ++r) {
    float expected = 0;
    for (int64_t c = 0; c < cols; ++c) expected += std::max(0.0f, x[r * cols + c] * w[r * cols + c]);
    EXPECT_FLOAT_EQ(y[r], expected) << "row " << r;
  }
  const auto& compiled = static_cast<const executors::pjrt::PjrtExecutable&>(*executable);
  EXPECT_EQ(compiled.lowered.result_storages, std::vector<StorageId>{4});
}

TEST_F(PjrtExecutorTest, MatrixProduct3x4By4x5) {
  const std::vector<float> a = iota_floats(12, -1.0f, 0.25f);
  const std::vector<float> b = iota_floats(20, 2.0f, -0.125f);
  const Program program = binary_program("aten::mm", row_major(DType::kFloat32, {3, 4}),
                                         row_major(DType::kFloat32, {4, 5}),
                                         row_major(DType::kFloat32, {3, 5}));
  const runtime::DeviceAddress c = executor_->allocate(0, 15 * sizeof(float), 0);
  executor_->run(executor_->compile(program), bind({upload(a), upload(b), c}), stream_);
  const std::vector<float> y = download<float>(c, 15);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 5; ++j) {
      float expected = 0;
      for (int k = 0; k < 4; ++k) expected += a[i * 4 + k] * b[k * 5 + j];
      EXPECT_NEAR(y[i * 5 + j], expected, 1e-5) << i << "," << j;
    }
  }
}

TEST_F(PjrtExecutorTest, InPlaceAddReplacesTheStoragesBuffer) {
  const std::vector<float> x = iota_floats(8, 1.0f, 1.0f);
  const std::vector<float> w = iota_floats(8, 0.5f, 0.5f);
  const runtime::DeviceAddress self = upload(x);
  const auto before = executor_->current_buffer(self);
  ASSERT_NE(before, nullptr);
  const Program program = inplace_add_program({2, 4}, 3.0);
  executor_->run(executor_->compile(program),
                 bind({self, upload(w)}, dynamic_scalars(program)), stream_);
  stream_.synchronize();
  EXPECT_NE(executor_->current_buffer(self), before) << "immutable buffers: a write is a new buffer";
  const std::vector<float> y = download<float>(self, 8);
  for (size_t i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(y[i], x[i] + 3.0f * w[i]);
}

TEST_F(PjrtExecutorTest, OutIntoARowSliceKeepsTheOtherRows) {
  const std::vector<float> base = iota_floats(12, 100.0f, 1.0f);  // f32[3, 4]
  const std::vector<float> a = {1, 2, 3, 4}, b = {10, 20, 30, 40};
  const Program program = out_into_view_program(
      "aten::add.out", 3, 4, strided(DType::kFloat32, {4}, {1}, /*offset=*/4), /*with_alpha=*/true);
  const runtime::DeviceAddress s0 = upload(base);
  executor_->run(executor_->compile(program),
                 bind({s0, upload(a), upload(b)}, dynamic_scalars(program)), stream_);
  const std::vector<float> y = download<float>(s0, 12);
  for (size_t i = 0; i < 12; ++i) {
    const float expected = (i >= 4 && i < 8) ? a[i - 4] + b[i - 4] : base[i];
    EXPECT_FLOAT_EQ(y[i], expected) << "element " << i;
  }
}

TEST_F(PjrtExecutorTest, OutIntoAColumnScattersEachElement) {
  const std::vector<float> base = iota_floats(12, 100.0f, 1.0f);  // f32[3, 4]
  const std::vector<float> a = {1, 2, 3}, b = {5, 6, 7};
  // Column 2: three elements four apart, written by a scatter.
  const Program program = out_into_view_program(
      "aten::mul.out", 3, 4, strided(DType::kFloat32, {3}, {4}, /*offset=*/2), /*with_alpha=*/false);
  const runtime::DeviceAddress s0 = upload(base);
  executor_->run(executor_->compile(program), bind({s0, upload(a), upload(b)}), stream_);
  const std::vector<float> y = download<float>(s0, 12);
  for (size_t i = 0; i < 12; ++i) {
    const float expected = i % 4 == 2 ? a[i / 4] * b[i / 4] : base[i];
    EXPECT_FLOAT_EQ(y[i], expected) << "element " << i;
  }
}

TEST_F(PjrtExecutorTest, ReadsATransposedView) {
  const std::vector<float> x = iota_floats(6, 1.0f, 1.0f);  // f32[2, 3]
  const Program program = transposed_neg_program(2, 3);
  const runtime::DeviceAddress y = executor_->allocate(0, 6 * sizeof(float), 0);
  executor_->run(executor_->compile(program), bind({upload(x), y}), stream_);
  const std::vector<float> t = download<float>(y, 6);  // f32[3, 2] = -x.T
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) EXPECT_FLOAT_EQ(t[i * 2 + j], -x[j * 3 + i]) << i << "," << j;
  }
}

TEST_F(PjrtExecutorTest, Float32BytesRoundTrip) {
  const std::vector<float> x = {0.0f, -0.0f, 1.0f / 3.0f, -1e30f, 1e-38f, 123456.789f};
  const Program program = unary_program("aten::neg", row_major(DType::kFloat32, {6}),
                                        row_major(DType::kFloat32, {6}));
  const runtime::DeviceAddress y = executor_->allocate(0, sizeof(float) * 6, 0);
  executor_->run(executor_->compile(program), bind({upload(x), y}), stream_);
  const std::vector<float> back = download<float>(y, 6);
  for (size_t i = 0; i < 6; ++i) {
    const float expected = -x[i];
    EXPECT_EQ(std::memcmp(&back[i], &expected, 4), 0) << "element " << i << ": " << back[i];
  }
}

TEST_F(PjrtExecutorTest, Int64BytesRoundTrip) {
  // Values past 32 bits catch a wrong byte order or a truncating conversion.
  const std::vector<int64_t> x = {0, 1, -1, (int64_t{1} << 40) + 3, -(int64_t{1} << 62), 3000000000};
  const std::vector<int64_t> w = {7, -3, 2, 5, 1, 3};
  const Program program = binary_program("aten::mul.Tensor", row_major(DType::kInt64, {6}),
                                         row_major(DType::kInt64, {6}), row_major(DType::kInt64, {6}));
  const runtime::DeviceAddress y = executor_->allocate(0, sizeof(int64_t) * 6, 0);
  executor_->run(executor_->compile(program), bind({upload(x), upload(w), y}), stream_);
  const std::vector<int64_t> back = download<int64_t>(y, 6);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(back[i], x[i] * w[i]) << "element " << i;
}

TEST_F(PjrtExecutorTest, BFloat16BytesRoundTrip) {
  const std::vector<float> values = {1.5f, -2.25f, 3.0f, 0.15625f, -96.0f};
  std::vector<uint16_t> x;
  for (const float v : values) x.push_back(to_bf16(v));
  const Program program = unary_program("aten::neg", row_major(DType::kBFloat16, {5}),
                                        row_major(DType::kBFloat16, {5}));
  const runtime::DeviceAddress y = executor_->allocate(0, 2 * 5, 0);
  executor_->run(executor_->compile(program), bind({upload(x), y}), stream_);
  const std::vector<uint16_t> back = download<uint16_t>(y, 5);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(back[i], to_bf16(-values[i])) << "element " << i;
}

TEST_F(PjrtExecutorTest, UnknownOpIsNotSupportedYet) {
  const Program program = unary_program("aten::frobnicate", row_major(DType::kFloat32, {4}),
                                        row_major(DType::kFloat32, {4}));
  try {
    executor_->compile(program);
    FAIL() << "compiled an op without a lowering";
  } catch (const std::invalid_argument& error) {
    EXPECT_EQ(std::string(error.what()).rfind("not supported yet: no StableHLO lowering for aten::frobnicate", 0),
              0u)
        << error.what();
  }
}

TEST_F(PjrtExecutorTest, FailingRunIsRaisedAtSynchronizeNamingTheOp) {
  const Program program = add_program(1.0);  // f32[8, 4]: 128-byte storages
  const auto executable = executor_->compile(program);
  const runtime::DeviceAddress small = executor_->allocate(0, 64, 0);
  const runtime::DeviceAddress fine = executor_->allocate(0, 128, 0);
  const runtime::DeviceAddress out = executor_->allocate(0, 128, 0);
  executor_->run(executable, bind({small, fine, out}, dynamic_scalars(program)),
                 stream_);  // returns at once: the failure is the task's
  try {
    stream_.synchronize();
    FAIL() << "a run on a 64-byte buffer for a 128-byte storage succeeded";
  } catch (const runtime::AsyncOpError& error) {
    EXPECT_EQ(error.op_name(), "aten::add.Tensor");
    EXPECT_NE(std::string(error.what()).find("128 bytes in the program but its buffer has 64"),
              std::string::npos)
        << error.what();
  }
  // The stream keeps working after the error was raised.
  executor_->run(executable, bind({fine, fine, out}, dynamic_scalars(program)),
                 stream_);
  EXPECT_NO_THROW(stream_.synchronize());
}

TEST_F(PjrtExecutorTest, UnwrittenBuffersReadAsZerosAndPartialCopiesWork) {
  const runtime::DeviceAddress slot = executor_->allocate(0, 4 * sizeof(float), 0);
  EXPECT_EQ(executor_->current_buffer(slot), nullptr);
  EXPECT_EQ(download<float>(slot, 4), std::vector<float>(4, 0.0f));
  const std::vector<float> part = {7.0f, 8.0f};
  executor_->copy_to_device(part.data(), slot + 2 * sizeof(float), sizeof(part[0]) * 2, stream_);
  stream_.synchronize();
  EXPECT_EQ(download<float>(slot, 4), (std::vector<float>{0, 0, 7, 8}));
  EXPECT_EQ(download<float>(slot + 3 * sizeof(float), 1), std::vector<float>{8});
  // A whole copy shares the immutable buffer.
  const runtime::DeviceAddress copy = executor_->allocate(0, 4 * sizeof(float), 0);
  executor_->copy_on_device(slot, copy, 4 * sizeof(float), stream_);
  stream_.synchronize();
  EXPECT_EQ(executor_->current_buffer(copy), executor_->current_buffer(slot));
  executor_->free(0, slot);
  EXPECT_EQ(download<float>(copy, 4), (std::vector<float>{0, 0, 7, 8}));
  EXPECT_EQ(executor_->live_slots(), 1u);
}

TEST_F(PjrtExecutorTest, ReadsAfterAnInPlaceWriteSeeTheNewContents) {
  // s0 = x (live out), s1 = w; %2 = add_.Tensor(%0, %1, 2) over s0; %3 = mul.Tensor(%0, %1) in
  // live-out s2. %0 read at node 1 is s0 as of node 1: x + 2w (program order, as on CPU).
  Program program = inplace_add_program({4}, 2.0);
  const TensorType type = row_major(DType::kFloat32, {4});
  const StorageId product = program.add_storage(type.extent_bytes(), false, /*live_out=*/true);
  program.add_node(make_node("aten::mul.Tensor", {Argument::tensor(0), Argument::tensor(1)},
                             {{0, Access::kRead}, {1, Access::kRead}, {product, Access::kWrite}}));
  program.add_return(type, product);
  const std::vector<float> x = {1, 2, 3, 4}, w = {0.5f, -1, 2, 0};
  const runtime::DeviceAddress s0 = upload(x), s2 = executor_->allocate(0, 16, 0);
  executor_->run(executor_->compile(program), bind({s0, upload(w), s2}, dynamic_scalars(program)),
                 stream_);
  const std::vector<float> updated = download<float>(s0, 4), y = download<float>(s2, 4);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_FLOAT_EQ(updated[i], x[i] + 2 * w[i]) << i;
    EXPECT_FLOAT_EQ(y[i], (x[i] + 2 * w[i]) * w[i]) << i;
  }
}

TEST_F(PjrtExecutorTest, FreeingABufferKeepsItForRunsAlreadyQueued) {
  const Program program = unary_program("aten::neg", row_major(DType::kFloat32, {4}),
                                        row_major(DType::kFloat32, {4}));
  const auto executable = executor_->compile(program);
  const std::vector<float> x = {1, 2, 3, 4};
  const runtime::DeviceAddress in = executor_->allocate(0, 16, 0), out = executor_->allocate(0, 16, 0);
  // All queued before anything runs: the copy, the run, then the free of the input.
  executor_->copy_to_device(x.data(), in, 16, stream_);
  executor_->run(executable, bind({in, out}), stream_);
  executor_->free(0, in);
  EXPECT_EQ(download<float>(out, 4), (std::vector<float>{-1, -2, -3, -4}));
  EXPECT_THROW(executor_->copy_to_host(in, nullptr, 16, stream_), std::invalid_argument);
}

TEST_F(PjrtExecutorTest, PartialCopyOnDeviceKeepsTheRestOfTheTarget) {
  const runtime::DeviceAddress from = upload(std::vector<float>{1, 2, 3, 4});
  const runtime::DeviceAddress to = upload(std::vector<float>{10, 20, 30, 40});
  executor_->copy_on_device(from + 4, to + 8, 2 * sizeof(float), stream_);
  EXPECT_EQ(download<float>(to, 4), (std::vector<float>{10, 20, 2, 3}));
  EXPECT_EQ(download<float>(from, 4), (std::vector<float>{1, 2, 3, 4}));
}

TEST_F(PjrtExecutorTest, ReadsAnExpandedViewAndAnOffsetSlice) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};  // f32[2, 3]
  const runtime::DeviceAddress in = upload(x), out = executor_->allocate(0, 24, 0);
  // Row 1 broadcast to [2, 3] (stride 0 over the rows, offset 3): {4, 5, 6, 4, 5, 6}.
  const Program expanded = unary_program("aten::neg", strided(DType::kFloat32, {2, 3}, {0, 1}, 3),
                                         row_major(DType::kFloat32, {2, 3}), {}, /*in_bytes=*/24);
  executor_->run(executor_->compile(expanded), bind({in, out}), stream_);
  EXPECT_EQ(download<float>(out, 6), (std::vector<float>{-4, -5, -6, -4, -5, -6}));
  // Column 1..2 of each row (f32[2, 2], strides {3, 1}, offset 1): {2, 3, 5, 6}.
  const Program slice = unary_program("aten::neg", strided(DType::kFloat32, {2, 2}, {3, 1}, 1),
                                      row_major(DType::kFloat32, {2, 2}), {}, /*in_bytes=*/24);
  const runtime::DeviceAddress small = executor_->allocate(0, 16, 0);
  executor_->run(executor_->compile(slice), bind({in, small}), stream_);
  EXPECT_EQ(download<float>(small, 4), (std::vector<float>{-2, -3, -5, -6}));
}

TEST_F(PjrtExecutorTest, ReadsStepSlicesAndPermutedViewsAsBoxes) {
  // f32[2, 3, 4] = 0..23. The odd elements of each row (strides {12, 4, 2}, offset 1), and the
  // view permuted to [4, 2, 3] (strides {1, 12, 4}) with a broadcast leading dimension.
  const std::vector<float> x = iota_floats(24, 0.0f, 1.0f);
  const runtime::DeviceAddress in = upload(x);
  const Program odd = unary_program("aten::neg", strided(DType::kFloat32, {2, 3, 2}, {12, 4, 2}, 1),
                                    row_major(DType::kFloat32, {2, 3, 2}), {}, /*in_bytes=*/96);
  const runtime::DeviceAddress odd_out = executor_->allocate(0, 48, 0);
  executor_->run(executor_->compile(odd), bind({in, odd_out}), stream_);
  std::vector<float> expected;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 2; ++k) expected.push_back(-static_cast<float>(12 * i + 4 * j + 2 * k + 1));
  EXPECT_EQ(download<float>(odd_out, 12), expected);
  const Program permuted = unary_program("aten::neg", strided(DType::kFloat32, {2, 4, 2, 3}, {0, 1, 12, 4}),
                                         row_major(DType::kFloat32, {2, 4, 2, 3}), {}, /*in_bytes=*/96);
  const runtime::DeviceAddress permuted_out = executor_->allocate(0, 192, 0);
  executor_->run(executor_->compile(permuted), bind({in, permuted_out}), stream_);
  expected.clear();
  for (int b = 0; b < 2; ++b)
    for (int k = 0; k < 4; ++k)
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j) expected.push_back(-static_cast<float>(12 * i + 4 * j + k));
  EXPECT_EQ(download<float>(permuted_out, 48), expected);
}

// A wrapped number (`x * 2.5`) is a host storage: bound by its host address, uploaded at run().
TEST_F(PjrtExecutorTest, HostStorageIsARunTimeOperand) {
  Program program = binary_program("aten::mul.Tensor", row_major(DType::kFloat32, {8}),
                                   row_major(DType::kFloat64, {}), row_major(DType::kFloat32, {8}));
  program.storages[1].on_host = true;
  const auto executable = executor_->compile(program);
  const std::vector<float> x = iota_floats(8, -2.0f, 0.5f);
  const runtime::DeviceAddress sx = upload(x);
  const runtime::DeviceAddress sy = executor_->allocate(0, 8 * sizeof(float), 0);
  for (const double expected : {2.5, -1.0}) {
    double factor = expected;
    executor_->run(executable, bind({sx, reinterpret_cast<runtime::DeviceAddress>(&factor), sy}),
                   stream_);
    factor = 1e9;  // run() has taken its bytes already
    const std::vector<float> y = download<float>(sy, 8);
    for (size_t i = 0; i < 8; ++i) {
      EXPECT_FLOAT_EQ(y[i], x[i] * static_cast<float>(expected)) << "factor " << expected;
    }
  }
}

// x[i, j] with both index tensors in host memory (x[[0, 2], [1, 3]] passes CPU index tensors):
// each host storage is its own run-time operand, read when run() is called. A one-element host
// storage whose bytes equal an earlier Scalar's (an int64 1 beside alpha=1) is a 1-D operand,
// not that Scalar's 0-d buffer.
TEST_F(PjrtExecutorTest, SeveralHostStoragesAreSeparateRunTimeOperands) {
  for (const int64_t count : {1, 2, 3}) {
    Program program;
    const TensorType self_type = row_major(DType::kFloat32, {4, 5});
    const TensorType index_type = row_major(DType::kInt64, {count});
    const TensorType out_type = row_major(DType::kFloat32, {count});
    const StorageId self = program.add_storage(self_type.extent_bytes(), true);
    const StorageId rows = program.add_storage(index_type.extent_bytes(), true, false, /*on_host=*/true);
    const StorageId cols = program.add_storage(index_type.extent_bytes(), true, false, /*on_host=*/true);
    const StorageId out = program.add_storage(out_type.extent_bytes(), false, /*live_out=*/true);
    Node node;
    node.op = "aten::index.Tensor";
    node.args = {Argument::tensor(program.add_input(self_type, self)),
                 Argument::tensor_list({program.add_input(index_type, rows), program.add_input(index_type, cols)})};
    node.accesses = {{self, Access::kRead}, {rows, Access::kRead}, {cols, Access::kRead}, {out, Access::kWrite}};
    program.add_node(std::move(node));
    program.add_return(out_type, out);
    const auto executable = executor_->compile(program);
    // An int Scalar operand of value 1 first: the operand cache then holds a 0-d s64 1.
    Program add_one = add_program(1.0);
    add_one.nodes[0].args[2] = Argument::scalar_value({ScalarValue::Kind::kInt, 1, 0.0, 0.0});
    executor_->run(executor_->compile(add_one),
                   bind({upload(iota_floats(32, 0.0f, 1.0f)), upload(iota_floats(32, 0.0f, 1.0f)),
                         executor_->allocate(0, 128, 0)},
                        dynamic_scalars(add_one)),
                   stream_);
    const std::vector<float> x = iota_floats(20, 0.0f, 1.0f);  // x[r][c] = 5 r + c
    const runtime::DeviceAddress sx = upload(x);
    const runtime::DeviceAddress sy = executor_->allocate(0, static_cast<size_t>(4 * count), 0);
    std::vector<int64_t> r = {1, 2, 3}, c = {1, 3, 4};
    r.resize(static_cast<size_t>(count));
    c.resize(static_cast<size_t>(count));
    executor_->run(executable, bind({sx, reinterpret_cast<runtime::DeviceAddress>(r.data()),
                                     reinterpret_cast<runtime::DeviceAddress>(c.data()), sy}),
                   stream_);
    std::fill(r.begin(), r.end(), 0);  // run() has taken their bytes already
    std::fill(c.begin(), c.end(), 0);
    const std::vector<float> y = download<float>(sy, static_cast<size_t>(count));
    const std::vector<float> expected = {6.0f, 13.0f, 19.0f};
    for (size_t i = 0; i < y.size(); ++i) EXPECT_EQ(y[i], expected[i]) << count << " indices, element " << i;
  }
}

TEST_F(PjrtExecutorTest, CapacityBoundsAllocationsAndStatisticsFollowThem) {
  auto bounded = PjrtExecutor::create("cpu", torch_tpu::executors::pjrt::testing::search_dirs(), 1000);
  const runtime::DeviceAddress a = bounded->allocate(0, 600, 0);
  EXPECT_THROW(bounded->allocate(0, 600, 0), runtime::OutOfMemoryError);
  runtime::MemoryStats stats = bounded->memory_stats(0);
  EXPECT_EQ(stats.allocated_bytes[runtime::kAllPools].current, 600);
  EXPECT_EQ(stats.num_ooms, 1);
  bounded->free(0, a);
  const runtime::DeviceAddress b = bounded->allocate(0, 900, 0);
  stats = bounded->memory_stats(0);
  EXPECT_EQ(stats.allocated_bytes[runtime::kAllPools].current, 900);
  EXPECT_EQ(stats.allocated_bytes[runtime::kAllPools].peak, 900);
  EXPECT_EQ(stats.allocation[runtime::kAllPools].allocated, 2);
  bounded->reset_memory_stats(0, executors::Executor::StatsReset::kAccumulated);
  EXPECT_EQ(bounded->memory_stats(0).num_ooms, 0);
  EXPECT_EQ(bounded->memory_capacity(0), 1000u);
  bounded->free(0, b);
}

TEST_F(PjrtExecutorTest, DiskCacheServesALaterExecutorWithoutACompile) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("pjrt-cache-test-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  const Program program = add_program(1.0);
  const std::vector<float> x = iota_floats(32, -3.0f, 0.5f), w = iota_floats(32, 1.0f, 0.25f);
  for (int process = 0; process < 2; ++process) {
    auto executor = PjrtExecutor::create("cpu", torch_tpu::executors::pjrt::testing::search_dirs());
    executor->use_disk_cache(dir);
    const auto executable = executor->compile(program);
    EXPECT_EQ(executor->disk_cache()->hits(), process) << "process " << process;
    EXPECT_EQ(executor->disk_cache()->stores(), 1 - process);
    const runtime::DeviceAddress sx = executor->allocate(0, 128, 0), sw = executor->allocate(0, 128, 0);
    const runtime::DeviceAddress sy = executor->allocate(0, 128, 0);
    executor->copy_to_device(x.data(), sx, 128, stream_);
    executor->copy_to_device(w.data(), sw, 128, stream_);
    executor->run(executable, bind({sx, sw, sy}, dynamic_scalars(add_program(2.0))), stream_);
    std::vector<float> y(32);
    executor->copy_to_host(sy, y.data(), 128, stream_);
    stream_.synchronize();
    for (size_t i = 0; i < 32; ++i) EXPECT_FLOAT_EQ(y[i], x[i] + 2.0f * w[i]);
  }
  std::filesystem::remove_all(dir);
}

TEST_F(PjrtExecutorTest, RunsOnTheDeviceItsBuffersAreOnWithStatisticsPerDevice) {
  if (executor_->client().devices().size() < 2) GTEST_SKIP() << "the plugin has one device";
  const std::vector<float> x = iota_floats(32, -3.0f, 0.5f), w = iota_floats(32, 1.0f, 0.25f);
  const runtime::DeviceAddress sx = executor_->allocate(1, 128, 0), sw = executor_->allocate(1, 128, 0);
  const runtime::DeviceAddress sy = executor_->allocate(1, 128, 0);
  EXPECT_EQ(executor_->chip_of(sy), 1);
  EXPECT_EQ(executor_->chip_of(sy + 4096), -1);
  executor_->copy_to_device(x.data(), sx, 128, stream_);
  executor_->copy_to_device(w.data(), sw, 128, stream_);
  // One portable executable serves both devices.
  const auto executable = executor_->compile(add_program(1.0));
  executor_->run(executable, bind({sx, sw, sy}, dynamic_scalars(add_program(2.0))), stream_);
  const std::vector<float> y = download<float>(sy, 32);
  for (size_t i = 0; i < 32; ++i) EXPECT_FLOAT_EQ(y[i], x[i] + 2.0f * w[i]) << i;
  EXPECT_EQ(executor_->memory_stats(1).allocated_bytes[runtime::kAllPools].current, 3 * 128);
  EXPECT_EQ(executor_->memory_stats(0).allocated_bytes[runtime::kAllPools].current, 0);

  // A copy to device 0, whole and in part.
  const runtime::DeviceAddress on_zero = upload(std::vector<float>(32, 7.0f));
  executor_->copy_on_device(sy + 8, on_zero + 16, 32, stream_);
  const std::vector<float> copied = download<float>(on_zero, 32);
  for (size_t i = 0; i < 32; ++i) {
    EXPECT_FLOAT_EQ(copied[i], i >= 4 && i < 12 ? y[i - 2] : 7.0f) << i;
  }
  // Buffers of two devices in one run fail the run, naming the op.
  executor_->run(executable, bind({sx, on_zero, sy}, dynamic_scalars(add_program(2.0))), stream_);
  try {
    stream_.synchronize();
    ADD_FAILURE() << "a run over two devices did not fail";
  } catch (const runtime::AsyncOpError& error) {
    EXPECT_NE(std::string(error.what()).find("more than one device"), std::string::npos) << error.what();
  }
  EXPECT_THROW(executor_->allocate(static_cast<int>(executor_->client().devices().size()), 8, 0),
               std::invalid_argument);
}

TEST_F(PjrtExecutorTest, ReadAndWriteNowReachWholeBuffersAndRanges) {
  const runtime::DeviceAddress slot = upload(iota_floats(8, 0.0f, 1.0f));
  std::vector<float> whole(8);
  executor_->read_now(slot, whole.data(), 32);
  EXPECT_EQ(whole, iota_floats(8, 0.0f, 1.0f));
  const std::vector<float> two = {-1.0f, -2.0f};
  executor_->write_now(two.data(), slot + 12, 8);
  std::vector<float> part(4);
  executor_->read_now(slot + 8, part.data(), 16);
  EXPECT_EQ(part, (std::vector<float>{2.0f, -1.0f, -2.0f, 5.0f}));
  EXPECT_THROW(executor_->read_now(slot + 24, part.data(), 16), runtime::RuntimeError);
}

TEST_F(PjrtExecutorTest, AnInPlaceUpdateDonatesItsBufferOnlyWhenNothingElseHoldsIt) {
  const Program program = inplace_add_program({2, 4}, 3.0);
  const auto executable = executor_->compile(program);
  const auto& lowered = static_cast<const executors::pjrt::PjrtExecutable&>(*executable).lowered;
  EXPECT_EQ(lowered.donatable, (std::vector<std::pair<size_t, size_t>>{{0, 0}}));
  EXPECT_NE(lowered.mlir.find("arg_attrs = [{tf.aliasing_output = 0 : i32}, {}, {}]"), std::string::npos)
      << lowered.mlir;
  const std::vector<float> x = iota_floats(8, 1.0f, 1.0f), w = iota_floats(8, 0.5f, 0.5f);
  const runtime::DeviceAddress self = upload(x), other = upload(w);
  // A whole copy shares the immutable buffer: the first update must not donate it.
  const runtime::DeviceAddress snapshot = executor_->allocate(0, 32, 0);
  executor_->copy_on_device(self, snapshot, 32, stream_);
  for (int update = 0; update < 2; ++update) {  // the second one donates
    executor_->run(executable, bind({self, other}, dynamic_scalars(program)), stream_);
  }
  const std::vector<float> y = download<float>(self, 8);
  for (size_t i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(y[i], x[i] + 6.0f * w[i]) << i;
  EXPECT_EQ(download<float>(snapshot, 8), x);
  EXPECT_EQ(download<float>(other, 8), w);
}
