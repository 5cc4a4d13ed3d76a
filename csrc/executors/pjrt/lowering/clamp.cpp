// clamp and hardtanh: ATen's bounds semantics, which differ between its Scalar-bound and
// tensor-bound kernels in how NaN travels. Integral and floating dtypes; bool is refused.
#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

// Optional Scalar or tensor bound `index` of a clamp, as a tensor of `x`'s dtype and shape;
// false when absent.
bool clamp_bound(OpContext& context, size_t index, const ir::TensorType& out, DType compute, Tensor& bound) {
  if (context.node().args.size() <= index || context.arg(index).kind == ir::Argument::Kind::kNone) {
    return false;
  }
  bound = elementwise_operand(context, index, out, compute);
  return true;
}

// clamp with Scalar bounds as ATen's CPU kernel computes it: min(max(x, lo), hi) with a NaN x
// kept and a NaN bound ignored (x < NaN is false), and hi winning when lo > hi.
Tensor clamp_scalar_bounds(FunctionBuilder& builder, const Tensor& x, const Tensor* lo, const Tensor* hi) {
  Tensor result = x;
  if (lo != nullptr) result = builder.select(builder.compare(result, *lo, "LT"), *lo, result);
  if (hi != nullptr) result = builder.select(builder.compare(*hi, result, "LT"), *hi, result);
  if (is_floating(x.dtype)) result = builder.select(builder.compare(x, x, "NE"), x, result);
  return result;
}

}  // namespace

// clamp(self, min?, max?) with Scalars, hardtanh(self, min_val, max_val), clamp_min, clamp_max.
std::vector<Tensor> lower_clamp(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  if (out.dtype == DType::kBool) context.refuse("clamp of bool");
  FunctionBuilder& builder = context.builder();
  const Tensor x = elementwise_operand(context, 0, out, out.dtype);
  Tensor lo, hi;
  const bool has_lo = clamp_bound(context, 1, out, out.dtype, lo);
  const bool has_hi = clamp_bound(context, 2, out, out.dtype, hi);
  return {clamp_scalar_bounds(builder, x, has_lo ? &lo : nullptr, has_hi ? &hi : nullptr)};
}

std::vector<Tensor> lower_clamp_min(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  if (out.dtype == DType::kBool) context.refuse("clamp of bool");
  const Tensor x = elementwise_operand(context, 0, out, out.dtype);
  const Tensor lo = elementwise_operand(context, 1, out, out.dtype);
  return {clamp_scalar_bounds(context.builder(), x, &lo, nullptr)};
}

std::vector<Tensor> lower_clamp_max(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  if (out.dtype == DType::kBool) context.refuse("clamp of bool");
  const Tensor x = elementwise_operand(context, 0, out, out.dtype);
  const Tensor hi = elementwise_operand(context, 1, out, out.dtype);
  return {clamp_scalar_bounds(context.builder(), x, nullptr, &hi)};
}

// clamp.Tensor(self, min?, max?), clamp_min.Tensor, clamp_max.Tensor: ATen's vectorized
// minimum(maximum(x, min), max), NaN from any operand propagating (on bool: or, and).
std::vector<Tensor> lower_clamp_tensor(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  Tensor result = elementwise_operand(context, 0, out, out.dtype);
  Tensor bound;
  if (clamp_bound(context, 1, out, out.dtype, bound)) result = builder.binary("stablehlo.maximum", result, bound);
  if (clamp_bound(context, 2, out, out.dtype, bound)) result = builder.binary("stablehlo.minimum", result, bound);
  return {result};
}

std::vector<Tensor> lower_clamp_min_tensor(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  return {context.builder().binary("stablehlo.maximum", elementwise_operand(context, 0, out, out.dtype),
                          elementwise_operand(context, 1, out, out.dtype))};
}

std::vector<Tensor> lower_clamp_max_tensor(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  return {context.builder().binary("stablehlo.minimum", elementwise_operand(context, 0, out, out.dtype),
                          elementwise_operand(context, 1, out, out.dtype))};
}

}  // namespace torch_tpu::executors::pjrt::lowering
