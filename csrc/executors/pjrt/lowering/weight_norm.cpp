// Weight normalization's fused interface, as ATen's CPU kernels compute it (one norm per slice
// along `dim`, over all of v's other dimensions; half precision in f32, with f32 norms):
//   _weight_norm_interface(v, g, dim) -> (w, norms): norms = sqrt(sum v^2), w = v * (g / norms).
//   _weight_norm_interface_backward(grad_w, saved_v, saved_g, saved_norms, dim)
//     -> (grad_v, grad_g): s = sum(grad_w * v), a = g / norms, b = a * s / norms^2,
//        grad_v = a * grad_w - b * v, grad_g = s / norms.
// The sums run in f64 for float32 (XLA's order is not ATen's vectorized one) and are rounded
// once. g and norms have v's rank, size 1 but along `dim`.
#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

DType compute_for(DType dtype) {
  return dtype == DType::kBFloat16 || dtype == DType::kFloat16 ? DType::kFloat32 : dtype;
}

// The shape work of one call: which dimension keeps its slices and how a per-slice value
// spreads back over v.
struct Slices {
  int64_t dim = 0;
  std::vector<int64_t> shape;     // v's
  std::vector<int64_t> reduced;   // every dimension but dim
  int64_t count = 0;              // slices: shape[dim]
};

Slices slices_of(OpContext& context, size_t v_index, size_t dim_index) {
  Slices s;
  s.shape = context.tensor_type(v_index).sizes;
  if (s.shape.empty()) context.refuse("a 0-d v");
  s.dim = normalized_dim(context, context.arg(dim_index).integer, s.shape.size());
  for (int64_t d = 0; d < static_cast<int64_t>(s.shape.size()); ++d) {
    if (d != s.dim) s.reduced.push_back(d);
  }
  s.count = s.shape[static_cast<size_t>(s.dim)];
  if (context.tensor_type(v_index).numel() == 0) context.refuse("a v with no elements");
  return s;
}

// A per-slice operand (g or norms: v's rank, size 1 but along dim) as a vector of slices.
Tensor per_slice(OpContext& context, size_t index, const Slices& s, DType compute) {
  const ir::TensorType& type = context.tensor_type(index);
  if (type.numel() != s.count) context.refuse("g or norms with other than one value per slice");
  return context.builder().reshape(context.builder().convert(context.tensor(index), compute), {s.count});
}

Tensor spread(FunctionBuilder& builder, const Tensor& slice_values, const Slices& s) {
  return builder.broadcast_in_dim(slice_values, s.shape, {s.dim});
}

Tensor sum_per_slice(FunctionBuilder& builder, const Tensor& x, const Slices& s, DType compute) {
  return builder.convert(reduce_sum_in_double(builder, builder.convert(x, compute), s.reduced, {s.count}), compute);
}

Tensor mul(FunctionBuilder& b, const Tensor& x, const Tensor& y) { return b.binary("stablehlo.multiply", x, y); }
Tensor div(FunctionBuilder& b, const Tensor& x, const Tensor& y) { return b.binary("stablehlo.divide", x, y); }

}  // namespace

std::vector<Tensor> lower_weight_norm_interface(OpContext& context) {
  FunctionBuilder& builder = context.builder();
  const Slices s = slices_of(context, 0, 2);
  const DType compute = compute_for(context.tensor_dtype(0));
  const Tensor v = builder.convert(context.tensor(0), compute);
  const Tensor g = per_slice(context, 1, s, compute);
  const Tensor norms = builder.unary("stablehlo.sqrt", sum_per_slice(builder, mul(builder, v, v), s, compute));
  const Tensor w = mul(builder, v, spread(builder, div(builder, g, norms), s));
  return {builder.convert(w, context.return_type(0).dtype), as_return(context, 1, norms)};
}

std::vector<Tensor> lower_weight_norm_interface_backward(OpContext& context) {
  FunctionBuilder& builder = context.builder();
  const Slices s = slices_of(context, 1, 4);
  if (context.tensor_type(0).sizes != s.shape) context.refuse("grad_w of another shape than v");
  const DType compute = compute_for(context.tensor_dtype(1));
  const Tensor grad_w = builder.convert(context.tensor(0), compute);
  const Tensor v = builder.convert(context.tensor(1), compute);
  const Tensor g = per_slice(context, 2, s, compute);
  const Tensor norms = per_slice(context, 3, s, compute);
  const Tensor dot = sum_per_slice(builder, mul(builder, grad_w, v), s, compute);
  const Tensor a = div(builder, g, norms);
  const Tensor b = div(builder, mul(builder, a, dot), mul(builder, norms, norms));
  const Tensor grad_v = builder.binary("stablehlo.subtract", mul(builder, spread(builder, a, s), grad_w),
                                       mul(builder, spread(builder, b, s), v));
  return {builder.convert(grad_v, context.return_type(0).dtype), as_return(context, 1, div(builder, dot, norms))};
}

}  // namespace torch_tpu::executors::pjrt::lowering
