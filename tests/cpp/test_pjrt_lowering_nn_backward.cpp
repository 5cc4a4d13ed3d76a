// The PJRT lowerings of the NN backward ops and max pooling (normalization_backward.cpp,
// activation_backward.cpp, max_pooling.cpp) on the CPU plugin, against values PyTorch 2.13's
// CPU kernels computed for the same inputs (tests/cpp keeps no torch: they are written out
// below). Inputs are the exact pattern (((i * 7 + seed * 3) % 11) - 5) / 4 unless given.
#include <cmath>
#include <optional>

#include "pjrt_lowering_harness.h"
#include "runtime/status.h"

using namespace torch_tpu;
using namespace torch_tpu::ir;
using namespace torch_tpu::ir::testing;
using namespace torch_tpu::executors::pjrt::testing;

namespace {

// PyTorch CPU's results (torch 2.13), row-major; statistics a forward op saved are inputs here.
// kLnMean [2, 3, 1] torch.float32
const std::vector<double> kLnMean = {0, 0.124999993, -0.4375, 0.375, -0.187500015, -0.0625};
// kLnRstd [2, 3, 1] torch.float32
const std::vector<double> kLnRstd = {1.05044568, 1.5999794, 1.28514028, 1.5999794, 1.28514028, 1.28514028};
// kLnGradInput [2, 3, 4] torch.float32
const std::vector<double> kLnGradInput = {0.185075253, -1.31815171, 0.30053246, 0.832543969, -0.445995659, 0.622001767, 0.577982783, -0.753988862, -0.196908712, -0.316119671, 0.681432664, -0.168404102, 0.983985782, 0.512004018, 0.137987614, -1.63397741, -0.196911752, -0.316113412, 0.681433618, -0.168408453, -0.45912081, 0.54462862, -0.299011022, 0.213503122};
// kLnGradWeight [4] torch.float32
const std::vector<double> kLnGradWeight = {-0.896634996, -4.55791998, -1.20937622, -1.74909294};
// kLnGradBias [4] torch.float32
const std::vector<double> kLnGradBias = {-1, -1.5, 0.75, 0.25};
// kLn64Mean [2, 1, 1] torch.float64
const std::vector<double> kLn64Mean = {0.083333333333333329, 0};
// kLn64Rstd [2, 1, 1] torch.float64
const std::vector<double> kLn64Rstd = {1.2410008996542761, 1.3211449882093207};
// kLn64GradInput [2, 3, 4] torch.float64
const std::vector<double> kLn64GradInput = {-0.80300573499479, 1.0037511961038699, -0.60224434684672967, -1.2045046207324397, 0.60225231036621985, -1.0037432325843798, 1.8067489675791695, 0.20075342462857002, -0.40150684925714009, 1.4052500818415194, -0.20074546110907987, -0.80300573499479, 0.90828717939390791, -0.67708219454072605, -1.5358345077307483, 0.51194483591024942, -1.0734245380243845, 1.7009718663612252, 0.11560249242659096, -0.74314982076343128, 1.3046295228775666, -0.28073985105706756, -1.1394921642470899, 0.90828717939390791};
// kGnMean [2, 2] torch.float32
const std::vector<double> kGnMean = {-0.125, 0.291666687, -0.208333328, 0.208333328};
// kGnRstd [2, 2] torch.float32
const std::vector<double> kGnRstd = {1.21063101, 1.37422299, 1.37422299, 1.37422299};
// kGnGradInput [2, 4, 3] torch.float32
const std::vector<double> kGnGradInput = {-0.0635385215, 0.329226553, -0.942625999, 0.564303815, -1.16153538, 1.27416945, -0.0788503438, -0.799747109, 0.461822212, 0.0844812393, 0.737807572, -0.405513495, 0.461827606, -1.10218906, 0.217672586, -1.26045501, 1.38408613, 0.299057603, -0.806505978, 0.478717506, -0.255695909, 0.727669477, -0.391997367, 0.247812271};
// kGnGradWeight [4] torch.float32
const std::vector<double> kGnGradWeight = {-1.89262772, -2.37217546, 4.10835409, 4.62368774};
// kGnGradBias [4] torch.float32
const std::vector<double> kGnGradBias = {2.25, 0.75, -0.75, -2.25};
// kBnSaveMean [2] torch.float32
const std::vector<double> kBnSaveMean = {-0.1875, 0.166666672};
// kBnSaveInvstd [2] torch.float32
const std::vector<double> kBnSaveInvstd = {1.2430799, 1.3292253};
// kBnGradInput [3, 2, 2, 2] torch.float32
const std::vector<double> kBnGradInput = {-0.801310897, -0.127247289, 0.464279115, -0.653429329, -0.1822083, -1.92018938, 1.12127745, -0.61670357, 0.76004231, -0.275128901, 0.316397518, -0.801310897, 0.252286971, -1.48569405, 1.34553671, -0.1822083, 0.612160742, -0.423010498, 0.168515906, 0.76004231, 0.686782241, -1.05119884, 1.78003192, 0.252286971};
// kBnGradWeight [2] torch.float32
const std::vector<double> kBnGradWeight = {0.466154963, -0.415382743};
// kBnGradBias [2] torch.float32
const std::vector<double> kBnGradBias = {0, 1.5};
// kBnEvalGradInput [2, 3, 2] torch.float64
const std::vector<double> kBnEvalGradInput = {0.094464132354783084, -0.28339239706434927, -0.57696575348317691, -0, -1.117587043303792, 0.838190282477844, -0.094464132354783084, -0.47232066177391541, -0.28848287674158846, 0.28848287674158846, 1.39698380412974, 0.279396760825948};
// kBnEvalGradWeight [3] torch.float64
const std::vector<double> kBnEvalGradWeight = {0.2361603308869577, 2.0193801371911193, -1.2852250997993608};
// kBnBf16GradInput [3, 2, 2, 2] torch.bfloat16
const std::vector<double> kBnBf16GradInput = {1.6015625, 0.25390625, -0.9296875, 1.3046875, -0.145507812, -1.53125, 0.89453125, -0.4921875, -1.515625, 0.55078125, -0.6328125, 1.6015625, 0.201171875, -1.1875, 1.078125, -0.145507812, -1.2265625, 0.84375, -0.3359375, -1.515625, 0.546875, -0.83984375, 1.421875, 0.201171875};
// kGeluNone [2, 6] torch.float32
const std::vector<double> kGeluNone = {0.000774204731, 0, -0.785615325, -0.0810499638, -0.281867296, -0.625, -0.0637345761, -0.554033279, 0.267980814, -0.0246444866, -0.749419332, 0.000774204731};
// kGeluTanh [2, 6] torch.float32
const std::vector<double> kGeluTanh = {0.00106173754, 0, -0.78555572, -0.0808288008, -0.281927705, -0.625, -0.0638554096, -0.553885877, 0.268055379, -0.0248469412, -0.749203742, 0.00106173754};
// kElu [2, 6] torch.float64
const std::vector<double> kElu = {0.65528431332191583, 0, -1.1000000000000001, 0.35068456182378566, -0.27500000000000002, -1.6087500000000001, 0.16682110772563119, -0.55000000000000004, 1.147926739309086, 0.059517765420175159, -0.82500000000000007, 0.65528431332191583};
// kEluResult [2, 6] torch.float64
const std::vector<double> kEluResult = {0.60793575337768602, 0, -1.1000000000000001, 0.31337079411764718, -0.27500000000000002, -1.6087500000000001, 0.14358425805551456, -0.55000000000000004, 1.1056766272549767, 0.049341960582355758, -0.82500000000000007, 0.60793575337768602};
// kLeaky [2, 6] torch.float32
const std::vector<double> kLeaky = {0.200000003, 0, -1, 0.150000006, -0.25, -0.25, 0.100000001, -0.5, 0.25, 0.0500000007, -0.75, 0.200000003};
// kHardtanh [2, 6] torch.float32
const std::vector<double> kHardtanh = {1, 0, -1, 0, 0, -1.25, 0, 0, 1.25, 0, 0, 1};
// kSigmoidOut [2, 6] torch.float32
const std::vector<double> kSigmoidOut = {0.320821285, 0.867035747, 0.592666626, 0.245085016, 0.817574441, 0.5, 0.182425529, 0.754914999, 0.407333404, 0.132964239, 0.679178715, 0.320821285};
// kSigmoid [2, 6] torch.float32
const std::vector<double> kSigmoid = {0.217894986, 0, -0.241412893, 0.13876377, -0.0372866169, -0.3125, 0.0745732337, -0.0925091729, 0.301766157, 0.0288211871, -0.163421243, 0.217894986};
// kTanhOut [2, 6] torch.float32
const std::vector<double> kTanhOut = {-0.635148942, 0.954045236, 0.3583574, -0.809301078, 0.905148268, 0, -0.905148268, 0.809301078, -0.3583574, -0.954045236, 0.635148942, -0.635148942};
// kTanh [2, 6] torch.float32
const std::vector<double> kTanh = {0.59658581, 0, -0.871579945, 0.258773834, -0.0451766551, -1.25, 0.0903533101, -0.172515884, 1.08947492, 0.0224494226, -0.447439373, 0.59658581};
// kSigmoidBf16Out [2, 6] torch.bfloat16
const std::vector<double> kSigmoidBf16Out = {0.3203125, 0.8671875, 0.59375, 0.245117188, 0.81640625, 0.5, 0.182617188, 0.75390625, 0.408203125, 0.1328125, 0.6796875, 0.3203125};
// kSigmoidBf16 [2, 6] torch.bfloat16
const std::vector<double> kSigmoidBf16 = {0.217773438, 0, -0.241210938, 0.138671875, -0.0373535156, -0.3125, 0.0747070312, -0.0927734375, 0.302734375, 0.0288085938, -0.163085938, 0.217773438};
// kMaxPoolOut [1, 2, 3, 3] torch.float32
const std::vector<double> kMaxPoolOut = {0.75, std::nan(""), 0.5, 1.25, std::nan(""), 1, 1.25, 1.25, 1, 0.5, 1.25, 0.25, 1, 1.25, 1.25, 1, 1.25, 1.25};
// kMaxPoolIndices [1, 2, 3, 3] torch.int64
const std::vector<double> kMaxPoolIndices = {5, 7, 8, 10, 7, 13, 21, 21, 24, 5, 7, 8, 10, 7, 18, 21, 18, 18};
// kMaxPoolGrad [1, 2, 5, 5] torch.float32
const std::vector<double> kMaxPoolGrad = {0, 0, 0, 0, 0, -1, 0, 1.25, -0.25, 0, -1.25, 0, 0, -0.5, 0, 0, 0, 0, 0, 0, 0, 1.5, 0, 0, -0.75, 0, 0, 0, 0, 0, 1, 0, -0.25, -1, 0, 0.75, 0, 0, 0, 0, 0, 0, 0, -0.5, 0, 0, 0.5, 0, 0, 0};
// kMaxPool3dOut [1, 1, 3, 3] torch.float64
const std::vector<double> kMaxPool3dOut = {0.75, 1.25, 0.5, 1.25, 1.25, 1.25, 1, 1.25, 0.75};
// kMaxPool3dIndices [1, 1, 3, 3] torch.int64
const std::vector<double> kMaxPool3dIndices = {41, 2, 44, 46, 13, 13, 16, 57, 19};

class NnBackwardLoweringTest : public OneOpLoweringTest {};

TensorType f32(std::vector<int64_t> sizes) { return row_major(DType::kFloat32, std::move(sizes)); }
TensorType f64(std::vector<int64_t> sizes) { return row_major(DType::kFloat64, std::move(sizes)); }
Argument ints(std::vector<int64_t> values) { return Argument::int_list(std::move(values)); }
Argument mask(std::vector<int64_t> values) { return Argument::bool_list(std::move(values)); }

ScalarValue real(double value) {
  ScalarValue scalar;
  scalar.kind = ScalarValue::Kind::kDouble;
  scalar.real = value;
  return scalar;
}

// The activations' inputs: x = 1.5 * pattern(seed 1), dy = pattern(seed 3), [2, 6].
const std::vector<double> kActX = pattern({2, 6}, 1, 1.5);

}  // namespace

