// Half-precision (bfloat16) forms of PJRT lowerings whose ATen CPU kernels round some steps to
// the dtype (softmax.cpp, normalization.cpp, upsample.cpp, math.cpp, reduction.cpp,
// max_pooling.cpp), against the values PyTorch 2.13's CPU kernels computed for the same inputs
// (tests/cpp keeps no torch: they are written out below, printed from torch 2.13.0+cpu). Every
// input is exact in bfloat16; results are compared bit for bit (relative 0).
#include "pjrt_lowering_harness.h"

using namespace torch_tpu;
using namespace torch_tpu::ir;
using namespace torch_tpu::ir::testing;
using namespace torch_tpu::executors::pjrt::testing;

namespace {

// kLogSoftmaxLastDimBf16 [2, 3, 5]: log_softmax(x, -1), x the pattern of seed 0 times 3.
const std::vector<double> kLogSoftmaxLastDimBf16 = {-7.65625, -2.40625, -5.40625, -0.15234375, -3.15625, -5.6875, -0.42578125, -3.421875, -6.4375, -1.171875, -4.625, -7.625, -2.375, -5.375, -0.11767578125, -2.40625, -5.40625, -0.15234375, -3.15625, -6.15625, -0.435546875, -3.4375, -6.4375, -1.1875, -4.1875, -0.435546875, -3.4375, -6.4375, -1.1875, -4.1875};
// kLogSoftmaxDim1Bf16 [2, 3, 5]: log_softmax(x, 1).
const std::vector<double> kLogSoftmaxDim1Bf16 = {-3.234375, -1.703125, -3.234375, -0.00640869140625, -3.234375, -1.7421875, -0.2021484375, -1.7421875, -6.75, -1.7421875, -0.2412109375, -6.9375, -0.2412109375, -5.25, -0.2412109375, -3.234375, -3.234375, -0.00640869140625, -3.234375, -3.234375, -1.7421875, -1.7421875, -6.75, -1.7421875, -1.7421875, -0.2412109375, -0.2412109375, -5.25, -0.2412109375, -0.2412109375};
// kSoftmaxLastDimBf16 [2, 3, 5]: softmax(x, -1).
const std::vector<double> kSoftmaxLastDimBf16 = {0.000476837158203125, 0.0908203125, 0.0045166015625, 0.86328125, 0.04296875, 0.0034332275390625, 0.65234375, 0.032470703125, 0.001617431640625, 0.30859375, 0.0098876953125, 0.000492095947265625, 0.09375, 0.004669189453125, 0.890625, 0.0908203125, 0.0045166015625, 0.859375, 0.042724609375, 0.00213623046875, 0.64453125, 0.0322265625, 0.0016021728515625, 0.3046875, 0.01519775390625, 0.64453125, 0.0322265625, 0.0016021728515625, 0.3046875, 0.01519775390625};
// kLayerNormOneElementBf16 [3, 1]: native_layer_norm([[-8.5], [0.75], [3]], [1], weight [-8.5]).
const std::vector<double> kLayerNormOneElementBf16 = {0.00103759765625, 0.0, 0.0};
// kLayerNormBf16Out, kLayerNormBf16Rstd: native_layer_norm(pattern 0 x 3 [2, 3, 4], [4],
// weight pattern 1, bias pattern 2).
const std::vector<double> kLayerNormBf16Out = {0.90625, -0.09326171875, 0.8671875, -0.984375, 0.150390625, -2.5, 1.3515625, 0.150390625, 0.61328125, 1.15625, 1.0625, 0.78125, 0.150390625, -2.5, 1.3515625, 0.150390625, 0.61328125, 1.15625, 1.0625, 0.78125, -0.271484375, -1.0546875, 0.6171875, -0.54296875};
const std::vector<double> kLayerNormBf16Rstd = {0.349609375, 0.53515625, 0.427734375, 0.53515625, 0.427734375, 0.427734375};
// _native_batch_norm_legit training of pattern 4 x 3 [3, 2, 2, 2], weight pattern 1, bias pattern 2.
// kBilinearBf16Out [1, 1, 5, 6]: upsample_bilinear2d(pattern 4 [1, 1, 3, 4], [5, 6], False).
const std::vector<double> kBilinearBf16Out = {-1.0, -0.125, 0.58203125, -0.08349609375, -0.75, -1.25, -0.400390625, -0.0751953125, 0.267578125, 0.333984375, -0.150390625, -0.6484375, 0.5, 0.0, -0.2080078125, 0.95703125, 0.75, 0.25, -0.25, 0.0751953125, 0.416015625, 0.482421875, -1.7881393432617188e-07, -0.5, -0.75, 0.125, 0.83203125, 0.1669921875, -0.5, -1.0};
const std::vector<double> kRoundInput = {-4.625, 1.8515625, -1.8515625, 4.625, 0.92578125, -2.78125, 3.703125, 0.0, -3.703125, 2.78125, -0.92578125, -4.625};
const std::vector<double> kRoundDecimals1Bf16 = {-4.59375, 1.8984375, -1.8984375, 4.59375, 0.8984375, -2.796875, 3.703125, 0.0, -3.703125, 2.796875, -0.8984375, -4.59375};
const std::vector<double> kProdInput = {1.5, 0.0, -1.5, 1.125, -0.375, -1.875, 0.75, -0.75, 1.875, 0.375};
const std::vector<double> kProdDim1Bf16 = {0.0, 0.7421875};
// max_pool2d_with_indices(pattern 0 [1, 1, 5, 5], 3, 2, 1, 1, ceil_mode) indices, and the
// backward of grad pattern 4 [1, 1, 3, 3] through them (windows overlap: index 6 three times).
const std::vector<double> kMaxPoolIndices = {6, 3, 3, 6, 6, 14, 20, 17, 23};
const std::vector<double> kMaxPoolBackwardBf16 = {0.0, 0.0, 0.0, 0.5, 0.0, 0.0, -1.75, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.5, 0.0, 0.0, 0.25, 0.0, 0.0, 1.25, 0.0, 0.0, -0.75, 0.0};

class HalfLoweringTest : public OneOpLoweringTest {};

TensorType bf16(std::vector<int64_t> sizes) { return row_major(DType::kBFloat16, std::move(sizes)); }
Argument ints(std::vector<int64_t> values) { return Argument::int_list(std::move(values)); }

}  // namespace

