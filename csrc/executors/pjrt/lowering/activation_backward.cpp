// The gradients of the activations a training step uses (gelu, elu, leaky_relu, hardtanh,
// sigmoid, tanh), in the forms and operation order of PyTorch's CPU kernels
// (Activation.cpp, BinaryOpsKernel.cpp). Floating dtypes only; half precision computes in f32
// and rounds once, as those kernels do (float16 sigmoid_backward rounds each step, as ATen
// computes it in the dtype). Refused: inputs of another dtype than the gradient's (ATen would
// promote), gelu's unknown approximations. hardtanh_backward of a NaN input is 0, as ATen's
// vectorized loop gives it (its scalar tail would pass the gradient). ATen's errors for an
// in-place forward's negative slope (elu's alpha, leaky_relu's negative_slope with
// *_is_result) are run-time checks: the Scalars are run-time operands.
#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

// The output's compute dtype after checking that the tensor arguments `tensors` share its dtype.
DType gradient_compute(OpContext& context, const std::vector<size_t>& tensors) {
  const ir::TensorType& out = context.return_type(0);
  const DType compute = floating_compute(context, out.dtype);
  for (const size_t index : tensors) {
    if (context.tensor_dtype(index) != out.dtype) context.refuse("inputs of another dtype than the gradient");
  }
  return compute;
}

Tensor mul(FunctionBuilder& b, const Tensor& x, const Tensor& y) { return b.binary("stablehlo.multiply", x, y); }
Tensor add(FunctionBuilder& b, const Tensor& x, const Tensor& y) { return b.binary("stablehlo.add", x, y); }
Tensor sub(FunctionBuilder& b, const Tensor& x, const Tensor& y) { return b.binary("stablehlo.subtract", x, y); }

// Fails the run with `message` when Scalar argument `index` is negative.
void check_not_negative(OpContext& context, size_t index, const std::string& message) {
  FunctionBuilder& builder = context.builder();
  const Tensor value = builder.convert(context.scalar(index), DType::kFloat64);
  context.check(builder.compare(value, builder.zeros(DType::kFloat64, {}), "LT"), message);
}

}  // namespace

// gelu_backward(grad_output, self, approximate): "none": dy * (cdf + x * pdf), cdf = 0.5 (1 +
// erf(x / √2)), pdf = exp(-x² / 2) / √(2π); "tanh": dy * (0.5 (1 + t) + 0.5 x (1 - t²) β (1 +
// 3κx²)), t = tanh(β (x + κx³)), β = √(2/π), κ = 0.044715.
std::vector<Tensor> lower_gelu_backward(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const DType compute = gradient_compute(context, {0, 1});
  const bool tanh_form = gelu_is_tanh_form(context, 2);
  FunctionBuilder& builder = context.builder();
  const std::vector<int64_t>& shape = out.sizes;
  const Tensor dy = converted_operand(context, 0, compute, shape);
  const Tensor x = converted_operand(context, 1, compute, shape);
  const auto constant = [&](double value) { return builder.float_splat(value, compute, shape); };
  const Tensor half = constant(0.5), one = constant(1.0);
  Tensor derivative;
  if (tanh_form) {
    const double beta = 1.41421356237309504880 * 1.12837916709551257390 * 0.5;  // M_SQRT2 * M_2_SQRTPI * 0.5
    const Tensor kappa = constant(0.044715);
    const Tensor x_sq = mul(builder, x, x);
    const Tensor x_cube = mul(builder, x_sq, x);
    const Tensor inner = mul(builder, constant(beta), add(builder, x, mul(builder, kappa, x_cube)));
    const Tensor t = builder.unary("stablehlo.tanh", inner);
    const Tensor left = mul(builder, half, x);
    const Tensor left_derivative = mul(builder, half, add(builder, one, t));
    const Tensor tanh_derivative = sub(builder, one, mul(builder, t, t));
    const Tensor inner_derivative =
        mul(builder, constant(beta), add(builder, one, mul(builder, mul(builder, constant(3.0), kappa), x_sq)));
    derivative = add(builder, left_derivative, mul(builder, mul(builder, left, tanh_derivative), inner_derivative));
  } else {
    const double alpha = 0.70710678118654752440;                      // M_SQRT1_2
    const double beta = 1.12837916709551257390 * alpha * 0.5;         // M_2_SQRTPI * M_SQRT1_2 * 0.5
    const Tensor cdf = mul(builder, half, add(builder, one, builder.unary("chlo.erf", mul(builder, x, constant(alpha)))));
    const Tensor pdf = mul(builder, constant(beta),
                           builder.unary("stablehlo.exponential", mul(builder, mul(builder, x, x), constant(-0.5))));
    derivative = add(builder, cdf, mul(builder, x, pdf));
  }
  return {builder.convert(mul(builder, dy, derivative), out.dtype)};
}

