// cumsum(self, dim, *, dtype): a prefix sum as stablehlo.reduce_window, each window reaching
// back over every earlier element of `dim` (padding of size-1 zeros in front). The input is
// converted to the output's dtype first (ATen's dtype= and int/bool -> int64), then accumulated
// as ATen's CPU kernel does (at::acc_type): f64 for f32 and f64, f32 for half precision, int64
// for integers; each element is rounded once.
#include <algorithm>

#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

DType accumulation_dtype(DType out) {
  if (out == DType::kFloat32 || out == DType::kFloat64) return DType::kFloat64;
  if (out == DType::kBFloat16 || out == DType::kFloat16) return DType::kFloat32;
  return DType::kInt64;
}

// Inclusive prefix sums of `x` along `dim`.
Tensor prefix_sum(FunctionBuilder& builder, const Tensor& x, int64_t dim) {
  const size_t rank = x.shape.size();
  std::vector<int64_t> window(rank, 1);
  std::vector<int64_t> strides(rank, 1);
  window[static_cast<size_t>(dim)] = x.shape[static_cast<size_t>(dim)];
  std::string padding = "padding = dense<[";
  for (size_t d = 0; d < rank; ++d) {
    const int64_t low = static_cast<int64_t>(d) == dim ? window[d] - 1 : 0;
    padding += (d ? ", [" : "[") + std::to_string(low) + ", 0]";
  }
  padding += "]> : tensor<" + std::to_string(rank) + "x2xi64>";
  const Tensor a = builder.region_argument(x.dtype);
  const Tensor b = builder.region_argument(x.dtype);
  const std::string region =
      builder.region_body([&] { return std::vector<Tensor>{builder.binary("stablehlo.add", a, b)}; });
  return builder.op_with_region("stablehlo.reduce_window", {x, builder.zeros(x.dtype, {})}, x.dtype, x.shape,
                                padding + ", window_dimensions = " + i64_array(window) +
                                    ", window_strides = " + i64_array(strides),
                                {a, b}, region);
}

}  // namespace

std::vector<Tensor> lower_cumsum(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  if (out.dtype == DType::kBool) context.refuse("a bool output");
  FunctionBuilder& builder = context.builder();
  const Tensor input = context.tensor(0);
  // A 0-d input is one element along its dim 0 (or -1).
  const int64_t dim = normalized_dim(context, context.arg(1).integer, std::max<size_t>(input.shape.size(), 1));
  if (input.numel() == 0) return {builder.zeros(out.dtype, out.sizes)};
  const Tensor as_vector = builder.reshape(input, input.shape.empty() ? std::vector<int64_t>{1} : input.shape);
  const Tensor x = builder.convert(builder.convert(as_vector, out.dtype), accumulation_dtype(out.dtype));
  return {builder.reshape(builder.convert(prefix_sum(builder, x, dim), out.dtype), out.sizes)};
}

}  // namespace torch_tpu::executors::pjrt::lowering