TEST_F(HalfLoweringTest, LogSoftmaxOverTheLastDimRoundsItsSumAndLogAsATen) {
  const Operand x{DType::kBFloat16, {2, 3, 5}, 0, pattern({2, 3, 5}, 0, 3.0)};
  for (const int64_t dim : {-1, 1}) {
    const auto results = run_op(
        "aten::_log_softmax", {x},
        [dim](const std::vector<Argument>& t) {
          return std::vector<Argument>{t[0], Argument::int_value(dim), Argument::boolean(false)};
        },
        {bf16({2, 3, 5})});
    expect_near(results[0], dim == -1 ? kLogSoftmaxLastDimBf16 : kLogSoftmaxDim1Bf16, 0.0, "log_softmax");
  }
  const auto softmax = run_op(
      "aten::_softmax", {x},
      [](const std::vector<Argument>& t) {
        return std::vector<Argument>{t[0], Argument::int_value(-1), Argument::boolean(false)};
      },
      {bf16({2, 3, 5})});
  expect_near(softmax[0], kSoftmaxLastDimBf16, 0.0, "softmax");
}

TEST_F(HalfLoweringTest, SoftmaxOfA0dTensorIsOneAndLogSoftmaxZero) {
  for (const int64_t dim : {0, -1}) {
    for (const bool log : {false, true}) {
      const auto results = run_op(
          log ? "aten::_log_softmax" : "aten::_softmax", {{DType::kBFloat16, {}, 0, {2.5}}},
          [dim](const std::vector<Argument>& t) {
            return std::vector<Argument>{t[0], Argument::int_value(dim), Argument::boolean(false)};
          },
          {bf16({})});
      expect_near(results[0], {log ? 0.0 : 1.0}, 0.0, "0-d softmax");
    }
  }
}

TEST_F(HalfLoweringTest, LayerNormOfOneElementKeepsATenFusedRoundingError) {
  // ATen computes x * rstd + (-rstd * mean) with one fused rounding: not 0 for [-8.5].
  const auto results = run_op(
      "aten::native_layer_norm", {{DType::kBFloat16, {3, 1}, 0, {-8.5, 0.75, 3.0}}, {DType::kBFloat16, {1}, 0, {-8.5}}},
      [](const std::vector<Argument>& t) {
        return std::vector<Argument>{t[0], ints({1}), t[1], Argument::none(), Argument::double_value(1e-5)};
      },
      {bf16({3, 1}), bf16({3, 1}), bf16({3, 1})});
  expect_near(results[0], kLayerNormOneElementBf16, 0.0, "out");
}

