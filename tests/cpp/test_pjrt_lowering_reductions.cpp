// The reduction, arg-reduction, scan and sort lowerings (reduction.cpp, arg_reduction.cpp,
// variance.cpp, scan.cpp, sort.cpp) run on the CPU plugin. Expected values were computed with
// PyTorch 2.13 CPU on the same inputs: ties, NaN, int dtypes, keepdim, negative dims; and the
// cases the lowerings refuse, which then run on the host kernel.
#include <cmath>
#include <limits>

#include "executors/pjrt/lowering/lower_program.h"
#include "pjrt_lowering_harness.h"

using namespace torch_tpu;
using namespace torch_tpu::ir;
using namespace torch_tpu::ir::testing;
using namespace torch_tpu::executors::pjrt::testing;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

Argument boolean(bool value) { return Argument::boolean(value); }
Argument dims(std::vector<int64_t> values) { return Argument::int_list(std::move(values)); }

// %in = input (external s0); <op>(%in, extra...) with one tensor return per `outs`, each in a
// created, live-out storage (s1, s2, ...): max.dim's values and indices, sort's.
Program multi_return_program(const std::string& op, const TensorType& in,
                             const std::vector<TensorType>& outs, std::vector<Argument> extra) {
  Program program;
  const StorageId x = program.add_storage(in.extent_bytes(), true);
  std::vector<StorageId> storages;
  for (const TensorType& out : outs) storages.push_back(program.add_storage(out.extent_bytes(), false, true));
  const ValueId a = program.add_input(in, x);
  Node node = make_node(op, {Argument::tensor(a)});
  for (Argument& arg : extra) node.args.push_back(std::move(arg));
  node.accesses = {{x, Access::kRead}};
  for (const StorageId s : storages) node.accesses.push_back({s, Access::kWrite});
  program.add_node(std::move(node));
  for (size_t i = 0; i < outs.size(); ++i) program.add_return(outs[i], storages[i]);
  return program;
}

bool same_float(float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

class PjrtReductionLoweringTest : public PjrtExecutorTest {
 protected:
  // Runs `op` on `x` (of layout `in`) and returns its one output, `count` elements of type Out.
  template <typename Out, typename In>
  std::vector<Out> run_unary(const std::string& op, const TensorType& in, const std::vector<In>& x,
                             const TensorType& out, std::vector<Argument> extra,
                             std::vector<ScalarValue> scalars = {}) {
    const Program program = unary_program(op, in, out, std::move(extra));
    const auto count = static_cast<size_t>(out.numel());
    const runtime::DeviceAddress y = executor_->allocate(0, std::max<size_t>(count * sizeof(Out), 1), 0);
    executor_->run(executor_->compile(program), bind({upload(x), y}, std::move(scalars)), stream_);
    return download<Out>(y, count);
  }

  // Runs a (values, indices) op on `x` and returns both.
  template <typename V, typename In>
  std::pair<std::vector<V>, std::vector<int64_t>> run_values_and_indices(
      const std::string& op, const TensorType& in, const std::vector<In>& x, const TensorType& values,
      const TensorType& indices, std::vector<Argument> extra) {
    const Program program = multi_return_program(op, in, {values, indices}, std::move(extra));
    const auto count = static_cast<size_t>(values.numel());
    const runtime::DeviceAddress v = executor_->allocate(0, count * sizeof(V), 0);
    const runtime::DeviceAddress i = executor_->allocate(0, count * sizeof(int64_t), 0);
    executor_->run(executor_->compile(program), bind({upload(x), v, i}), stream_);
    return {download<V>(v, count), download<int64_t>(i, count)};
  }
};

void expect_floats(const std::vector<float>& got, const std::vector<float>& expected) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(same_float(got[i], expected[i])) << i << ": " << got[i];
}

}  // namespace

// ---- amax, amin, max, min ----

TEST_F(PjrtReductionLoweringTest, AmaxPropagatesNaNOverANegativeDimKept) {
  const std::vector<float> x = {1, kNaN, 3, -kInf, 2, 5};
  expect_floats(run_unary<float>("aten::amax", row_major(DType::kFloat32, {2, 3}), x,
                                 row_major(DType::kFloat32, {2, 1}), {dims({-1}), boolean(true)}),
                {kNaN, 5});
}

TEST_F(PjrtReductionLoweringTest, AminOfInt32ReachesTheLowestInt) {
  const std::vector<int32_t> x = {3, -7, 2, 1, 9, std::numeric_limits<int32_t>::lowest()};
  EXPECT_EQ(run_unary<int32_t>("aten::amin", row_major(DType::kInt32, {2, 3}), x,
                               row_major(DType::kInt32, {3}), {dims({0}), boolean(false)}),
            (std::vector<int32_t>{1, -7, std::numeric_limits<int32_t>::lowest()}));
}

