// The PJRT executor's op lowerings beyond the basics (test_pjrt_executor.cpp): broadcasting and
// mixed dtypes, Scalar overloads, reductions' dims, keepdim, dtype promotion and accumulation,
// batched products, and the engine's executable cache serving every Scalar value from one
// compile. Values are checked against plain C++ on the CPU plugin.
#include <cmath>

#include "engine/executable_cache.h"
#include "pjrt_executor_fixture.h"

using namespace torch_tpu;
using namespace torch_tpu::ir;
using namespace torch_tpu::ir::testing;
using executors::pjrt::testing::bind;
using executors::pjrt::testing::iota_floats;
using executors::pjrt::testing::PjrtExecutorTest;
using executors::pjrt::testing::to_bf16;

namespace {

Argument int_scalar(int64_t value) { return Argument::scalar_value({ScalarValue::Kind::kInt, value, 0.0, 0.0}); }

}  // namespace

TEST_F(PjrtExecutorTest, AddBroadcastsARowAndConvertsItsDtype) {
  // f32[3, 4] + i64[4] * 2 -> f32[3, 4] (PyTorch's promotion: the output dtype computes).
  const std::vector<float> x = iota_floats(12, 0.5f, 1.0f);
  const std::vector<int64_t> w = {1, -2, 3, -4};
  const Program program = binary_program("aten::add.Tensor", row_major(DType::kFloat32, {3, 4}),
                                         row_major(DType::kInt64, {4}),
                                         row_major(DType::kFloat32, {3, 4}), {int_scalar(2)});
  const runtime::DeviceAddress y = executor_->allocate(0, 12 * sizeof(float), 0);
  executor_->run(executor_->compile(program), bind({upload(x), upload(w), y}, dynamic_scalars(program)),
                 stream_);
  const std::vector<float> back = download<float>(y, 12);
  for (size_t i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(back[i], x[i] + 2.0f * static_cast<float>(w[i % 4]));
}

TEST_F(PjrtExecutorTest, ScalarOverloadsTakeTheirValuesAtRunTime) {
  // %1 = exp(%0) (scratch); %2 = sub.Scalar(%1, other, alpha): exp(x) - other * alpha.
  Program program;
  const TensorType type = row_major(DType::kFloat32, {5});
  const StorageId x = program.add_storage(type.extent_bytes(), true);
  const StorageId e = program.add_storage(type.extent_bytes(), false);
  const StorageId y = program.add_storage(type.extent_bytes(), false, /*live_out=*/true);
  const ValueId in = program.add_input(type, x);
  program.add_node(make_node("aten::exp", {Argument::tensor(in)}, {{x, Access::kRead}, {e, Access::kWrite}}));
  const ValueId ex = program.add_return(type, e);
  program.add_node(make_node("aten::sub.Scalar", {Argument::tensor(ex), double_scalar(1.5), double_scalar(2.0)},
                             {{e, Access::kRead}, {y, Access::kWrite}}));
  program.add_return(type, y);
  const auto executable = executor_->compile(program);
  const std::vector<float> values = iota_floats(5, -1.0f, 0.5f);
  const runtime::DeviceAddress sx = upload(values), sy = executor_->allocate(0, 20, 0);
  for (const auto& [other, alpha] : {std::pair{1.5, 2.0}, std::pair{-0.25, 4.0}}) {
    ScalarValue o{ScalarValue::Kind::kDouble, 0, other, 0.0}, a{ScalarValue::Kind::kDouble, 0, alpha, 0.0};
    executor_->run(executable, bind({sx, 0, sy}, {o, a}), stream_);
    const std::vector<float> back = download<float>(sy, 5);
    for (size_t i = 0; i < 5; ++i) {
      EXPECT_NEAR(back[i], std::exp(values[i]) - static_cast<float>(other * alpha), 1e-5) << i;
    }
  }
}

TEST_F(PjrtExecutorTest, SumOverANegativeDimKeepsItAndPromotesIntToInt64) {
  const std::vector<int32_t> x = {1, 2, 3, -4, 5, 2000000000};
  const Program program = unary_program(
      "aten::sum.dim_IntList", row_major(DType::kInt32, {2, 3}), row_major(DType::kInt64, {2, 1}),
      {Argument::int_list({-1}), Argument::boolean(true), Argument::none()});
  const runtime::DeviceAddress y = executor_->allocate(0, 2 * sizeof(int64_t), 0);
  executor_->run(executor_->compile(program), bind({upload(x), y}), stream_);
  // 2000000001 overflows int32: the sum is in int64, as PyTorch's.
  EXPECT_EQ(download<int64_t>(y, 2), (std::vector<int64_t>{6, 2000000001}));
}

TEST_F(PjrtExecutorTest, BFloat16SumAccumulatesInFloat32) {
  // 256 + 1 + 1 in bf16 steps stays 256; accumulated in f32 it is 258 (a bf16 value).
  const std::vector<uint16_t> x = {to_bf16(256.0f), to_bf16(1.0f), to_bf16(1.0f)};
  const Program program = unary_program("aten::sum", row_major(DType::kBFloat16, {3}),
                                        row_major(DType::kBFloat16, {}), {Argument::none()});
  const runtime::DeviceAddress y = executor_->allocate(0, 2, 0);
  executor_->run(executor_->compile(program), bind({upload(x), y}), stream_);
  EXPECT_EQ(download<uint16_t>(y, 1)[0], to_bf16(258.0f));
}

TEST_F(PjrtExecutorTest, BoolFloat64AndInt32BytesRoundTrip) {
  {
    const std::vector<uint8_t> a = {0, 1, 1, 0}, b = {1, 1, 0, 0};
    const Program program = binary_program("aten::mul.Tensor", row_major(DType::kBool, {4}),
                                           row_major(DType::kBool, {4}), row_major(DType::kBool, {4}));
    const runtime::DeviceAddress y = executor_->allocate(0, 4, 0);
    executor_->run(executor_->compile(program), bind({upload(a), upload(b), y}), stream_);
    EXPECT_EQ(download<uint8_t>(y, 4), (std::vector<uint8_t>{0, 1, 0, 0}));
  }
  {
    const std::vector<double> x = {1.0 / 3.0, -1e300, 5e-324};
    const Program program = unary_program("aten::neg", row_major(DType::kFloat64, {3}),
                                          row_major(DType::kFloat64, {3}));
    const runtime::DeviceAddress y = executor_->allocate(0, 24, 0);
    executor_->run(executor_->compile(program), bind({upload(x), y}), stream_);
    const std::vector<double> back = download<double>(y, 3);
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(back[i], -x[i]) << i;
  }
  {
    const std::vector<int32_t> x = {7, -8, 2147483647};
    const Program program = unary_program("aten::neg", row_major(DType::kInt32, {3}),
                                          row_major(DType::kInt32, {3}));
    const runtime::DeviceAddress y = executor_->allocate(0, 12, 0);
    executor_->run(executor_->compile(program), bind({upload(x), y}), stream_);
    EXPECT_EQ(download<int32_t>(y, 3), (std::vector<int32_t>{-7, 8, -2147483647}));
  }
}

TEST_F(PjrtExecutorTest, IntegerDivisionIsTrueDivision) {
  const std::vector<int64_t> a = {7, -7, 1}, b = {2, 2, 3};
  const Program program = binary_program("aten::div.Tensor", row_major(DType::kInt64, {3}),
                                         row_major(DType::kInt64, {3}), row_major(DType::kFloat32, {3}));
  const runtime::DeviceAddress y = executor_->allocate(0, 12, 0);
  executor_->run(executor_->compile(program), bind({upload(a), upload(b), y}), stream_);
  const std::vector<float> back = download<float>(y, 3);
  EXPECT_FLOAT_EQ(back[0], 3.5f);
  EXPECT_FLOAT_EQ(back[1], -3.5f);
  EXPECT_FLOAT_EQ(back[2], 1.0f / 3.0f);
}

TEST_F(PjrtExecutorTest, BatchedMatrixProduct) {
  const std::vector<float> a = iota_floats(12, 1.0f, 1.0f);   // f32[2, 2, 3]
  const std::vector<float> b = iota_floats(12, -1.0f, 0.5f);  // f32[2, 3, 2]
  const Program program = binary_program("aten::bmm", row_major(DType::kFloat32, {2, 2, 3}),
                                         row_major(DType::kFloat32, {2, 3, 2}),
                                         row_major(DType::kFloat32, {2, 2, 2}));
  const runtime::DeviceAddress c = executor_->allocate(0, 8 * sizeof(float), 0);
  executor_->run(executor_->compile(program), bind({upload(a), upload(b), c}), stream_);
  const std::vector<float> y = download<float>(c, 8);
  for (int n = 0; n < 2; ++n) {
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 2; ++j) {
        float expected = 0;
        for (int k = 0; k < 3; ++k) expected += a[n * 6 + i * 3 + k] * b[n * 6 + k * 2 + j];
        EXPECT_FLOAT_EQ(y[n * 4 + i * 2 + j], expected) << n << "," << i << "," << j;
      }
    }
  }
}

