// Activations beyond a decoder's (activation.cpp), each in the order ATen's CPU kernel
// computes it; floating outputs, half precision in f32 rounded once:
//   hardsigmoid(x) = min(max(x + 3, 0), 6) / 6, hardswish(x) = x * min(max(x + 3, 0), 6) / 6,
//   softplus(x, beta, threshold) = x * beta > threshold ? x : log1p(exp(x * beta)) / beta,
//   softplus_backward(g, x, beta, threshold) = x * beta > threshold ? g : g * z / (z + 1),
//     z = exp(x * beta),
//   mish(x) = x * tanh(log1p(exp(x))), threshold(x, t, v) = x <= t ? v : x (any dtype),
//   log_sigmoid_forward(x) = (min(0, x) - log1p(z), z), z = exp(-|x|) (the buffer, stored),
//   log_sigmoid_backward(g, x, z) = ((x < 0 ? 1 : 0) - (x < 0 ? 1 : -1) * z / (1 + z)) * g,
//     z read back from the stored buffer, as ATen's CPU kernel does.
#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

struct Unary {
  const ir::TensorType& out;
  DType compute;
  FunctionBuilder& builder;
  Tensor x;

  explicit Unary(OpContext& context)
      : out(context.return_type(0)),
        compute(floating_compute(context, context.return_type(0).dtype)),
        builder(context.builder()),
        x(elementwise_operand(context, 0, context.return_type(0), compute)) {}
  Tensor constant(const char* literal) const { return builder.splat(literal, compute, out.sizes); }
  Tensor clamped_shift() const {  // min(max(x + 3, 0), 6)
    const Tensor shifted = builder.binary("stablehlo.add", x, constant("3.0"));
    return builder.binary("stablehlo.minimum", builder.binary("stablehlo.maximum", shifted, constant("0.0")),
                          constant("6.0"));
  }
  std::vector<Tensor> result(const Tensor& value) const { return {builder.convert(value, out.dtype)}; }
};

}  // namespace

std::vector<Tensor> lower_hardsigmoid(OpContext& context) {
  const Unary u(context);
  return u.result(u.builder.binary("stablehlo.divide", u.clamped_shift(), u.constant("6.0")));
}

std::vector<Tensor> lower_hardswish(OpContext& context) {
  const Unary u(context);
  return u.result(u.builder.binary("stablehlo.divide", u.builder.binary("stablehlo.multiply", u.x, u.clamped_shift()),
                                   u.constant("6.0")));
}

std::vector<Tensor> lower_softplus(OpContext& context) {
  const Unary u(context);
  FunctionBuilder& builder = u.builder;
  const Tensor beta = elementwise_operand(context, 1, u.out, u.compute);
  const Tensor threshold = elementwise_operand(context, 2, u.out, u.compute);
  const Tensor scaled = builder.binary("stablehlo.multiply", u.x, beta);
  const Tensor smooth = builder.binary(
      "stablehlo.divide", builder.unary("stablehlo.log_plus_one", builder.unary("stablehlo.exponential", scaled)), beta);
  return u.result(builder.select(builder.compare(scaled, threshold, "GT"), u.x, smooth));
}

std::vector<Tensor> lower_softplus_backward(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const DType compute = floating_compute(context, out.dtype);
  FunctionBuilder& builder = context.builder();
  const Tensor grad = elementwise_operand(context, 0, out, compute);
  const Tensor x = elementwise_operand(context, 1, out, compute);
  const Tensor beta = elementwise_operand(context, 2, out, compute);
  const Tensor threshold = elementwise_operand(context, 3, out, compute);
  const Tensor scaled = builder.binary("stablehlo.multiply", x, beta);
  const Tensor z = builder.unary("stablehlo.exponential", scaled);
  const Tensor one = builder.splat("1.0", compute, out.sizes);
  const Tensor smooth = builder.binary("stablehlo.divide", builder.binary("stablehlo.multiply", grad, z),
                                       builder.binary("stablehlo.add", z, one));
  return {builder.convert(builder.select(builder.compare(scaled, threshold, "GT"), grad, smooth), out.dtype)};
}

std::vector<Tensor> lower_mish(OpContext& context) {
  const Unary u(context);
  FunctionBuilder& builder = u.builder;
  const Tensor softplus = builder.unary("stablehlo.log_plus_one", builder.unary("stablehlo.exponential", u.x));
  return u.result(builder.binary("stablehlo.multiply", u.x, builder.unary("stablehlo.tanh", softplus)));
}

std::vector<Tensor> lower_log_sigmoid_forward(OpContext& context) {
  const Unary u(context);
  FunctionBuilder& builder = u.builder;
  const Tensor z = builder.unary("stablehlo.exponential", builder.unary("stablehlo.negate", builder.unary("stablehlo.abs", u.x)));
  const Tensor low = builder.binary("stablehlo.minimum", u.constant("0.0"), u.x);
  const Tensor output = builder.binary("stablehlo.subtract", low, builder.unary("stablehlo.log_plus_one", z));
  return {builder.convert(output, u.out.dtype), builder.convert(z, context.return_type(1).dtype)};
}

std::vector<Tensor> lower_log_sigmoid_backward(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const DType compute = floating_compute(context, out.dtype);
  FunctionBuilder& builder = context.builder();
  const Tensor grad = elementwise_operand(context, 0, out, compute);
  const Tensor x = elementwise_operand(context, 1, out, compute);
  if (context.tensor_type(2).sizes != out.sizes) context.refuse("a buffer of another shape");
  const Tensor z = elementwise_operand(context, 2, out, compute);
  const auto constant = [&](const char* literal) { return builder.splat(literal, compute, out.sizes); };
  const Tensor negative = builder.compare(x, constant("0.0"), "LT");
  const Tensor max_deriv = builder.select(negative, constant("1.0"), constant("0.0"));
  const Tensor sign = builder.select(negative, constant("1.0"), constant("-1.0"));
  const Tensor ratio = builder.binary("stablehlo.divide", z, builder.binary("stablehlo.add", constant("1.0"), z));
  const Tensor slope = builder.binary("stablehlo.subtract", max_deriv, builder.binary("stablehlo.multiply", sign, ratio));
  return {builder.convert(builder.binary("stablehlo.multiply", slope, grad), out.dtype)};
}

std::vector<Tensor> lower_threshold(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const DType compute = elementwise_compute(context);
  if (compute == DType::kBool) context.refuse("a bool threshold");
  FunctionBuilder& builder = context.builder();
  const Tensor x = elementwise_operand(context, 0, out, compute);
  const Tensor threshold = elementwise_operand(context, 1, out, compute);
  const Tensor value = elementwise_operand(context, 2, out, compute);
  return {builder.convert(builder.select(builder.compare(x, threshold, "LE"), value, x), out.dtype)};
}

}  // namespace torch_tpu::executors::pjrt::lowering