TEST_F(PjrtReductionLoweringTest, AmaxOfBoolAndOfAnEmptyDimListIsEveryDimension) {
  const std::vector<uint8_t> b = {1, 0, 0, 0, 0, 0};
  EXPECT_EQ(run_unary<uint8_t>("aten::amax", row_major(DType::kBool, {2, 3}), b,
                               row_major(DType::kBool, {2}), {dims({1}), boolean(false)}),
            (std::vector<uint8_t>{1, 0}));
  const std::vector<uint16_t> h = {to_bf16(1.0f), to_bf16(-2.0f), to_bf16(8.0f), to_bf16(0.5f)};
  EXPECT_EQ(run_unary<uint16_t>("aten::amax", row_major(DType::kBFloat16, {2, 2}), h,
                                row_major(DType::kBFloat16, {}), {dims({}), boolean(false)}),
            (std::vector<uint16_t>{to_bf16(8.0f)}));
}

TEST_F(PjrtReductionLoweringTest, MaxAndMinOfEveryElement) {
  const std::vector<double> x = {2.5, -1.0, 7.25};
  EXPECT_EQ(run_unary<double>("aten::max", row_major(DType::kFloat64, {3}), x, row_major(DType::kFloat64, {}), {}),
            std::vector<double>{7.25});
  const std::vector<int64_t> y = {2, -9, 4, 0};
  EXPECT_EQ(run_unary<int64_t>("aten::min", row_major(DType::kInt64, {2, 2}), y, row_major(DType::kInt64, {}), {}),
            std::vector<int64_t>{-9});
}

TEST_F(PjrtReductionLoweringTest, MaxOfAnEmptyTensorIsRefused) {
  // ATen raises ("Expected reduction dim to have non-zero size"): the host kernel says so.
  const Program program = unary_program("aten::max", row_major(DType::kFloat32, {0}),
                                        row_major(DType::kFloat32, {}));
  EXPECT_THROW(executors::pjrt::lowering::lower_program(program), executors::NotSupported);
}

// ---- any, all ----

