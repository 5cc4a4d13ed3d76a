// Bitwise and logical ops. Bitwise ops act on integral and bool tensors in the output's dtype
// (PyTorch refuses floats before dispatch); logical ops read each operand as bool (non-zero,
// NaN included, is true) and write the outcome into an output of any dtype.
#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

std::vector<Tensor> bitwise(OpContext& context, const std::string& op) {
  const ir::TensorType& out = context.return_type(0);
  if (is_floating(out.dtype)) context.refuse("a bitwise op on " + ir::dtype_name(out.dtype));
  FunctionBuilder& builder = context.builder();
  return {builder.binary(op, elementwise_operand(context, 0, out, out.dtype),
                         elementwise_operand(context, 1, out, out.dtype))};
}

// Tensor argument `index` as bool, broadcast to `shape`.
Tensor truth(OpContext& context, size_t index, const std::vector<int64_t>& shape) {
  FunctionBuilder& builder = context.builder();
  const Tensor x = builder.broadcast_to(context.tensor(index), shape);
  if (x.dtype == DType::kBool) return x;
  return builder.compare(x, builder.zeros(x.dtype, x.shape), "NE");
}

std::vector<Tensor> logical(OpContext& context, const std::string& op) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  const Tensor result = builder.binary(op, truth(context, 0, out.sizes), truth(context, 1, out.sizes));
  return {builder.convert(result, out.dtype)};
}

}  // namespace

std::vector<Tensor> lower_bitwise_and(OpContext& context) { return bitwise(context, "stablehlo.and"); }
std::vector<Tensor> lower_bitwise_or(OpContext& context) { return bitwise(context, "stablehlo.or"); }
std::vector<Tensor> lower_bitwise_xor(OpContext& context) { return bitwise(context, "stablehlo.xor"); }

std::vector<Tensor> lower_bitwise_not(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  if (is_floating(out.dtype)) context.refuse("bitwise_not of " + ir::dtype_name(out.dtype));
  return {context.builder().unary("stablehlo.not", elementwise_operand(context, 0, out, out.dtype))};
}

std::vector<Tensor> lower_logical_and(OpContext& context) { return logical(context, "stablehlo.and"); }
std::vector<Tensor> lower_logical_or(OpContext& context) { return logical(context, "stablehlo.or"); }
std::vector<Tensor> lower_logical_xor(OpContext& context) { return logical(context, "stablehlo.xor"); }

std::vector<Tensor> lower_logical_not(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  return {builder.convert(builder.unary("stablehlo.not", truth(context, 0, out.sizes)), out.dtype)};
}

}  // namespace torch_tpu::executors::pjrt::lowering
