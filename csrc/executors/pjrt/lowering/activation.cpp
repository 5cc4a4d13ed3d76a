// Activations a training step uses, with their gradients. Floating outputs only;
// half precision computes in f32 and rounds once, as PyTorch's CPU kernels do.
#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
using ir::DType;

// silu(x) = x * sigmoid(x).
std::vector<Tensor> lower_silu(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const DType compute = floating_compute(context, out.dtype);
  FunctionBuilder& builder = context.builder();
  const Tensor x = converted_operand(context, 0, compute, out.sizes);
  const Tensor y = builder.binary("stablehlo.multiply", x, builder.unary("stablehlo.logistic", x));
  return {builder.convert(y, out.dtype)};
}

// silu_backward(grad, x) = grad * s * (1 + x * (1 - s)), s = sigmoid(x).
std::vector<Tensor> lower_silu_backward(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const DType compute = floating_compute(context, out.dtype);
  FunctionBuilder& builder = context.builder();
  const Tensor grad = converted_operand(context, 0, compute, out.sizes);
  const Tensor x = converted_operand(context, 1, compute, out.sizes);
  const Tensor s = builder.unary("stablehlo.logistic", x);
  const Tensor one = builder.splat("1.0", compute, out.sizes);
  const Tensor inner = builder.binary(
      "stablehlo.add", one,
      builder.binary("stablehlo.multiply", x, builder.binary("stablehlo.subtract", one, s)));
  const Tensor result = builder.binary("stablehlo.multiply", grad,
                                       builder.binary("stablehlo.multiply", s, inner));
  return {builder.convert(result, out.dtype)};
}

// leaky_relu(x, negative_slope) = x > 0 ? x : x * negative_slope.
std::vector<Tensor> lower_leaky_relu(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const DType compute = floating_compute(context, out.dtype);
  FunctionBuilder& builder = context.builder();
  const Tensor x = elementwise_operand(context, 0, out, compute);
  const Tensor slope = elementwise_operand(context, 1, out, compute);
  const Tensor positive = builder.compare(x, builder.zeros(compute, out.sizes), "GT");
  return {builder.convert(builder.select(positive, x, builder.binary("stablehlo.multiply", x, slope)), out.dtype)};
}

// elu(x, alpha, scale, input_scale) = x > 0 ? x * scale : expm1(x * input_scale) * alpha * scale.
std::vector<Tensor> lower_elu(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const DType compute = floating_compute(context, out.dtype);
  FunctionBuilder& builder = context.builder();
  const Tensor x = elementwise_operand(context, 0, out, compute);
  const Tensor alpha = elementwise_operand(context, 1, out, compute);
  const Tensor scale = elementwise_operand(context, 2, out, compute);
  const Tensor input_scale = elementwise_operand(context, 3, out, compute);
  const Tensor negative_coefficient = builder.binary("stablehlo.multiply", alpha, scale);
  const Tensor negative = builder.binary(
      "stablehlo.multiply",
      builder.unary("stablehlo.exponential_minus_one", builder.binary("stablehlo.multiply", x, input_scale)),
      negative_coefficient);
  const Tensor positive = builder.compare(x, builder.zeros(compute, out.sizes), "GT");
  return {builder.convert(builder.select(positive, builder.binary("stablehlo.multiply", x, scale), negative),
                          out.dtype)};
}

bool gelu_is_tanh_form(OpContext& context, size_t index) {
  if (context.node().args.size() <= index) return false;
  const ir::Argument& approximate = context.arg(index);
  if (approximate.kind != ir::Argument::Kind::kString) return false;
  if (approximate.text != "tanh" && approximate.text != "none") {
    context.refuse("approximate='" + approximate.text + "'");
  }
  return approximate.text == "tanh";
}

// gelu(x, approximate): "none" is x * Φ(x) = 0.5 x (1 + erf(x / √2)); "tanh" is
// 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³))).
std::vector<Tensor> lower_gelu(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const DType compute = floating_compute(context, out.dtype);
  const bool tanh_form = gelu_is_tanh_form(context, 1);
  FunctionBuilder& builder = context.builder();
  const Tensor x = elementwise_operand(context, 0, out, compute);
  const Tensor half = builder.splat("0.5", compute, out.sizes);
  const Tensor one = builder.splat("1.0", compute, out.sizes);
  Tensor inner;
  if (tanh_form) {
    const Tensor cube = builder.binary("stablehlo.multiply", x, builder.binary("stablehlo.multiply", x, x));
    const Tensor cubic = builder.binary("stablehlo.add", x,
                                        builder.binary("stablehlo.multiply", builder.splat("0.044715", compute, out.sizes), cube));
    inner = builder.unary("stablehlo.tanh",
                          builder.binary("stablehlo.multiply", builder.splat("0.79788456080286541", compute, out.sizes), cubic));
  } else {
    inner = builder.unary("chlo.erf",
                          builder.binary("stablehlo.multiply", x, builder.splat("0.70710678118654757", compute, out.sizes)));
  }
  const Tensor y = builder.binary("stablehlo.multiply", builder.binary("stablehlo.multiply", half, x),
                                  builder.binary("stablehlo.add", one, inner));
  return {builder.convert(y, out.dtype)};
}

}  // namespace torch_tpu::executors::pjrt::lowering