TEST_F(PjrtReductionLoweringTest, AnyAndAllCountNaNAsTrue) {
  const std::vector<float> x = {0, kNaN, 0, 0, 0, -0.0f, 1.5f, 0, 2};
  EXPECT_EQ(run_unary<uint8_t>("aten::any.dim", row_major(DType::kFloat32, {3, 3}), x,
                               row_major(DType::kBool, {3}), {Argument::int_value(1), boolean(false)}),
            (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_EQ(run_unary<uint8_t>("aten::all.dim", row_major(DType::kFloat32, {3, 3}), x,
                               row_major(DType::kBool, {1, 3}), {Argument::int_value(0), boolean(true)}),
            (std::vector<uint8_t>{0, 0, 0}));
}

TEST_F(PjrtReductionLoweringTest, AllOfUInt8IsUInt8AndAnyDimsOfAnEmptyListReducesNothing) {
  const std::vector<uint8_t> x = {1, 0, 2, 3};
  EXPECT_EQ(run_unary<uint8_t>("aten::all.dims", row_major(DType::kUInt8, {2, 2}), x,
                               row_major(DType::kUInt8, {}), {Argument::none(), boolean(false)}),
            std::vector<uint8_t>{0});
  EXPECT_EQ(run_unary<uint8_t>("aten::any.dims", row_major(DType::kUInt8, {2, 2}), x,
                               row_major(DType::kUInt8, {2, 2}), {dims({}), boolean(false)}),
            (std::vector<uint8_t>{1, 0, 1, 1}));
}

TEST_F(PjrtReductionLoweringTest, AllOfNothingIsTrueAnyIsFalse) {
  const std::vector<uint8_t> rows = {};
  EXPECT_EQ(run_unary<uint8_t>("aten::all.dim", row_major(DType::kBool, {2, 0}), rows,
                               row_major(DType::kBool, {2}), {Argument::int_value(1), boolean(false)}),
            (std::vector<uint8_t>{1, 1}));
  EXPECT_EQ(run_unary<uint8_t>("aten::any.dim", row_major(DType::kBool, {2, 0}), rows,
                               row_major(DType::kBool, {2}), {Argument::int_value(-1), boolean(false)}),
            (std::vector<uint8_t>{0, 0}));
}

// ---- argmax, argmin, max.dim, min.dim ----

TEST_F(PjrtReductionLoweringTest, ArgmaxTakesTheFirstTieAndTheFirstNaN) {
  const std::vector<float> x = {1, 3, 3, 2, kNaN, 5, kNaN, 5, -1, -1, -2, -2};
  const TensorType in = row_major(DType::kFloat32, {3, 4});
  EXPECT_EQ(run_unary<int64_t>("aten::argmax", in, x, row_major(DType::kInt64, {3}),
                               {Argument::int_value(1), boolean(false)}),
            (std::vector<int64_t>{1, 0, 0}));
  EXPECT_EQ(run_unary<int64_t>("aten::argmin", in, x, row_major(DType::kInt64, {3}),
                               {Argument::int_value(-1), boolean(false)}),
            (std::vector<int64_t>{0, 0, 2}));
  // dim=None flattens; keepdim keeps every dimension as 1.
  EXPECT_EQ(run_unary<int64_t>("aten::argmax", in, x, row_major(DType::kInt64, {1, 1}),
                               {Argument::none(), boolean(true)}),
            std::vector<int64_t>{4});
}

TEST_F(PjrtReductionLoweringTest, ArgminOfInt32AndArgmaxOfBFloat16) {
  const std::vector<int32_t> x = {4, -2, 4, -2, 7, -2};
  EXPECT_EQ(run_unary<int64_t>("aten::argmin", row_major(DType::kInt32, {2, 3}), x,
                               row_major(DType::kInt64, {3}), {Argument::int_value(0), boolean(false)}),
            (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(run_unary<int64_t>("aten::argmax", row_major(DType::kInt32, {2, 3}), x,
                               row_major(DType::kInt64, {}), {Argument::none(), boolean(false)}),
            std::vector<int64_t>{4});
  const std::vector<uint16_t> h = {to_bf16(0.5f), to_bf16(8.0f), to_bf16(-1.0f), to_bf16(8.0f)};
  EXPECT_EQ(run_unary<int64_t>("aten::argmax", row_major(DType::kBFloat16, {4}), h,
                               row_major(DType::kInt64, {}), {Argument::int_value(0), boolean(false)}),
            std::vector<int64_t>{1});
}

TEST_F(PjrtReductionLoweringTest, ArgmaxOfA0dTensorIsZero) {
  const std::vector<float> x = {3};
  EXPECT_EQ(run_unary<int64_t>("aten::argmax", row_major(DType::kFloat32, {}), x,
                               row_major(DType::kInt64, {}), {Argument::int_value(0), boolean(true)}),
            std::vector<int64_t>{0});
}

TEST_F(PjrtReductionLoweringTest, MaxDimReturnsValuesAndFirstIndices) {
  const std::vector<float> x = {1, 3, 3, 2, kNaN, 5, kNaN, 5, -1, -1, -2, -2};
  const auto [values, indices] = run_values_and_indices<float>(
      "aten::max.dim", row_major(DType::kFloat32, {3, 4}), x, row_major(DType::kFloat32, {4}),
      row_major(DType::kInt64, {4}), {Argument::int_value(0), boolean(false)});
  expect_floats(values, {kNaN, 5, kNaN, 5});
  EXPECT_EQ(indices, (std::vector<int64_t>{1, 1, 1, 1}));
}

TEST_F(PjrtReductionLoweringTest, MinDimOfInt64KeepsTheDim) {
  const std::vector<int64_t> x = {5, 1, 1, 0, 0, 9};
  const auto [values, indices] = run_values_and_indices<int64_t>(
      "aten::min.dim", row_major(DType::kInt64, {2, 3}), x, row_major(DType::kInt64, {2, 1}),
      row_major(DType::kInt64, {2, 1}), {Argument::int_value(1), boolean(true)});
  EXPECT_EQ(values, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(indices, (std::vector<int64_t>{1, 0}));
}

// ---- prod ----

TEST_F(PjrtReductionLoweringTest, ProdOfInt32AccumulatesInInt64) {
  const std::vector<int32_t> x = {100000, 100000, -3};
  EXPECT_EQ(run_unary<int64_t>("aten::prod", row_major(DType::kInt32, {3}), x, row_major(DType::kInt64, {}),
                               {Argument::none()}),
            std::vector<int64_t>{-30000000000});
}

TEST_F(PjrtReductionLoweringTest, ProdOverADimKeepsItAndOfNothingIsOne) {
  const std::vector<float> x = {1.5f, 2, -4, 0.5f, 3, kNaN};
  expect_floats(run_unary<float>("aten::prod.dim_int", row_major(DType::kFloat32, {2, 3}), x,
                                 row_major(DType::kFloat32, {2, 1}),
                                 {Argument::int_value(1), boolean(true), Argument::none()}),
                {-12, kNaN});
  const std::vector<float> empty = {};
  expect_floats(run_unary<float>("aten::prod.dim_int", row_major(DType::kFloat32, {2, 0}), empty,
                                 row_major(DType::kFloat32, {2}),
                                 {Argument::int_value(1), boolean(false), Argument::none()}),
                {1, 1});
}

// ---- var.correction ----

TEST_F(PjrtReductionLoweringTest, VarIsUnbiasedByDefaultAndTakesItsCorrectionAtRunTime) {
  const std::vector<float> x = {1, 2, 4, 8, 0.5f, -0.5f, 3, 1};
  const TensorType in = row_major(DType::kFloat32, {2, 4});
  expect_floats(run_unary<float>("aten::var.correction", in, x, row_major(DType::kFloat32, {2}),
                                 {dims({1}), Argument::none(), boolean(false)}),
                {9.583333015441895f, 2.1666667461395264f});
  const ScalarValue zero{ScalarValue::Kind::kDouble, 0, 0.0, 0.0};
  expect_floats(run_unary<float>("aten::var.correction", in, x, row_major(DType::kFloat32, {2}),
                                 {dims({-1}), double_scalar(0.0), boolean(false)}, {zero}),
                {7.1875f, 1.625f});
  // No dims: every element; keepdim keeps both as 1.
  expect_floats(run_unary<float>("aten::var.correction", in, x, row_major(DType::kFloat32, {1, 1}),
                                 {Argument::none(), Argument::none(), boolean(true)}),
                {7.1964287757873535f});
  // Two rows, correction 2: no degrees of freedom left, inf as in ATen.
  const ScalarValue two{ScalarValue::Kind::kInt, 2, 0.0, 0.0};
  expect_floats(run_unary<float>("aten::var.correction", in, x, row_major(DType::kFloat32, {4}),
                                 {dims({0}), Argument::scalar_value(two), boolean(false)}, {two}),
                {kInf, kInf, kInf, kInf});
}

TEST_F(PjrtReductionLoweringTest, VarOfBFloat16RoundsOnce) {
  const std::vector<float> values = {1, 2, 4, 8, 0.5f, -0.5f, 3, 1};
  std::vector<uint16_t> x;
  for (const float v : values) x.push_back(to_bf16(v));
  EXPECT_EQ(run_unary<uint16_t>("aten::var.correction", row_major(DType::kBFloat16, {2, 4}), x,
                                row_major(DType::kBFloat16, {2}), {dims({1}), Argument::none(), boolean(false)}),
            (std::vector<uint16_t>{0x4119, 0x400b}));  // 9.5625, 2.171875
}

// ---- cumsum ----

TEST_F(PjrtReductionLoweringTest, CumsumOverTheLastDimRoundsEachSumOnce) {
  const std::vector<float> x = {1, 2, 3, 0.1f, 0.2f, 0.3f};
  expect_floats(run_unary<float>("aten::cumsum", row_major(DType::kFloat32, {2, 3}), x,
                                 row_major(DType::kFloat32, {2, 3}), {Argument::int_value(-1), Argument::none()}),
                {1, 3, 6, 0.10000000149011612f, 0.30000001192092896f, 0.6000000238418579f});
}

TEST_F(PjrtReductionLoweringTest, CumsumOfInt32IsInt64AndTakesADtype) {
  const std::vector<int32_t> x = {2000000000, 2000000000, 5};
  EXPECT_EQ(run_unary<int64_t>("aten::cumsum", row_major(DType::kInt32, {3}), x, row_major(DType::kInt64, {3}),
                               {Argument::int_value(0), Argument::none()}),
            (std::vector<int64_t>{2000000000, 4000000000, 4000000005}));
  const std::vector<int32_t> y = {1, 2, 3, 4};
  EXPECT_EQ(run_unary<double>("aten::cumsum", row_major(DType::kInt32, {2, 2}), y, row_major(DType::kFloat64, {2, 2}),
                              {Argument::int_value(0), Argument::dtype(DType::kFloat64)}),
            (std::vector<double>{1, 2, 4, 6}));
}

TEST_F(PjrtReductionLoweringTest, CumsumOfBFloat16AccumulatesInFloat32) {
  const std::vector<uint16_t> x = {to_bf16(256.0f), to_bf16(1.0f), to_bf16(1.0f), to_bf16(1.0f)};
  EXPECT_EQ(run_unary<uint16_t>("aten::cumsum", row_major(DType::kBFloat16, {4}), x,
                                row_major(DType::kBFloat16, {4}), {Argument::int_value(0), Argument::none()}),
            (std::vector<uint16_t>{to_bf16(256.0f), to_bf16(256.0f), to_bf16(258.0f), to_bf16(260.0f)}));
}

// ---- sort.stable ----

TEST_F(PjrtReductionLoweringTest, StableSortPutsNaNLastAndKeepsTiesInOrder) {
  const std::vector<float> x = {2, kNaN, 1, 2, kNaN, -0.0f, 0};
  const TensorType in = row_major(DType::kFloat32, {7});
  const auto [up, up_indices] = run_values_and_indices<float>(
      "aten::sort.stable", in, x, in, row_major(DType::kInt64, {7}),
      {boolean(true), Argument::int_value(-1), boolean(false)});
  expect_floats(up, {-0.0f, 0, 1, 2, 2, kNaN, kNaN});
  EXPECT_TRUE(std::signbit(up[0]));
  EXPECT_EQ(up_indices, (std::vector<int64_t>{5, 6, 2, 0, 3, 1, 4}));
  const auto [down, down_indices] = run_values_and_indices<float>(
      "aten::sort.stable", in, x, in, row_major(DType::kInt64, {7}),
      {boolean(true), Argument::int_value(0), boolean(true)});
  expect_floats(down, {kNaN, kNaN, 2, 2, 1, -0.0f, 0});
  EXPECT_EQ(down_indices, (std::vector<int64_t>{1, 4, 0, 3, 2, 5, 6}));
}

TEST_F(PjrtReductionLoweringTest, StableSortOfInt32AlongDim0Descending) {
  const std::vector<int32_t> x = {3, 1, 2, 1, 3, 1};
  const auto [values, indices] = run_values_and_indices<int32_t>(
      "aten::sort.stable", row_major(DType::kInt32, {2, 3}), x, row_major(DType::kInt32, {2, 3}),
      row_major(DType::kInt64, {2, 3}), {boolean(true), Argument::int_value(0), boolean(true)});
  EXPECT_EQ(values, (std::vector<int32_t>{3, 3, 2, 1, 1, 1}));
  EXPECT_EQ(indices, (std::vector<int64_t>{0, 1, 0, 1, 0, 1}));
}

TEST_F(PjrtReductionLoweringTest, UnstableSortIsRefused) {
  // ATen's unstable sort orders ties its own way, not the stable order.
  const TensorType in = row_major(DType::kFloat32, {4});
  const Program program = multi_return_program("aten::sort.stable", in, {in, row_major(DType::kInt64, {4})},
                                               {Argument::none(), Argument::int_value(-1), boolean(false)});
  EXPECT_THROW(executors::pjrt::lowering::lower_program(program), executors::NotSupported);
}

// ---- the dtypes and ranks the cases above leave out ----

TEST_F(PjrtReductionLoweringTest, VarOfFloat16AndMaxDimOfBoolAndCumsumOfA0dTensor) {
  // f16 bit patterns of 1, 2, 4, 8, 0.5, -0.5, 3, 1; PyTorch's var: 9.5859375, 2.166015625.
  const std::vector<uint16_t> h = {0x3C00, 0x4000, 0x4400, 0x4800, 0x3800, 0xB800, 0x4200, 0x3C00};
  EXPECT_EQ(run_unary<uint16_t>("aten::var.correction", row_major(DType::kFloat16, {2, 4}), h,
                                row_major(DType::kFloat16, {2}), {dims({1}), Argument::none(), boolean(false)}),
            (std::vector<uint16_t>{0x48cb, 0x4055}));
  const std::vector<uint8_t> b = {0, 1, 1, 0, 0, 0};
  const auto [values, indices] = run_values_and_indices<uint8_t>(
      "aten::max.dim", row_major(DType::kBool, {2, 3}), b, row_major(DType::kBool, {2}),
      row_major(DType::kInt64, {2}), {Argument::int_value(1), boolean(false)});
  EXPECT_EQ(values, (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(indices, (std::vector<int64_t>{1, 0}));
  const std::vector<float> scalar = {2.5f};
  EXPECT_EQ(run_unary<float>("aten::cumsum", row_major(DType::kFloat32, {}), scalar,
                             row_major(DType::kFloat32, {}), {Argument::int_value(-1), Argument::none()}),
            std::vector<float>{2.5f});
}