TEST_F(PjrtExecutorTest, ExecutableCacheServesEveryAlphaFromOneCompile) {
  engine::ExecutableCache cache;
  const std::vector<float> x = iota_floats(32, 0.0f, 1.0f), w(32, 1.0f);
  const runtime::DeviceAddress sx = upload(x), sw = upload(w), sy = executor_->allocate(0, 128, 0);
  for (const double alpha : {1.0, 3.0, -2.0}) {
    const Program program = add_program(alpha);
    const auto lookup = cache.get_or_compile(*executor_, program);
    executor_->run(lookup.executable, bind({sx, sw, sy}, dynamic_scalars(program)), stream_);
    EXPECT_EQ(download<float>(sy, 32)[5], 5.0f + static_cast<float>(alpha));
  }
  EXPECT_EQ(cache.stats().misses, 1);
  EXPECT_EQ(cache.stats().hits, 2);
}

TEST_F(PjrtExecutorTest, CopyIntoATransposedViewConvertsAndScatters) {
  // s0 = base f32[2, 3] (external, live out); %1 = its transpose (f32[3, 2], strides {1, 3});
  // %3 = copy_(%1, src) with src i64[3, 2]: base becomes src.T, converted to f32.
  Program program;
  const TensorType base = row_major(DType::kFloat32, {2, 3});
  const TensorType transposed = strided(DType::kFloat32, {3, 2}, {1, 3});
  const TensorType source = row_major(DType::kInt64, {3, 2});
  const StorageId s_base = program.add_storage(base.extent_bytes(), true, /*live_out=*/true);
  const StorageId s_src = program.add_storage(source.extent_bytes(), true);
  const ValueId view = program.add_input(transposed, s_base);
  const ValueId src = program.add_input(source, s_src);
  program.add_node(make_node("aten::copy_", {Argument::tensor(view), Argument::tensor(src), Argument::boolean(false)},
                             {{s_base, Access::kReadWrite}, {s_src, Access::kRead}}));
  program.add_return(transposed, s_base);
  const std::vector<int64_t> values = {1, 2, 3, 4, 5, 6};  // src[i][j] = values[i * 2 + j]
  const runtime::DeviceAddress sb = upload(std::vector<float>(6, -1.0f));
  executor_->run(executor_->compile(program), bind({sb, upload(values)}), stream_);
  // base[j][i] = src[i][j]
  EXPECT_EQ(download<float>(sb, 6), (std::vector<float>{1, 3, 5, 2, 4, 6}));
}