TEST_F(NnBackwardLoweringTest, LayerNormBackwardGivesInputWeightAndBiasGradients) {
  // float64: float32 weight and bias gradients take the host kernel (XLA's summation order).
  const auto results = run_op(
      "aten::native_layer_norm_backward",
      {{DType::kFloat64, {2, 3, 4}, 5}, {DType::kFloat64, {2, 3, 4}, 0}, {DType::kFloat64, {2, 3, 1}, 0, kLnMean},
       {DType::kFloat64, {2, 3, 1}, 0, kLnRstd}, {DType::kFloat64, {4}, 1}, {DType::kFloat64, {4}, 2}},
      [](const std::vector<Argument>& t) {
        return std::vector<Argument>{t[0], t[1], ints({4}), t[2], t[3], t[4], t[5], mask({1, 1, 1})};
      },
      {row_major(DType::kFloat64, {2, 3, 4}), row_major(DType::kFloat64, {4}), row_major(DType::kFloat64, {4})});
  expect_near(results[0], kLnGradInput, 1e-5, "grad_input");
  expect_near(results[1], kLnGradWeight, 1e-5, "grad_weight");
  expect_near(results[2], kLnGradBias, 1e-6, "grad_bias");
}

TEST_F(NnBackwardLoweringTest, LayerNormBackwardReturnsOnlyWhatTheMaskAsks) {
  const auto results = run_op(
      "aten::native_layer_norm_backward",
      {{DType::kFloat64, {2, 3, 4}, 4}, {DType::kFloat64, {2, 3, 4}, 3}, {DType::kFloat64, {2, 1, 1}, 0, kLn64Mean},
       {DType::kFloat64, {2, 1, 1}, 0, kLn64Rstd}},
      [](const std::vector<Argument>& t) {
        return std::vector<Argument>{t[0], t[1], ints({3, 4}), t[2], t[3], Argument::none(), Argument::none(),
                                     mask({1, 0, 0})};
      },
      {f64({2, 3, 4}), std::nullopt, std::nullopt});
  ASSERT_EQ(results.size(), 1u);
  expect_near(results[0], kLn64GradInput, 1e-12, "grad_input");
}