// elu_backward(grad_output, alpha, scale, input_scale, is_result, self_or_result): where
// self_or_result <= 0, dy * input_scale * (result + alpha * scale) (is_result) or dy *
// input_scale * alpha * scale * exp(x * input_scale); elsewhere dy * scale.
std::vector<Tensor> lower_elu_backward(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const DType compute = gradient_compute(context, {0, 5});
  const bool is_result = context.arg(4).integer != 0;
  if (is_result) {
    check_not_negative(context, 1,
                       "In-place elu backward calculation is triggered with a negative slope which is not supported. "
                       "This is caused by calling in-place forward function with a negative slope, please call "
                       "out-of-place version instead.");
  }
  FunctionBuilder& builder = context.builder();
  const Tensor dy = converted_operand(context, 0, compute, out.sizes);
  const Tensor alpha = elementwise_operand(context, 1, out, compute);
  const Tensor scale = elementwise_operand(context, 2, out, compute);
  const Tensor input_scale = elementwise_operand(context, 3, out, compute);
  const Tensor y = converted_operand(context, 5, compute, out.sizes);
  const Tensor negcoef = mul(builder, alpha, scale);
  const Tensor negative = is_result ? mul(builder, mul(builder, dy, input_scale), add(builder, y, negcoef))
                                    : mul(builder, mul(builder, mul(builder, dy, input_scale), negcoef),
                                          builder.unary("stablehlo.exponential", mul(builder, y, input_scale)));
  const Tensor not_positive = builder.compare(y, builder.zeros(compute, out.sizes), "LE");
  return {builder.convert(builder.select(not_positive, negative, mul(builder, dy, scale)), out.dtype)};
}

// leaky_relu_backward(grad_output, self, negative_slope, self_is_result): self > 0 ? dy : dy *
// negative_slope.
std::vector<Tensor> lower_leaky_relu_backward(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const DType compute = gradient_compute(context, {0, 1});
  if (context.arg(3).integer != 0) {
    check_not_negative(context, 2,
                       "In-place leakyReLu backward calculation is triggered with a negative slope which is not "
                       "supported. This is caused by calling in-place forward function with a negative slope, "
                       "please call out-of-place version instead. File an issue at "
                       "https://github.com/pytorch/pytorch if you do require supporting in-place leakRelu backward "
                       "calculation with negative slope");
  }
  FunctionBuilder& builder = context.builder();
  const Tensor dy = converted_operand(context, 0, compute, out.sizes);
  const Tensor x = converted_operand(context, 1, compute, out.sizes);
  const Tensor slope = elementwise_operand(context, 2, out, compute);
  const Tensor positive = builder.compare(x, builder.zeros(compute, out.sizes), "GT");
  return {builder.convert(builder.select(positive, dy, mul(builder, dy, slope)), out.dtype)};
}

// hardtanh_backward(grad_output, self, min_val, max_val): 0 where self <= min_val or self >=
// max_val (compared in f32 for half precision), dy elsewhere; 0 for a NaN input.
std::vector<Tensor> lower_hardtanh_backward(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const DType compute = gradient_compute(context, {0, 1});
  FunctionBuilder& builder = context.builder();
  // Half precision compares in f32 with the bounds unrounded, as ATen's kernel.
  const auto bound = [&](size_t index) { return elementwise_operand(context, index, out, compute); };
  const Tensor dy = converted_operand(context, 0, compute, out.sizes);
  const Tensor x = converted_operand(context, 1, compute, out.sizes);
  // ATen's vectorized loop, which takes all but a chunk's tail, gives a NaN input 0 (its
  // scalar tail the gradient): a NaN counts as clipped. Failing the run instead would stop a
  // training step that ATen completes.
  const Tensor clipped = builder.binary(
      "stablehlo.or", nan_mask(builder, x),
      builder.binary("stablehlo.or", builder.compare(x, bound(2), "LE"), builder.compare(x, bound(3), "GE")));
  return {builder.convert(builder.select(clipped, builder.zeros(compute, out.sizes), dy), out.dtype)};
}

// sigmoid_backward(grad_output, output) = dy * (1 - y) * y (float16: each step rounded).
std::vector<Tensor> lower_sigmoid_backward(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const DType compute = gradient_compute(context, {0, 1});
  FunctionBuilder& builder = context.builder();
  const Tensor dy = converted_operand(context, 0, compute, out.sizes);
  const Tensor y = converted_operand(context, 1, compute, out.sizes);
  const Tensor one = builder.float_splat(1.0, compute, out.sizes);
  if (out.dtype == DType::kFloat16) {
    // ATen computes float16 (unlike bfloat16) in the dtype, rounding each step; the f32 steps
    // on float16 values are exact, so rounding each to float16 gives its bits.
    const auto rounded = [&](const Tensor& t) { return builder.round_through(t, out.dtype); };
    return {builder.convert(mul(builder, rounded(mul(builder, dy, rounded(sub(builder, one, y)))), y), out.dtype)};
  }
  return {builder.convert(mul(builder, mul(builder, dy, sub(builder, one, y)), y), out.dtype)};
}

// tanh_backward(grad_output, output) = dy * (1 - y * y).
std::vector<Tensor> lower_tanh_backward(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const DType compute = gradient_compute(context, {0, 1});
  FunctionBuilder& builder = context.builder();
  const Tensor dy = converted_operand(context, 0, compute, out.sizes);
  const Tensor y = converted_operand(context, 1, compute, out.sizes);
  const Tensor one = builder.float_splat(1.0, compute, out.sizes);
  return {builder.convert(mul(builder, dy, sub(builder, one, mul(builder, y, y))), out.dtype)};
}

}  // namespace torch_tpu::executors::pjrt::lowering