TEST_F(PjrtExecutorTest, ToCopyRoundsFloat32ToBFloat16AndFillTakesItsScalar) {
  {
    const std::vector<float> x = {1.0f, 1.00390625f /* 1 + 2^-8: a tie, to even */, 3.0f};
    const Program program = unary_program("aten::_to_copy", row_major(DType::kFloat32, {3}),
                                          row_major(DType::kBFloat16, {3}), {Argument::dtype(DType::kBFloat16)});
    const runtime::DeviceAddress y = executor_->allocate(0, 6, 0);
    executor_->run(executor_->compile(program), bind({upload(x), y}), stream_);
    EXPECT_EQ(download<uint16_t>(y, 3), (std::vector<uint16_t>{to_bf16(1.0f), to_bf16(1.0f), to_bf16(3.0f)}));
  }
  {
    Program program;
    const TensorType type = row_major(DType::kInt32, {4});
    const StorageId s = program.add_storage(type.extent_bytes(), true, /*live_out=*/true);
    const ValueId v = program.add_input(type, s);
    program.add_node(make_node("aten::fill_.Scalar", {Argument::tensor(v), int_scalar(0)}, {{s, Access::kWrite}}));
    program.add_return(type, s);
    const auto executable = executor_->compile(program);
    const runtime::DeviceAddress slot = upload(std::vector<int32_t>{1, 2, 3, 4});
    executor_->run(executable, bind({slot}, {ScalarValue{ScalarValue::Kind::kInt, 42, 0.0, 0.0}}), stream_);
    EXPECT_EQ(download<int32_t>(slot, 4), std::vector<int32_t>(4, 42));
  }
}