TEST_F(NnBackwardLoweringTest, HalfPrecisionLayerNormWeightGradientIsRefused) {
  // ATen sums bf16 weight and bias gradients with roundings not modelled (off by up to 0.15).
  const TensorType bf16 = row_major(DType::kBFloat16, {4});
  const std::string why = refusal(
      "aten::native_layer_norm_backward",
      {{DType::kBFloat16, {2, 3, 4}, 5}, {DType::kBFloat16, {2, 3, 4}, 0}, {DType::kBFloat16, {2, 3, 1}, 1},
       {DType::kBFloat16, {2, 3, 1}, 2}, {DType::kBFloat16, {4}, 1}, {DType::kBFloat16, {4}, 2}},
      [](const std::vector<Argument>& t) {
        return std::vector<Argument>{t[0], t[1], ints({4}), t[2], t[3], t[4], t[5], mask({0, 1, 1})};
      },
      {std::nullopt, bf16, bf16});
  EXPECT_NE(why.find("half-precision weight or bias gradients"), std::string::npos) << why;
}

TEST_F(NnBackwardLoweringTest, GroupNormBackwardGivesInputWeightAndBiasGradients) {
  const auto results = run_op(
      "aten::native_group_norm_backward",
      {{DType::kFloat32, {2, 4, 3}, 6}, {DType::kFloat32, {2, 4, 3}, 3}, {DType::kFloat32, {2, 2}, 0, kGnMean},
       {DType::kFloat32, {2, 2}, 0, kGnRstd}, {DType::kFloat32, {4}, 1}},
      [](const std::vector<Argument>& t) {
        return std::vector<Argument>{t[0], t[1], t[2], t[3], t[4], Argument::int_value(2), Argument::int_value(4),
                                     Argument::int_value(3), Argument::int_value(2), mask({1, 1, 1})};
      },
      {f32({2, 4, 3}), f32({4}), f32({4})});
  expect_near(results[0], kGnGradInput, 1e-5, "grad_input");
  expect_near(results[1], kGnGradWeight, 1e-5, "grad_weight");
  expect_near(results[2], kGnGradBias, 1e-6, "grad_bias");
}

