// Softmax and log-softmax over one dimension, and their gradients, as PyTorch's CPU kernels
// compute them: the maximum subtracted first (no overflow).
#include <tuple>

#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

// f32 and f64. Half precision is refused: ATen's CPU kernels round its intermediate steps in a
// way not modelled yet (a softmax computed in f32 and rounded once is one ulp off).
DType softmax_compute(OpContext& context, DType out) {
  if (out == DType::kFloat16 || out == DType::kBFloat16) context.refuse("half precision");
  return floating_compute(context, out);
}

Tensor negative_infinity(FunctionBuilder& builder, DType dtype) {
  return builder.splat(dtype == DType::kFloat64 ? "0xFFF0000000000000" : "0xFF800000", dtype, {});
}

// x - max(x, dim) and log(sum(exp(that), dim)), both broadcast back to x's shape.
struct Shifted {
  Tensor shifted;
  Tensor log_sum_exp;
};

Shifted shift(FunctionBuilder& builder, const Tensor& x, int64_t dim) {
  const Tensor max = reduce_keepdim(builder, x, dim, "stablehlo.maximum", negative_infinity(builder, x.dtype));
  const Tensor shifted = builder.binary("stablehlo.subtract", x, builder.broadcast_to(max, x.shape));
  const Tensor sum = reduce_keepdim(builder, builder.unary("stablehlo.exponential", shifted), dim,
                                    "stablehlo.add", builder.zeros(x.dtype, {}));
  return {shifted, builder.broadcast_to(builder.unary("stablehlo.log", sum), x.shape)};
}

// (self, dim, half_to_float) of _softmax and _log_softmax.
std::pair<Tensor, int64_t> input_of(OpContext& context, DType compute) {
  const Tensor x = context.builder().convert(context.tensor(0), compute);
  return {x, normalized_dim(context, context.arg(1).integer, x.shape.size())};
}

// (grad_output, output, dim, input_dtype) of the backward ops: both tensors in `compute`.
std::tuple<Tensor, Tensor, int64_t> backward_inputs(OpContext& context, DType compute) {
  FunctionBuilder& builder = context.builder();
  const Tensor grad = builder.convert(context.tensor(0), compute);
  const Tensor output = builder.convert(context.tensor(1), compute);
  return {grad, output, normalized_dim(context, context.arg(2).integer, grad.shape.size())};
}

}  // namespace

std::vector<Tensor> lower_log_softmax(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  const auto [x, dim] = input_of(context, softmax_compute(context, out.dtype));
  const Shifted s = shift(builder, x, dim);
  return {builder.convert(builder.binary("stablehlo.subtract", s.shifted, s.log_sum_exp), out.dtype)};
}

std::vector<Tensor> lower_softmax(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  const auto [x, dim] = input_of(context, softmax_compute(context, out.dtype));
  const Shifted s = shift(builder, x, dim);
  const Tensor y = builder.unary("stablehlo.exponential",
                                 builder.binary("stablehlo.subtract", s.shifted, s.log_sum_exp));
  return {builder.convert(y, out.dtype)};
}

// _log_softmax_backward_data(grad, output, dim, input_dtype) = grad - exp(output) * sum(grad).
std::vector<Tensor> lower_log_softmax_backward(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  const auto [grad, output, dim] = backward_inputs(context, softmax_compute(context, out.dtype));
  const DType compute = grad.dtype;
  const Tensor sum = builder.broadcast_to(
      reduce_keepdim(builder, grad, dim, "stablehlo.add", builder.zeros(compute, {})), grad.shape);
  const Tensor result = builder.binary(
      "stablehlo.subtract", grad,
      builder.binary("stablehlo.multiply", builder.unary("stablehlo.exponential", output), sum));
  return {builder.convert(result, out.dtype)};
}

// _softmax_backward_data(grad, output, dim, input_dtype) = output * (grad - sum(grad * output)).
std::vector<Tensor> lower_softmax_backward(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  const auto [grad, output, dim] = backward_inputs(context, softmax_compute(context, out.dtype));
  const DType compute = grad.dtype;
  const Tensor product = builder.binary("stablehlo.multiply", grad, output);
  const Tensor sum = builder.broadcast_to(
      reduce_keepdim(builder, product, dim, "stablehlo.add", builder.zeros(compute, {})), grad.shape);
  const Tensor result = builder.binary("stablehlo.multiply", output,
                                       builder.binary("stablehlo.subtract", grad, sum));
  return {builder.convert(result, out.dtype)};
}

}  // namespace torch_tpu::executors::pjrt::lowering