TEST_F(PjrtExecutorTest, UnaryMathMatchesTheCLibrary) {
  const std::vector<float> x = {0.25f, 1.0f, 2.5f, 9.0f};
  struct Case {
    const char* op;
    float (*expected)(float);
  };
  const Case cases[] = {
      {"aten::sqrt", [](float v) { return std::sqrt(v); }},
      {"aten::rsqrt", [](float v) { return 1.0f / std::sqrt(v); }},
      {"aten::log", [](float v) { return std::log(v); }},
      {"aten::tanh", [](float v) { return std::tanh(v); }},
      {"aten::sigmoid", [](float v) { return 1.0f / (1.0f + std::exp(-v)); }},
      {"aten::abs", [](float v) { return v; }},
  };
  const runtime::DeviceAddress in = upload(x), out = executor_->allocate(0, 16, 0);
  for (const Case& c : cases) {
    const Program program = unary_program(c.op, row_major(DType::kFloat32, {4}), row_major(DType::kFloat32, {4}));
    executor_->run(executor_->compile(program), bind({in, out}), stream_);
    const std::vector<float> y = download<float>(out, 4);
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_NEAR(y[i], c.expected(x[i]), 2e-6f * std::max(1.0f, std::fabs(c.expected(x[i])))) << c.op << " " << x[i];
    }
  }
}

TEST_F(PjrtExecutorTest, ComparisonsPromoteLikePyTorchAndWhereSelects) {
  // i64 < 2.5 compares in float32 (2 < 2.5 is true; in int64 it would be 2 < 2, false).
  const Program lt = unary_program("aten::lt.Scalar", row_major(DType::kInt64, {3}), row_major(DType::kBool, {3}),
                                   {double_scalar(2.5)});
  const runtime::DeviceAddress mask = executor_->allocate(0, 3, 0);
  executor_->run(executor_->compile(lt), bind({upload(std::vector<int64_t>{1, 2, 3}), mask}, dynamic_scalars(lt)),
                 stream_);
  EXPECT_EQ(download<uint8_t>(mask, 3), (std::vector<uint8_t>{1, 1, 0}));

  const Program eq = binary_program("aten::eq.Tensor", row_major(DType::kFloat32, {3}),
                                    row_major(DType::kFloat32, {3}), row_major(DType::kBool, {3}));
  executor_->run(executor_->compile(eq),
                 bind({upload(std::vector<float>{1, 2, 3}), upload(std::vector<float>{1, 0, 3}), mask}), stream_);
  EXPECT_EQ(download<uint8_t>(mask, 3), (std::vector<uint8_t>{1, 0, 1}));

  // where(mask, a, b) with b an f32[1] broadcast.
  Program where;
  const TensorType type = row_major(DType::kFloat32, {3});
  const StorageId sc = where.add_storage(3, true), sa = where.add_storage(12, true), sb = where.add_storage(4, true);
  const StorageId sy = where.add_storage(12, false, /*live_out=*/true);
  const ValueId c = where.add_input(row_major(DType::kBool, {3}), sc);
  const ValueId a = where.add_input(type, sa);
  const ValueId b = where.add_input(row_major(DType::kFloat32, {1}), sb);
  where.add_node(make_node("aten::where.self", {Argument::tensor(c), Argument::tensor(a), Argument::tensor(b)},
                           {{sc, Access::kRead}, {sa, Access::kRead}, {sb, Access::kRead}, {sy, Access::kWrite}}));
  where.add_return(type, sy);
  const runtime::DeviceAddress y = executor_->allocate(0, 12, 0);
  executor_->run(executor_->compile(where),
                 bind({mask, upload(std::vector<float>{10, 20, 30}), upload(std::vector<float>{-1}), y}), stream_);
  EXPECT_EQ(download<float>(y, 3), (std::vector<float>{10, -1, 30}));
}

TEST_F(PjrtExecutorTest, MeanOverADimAndMaximumPropagatesNaN) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 7};  // f32[2, 3]
  const Program mean = unary_program("aten::mean.dim", row_major(DType::kFloat32, {2, 3}),
                                     row_major(DType::kFloat32, {3}),
                                     {Argument::int_list({0}), Argument::boolean(false), Argument::none()});
  const runtime::DeviceAddress y = executor_->allocate(0, 12, 0);
  executor_->run(executor_->compile(mean), bind({upload(x), y}), stream_);
  EXPECT_EQ(download<float>(y, 3), (std::vector<float>{2.5f, 3.5f, 5.0f}));

  const float nan = std::nanf("");
  const Program maximum = binary_program("aten::maximum", row_major(DType::kFloat32, {3}),
                                         row_major(DType::kFloat32, {3}), row_major(DType::kFloat32, {3}));
  executor_->run(executor_->compile(maximum),
                 bind({upload(std::vector<float>{1, nan, -3}), upload(std::vector<float>{2, 0, -4}), y}), stream_);
  const std::vector<float> m = download<float>(y, 3);
  EXPECT_EQ(m[0], 2.0f);
  EXPECT_TRUE(std::isnan(m[1]));
  EXPECT_EQ(m[2], -3.0f);
}