TEST_F(NnBackwardLoweringTest, TrainingBatchNormBackwardUsesTheSavedStatistics) {
  const auto results = run_op(
      "aten::native_batch_norm_backward",
      {{DType::kFloat32, {3, 2, 2, 2}, 7}, {DType::kFloat32, {3, 2, 2, 2}, 4}, {DType::kFloat32, {2}, 1},
       {DType::kFloat32, {2}, 0, kBnSaveMean}, {DType::kFloat32, {2}, 0, kBnSaveInvstd}},
      [](const std::vector<Argument>& t) {
        return std::vector<Argument>{t[0], t[1], t[2], Argument::none(), Argument::none(), t[3], t[4],
                                     Argument::boolean(true), Argument::double_value(1e-5), mask({1, 1, 1})};
      },
      {f32({3, 2, 2, 2}), f32({2}), f32({2})});
  expect_near(results[0], kBnGradInput, 1e-5, "grad_input");
  expect_near(results[1], kBnGradWeight, 1e-5, "grad_weight");
  expect_near(results[2], kBnGradBias, 1e-6, "grad_bias");
}

TEST_F(NnBackwardLoweringTest, EvaluationBatchNormBackwardUsesTheRunningStatistics) {
  const auto results = run_op(
      "aten::native_batch_norm_backward",
      {{DType::kFloat64, {2, 3, 2}, 2}, {DType::kFloat64, {2, 3, 2}, 5}, {DType::kFloat64, {3}, 6},
       {DType::kFloat64, {3}, 2}, {DType::kFloat64, {3}, 0, {1.75, 0.75, 1.25}}},
      [](const std::vector<Argument>& t) {
        return std::vector<Argument>{t[0], t[1], t[2], t[3], t[4], Argument::none(), Argument::none(),
                                     Argument::boolean(false), Argument::double_value(1e-3), mask({1, 1, 0})};
      },
      {f64({2, 3, 2}), f64({3}), std::nullopt});
  ASSERT_EQ(results.size(), 2u);
  expect_near(results[0], kBnEvalGradInput, 1e-12, "grad_input");
  expect_near(results[1], kBnEvalGradWeight, 1e-12, "grad_weight");
}

