// Softmax and log-softmax over one dimension, and their gradients, as PyTorch's CPU kernels
// compute them: the maximum subtracted first (no overflow). Half precision is computed in f32
// and rounded once, except where ATen's kernel rounds a step itself (log-softmax over the last
// dimension, below). A 0-d input is softmaxed as one element (ATen views it as [1]).
#include <algorithm>
#include <tuple>

#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

// f32 for half precision (ATen's kernels convert each element to float), else the output's.
// Measured against PyTorch 2.13 CPU on random inputs of many shapes: softmax over the last
// dimension and both gradients match bit for bit; softmax over another dimension is within one
// rounding (ATen's scalar tail columns round exp(x - max) to the dtype before dividing).
DType softmax_compute(OpContext& context, DType out) { return floating_compute(context, out); }

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

// The dimension argument `index` of a softmax over `x` (already at least 1-d), `rank` the
// input's own rank (0 or more).
int64_t softmax_dim(OpContext& context, size_t index, size_t rank) {
  return normalized_dim(context, context.arg(index).integer, std::max<size_t>(rank, 1));
}

// (self, dim, half_to_float) of _softmax and _log_softmax.
std::pair<Tensor, int64_t> input_of(OpContext& context, DType compute) {
  FunctionBuilder& builder = context.builder();
  const Tensor self = context.tensor(0);
  const Tensor x = at_least_1d(builder, builder.convert(self, compute));
  return {x, softmax_dim(context, 1, self.shape.size())};
}

// (grad_output, output, dim, input_dtype) of the backward ops: both tensors in `compute`.
std::tuple<Tensor, Tensor, int64_t> backward_inputs(OpContext& context, DType compute) {
  FunctionBuilder& builder = context.builder();
  const Tensor grad_output = context.tensor(0);
  const Tensor grad = at_least_1d(builder, builder.convert(grad_output, compute));
  const Tensor output = at_least_1d(builder, builder.convert(context.tensor(1), compute));
  return {grad, output, softmax_dim(context, 2, grad_output.shape.size())};
}

// `value` (computed in f32) as return 0: rounded to its dtype and shaped as it (0-d again).
Tensor as_output(OpContext& context, const Tensor& value) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  return builder.reshape(builder.convert(value, out.dtype), out.sizes);
}

}  // namespace

// Half precision over the last dimension: ATen's lastdim kernel keeps sum(exp(x - max)) and its
// log in arrays of the input's dtype, so both are rounded to it before x - max - log(sum) (in
// float, rounded once); without those roundings an output near 0 differs in every bit (the
// relative difference is infinite where ATen's rounded sum is exactly 1). Over another
// dimension its kernel keeps them in float. Bit-exact against PyTorch 2.13 CPU on random inputs.
std::vector<Tensor> lower_log_softmax(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  const DType compute = softmax_compute(context, out.dtype);
  const auto [x, dim] = input_of(context, compute);
  const Tensor max = reduce_keepdim(builder, x, dim, "stablehlo.maximum", negative_infinity(builder, compute));
  const Tensor shifted = builder.binary("stablehlo.subtract", x, builder.broadcast_to(max, x.shape));
  Tensor sum = reduce_keepdim(builder, builder.unary("stablehlo.exponential", shifted), dim, "stablehlo.add",
                              builder.zeros(compute, {}));
  const bool rounds_steps = compute != out.dtype && dim + 1 == static_cast<int64_t>(x.shape.size());
  if (rounds_steps) sum = builder.round_through(sum, out.dtype);
  Tensor log_sum = builder.unary("stablehlo.log", sum);
  if (rounds_steps) log_sum = builder.round_through(log_sum, out.dtype);
  return {as_output(context, builder.binary("stablehlo.subtract", shifted, builder.broadcast_to(log_sum, x.shape)))};
}

std::vector<Tensor> lower_softmax(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  const auto [x, dim] = input_of(context, softmax_compute(context, out.dtype));
  const Shifted s = shift(builder, x, dim);
  const Tensor y = builder.unary("stablehlo.exponential",
                                 builder.binary("stablehlo.subtract", s.shifted, s.log_sum_exp));
  return {as_output(context, y)};
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
  return {as_output(context, result)};
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
  return {as_output(context, result)};
}

}  // namespace torch_tpu::executors::pjrt::lowering
