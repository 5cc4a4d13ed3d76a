// Activations and powers a training step uses, with their gradients. Floating outputs only;
// half precision computes in f32 and rounds once, as PyTorch's CPU kernels do.
#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
using ir::DType;

// pow.Tensor_Scalar(self, exponent): the exponent is a run-time Scalar.
std::vector<Tensor> lower_pow_scalar(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const DType compute = floating_compute(context, out.dtype);
  if (context.writes_an_argument() && context.tensor_dtype(0) != out.dtype) {
    context.refuse("self of another dtype than the output");
  }
  FunctionBuilder& builder = context.builder();
  const Tensor base = converted_operand(context, 0, compute, out.sizes);
  const Tensor exponent = builder.broadcast_to(builder.convert(context.scalar(1), compute), out.sizes);
  return {builder.convert(builder.binary("stablehlo.power", base, exponent), out.dtype)};
}

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

}  // namespace torch_tpu::executors::pjrt::lowering