TEST_F(NnBackwardLoweringTest, BFloat16BatchNormBackwardComputesInFloat32AndRoundsOnce) {
  const auto results = run_op(
      "aten::native_batch_norm_backward",
      {{DType::kBFloat16, {3, 2, 2, 2}, 7}, {DType::kBFloat16, {3, 2, 2, 2}, 4},
       {DType::kBFloat16, {2}, 0, {-0.1875, 0.166015625}}, {DType::kBFloat16, {2}, 0, {1.2421875, 1.328125}}},
      [](const std::vector<Argument>& t) {
        return std::vector<Argument>{t[0], t[1], Argument::none(), Argument::none(), Argument::none(), t[2], t[3],
                                     Argument::boolean(true), Argument::double_value(1e-5), mask({1, 0, 0})};
      },
      {row_major(DType::kBFloat16, {3, 2, 2, 2}), std::nullopt, std::nullopt});
  expect_near(results[0], kBnBf16GradInput, 0.0, "grad_input");
}

TEST_F(NnBackwardLoweringTest, GeluBackwardExactAndTanhForms) {
  for (const char* form : {"none", "tanh"}) {
    const auto results = run_op(
        "aten::gelu_backward", {{DType::kFloat32, {2, 6}, 3}, {DType::kFloat32, {2, 6}, 0, kActX}},
        [&](const std::vector<Argument>& t) { return std::vector<Argument>{t[0], t[1], Argument::string(form)}; },
        {f32({2, 6})});
    expect_near(results[0], std::string(form) == "none" ? kGeluNone : kGeluTanh, 2e-6, form);
  }
}

