// The negative log-likelihood loss (cross_entropy's second half) and its gradient, for
// nll_loss (self (N, C) or (C)) and nll_loss2d (self (N, C, H, W)): the class dimension is 1, or
// 0 for a single sample. The target's class is picked with a one-hot mask over the class
// dimension (a select, so a -inf log-probability elsewhere stays out of the sum) rather than a
// gather: the same bytes are read, and the gradient is the same mask.
#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

enum Reduction : int64_t { kNone = 0, kMean = 1, kSum = 2 };

// What forward and backward share: the mask of each position's target class, the rows whose
// target is not ignore_index, and each row's class weight (1 without a weight), zero for
// ignored rows. `self` and `weight` at `self_index` and `self_index + 2`, target between them.
struct Picked {
  DType compute;
  std::vector<int64_t> self_shape;
  std::vector<int64_t> target_shape;
  int64_t class_dim;
  Tensor hit;      // bool, self's shape
  Tensor valid;    // bool, target's shape
  Tensor weight;   // compute, target's shape (0 where ignored)
  Reduction reduction;
};

Picked pick(OpContext& context, size_t self_index, DType out) {
  if (out != DType::kFloat32 && out != DType::kFloat64) {
    context.refuse("dtype " + ir::dtype_name(out) + " (ATen's half-precision accumulation is not modelled)");
  }
  FunctionBuilder& builder = context.builder();
  Picked p;
  p.compute = out;
  p.self_shape = context.tensor_type(self_index).sizes;
  p.target_shape = context.tensor_type(self_index + 1).sizes;
  const size_t rank = p.self_shape.size();
  if (rank == 0) context.refuse("a 0-d input");
  p.class_dim = rank == 1 ? 0 : 1;
  std::vector<int64_t> target_dims;  // where the target's dimensions sit in self's
  for (size_t d = 0; d < rank; ++d) {
    if (static_cast<int64_t>(d) != p.class_dim) target_dims.push_back(static_cast<int64_t>(d));
  }
  if (target_dims.size() != p.target_shape.size()) context.refuse("a target of another rank");
  const ir::Argument& reduction = context.arg(self_index + 3);
  if (reduction.kind != ir::Argument::Kind::kInt || reduction.integer < kNone || reduction.integer > kSum) {
    context.refuse("an unknown reduction");
  }
  p.reduction = static_cast<Reduction>(reduction.integer);
  const ir::Argument& ignore = context.arg(self_index + 4);
  if (ignore.kind != ir::Argument::Kind::kInt) context.refuse("an ignore_index that is not an int");

  const Tensor target = builder.convert(context.tensor(self_index + 1), DType::kInt64);
  const int64_t classes = p.self_shape[static_cast<size_t>(p.class_dim)];
  const Tensor class_index = builder.op("stablehlo.iota", {}, DType::kInt64, p.self_shape,
                                        "iota_dimension = " + std::to_string(p.class_dim) + " : i64");
  p.hit = builder.compare(class_index, builder.broadcast_in_dim(target, p.self_shape, target_dims), "EQ");
  p.valid = builder.compare(target, builder.splat(std::to_string(ignore.integer), DType::kInt64, p.target_shape), "NE");
  context.check(builder.binary("stablehlo.and", p.valid, out_of_range(builder, target, classes)),
                "Target is out of bounds.");
  Tensor weight = builder.splat("1.0", p.compute, p.target_shape);
  if (context.arg(self_index + 2).kind == ir::Argument::Kind::kTensor) {
    if (context.tensor_type(self_index + 2).sizes != std::vector<int64_t>{classes}) {
      context.refuse("a weight of another size than the classes");
    }
    const Tensor per_class = builder.broadcast_in_dim(builder.convert(context.tensor(self_index + 2), p.compute),
                                                      p.self_shape, {p.class_dim});
    weight = reduce_sum(builder, builder.select(p.hit, per_class, builder.zeros(p.compute, p.self_shape)),
                        {p.class_dim}, p.target_shape);
  }
  p.weight = builder.select(p.valid, weight, builder.zeros(p.compute, p.target_shape));
  return p;
}

std::vector<int64_t> every_dim(const std::vector<int64_t>& shape) {
  std::vector<int64_t> dims;
  for (size_t d = 0; d < shape.size(); ++d) dims.push_back(static_cast<int64_t>(d));
  return dims;
}

Tensor sum_all(FunctionBuilder& builder, const Tensor& x) {
  return x.shape.empty() ? x : reduce_sum(builder, x, every_dim(x.shape), {});
}

}  // namespace

// nll_loss_forward(self, target, weight, reduction, ignore_index) -> (output, total_weight):
// -self[target] * weight[target] per row (0 where ignored), summed or divided by the total
// weight; total_weight is 0 for reduction none over a batch, as ATen's.
std::vector<Tensor> lower_nll_loss_forward(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const Picked p = pick(context, 0, out.dtype);
  FunctionBuilder& builder = context.builder();
  const Tensor self = builder.convert(context.tensor(0), p.compute);
  const Tensor picked = reduce_sum(builder, builder.select(p.hit, self, builder.zeros(p.compute, p.self_shape)),
                                   {p.class_dim}, p.target_shape);
  const Tensor loss = builder.select(p.valid, builder.binary("stablehlo.multiply", builder.unary("stablehlo.negate", picked), p.weight),
                                     builder.zeros(p.compute, p.target_shape));
  const bool batched = !p.target_shape.empty();
  Tensor output = loss;
  Tensor total_weight = batched && p.reduction == kNone ? builder.zeros(p.compute, {}) : sum_all(builder, p.weight);
  if (p.reduction != kNone) {
    output = sum_all(builder, loss);
    if (p.reduction == kMean) output = builder.binary("stablehlo.divide", output, total_weight);
  }
  return {builder.reshape(builder.convert(output, out.dtype), out.sizes),
          builder.reshape(builder.convert(total_weight, context.return_type(1).dtype), context.return_type(1).sizes)};
}

// nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index, total_weight):
// at each row's target class, -weight[target] * grad (grad divided by total_weight for a mean),
// zero elsewhere and on ignored rows.
std::vector<Tensor> lower_nll_loss_backward(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const Picked p = pick(context, 1, out.dtype);
  FunctionBuilder& builder = context.builder();
  Tensor grad = builder.convert(context.tensor(0), p.compute);
  if (p.reduction == kNone) {
    if (grad.shape != p.target_shape) context.refuse("a grad_output of another shape than the target");
  } else {
    grad = builder.reshape(grad, {});
    if (p.reduction == kMean) {
      grad = builder.binary("stablehlo.divide", grad, builder.reshape(builder.convert(context.tensor(6), p.compute), {}));
    }
    grad = builder.broadcast_to(grad, p.target_shape);
  }
  const Tensor row = builder.binary("stablehlo.multiply", p.weight, builder.unary("stablehlo.negate", grad));
  std::vector<int64_t> target_dims;
  for (size_t d = 0; d < p.self_shape.size(); ++d) {
    if (static_cast<int64_t>(d) != p.class_dim) target_dims.push_back(static_cast<int64_t>(d));
  }
  const Tensor at_target = builder.binary("stablehlo.and", p.hit, builder.broadcast_in_dim(p.valid, p.self_shape, target_dims));
  const Tensor result = builder.select(at_target, builder.broadcast_in_dim(row, p.self_shape, target_dims),
                                       builder.zeros(p.compute, p.self_shape));
  return {builder.convert(result, out.dtype)};
}

}  // namespace torch_tpu::executors::pjrt::lowering
