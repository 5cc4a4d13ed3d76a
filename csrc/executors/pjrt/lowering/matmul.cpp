// Matrix products as stablehlo.dot_general. Half-precision inputs are multiplied in f32 and
// rounded once, as PyTorch's CPU kernels accumulate them.
#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

DType compute_dtype(DType out) {
  return out == DType::kBFloat16 || out == DType::kFloat16 ? DType::kFloat32 : out;
}

// The product of tensor arguments `lhs` and `rhs` (each of the output's dtype), in the
// computation dtype (f32 for half precision), shaped as the output.
Tensor product(OpContext& context, size_t lhs_index, size_t rhs_index,
               const std::vector<int64_t>& batch, int64_t lhs_contracting,
               int64_t rhs_contracting) {
  const ir::TensorType& out = context.return_type(0);
  for (const size_t i : {lhs_index, rhs_index}) {
    if (context.tensor_dtype(i) != out.dtype) {
      context.refuse("operands of dtype " + ir::dtype_name(context.tensor_dtype(i)) +
                     " for an output of dtype " + ir::dtype_name(out.dtype));
    }
  }
  if (out.dtype == DType::kBool) context.refuse("bool matrix product");
  FunctionBuilder& builder = context.builder();
  const DType compute = compute_dtype(out.dtype);
  const Tensor lhs = builder.convert(context.tensor(lhs_index), compute);
  const Tensor rhs = builder.convert(context.tensor(rhs_index), compute);
  const std::string numbers =
      "dot_dimension_numbers = #stablehlo.dot<" +
      (batch.empty() ? std::string()
                     : "lhs_batching_dimensions = " + index_list(batch) +
                           ", rhs_batching_dimensions = " + index_list(batch) + ", ") +
      "lhs_contracting_dimensions = " + index_list({lhs_contracting}) +
      ", rhs_contracting_dimensions = " + index_list({rhs_contracting}) + ">, " + highest_precision();
  return builder.op("stablehlo.dot_general", {lhs, rhs}, compute, out.sizes, numbers);
}

}  // namespace

std::vector<Tensor> lower_mm(OpContext& context) {
  return {context.builder().convert(product(context, 0, 1, {}, 1, 0), context.return_type(0).dtype)};
}

std::vector<Tensor> lower_bmm(OpContext& context) {
  return {context.builder().convert(product(context, 0, 1, {0}, 2, 1), context.return_type(0).dtype)};
}

namespace {

// beta * self + alpha * product, beta and alpha run-time Scalars (arguments 3 and 4), product
// the one of arguments 1 and 2 over `batch` and the contracting dimensions. As PyTorch, beta ==
// 0 ignores self (its NaNs too).
std::vector<Tensor> scaled_product_plus_self(OpContext& context, const std::vector<int64_t>& batch,
                                             int64_t lhs_contracting, int64_t rhs_contracting) {
  const ir::TensorType& out = context.return_type(0);
  if (context.tensor_dtype(0) != out.dtype) context.refuse("self of another dtype than the output");
  FunctionBuilder& builder = context.builder();
  const Tensor mm = product(context, 1, 2, batch, lhs_contracting, rhs_contracting);
  const DType compute = mm.dtype;
  const auto scalar = [&](size_t index) {
    return builder.broadcast_to(builder.convert(context.scalar(index), compute), out.sizes);
  };
  const Tensor beta = scalar(3);
  const Tensor self = builder.broadcast_to(builder.convert(context.tensor(0), compute), out.sizes);
  const Tensor zero = builder.zeros(compute, out.sizes);
  const Tensor beta_is_zero = builder.op("stablehlo.compare", {beta, zero}, DType::kBool, out.sizes,
                                         "comparison_direction = #stablehlo<comparison_direction EQ>");
  const Tensor scaled_self = builder.op("stablehlo.select",
                                        {beta_is_zero, zero, builder.binary("stablehlo.multiply", beta, self)},
                                        compute, out.sizes);
  const Tensor scaled_mm = builder.binary("stablehlo.multiply", scalar(4), mm);
  return {builder.convert(builder.binary("stablehlo.add", scaled_self, scaled_mm), out.dtype)};
}

}  // namespace

// addmm(self, mat1, mat2, *, beta, alpha) = beta * self + alpha * (mat1 @ mat2).
std::vector<Tensor> lower_addmm(OpContext& context) { return scaled_product_plus_self(context, {}, 1, 0); }

// baddbmm(self, batch1, batch2, *, beta, alpha) = beta * self + alpha * (batch1 @ batch2).
std::vector<Tensor> lower_baddbmm(OpContext& context) { return scaled_product_plus_self(context, {0}, 2, 1); }

// addmv(self, mat, vec, *, beta, alpha) = beta * self + alpha * (mat @ vec).
std::vector<Tensor> lower_addmv(OpContext& context) { return scaled_product_plus_self(context, {}, 1, 0); }

// dot(self, tensor) and vdot (the same for real dtypes): the inner product of two vectors.
// float32 multiplies and sums in f64 and rounds once: ATen's BLAS sums in an order of its own,
// and f64 keeps XLA's result within ATen's rounding of the exact value (a matrix product's f32
// summation order does not).
std::vector<Tensor> lower_dot(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  for (const size_t i : {size_t{0}, size_t{1}}) {
    if (context.tensor_dtype(i) != out.dtype) context.refuse("operands of another dtype than the output");
    if (context.tensor_type(i).sizes.size() != 1) context.refuse("operands that are not 1-d (ATen raises)");
  }
  if (context.tensor_type(0).sizes != context.tensor_type(1).sizes) context.refuse("vectors of different lengths (ATen raises)");
  if (out.dtype == DType::kBool) context.refuse("bool dot (ATen raises)");
  FunctionBuilder& builder = context.builder();
  const DType wide = out.dtype == DType::kFloat32 ? DType::kFloat64 : compute_dtype(out.dtype);
  const Tensor lhs = builder.convert(context.tensor(0), wide);
  const Tensor rhs = builder.convert(context.tensor(1), wide);
  const Tensor product = builder.op("stablehlo.dot_general", {lhs, rhs}, wide, {},
                                    "dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [0], "
                                    "rhs_contracting_dimensions = [0]>, " + highest_precision());
  return {builder.reshape(builder.convert(product, out.dtype), out.sizes)};
}

}  // namespace torch_tpu::executors::pjrt::lowering