TEST_F(NnBackwardLoweringTest, EluBackwardFromTheInputAndFromTheResult) {
  const std::vector<double> result = [] {
    std::vector<double> y;
    for (const double x : kActX) y.push_back((x > 0 ? x : std::expm1(x) * 1.3) * 1.1);  // elu(x, 1.3) * 1.1
    return y;
  }();
  for (const bool is_result : {false, true}) {
    const auto results = run_op(
        "aten::elu_backward",
        {{DType::kFloat64, {2, 6}, 3}, {DType::kFloat64, {2, 6}, 0, is_result ? result : kActX}},
        [&](const std::vector<Argument>& t) {
          return std::vector<Argument>{t[0], Argument::scalar_value(real(1.3)), Argument::scalar_value(real(1.1)),
                                       Argument::scalar_value(real(0.9)), Argument::boolean(is_result), t[1]};
        },
        {f64({2, 6})}, {real(1.3), real(1.1), real(0.9)});
    expect_near(results[0], is_result ? kEluResult : kElu, 1e-12, is_result ? "is_result" : "input");
  }
}

TEST_F(NnBackwardLoweringTest, EluBackwardOfAResultWithANegativeAlphaFailsTheRun) {
  EXPECT_THROW(
      {
        try {
          run_op(
              "aten::elu_backward", {{DType::kFloat32, {2, 6}, 3}, {DType::kFloat32, {2, 6}, 0}},
              [](const std::vector<Argument>& t) {
                return std::vector<Argument>{t[0], Argument::scalar_value(real(-1.0)), Argument::scalar_value(real(1.0)),
                                             Argument::scalar_value(real(1.0)), Argument::boolean(true), t[1]};
              },
              {f32({2, 6})}, {real(-1.0), real(1.0), real(1.0)});
        } catch (const runtime::RuntimeError& error) {
          EXPECT_NE(std::string(error.what()).find("In-place elu backward calculation is triggered with a negative slope"),
                    std::string::npos)
              << error.what();
          throw;
        }
      },
      runtime::RuntimeError);
}

TEST_F(NnBackwardLoweringTest, LeakyReluHardtanhSigmoidAndTanhBackward) {
  const std::vector<Operand> inputs = {{DType::kFloat32, {2, 6}, 3}, {DType::kFloat32, {2, 6}, 0, kActX}};
  const auto leaky = run_op(
      "aten::leaky_relu_backward", inputs,
      [](const std::vector<Argument>& t) {
        return std::vector<Argument>{t[0], t[1], Argument::scalar_value(real(0.2)), Argument::boolean(false)};
      },
      {f32({2, 6})}, {real(0.2)});
  expect_near(leaky[0], kLeaky, 1e-6, "leaky_relu_backward");
  const auto hardtanh = run_op(
      "aten::hardtanh_backward.grad_input", inputs,
      [](const std::vector<Argument>& t) {
        return std::vector<Argument>{t[0], t[1], Argument::scalar_value(real(-1.0)), Argument::scalar_value(real(0.75))};
      },
      {f32({2, 6})}, {real(-1.0), real(0.75)});
  expect_near(hardtanh[0], kHardtanh, 0.0, "hardtanh_backward");
  const auto sigmoid = run_op(
      "aten::sigmoid_backward", {inputs[0], {DType::kFloat32, {2, 6}, 0, kSigmoidOut}},
      [](const std::vector<Argument>& t) { return std::vector<Argument>{t[0], t[1]}; }, {f32({2, 6})});
  expect_near(sigmoid[0], kSigmoid, 1e-6, "sigmoid_backward");
  const auto tanh = run_op(
      "aten::tanh_backward", {inputs[0], {DType::kFloat32, {2, 6}, 0, kTanhOut}},
      [](const std::vector<Argument>& t) { return std::vector<Argument>{t[0], t[1]}; }, {f32({2, 6})});
  expect_near(tanh[0], kTanh, 1e-6, "tanh_backward");
  const auto bf16 = run_op(
      "aten::sigmoid_backward", {{DType::kBFloat16, {2, 6}, 3}, {DType::kBFloat16, {2, 6}, 0, kSigmoidBf16Out}},
      [](const std::vector<Argument>& t) { return std::vector<Argument>{t[0], t[1]}; },
      {row_major(DType::kBFloat16, {2, 6})});
  expect_near(bf16[0], kSigmoidBf16, 0.0, "bf16 sigmoid_backward");
}