TEST_F(HalfLoweringTest, LayerNormWithWeightAndBias) {
  const auto results = run_op(
      "aten::native_layer_norm",
      {{DType::kBFloat16, {2, 3, 4}, 0, pattern({2, 3, 4}, 0, 3.0)}, {DType::kBFloat16, {4}, 1},
       {DType::kBFloat16, {4}, 2}},
      [](const std::vector<Argument>& t) {
        return std::vector<Argument>{t[0], ints({4}), t[1], t[2], Argument::double_value(1e-5)};
      },
      {bf16({2, 3, 4}), bf16({2, 3, 1}), bf16({2, 3, 1})});
  expect_near(results[0], kLayerNormBf16Out, 0.0, "out");
  expect_near(results[2], kLayerNormBf16Rstd, 0.0, "rstd");
}

TEST_F(HalfLoweringTest, BatchNormTrainingIsRefused) {
  // Random bfloat16 inputs differ from ATen's beyond tolerance in about a quarter of the tries.
  const std::string why = refusal(
      "aten::_native_batch_norm_legit.no_stats",
      {{DType::kBFloat16, {3, 2, 2, 2}, 4, pattern({3, 2, 2, 2}, 4, 3.0)}, {DType::kBFloat16, {2}, 1},
       {DType::kBFloat16, {2}, 2}},
      [](const std::vector<Argument>& t) {
        return std::vector<Argument>{t[0], t[1], t[2], Argument::boolean(true), Argument::double_value(0.1),
                                     Argument::double_value(1e-5)};
      },
      {bf16({3, 2, 2, 2}), bf16({2}), bf16({2})});
  EXPECT_NE(why.find("half-precision training"), std::string::npos) << why;
}

TEST_F(HalfLoweringTest, UpsampleBilinear2d) {
  const auto results = run_op(
      "aten::upsample_bilinear2d", {{DType::kBFloat16, {1, 1, 3, 4}, 4}},
      [](const std::vector<Argument>& t) {
        return std::vector<Argument>{t[0], ints({5, 6}), Argument::boolean(false), Argument::none(), Argument::none()};
      },
      {bf16({1, 1, 5, 6})});
  expect_near(results[0], kBilinearBf16Out, 0.0, "out");
}

TEST_F(HalfLoweringTest, RoundDecimalsAndProd) {
  const auto rounded = run_op(
      "aten::round.decimals", {{DType::kBFloat16, {12}, 0, kRoundInput}},
      [](const std::vector<Argument>& t) { return std::vector<Argument>{t[0], Argument::int_value(1)}; },
      {bf16({12})});
  expect_near(rounded[0], kRoundDecimals1Bf16, 0.0, "round.decimals");
  const auto product = run_op(
      "aten::prod.dim_int", {{DType::kBFloat16, {2, 5}, 0, kProdInput}},
      [](const std::vector<Argument>& t) {
        return std::vector<Argument>{t[0], Argument::int_value(1), Argument::boolean(false), Argument::none()};
      },
      {bf16({2})});
  expect_near(product[0], kProdDim1Bf16, 0.0, "prod");
}

TEST_F(HalfLoweringTest, MaxPoolBackwardOfOverlappingWindows) {
  const auto results = run_op(
      "aten::max_pool2d_with_indices_backward",
      {{DType::kBFloat16, {1, 1, 3, 3}, 4}, {DType::kBFloat16, {1, 1, 5, 5}, 0},
       {DType::kInt64, {1, 1, 3, 3}, 0, kMaxPoolIndices}},
      [](const std::vector<Argument>& t) {
        return std::vector<Argument>{t[0], t[1], ints({3, 3}), ints({2, 2}), ints({1, 1}), ints({1, 1}),
                                     Argument::boolean(true), t[2]};
      },
      {bf16({1, 1, 5, 5})});
  expect_near(results[0], kMaxPoolBackwardBf16, 0.0, "grad_input");
}
