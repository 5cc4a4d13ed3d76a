// sort.stable(self, *, stable, dim, descending) -> (values, indices): one stablehlo.sort of
// (value, index) pairs with is_stable, whose comparator orders NaN above every number as
// ATen's does (first when descending); equal values keep their order. Only stable=True is
// lowered: ATen's unstable sort orders ties its own way (not the stable order, checked on
// PyTorch 2.13), so matching it is not possible.
#include <algorithm>

#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

// Comparisons are exact: half precision sorts as f32, bool as uint8.
DType sort_dtype(DType dtype) {
  if (dtype == DType::kBFloat16 || dtype == DType::kFloat16) return DType::kFloat32;
  if (dtype == DType::kBool) return DType::kUInt8;
  return dtype;
}

}  // namespace

std::vector<Tensor> lower_sort_stable(OpContext& context) {
  const ir::TensorType& values = context.return_type(0);
  const ir::TensorType& indices = context.return_type(1);
  const ir::Argument& stable = context.arg(1);
  if (stable.kind != ir::Argument::Kind::kBool || stable.integer == 0) {
    context.refuse("an unstable sort (ATen orders its ties in its own way)");
  }
  if (values.dtype != context.tensor_dtype(0) || indices.dtype != DType::kInt64) {
    context.refuse("outputs of dtypes " + ir::dtype_name(values.dtype) + ", " + ir::dtype_name(indices.dtype));
  }
  const bool descending = context.arg(3).kind == ir::Argument::Kind::kBool && context.arg(3).integer != 0;
  FunctionBuilder& builder = context.builder();
  const Tensor input = context.tensor(0);
  const int64_t dim = normalized_dim(context, context.arg(2).integer, std::max<size_t>(input.shape.size(), 1));
  if (input.numel() == 0) {
    return {builder.zeros(values.dtype, values.sizes), builder.zeros(DType::kInt64, indices.sizes)};
  }
  const Tensor x = builder.convert(
      builder.reshape(input, input.shape.empty() ? std::vector<int64_t>{1} : input.shape), sort_dtype(input.dtype));
  const Tensor iota = builder.op("stablehlo.iota", {}, DType::kInt64, x.shape,
                                 "iota_dimension = " + std::to_string(dim) + " : i64");
  // The comparator's arguments are (lhs, rhs) per operand: values first, then indices.
  const Tensor a = builder.region_argument(x.dtype);
  const Tensor b = builder.region_argument(x.dtype);
  const Tensor a_index = builder.region_argument(DType::kInt64);
  const Tensor b_index = builder.region_argument(DType::kInt64);
  const std::string region = builder.region_body([&] {
    Tensor before = builder.compare(a, b, descending ? "GT" : "LT");
    if (is_floating(x.dtype)) {
      // Ascending, a number goes before NaN (b is NaN, a is not); descending, NaN goes first.
      const Tensor nan_one = nan_mask(builder, descending ? a : b);
      const Tensor number_one = builder.unary("stablehlo.not", nan_mask(builder, descending ? b : a));
      before = builder.binary("stablehlo.or", before, builder.binary("stablehlo.and", nan_one, number_one));
    }
    return std::vector<Tensor>{before};
  });
  const std::vector<Tensor> sorted = builder.multi_result_op_with_region(
      "stablehlo.sort", {x, iota}, {x, iota},
      "dimension = " + std::to_string(dim) + " : i64, is_stable = true", {a, b, a_index, b_index}, region);
  return {builder.reshape(builder.convert(sorted[0], values.dtype), values.sizes),
          builder.reshape(sorted[1], indices.sizes)};
}

}  // namespace torch_tpu::executors::pjrt::lowering