TEST_F(NnBackwardLoweringTest, HardtanhBackwardOfANaNIsZero) {
  // ATen's vectorized loop, which takes all but a chunk's tail, gives 0 for a NaN input.
  std::vector<double> x = kActX;
  x[4] = std::nan("");
  const auto results = run_op(
      "aten::hardtanh_backward", {{DType::kFloat32, {2, 6}, 3}, {DType::kFloat32, {2, 6}, 0, x}},
      [](const std::vector<Argument>& t) {
        return std::vector<Argument>{t[0], t[1], Argument::scalar_value(real(-1.0)),
                                     Argument::scalar_value(real(1.0))};
      },
      {f32({2, 6})}, {real(-1.0), real(1.0)});
  EXPECT_EQ(results[0][4], 0.0);
}

TEST_F(NnBackwardLoweringTest, MaxPool2dWithIndicesCeilModeAndNaN) {
  std::vector<double> x = pattern({1, 2, 5, 5}, 2);
  x[7] = std::nan("");
  const TensorType indices = row_major(DType::kInt64, {1, 2, 3, 3});
  const auto results = run_op(
      "aten::max_pool2d_with_indices", {{DType::kFloat32, {1, 2, 5, 5}, 0, x}},
      [](const std::vector<Argument>& t) {
        return std::vector<Argument>{t[0], ints({3, 3}), ints({2, 2}), ints({1, 1}), ints({1, 1}),
                                     Argument::boolean(true)};
      },
      {f32({1, 2, 3, 3}), indices});
  expect_near(results[0], kMaxPoolOut, 0.0, "out");
  expect_near(results[1], kMaxPoolIndices, 0.0, "indices (the first maximum of each window)");
  const auto grad = run_op(
      "aten::max_pool2d_with_indices_backward",
      {{DType::kFloat32, {1, 2, 3, 3}, 4}, {DType::kFloat32, {1, 2, 5, 5}, 0, x},
       {DType::kInt64, {1, 2, 3, 3}, 0, kMaxPoolIndices}},
      [](const std::vector<Argument>& t) {
        return std::vector<Argument>{t[0], t[1], ints({3, 3}), ints({2, 2}), ints({1, 1}), ints({1, 1}),
                                     Argument::boolean(true), t[2]};
      },
      {f32({1, 2, 5, 5})});
  // Overlapping windows sharing a maximum add their gradients.
  expect_near(grad[0], kMaxPoolGrad, 1e-6, "grad_input");
}

TEST_F(NnBackwardLoweringTest, MaxPool3dWithIndicesOfAnUnbatchedInputWithDilation) {
  const auto results = run_op(
      "aten::max_pool3d_with_indices", {{DType::kFloat64, {1, 3, 4, 5}, 6}},
      [](const std::vector<Argument>& t) {
        return std::vector<Argument>{t[0], ints({2, 2, 3}), ints({1, 2, 2}), ints({0, 1, 1}), ints({2, 1, 1}),
                                     Argument::boolean(false)};
      },
      {f64({1, 1, 3, 3}), row_major(DType::kInt64, {1, 1, 3, 3})});
  expect_near(results[0], kMaxPool3dOut, 0.0, "out");
  expect_near(results[1], kMaxPool3dIndices, 0.0, "indices");
}

TEST_F(NnBackwardLoweringTest, MaxPoolBackwardFailsTheRunOnAnIndexOutsideThePlane) {
  EXPECT_THROW(run_op(
                   "aten::max_pool2d_with_indices_backward",
                   {{DType::kFloat32, {1, 1, 2, 2}, 4}, {DType::kFloat32, {1, 1, 4, 4}, 0},
                    {DType::kInt64, {1, 1, 2, 2}, 0, {0, 2, 8, 16}}},
                   [](const std::vector<Argument>& t) {
                     return std::vector<Argument>{t[0], t[1], ints({2, 2}), ints({2, 2}), ints({0, 0}), ints({1, 1}),
                                                  Argument::boolean(false), t[2]};
                   },
                   {f32({1, 1, 4, 4})}),
               runtime::RuntimeError);
}
