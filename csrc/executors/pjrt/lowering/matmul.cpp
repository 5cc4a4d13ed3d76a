// Matrix products as stablehlo.dot_general. Half-precision inputs are multiplied in f32 and
// rounded once, as PyTorch's CPU kernels accumulate them.
#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

std::vector<Tensor> dot(OpContext& context, const std::vector<int64_t>& batch,
                        int64_t lhs_contracting, int64_t rhs_contracting) {
  const ir::TensorType& out = context.return_type(0);
  for (size_t i = 0; i < 2; ++i) {
    if (context.tensor_dtype(i) != out.dtype) {
      context.refuse("operands of dtype " + ir::dtype_name(context.tensor_dtype(i)) +
                     " for an output of dtype " + ir::dtype_name(out.dtype));
    }
  }
  if (out.dtype == DType::kBool) context.refuse("bool matrix product");
  FunctionBuilder& builder = context.builder();
  const bool half = out.dtype == DType::kBFloat16 || out.dtype == DType::kFloat16;
  const DType compute = half ? DType::kFloat32 : out.dtype;
  const Tensor lhs = builder.convert(context.tensor(0), compute);
  const Tensor rhs = builder.convert(context.tensor(1), compute);
  const std::string numbers =
      "dot_dimension_numbers = #stablehlo.dot<" +
      (batch.empty() ? std::string()
                     : "lhs_batching_dimensions = " + index_list(batch) +
                           ", rhs_batching_dimensions = " + index_list(batch) + ", ") +
      "lhs_contracting_dimensions = " + index_list({lhs_contracting}) +
      ", rhs_contracting_dimensions = " + index_list({rhs_contracting}) + ">";
  const Tensor product = builder.op("stablehlo.dot_general", {lhs, rhs}, compute, out.sizes, numbers);
  return {builder.convert(product, out.dtype)};
}

}  // namespace

std::vector<Tensor> lower_mm(OpContext& context) { return dot(context, {}, 1, 0); }
std::vector<Tensor> lower_bmm(OpContext& context) { return dot(context, {0}, 2, 1); }

}  // namespace torch_tpu::executors::pjrt::lowering
