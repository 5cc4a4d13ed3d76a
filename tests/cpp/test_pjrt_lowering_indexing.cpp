// The indexing and scatter lowerings (indexing.cpp, advanced_indexing.cpp, scatter.cpp,
// index_add.cpp, masked_fill.cpp) run on the CPU plugin. Expected values were computed with
// PyTorch 2.13 CPU on the same inputs: negative indices, broadcast index tensors, None dims,
// non-adjacent index tensors, repeated positions (summed, or the last write kept), NaN in
// max; an index out of range makes the run fail naming the op; what the lowerings refuse runs
// on the host kernel.
#include <cmath>
#include <cstring>
#include <limits>

#include "executors/pjrt/lowering/lower_program.h"
#include "pjrt_lowering_harness.h"

using namespace torch_tpu;
using namespace torch_tpu::ir;
using namespace torch_tpu::ir::testing;
using namespace torch_tpu::executors::pjrt::testing;

namespace {

template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// One op over inputs in external storages. Argument placeholders: Arg::input(i) is the i-th
// input's value, Arg::inputs({i, kAbsent, ...}) an optional tensor list of inputs.
struct Input {
  TensorType type;
  std::vector<uint8_t> bytes;
};

constexpr int64_t kAbsent = -1;

struct Arg {
  enum class Kind { kInput, kInputList, kConstant } kind = Kind::kConstant;
  std::vector<int64_t> inputs_;
  Argument constant;
  static Arg input(int64_t i) { return {Kind::kInput, {i}, {}}; }
  static Arg inputs(std::vector<int64_t> i) { return {Kind::kInputList, std::move(i), {}}; }
  Arg(Argument value) : constant(std::move(value)) {}  // NOLINT: constants read as themselves
  Arg(Kind k, std::vector<int64_t> i, Argument c) : kind(k), inputs_(std::move(i)), constant(std::move(c)) {}
};

// The program: each input in its own external storage; `op`(args) returning `out`, written to
// a created live-out storage, or over input 0's storage when `in_place`.
Program op_program(const std::string& op, const std::vector<Input>& inputs, const std::vector<Arg>& args,
                   const TensorType& out, bool in_place) {
  Program program;
  std::vector<ValueId> values;
  std::vector<StorageId> storages;
  for (size_t i = 0; i < inputs.size(); ++i) {
    storages.push_back(program.add_storage(static_cast<int64_t>(inputs[i].bytes.size()), true,
                                           /*live_out=*/in_place && i == 0));
    values.push_back(program.add_input(inputs[i].type, storages.back()));
  }
  const StorageId result = in_place ? storages[0] : program.add_storage(out.extent_bytes(), false, true);
  Node node;
  node.op = op;
  for (const Arg& arg : args) {
    if (arg.kind == Arg::Kind::kInput) {
      node.args.push_back(Argument::tensor(values[static_cast<size_t>(arg.inputs_[0])]));
    } else if (arg.kind == Arg::Kind::kInputList) {
      std::vector<int64_t> ids;
      for (const int64_t i : arg.inputs_) ids.push_back(i == kAbsent ? kNoValue : values[static_cast<size_t>(i)]);
      node.args.push_back(Argument::tensor_list(ids));
    } else {
      node.args.push_back(arg.constant);
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    node.accesses.push_back({storages[i], in_place && i == 0 ? Access::kReadWrite : Access::kRead});
  }
  if (!in_place) node.accesses.push_back({result, Access::kWrite});
  program.add_node(std::move(node));
  program.add_return(out, result);
  return program;
}

template <typename T>
Input input(DType dtype, std::vector<int64_t> sizes, const std::vector<T>& values) {
  return {row_major(dtype, std::move(sizes)), bytes_of(values)};
}
Input f32(std::vector<int64_t> sizes, const std::vector<float>& values) { return input(DType::kFloat32, std::move(sizes), values); }
Input i64(std::vector<int64_t> sizes, const std::vector<int64_t>& values) { return input(DType::kInt64, std::move(sizes), values); }

Argument integer(int64_t value) { return Argument::int_value(value); }
Argument boolean(bool value) { return Argument::boolean(value); }
Argument text(std::string value) { return Argument::string(std::move(value)); }
Argument int_scalar(int64_t value) { return Argument::scalar_value({ScalarValue::Kind::kInt, value, 0.0, 0.0}); }

bool lowers(const Program& program) {
  try {
    executors::pjrt::lowering::lower_program(program);
    return true;
  } catch (const executors::NotSupported&) {
    return false;
  }
}

class PjrtIndexingLoweringTest : public PjrtExecutorTest {
 protected:
  // Runs the op and returns its result as `count` elements of T (the output's elements).
  template <typename T>
  std::vector<T> run(const std::string& op, const std::vector<Input>& inputs, const std::vector<Arg>& args,
                     const TensorType& out, bool in_place = false) {
    const Program program = op_program(op, inputs, args, out, in_place);
    std::vector<runtime::DeviceAddress> addresses;
    for (const Input& in : inputs) addresses.push_back(upload(in.bytes));
    const auto count = static_cast<size_t>(out.numel());
    const runtime::DeviceAddress result =
        in_place ? addresses[0] : executor_->allocate(0, std::max<size_t>(count * sizeof(T), 1), 0);
    if (!in_place) addresses.push_back(result);
    executor_->run(executor_->compile(program), bind(addresses, dynamic_scalars(program)), stream_);
    stream_.synchronize();
    return download<T>(result, count);
  }

  // Runs the op expecting the run to fail; returns the error's message.
  std::string run_failure(const std::string& op, const std::vector<Input>& inputs, const std::vector<Arg>& args,
                          const TensorType& out) {
    const Program program = op_program(op, inputs, args, out, false);
    std::vector<runtime::DeviceAddress> addresses;
    for (const Input& in : inputs) addresses.push_back(upload(in.bytes));
    addresses.push_back(executor_->allocate(0, std::max<int64_t>(out.extent_bytes(), 1), 0));
    executor_->run(executor_->compile(program), bind(addresses, dynamic_scalars(program)), stream_);
    try {
      stream_.synchronize();
    } catch (const runtime::AsyncOpError& error) {
      EXPECT_EQ(error.op_name(), op);
      return error.what();
    }
    ADD_FAILURE() << op << " ran";
    return "";
  }
};

std::vector<float> arange(size_t count) { return iota_floats(count, 0, 1); }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

// ---- index.Tensor ----

TEST_F(PjrtIndexingLoweringTest, IndexRowsWithNegativeIndices) {
  EXPECT_EQ(run<float>("aten::index.Tensor", {f32({3, 4}, arange(12)), i64({3}, {2, -1, 0})},
                       {Arg::input(0), Arg::inputs({1})}, row_major(DType::kFloat32, {3, 4})),
            (std::vector<float>{8, 9, 10, 11, 8, 9, 10, 11, 0, 1, 2, 3}));
}

TEST_F(PjrtIndexingLoweringTest, IndexANoneDimensionThenATwoDimensionalIndex) {
  // x[:, [[0, 3], [-1, 1]]]: the index's dimensions take the indexed dimension's place.
  EXPECT_EQ(run<float>("aten::index.Tensor", {f32({3, 4}, arange(12)), i64({2, 2}, {0, 3, -1, 1})},
                       {Arg::input(0), Arg::inputs({kAbsent, 1})}, row_major(DType::kFloat32, {3, 2, 2})),
            (std::vector<float>{0, 3, 3, 1, 4, 7, 7, 5, 8, 11, 11, 9}));
}

TEST_F(PjrtIndexingLoweringTest, IndexTensorsBroadcastTogether) {
  // x[[[0], [2]], [1, -1]]
  EXPECT_EQ(run<float>("aten::index.Tensor", {f32({3, 4}, arange(12)), i64({2, 1}, {0, 2}), i64({2}, {1, -1})},
                       {Arg::input(0), Arg::inputs({1, 2})}, row_major(DType::kFloat32, {2, 2})),
            (std::vector<float>{1, 3, 9, 11}));
}

TEST_F(PjrtIndexingLoweringTest, NonAdjacentIndexTensorsPutTheirDimensionsFirst) {
  // y[[1, 0], :, [3, -4]] of a [2, 3, 4] int64 tensor is [2, 3].
  std::vector<int64_t> y(24);
  for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<int64_t>(i);
  EXPECT_EQ(run<int64_t>("aten::index.Tensor", {i64({2, 3, 4}, y), i64({2}, {1, 0}), i64({2}, {3, -4})},
                         {Arg::input(0), Arg::inputs({1, kAbsent, 2})}, row_major(DType::kInt64, {2, 3})),
            (std::vector<int64_t>{15, 19, 23, 0, 4, 8}));
  // y[:, int32 [2, 0]]: trailing dimensions left out are sliced.
  EXPECT_EQ(run<int64_t>("aten::index.Tensor", {i64({2, 3, 4}, y), input(DType::kInt32, {2}, std::vector<int32_t>{2, 0})},
                         {Arg::input(0), Arg::inputs({kAbsent, 1})}, row_major(DType::kInt64, {2, 2, 4})),
            (std::vector<int64_t>{8, 9, 10, 11, 0, 1, 2, 3, 20, 21, 22, 23, 12, 13, 14, 15}));
}

TEST_F(PjrtIndexingLoweringTest, IndexOutOfRangeFailsTheRunNamingTheOp) {
  const std::string message = run_failure("aten::index.Tensor", {f32({3, 4}, arange(12)), i64({2}, {1, -4})},
                                          {Arg::input(0), Arg::inputs({1})}, row_major(DType::kFloat32, {2, 4}));
  EXPECT_TRUE(contains(message, "aten::index.Tensor")) << message;
  EXPECT_TRUE(contains(message, "out of bounds for dimension 0 with size 3")) << message;
}

TEST_F(PjrtIndexingLoweringTest, BooleanMaskIndicesAreRefused) {
  // Their result's shape depends on the mask's data: the host kernel runs them.
  const Program program = op_program("aten::index.Tensor", {f32({3}, arange(3)), input(DType::kBool, {3}, std::vector<uint8_t>{1, 0, 1})},
                                     {Arg::input(0), Arg::inputs({1})}, row_major(DType::kFloat32, {2}), false);
  EXPECT_FALSE(lowers(program));
}

// ---- index_put ----

TEST_F(PjrtIndexingLoweringTest, IndexPutAccumulateSumsRepeatedIndicesInPlace) {
  EXPECT_EQ(run<float>("aten::_index_put_impl_", {f32({5}, std::vector<float>(5, 0)), i64({3}, {1, 1, 3}), f32({3}, {1, 2, 3})},
                       {Arg::input(0), Arg::inputs({1}), Arg::input(2), boolean(true), boolean(false)},
                       row_major(DType::kFloat32, {5}), /*in_place=*/true),
            (std::vector<float>{0, 3, 0, 3, 0}));
}

TEST_F(PjrtIndexingLoweringTest, IndexPutWithoutAccumulateKeepsTheLastWrite) {
  EXPECT_EQ(run<float>("aten::_index_put_impl_", {f32({5}, std::vector<float>(5, 0)), i64({3}, {1, 1, -1}), f32({3}, {1, 2, 3})},
                       {Arg::input(0), Arg::inputs({1}), Arg::input(2), boolean(false), boolean(false)},
                       row_major(DType::kFloat32, {5}), /*in_place=*/true),
            (std::vector<float>{0, 2, 0, 0, 3}));
}

TEST_F(PjrtIndexingLoweringTest, IndexPutBroadcastsValuesOverRows) {
  EXPECT_EQ(run<float>("aten::index_put", {f32({3, 2}, std::vector<float>(6, 0)), i64({2}, {2, 0}), f32({2}, {7, 8})},
                       {Arg::input(0), Arg::inputs({1}), Arg::input(2), boolean(false)}, row_major(DType::kFloat32, {3, 2})),
            (std::vector<float>{7, 8, 0, 0, 7, 8}));
}

TEST_F(PjrtIndexingLoweringTest, IndexPutAccumulatesA0dInt64ValueAtTwoIndexTensors) {
  EXPECT_EQ(run<int64_t>("aten::index_put", {i64({2, 3}, {0, 1, 2, 3, 4, 5}), i64({3}, {0, 0, 1}), i64({3}, {2, 2, -3}), i64({}, {10})},
                         {Arg::input(0), Arg::inputs({1, 2}), Arg::input(3), boolean(true)}, row_major(DType::kInt64, {2, 3})),
            (std::vector<int64_t>{0, 1, 22, 13, 4, 5}));
}

TEST_F(PjrtIndexingLoweringTest, IndexPutOutOfRangeFailsTheRun) {
  const std::string message = run_failure("aten::index_put", {f32({3}, arange(3)), i64({1}, {3}), f32({1}, {1})},
                                          {Arg::input(0), Arg::inputs({1}), Arg::input(2), boolean(true)},
                                          row_major(DType::kFloat32, {3}));
  EXPECT_TRUE(contains(message, "aten::index_put: an index is out of bounds for dimension 0 with size 3")) << message;
}

TEST_F(PjrtIndexingLoweringTest, IndexPutRefusesHalfAccumulationAndOrderDependentOverwrites) {
  const Input bf16 = input(DType::kBFloat16, {3}, std::vector<uint16_t>{0, 0, 0});
  EXPECT_FALSE(lowers(op_program("aten::index_put", {bf16, i64({2}, {1, 1}), bf16},
                                 {Arg::input(0), Arg::inputs({1}), Arg::input(2), boolean(true)},
                                 row_major(DType::kBFloat16, {3}), false)));
  // A [2, 2] index overwriting: ATen's order of repeated writes follows its iterator's strides.
  EXPECT_FALSE(lowers(op_program("aten::index_put", {f32({3}, arange(3)), i64({2, 2}, {0, 1, 1, 0}), f32({}, {1})},
                                 {Arg::input(0), Arg::inputs({1}), Arg::input(2), boolean(false)},
                                 row_major(DType::kFloat32, {3}), false)));
}

// ---- scatter ----

TEST_F(PjrtIndexingLoweringTest, ScatterAddAlongDimOne) {
  EXPECT_EQ(run<float>("aten::scatter_add", {f32({2, 3}, std::vector<float>(6, 0)), i64({2, 3}, {0, 0, 2, 1, 1, 1}), f32({2, 3}, {1, 2, 3, 4, 5, 6})},
                       {Arg::input(0), integer(1), Arg::input(1), Arg::input(2)}, row_major(DType::kFloat32, {2, 3})),
            (std::vector<float>{3, 0, 3, 0, 15, 0}));
}

TEST_F(PjrtIndexingLoweringTest, ScatterReadsSrcOnlyWithinTheIndexAndKeepsTheLastWrite) {
  EXPECT_EQ(run<float>("aten::scatter.src", {f32({2, 3}, std::vector<float>(6, 0)), i64({1, 3}, {1, 1, 0}), f32({2, 3}, {1, 2, 3, 4, 5, 6})},
                       {Arg::input(0), integer(0), Arg::input(1), Arg::input(2)}, row_major(DType::kFloat32, {2, 3})),
            (std::vector<float>{0, 0, 3, 1, 2, 0}));
  EXPECT_EQ(run<float>("aten::scatter.src", {f32({4}, std::vector<float>(4, 0)), i64({4}, {2, 2, 1, 2}), f32({4}, {1, 2, 3, 4})},
                       {Arg::input(0), integer(-1), Arg::input(1), Arg::input(2)}, row_major(DType::kFloat32, {4})),
            (std::vector<float>{0, 3, 4, 0}));
}

TEST_F(PjrtIndexingLoweringTest, ScatterValueIntoInt32) {
  EXPECT_EQ(run<int32_t>("aten::scatter.value", {input(DType::kInt32, {2, 2}, std::vector<int32_t>{0, 0, 0, 0}), i64({2, 1}, {1, 0})},
                         {Arg::input(0), integer(1), Arg::input(1), int_scalar(7)}, row_major(DType::kInt32, {2, 2})),
            (std::vector<int32_t>{0, 7, 7, 0}));
}

TEST_F(PjrtIndexingLoweringTest, ScatterReduceMeanOfIntegersFloorsWithAndWithoutSelf) {
  const std::vector<Input> inputs = {i64({3}, {10, 10, 10}), i64({5}, {0, 0, 1, 1, 1}), i64({5}, {1, 2, -3, -4, -4})};
  EXPECT_EQ(run<int64_t>("aten::scatter_reduce.two", inputs,
                         {Arg::input(0), integer(0), Arg::input(1), Arg::input(2), text("mean"), boolean(true)},
                         row_major(DType::kInt64, {3})),
            (std::vector<int64_t>{4, -1, 10}));
  EXPECT_EQ(run<int64_t>("aten::scatter_reduce.two", inputs,
                         {Arg::input(0), integer(0), Arg::input(1), Arg::input(2), text("mean"), boolean(false)},
                         row_major(DType::kInt64, {3})),
            (std::vector<int64_t>{1, -4, 10}));
}

TEST_F(PjrtIndexingLoweringTest, ScatterReduceAmaxPropagatesNaNAndAminIncludesSelf) {
  const std::vector<float> amax = run<float>(
      "aten::scatter_reduce.two", {f32({3}, {1, 5, -2}), i64({3}, {0, 0, 1}), f32({3}, {3, std::nanf(""), 4})},
      {Arg::input(0), integer(0), Arg::input(1), Arg::input(2), text("amax"), boolean(false)}, row_major(DType::kFloat32, {3}));
  ASSERT_EQ(amax.size(), 3u);
  EXPECT_TRUE(std::isnan(amax[0])) << amax[0];
  EXPECT_EQ(amax[1], 4);
  EXPECT_EQ(amax[2], -2);
  EXPECT_EQ(run<float>("aten::scatter_reduce.two", {f32({3}, {1, 5, -2}), i64({3}, {0, 0, 1}), f32({3}, {3, -7, 4})},
                       {Arg::input(0), integer(0), Arg::input(1), Arg::input(2), text("amin"), boolean(true)},
                       row_major(DType::kFloat32, {3})),
            (std::vector<float>{-7, 4, -2}));
}

TEST_F(PjrtIndexingLoweringTest, ScatterReduceProductsAndHalfPrecisionMax) {
  EXPECT_EQ(run<int64_t>("aten::scatter.reduce", {i64({3}, {2, 3, 4}), i64({3}, {0, 0, 2}), i64({3}, {5, 6, 7})},
                         {Arg::input(0), integer(0), Arg::input(1), Arg::input(2), text("multiply")}, row_major(DType::kInt64, {3})),
            (std::vector<int64_t>{60, 3, 28}));
  EXPECT_EQ(run<float>("aten::scatter_reduce.two", {f32({3}, {2, 3, 4}), i64({2}, {2, 2}), f32({2}, {5, 6})},
                       {Arg::input(0), integer(0), Arg::input(1), Arg::input(2), text("prod"), boolean(false)},
                       row_major(DType::kFloat32, {3})),
            (std::vector<float>{2, 3, 30}));
  const Input b = input(DType::kBFloat16, {3}, std::vector<uint16_t>{to_bf16(1), to_bf16(2), to_bf16(3)});
  EXPECT_EQ(run<uint16_t>("aten::scatter_reduce.two", {b, i64({2}, {1, 1}), input(DType::kBFloat16, {2}, std::vector<uint16_t>{to_bf16(5), to_bf16(6)})},
                          {Arg::input(0), integer(0), Arg::input(1), Arg::input(2), text("amax"), boolean(true)},
                          row_major(DType::kBFloat16, {3})),
            (std::vector<uint16_t>{to_bf16(1), to_bf16(6), to_bf16(3)}));
}

TEST_F(PjrtIndexingLoweringTest, ScatterAddOfBoolIsOr) {
  EXPECT_EQ(run<uint8_t>("aten::scatter_add", {input(DType::kBool, {3}, std::vector<uint8_t>{1, 0, 0}), i64({2}, {1, 1}),
                                               input(DType::kBool, {2}, std::vector<uint8_t>{1, 0})},
                         {Arg::input(0), integer(0), Arg::input(1), Arg::input(2)}, row_major(DType::kBool, {3})),
            (std::vector<uint8_t>{1, 1, 0}));
}

TEST_F(PjrtIndexingLoweringTest, ScatterNegativeIndexFailsTheRun) {
  // scatter does not wrap negative indices: ATen raises.
  const std::string message = run_failure("aten::scatter.src", {f32({3}, arange(3)), i64({1}, {-1}), f32({1}, {1})},
                                          {Arg::input(0), integer(0), Arg::input(1), Arg::input(2)}, row_major(DType::kFloat32, {3}));
  EXPECT_TRUE(contains(message, "aten::scatter.src: an index is out of bounds for dimension 0 with size 3")) << message;
}

// ATen accumulates half-precision scatter sums in float and rounds once (PyTorch 2.13 CPU:
// [256, 3, 0].scatter_add(0, [0, 0, 1], [1, 1, 4]) in bf16 is [258, 7, 0], where rounding after
// each update would keep 256); a mean divides that rounded sum by the count: [86, 3.5, 0].
TEST_F(PjrtIndexingLoweringTest, HalfPrecisionScatterSumsAccumulateInFloat) {
  const auto bf16s = [](std::vector<float> values) {
    std::vector<uint16_t> bits;
    for (const float v : values) bits.push_back(to_bf16(v));
    return bits;
  };
  const std::vector<Input> inputs = {input(DType::kBFloat16, {3}, bf16s({256, 3, 0})), i64({3}, {0, 0, 1}),
                                     input(DType::kBFloat16, {3}, bf16s({1, 1, 4}))};
  EXPECT_EQ(run<uint16_t>("aten::scatter_add", inputs, {Arg::input(0), integer(0), Arg::input(1), Arg::input(2)},
                          row_major(DType::kBFloat16, {3})),
            bf16s({258, 7, 0}));
  EXPECT_EQ(run<uint16_t>("aten::scatter_reduce.two", inputs,
                          {Arg::input(0), integer(0), Arg::input(1), Arg::input(2), text("mean"), boolean(true)},
                          row_major(DType::kBFloat16, {3})),
            bf16s({86, 3.5, 0}));
  EXPECT_EQ(run<uint16_t>("aten::scatter_reduce.two", inputs,
                          {Arg::input(0), integer(0), Arg::input(1), Arg::input(2), text("sum"), boolean(false)},
                          row_major(DType::kBFloat16, {3})),
            bf16s({2, 4, 0}));
}

// A 0-d self, index or src counts as 1-D of one element (PyTorch 2.13 CPU: gather(2.5, 0, 0)
// is 2.5; gather([1, 2, 3], 0, 2) is 3; scatter_add(2.5, 0, 0, 1.5) is 4).
TEST_F(PjrtIndexingLoweringTest, ZeroDimensionalOperandsCountAsOneElement) {
  EXPECT_EQ(run<float>("aten::gather", {f32({}, {2.5f}), i64({}, {0})}, {Arg::input(0), integer(0), Arg::input(1), boolean(false)},
                       row_major(DType::kFloat32, {})),
            (std::vector<float>{2.5f}));
  EXPECT_EQ(run<float>("aten::gather", {f32({3}, {1, 2, 3}), i64({}, {2})}, {Arg::input(0), integer(-1), Arg::input(1), boolean(false)},
                       row_major(DType::kFloat32, {})),
            (std::vector<float>{3}));
  EXPECT_EQ(run<float>("aten::index_select", {f32({}, {2.5f}), i64({1}, {0})}, {Arg::input(0), integer(0), Arg::input(1)},
                       row_major(DType::kFloat32, {})),
            (std::vector<float>{2.5f}));
  EXPECT_EQ(run<float>("aten::scatter_add", {f32({}, {2.5f}), i64({}, {0}), f32({}, {1.5f})},
                       {Arg::input(0), integer(0), Arg::input(1), Arg::input(2)}, row_major(DType::kFloat32, {})),
            (std::vector<float>{4}));
  const std::string message = run_failure("aten::scatter.src", {f32({}, {2.5f}), i64({}, {1}), f32({}, {1.5f})},
                                          {Arg::input(0), integer(0), Arg::input(1), Arg::input(2)}, row_major(DType::kFloat32, {}));
  EXPECT_TRUE(contains(message, "out of bounds for dimension 0 with size 1")) << message;
}

// ---- index_add, index_copy, embedding_dense_backward ----

TEST_F(PjrtIndexingLoweringTest, IndexAddScalesByAlphaAndSumsRepeatedRows) {
  EXPECT_EQ(run<float>("aten::index_add", {f32({3, 2}, std::vector<float>(6, 1)), i64({3}, {2, 0, 2}), f32({3, 2}, {1, 2, 3, 4, 5, 6})},
                       {Arg::input(0), integer(0), Arg::input(1), Arg::input(2), int_scalar(2)}, row_major(DType::kFloat32, {3, 2})),
            (std::vector<float>{7, 9, 1, 1, 13, 17}));
  const std::string message = run_failure("aten::index_add", {f32({3}, arange(3)), i64({1}, {-1}), f32({1}, {1})},
                                          {Arg::input(0), integer(0), Arg::input(1), Arg::input(2), int_scalar(1)},
                                          row_major(DType::kFloat32, {3}));
  EXPECT_TRUE(contains(message, "aten::index_add: index out of range in self")) << message;
}

TEST_F(PjrtIndexingLoweringTest, IndexCopyAlongDimOne) {
  EXPECT_EQ(run<int64_t>("aten::index_copy", {i64({2, 3}, std::vector<int64_t>(6, 0)), i64({2}, {2, 0}), i64({2, 2}, {1, 2, 3, 4})},
                         {Arg::input(0), integer(1), Arg::input(1), Arg::input(2)}, row_major(DType::kInt64, {2, 3})),
            (std::vector<int64_t>{2, 0, 1, 4, 0, 3}));
}

TEST_F(PjrtIndexingLoweringTest, EmbeddingDenseBackwardSkipsThePaddingIndex) {
  EXPECT_EQ(run<float>("aten::embedding_dense_backward", {f32({2, 2, 2}, arange(8)), i64({2, 2}, {1, 3, 1, 0})},
                       {Arg::input(0), Arg::input(1), integer(4), integer(3), boolean(false)}, row_major(DType::kFloat32, {4, 2})),
            (std::vector<float>{6, 7, 4, 6, 0, 0, 0, 0}));
}

// ---- masked_fill, take ----

TEST_F(PjrtIndexingLoweringTest, MaskedFillTruncatesADoubleIntoInt32AndBroadcastsTheMask) {
  EXPECT_EQ(run<int32_t>("aten::masked_fill.Scalar", {input(DType::kInt32, {2, 3}, std::vector<int32_t>(6, 0)),
                                                      input(DType::kBool, {3}, std::vector<uint8_t>{1, 0, 1})},
                         {Arg::input(0), Arg::input(1), double_scalar(-2.7)}, row_major(DType::kInt32, {2, 3})),
            (std::vector<int32_t>{-2, 0, -2, -2, 0, -2}));
  EXPECT_EQ(run<float>("aten::masked_fill.Tensor", {f32({2, 3}, arange(6)), input(DType::kBool, {2, 1}, std::vector<uint8_t>{1, 0}),
                                                    input(DType::kFloat64, {}, std::vector<double>{9.5})},
                       {Arg::input(0), Arg::input(1), Arg::input(2)}, row_major(DType::kFloat32, {2, 3})),
            (std::vector<float>{9.5, 9.5, 9.5, 3, 4, 5}));
}

TEST_F(PjrtIndexingLoweringTest, MaskedFillOverflowingValueFailsTheRun) {
  const std::string message = run_failure("aten::masked_fill.Scalar", {f32({2}, arange(2)), input(DType::kBool, {2}, std::vector<uint8_t>{1, 0})},
                                          {Arg::input(0), Arg::input(1), double_scalar(1e39)}, row_major(DType::kFloat32, {2}));
  EXPECT_TRUE(contains(message, "value cannot be converted to type float without overflow")) << message;
}

TEST_F(PjrtIndexingLoweringTest, TakeWrapsNegativeIndices) {
  std::vector<float> x = arange(6);
  for (float& v : x) v *= 10;
  EXPECT_EQ(run<float>("aten::take", {f32({2, 3}, x), i64({2, 2}, {-1, 0, 5, 2})}, {Arg::input(0), Arg::input(1)},
                       row_major(DType::kFloat32, {2, 2})),
            (std::vector<float>{50, 0, 50, 20}));
  const std::string message = run_failure("aten::take", {f32({2, 3}, x), i64({1}, {6})}, {Arg::input(0), Arg::input(1)},
                                          row_major(DType::kFloat32, {1}));
  EXPECT_TRUE(contains(message, "aten::take: out of range")) << message;
}

// ---- cat, where, isneginf ----

// cat skips a 1-D input without elements whatever the others' rank (PyTorch 2.13 CPU:
// cat([empty(0), [[0, 1], [2, 3]]], 1) is [[0, 1], [2, 3]]).
TEST_F(PjrtIndexingLoweringTest, CatSkipsAnEmptyOneDimensionalInput) {
  EXPECT_EQ(run<float>("aten::cat", {f32({0}, {}), f32({2, 2}, {0, 1, 2, 3}), f32({2, 1}, {4, 5})},
                       {Arg::inputs({0, 1, 2}), integer(1)}, row_major(DType::kFloat32, {2, 3})),
            (std::vector<float>{0, 1, 4, 2, 3, 5}));
}

// where.self_out (what _safe_softmax's decomposition writes through) and isneginf / isposinf.
TEST_F(PjrtIndexingLoweringTest, WhereOutAndInfinityTests) {
  const float inf = std::numeric_limits<float>::infinity();
  const Input x = f32({4}, {-inf, 1, inf, -2});
  EXPECT_EQ(run<uint8_t>("aten::isneginf", {x}, {Arg::input(0)}, row_major(DType::kBool, {4})), (std::vector<uint8_t>{1, 0, 0, 0}));
  EXPECT_EQ(run<uint8_t>("aten::isposinf", {x}, {Arg::input(0)}, row_major(DType::kBool, {4})), (std::vector<uint8_t>{0, 0, 1, 0}));
  EXPECT_EQ(run<uint8_t>("aten::isneginf", {i64({2}, {std::numeric_limits<int64_t>::min(), 0})}, {Arg::input(0)},
                         row_major(DType::kBool, {2})),
            (std::vector<uint8_t>{0, 0}));
  EXPECT_EQ(run<float>("aten::where.self_out", {input(DType::kBool, {4}, std::vector<uint8_t>{1, 0, 1, 0}), x, f32({}, {0}),
                                                f32({4}, {9, 9, 9, 9})},
                       {Arg::input(0), Arg::input(1), Arg::input(2), Arg::input(3)}, row_major(DType::kFloat32, {4})),
            (std::vector<float>{-inf, 0, inf, 0}));
}
