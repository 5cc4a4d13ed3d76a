// Losses and the gradients autograd asks of them. Half precision computes in f32 and rounds once,
// as PyTorch's CPU kernels accumulate; `reduction` is at::Reduction's number (0 none, 1 mean,
// 2 sum), a constant of the program.
#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

enum Reduction : int64_t { kNone = 0, kMean = 1, kSum = 2 };

Reduction reduction_of(OpContext& context, size_t index) {
  const ir::Argument& arg = context.arg(index);
  if (arg.kind != ir::Argument::Kind::kInt || arg.integer < kNone || arg.integer > kSum) {
    context.refuse("an unknown reduction");
  }
  return static_cast<Reduction>(arg.integer);
}

}  // namespace

// mse_loss(self, target, reduction): (self - target)^2, summed or averaged over every element.
std::vector<Tensor> lower_mse_loss(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const DType compute = floating_compute(context, out.dtype);
  const std::vector<int64_t>& shape = context.tensor_type(0).sizes;
  if (context.tensor_type(1).sizes != shape) context.refuse("a target of another shape (broadcast)");
  FunctionBuilder& builder = context.builder();
  // In half precision ATen rounds the difference and the square each to the input's dtype.
  const auto rounded = [&](const Tensor& value) {
    return builder.round_through(value, out.dtype);
  };
  const Tensor difference = rounded(builder.binary(
      "stablehlo.subtract", converted_operand(context, 0, compute, shape), converted_operand(context, 1, compute, shape)));
  Tensor loss = rounded(builder.binary("stablehlo.multiply", difference, difference));
  const Reduction reduction = reduction_of(context, 2);
  if (reduction != kNone) {
    std::vector<int64_t> dims;
    for (size_t d = 0; d < shape.size(); ++d) dims.push_back(static_cast<int64_t>(d));
    if (!dims.empty()) loss = reduce_sum(builder, loss, dims, {});
    if (reduction == kMean) {
      const Tensor count = builder.splat(std::to_string(difference.numel()) + ".0", compute, {});
      loss = builder.binary("stablehlo.divide", loss, count);
    }
  }
  return {builder.reshape(builder.convert(loss, out.dtype), out.sizes)};
}

// mse_loss_backward(grad_output, self, target, reduction) = grad * 2 (self - target), divided by
// the element count for a mean.
std::vector<Tensor> lower_mse_loss_backward(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const DType compute = floating_compute(context, out.dtype);
  const std::vector<int64_t>& shape = out.sizes;
  FunctionBuilder& builder = context.builder();
  const Tensor difference = builder.binary("stablehlo.subtract", converted_operand(context, 1, compute, shape),
                                           converted_operand(context, 2, compute, shape));
  int64_t count = 1;
  for (const int64_t size : shape) count *= size;
  const double scale = reduction_of(context, 3) == kMean ? 2.0 / static_cast<double>(count) : 2.0;
  char literal[32];
  std::snprintf(literal, sizeof(literal), "%.17e", scale);
  const Tensor scaled = builder.binary("stablehlo.multiply", difference,
                                       builder.splat(literal, compute, shape));
  return {builder.convert(builder.binary("stablehlo.multiply", converted_operand(context, 0, compute, shape), scaled),
                          out.dtype)};
}

// threshold_backward(grad_output, self, threshold): the gradient where self > threshold, else 0
// (ReLU's backward).
std::vector<Tensor> lower_threshold_backward(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  const DType self_dtype = context.tensor_dtype(1);
  const Tensor self = builder.broadcast_to(context.tensor(1), out.sizes);
  const Tensor threshold = builder.broadcast_to(builder.convert(context.scalar(2), self_dtype), out.sizes);
  const Tensor at_most = builder.op("stablehlo.compare", {self, threshold}, DType::kBool, out.sizes,
                                    "comparison_direction = #stablehlo<comparison_direction LE>");
  const Tensor grad = builder.broadcast_to(builder.convert(context.tensor(0), out.dtype), out.sizes);
  return {builder.op("stablehlo.select", {at_most, builder.zeros(out.dtype, out.sizes), grad},
                     out.dtype, out.sizes)};
}

}  // namespace torch_tpu::executors::pjrt::lowering
