// argmax/argmin and max.dim/min.dim: one variadic stablehlo.reduce of (value, index) pairs
// whose region keeps the better pair: the larger (smaller) value, NaN beating every number as
// ATen's kernels treat it, and on a tie the smaller index, so the FIRST extremum wins whatever
// order XLA combines in. Indices are int64.
#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

struct ValuesAndIndices {
  Tensor values;
  Tensor indices;
};

// The dtype the pairs compare in: comparisons are exact, so half precision widens to f32 and
// bool to uint8 (stablehlo.compare orders i1 too, but uint8 keeps one spelling of the region).
DType comparison_dtype(DType dtype) {
  if (dtype == DType::kBFloat16 || dtype == DType::kFloat16) return DType::kFloat32;
  if (dtype == DType::kBool) return DType::kUInt8;
  return dtype;
}

// The first largest (`largest`) or smallest element of `x` along `dim`, and its index.
ValuesAndIndices arg_extremum(FunctionBuilder& builder, const Tensor& input, int64_t dim, bool largest) {
  const Tensor x = builder.convert(input, comparison_dtype(input.dtype));
  const Tensor iota = builder.op("stablehlo.iota", {}, DType::kInt64, x.shape,
                                 "iota_dimension = " + std::to_string(dim) + " : i64");
  const Tensor init_value = largest ? lowest_value(builder, x.dtype) : highest_value(builder, x.dtype);
  // The largest index loses every tie, so the identity never displaces a real element.
  const Tensor init_index = builder.splat(std::to_string(INT64_MAX), DType::kInt64, {});
  const Tensor a = builder.region_argument(x.dtype);
  const Tensor a_index = builder.region_argument(DType::kInt64);
  const Tensor b = builder.region_argument(x.dtype);
  const Tensor b_index = builder.region_argument(DType::kInt64);
  const std::string region = builder.region_body([&] {
    Tensor a_wins = builder.compare(a, b, largest ? "GT" : "LT");
    Tensor tie = builder.compare(a, b, "EQ");
    if (is_floating(x.dtype)) {
      const Tensor a_nan = nan_mask(builder, a);
      const Tensor b_nan = nan_mask(builder, b);
      a_wins = builder.binary("stablehlo.or", a_wins,
                              builder.binary("stablehlo.and", a_nan, builder.unary("stablehlo.not", b_nan)));
      tie = builder.binary("stablehlo.or", tie, builder.binary("stablehlo.and", a_nan, b_nan));
    }
    const Tensor first = builder.compare(a_index, b_index, "LT");
    const Tensor take_a = builder.binary("stablehlo.or", a_wins, builder.binary("stablehlo.and", tie, first));
    return std::vector<Tensor>{
        builder.op("stablehlo.select", {take_a, a, b}, x.dtype, {}),
        builder.op("stablehlo.select", {take_a, a_index, b_index}, DType::kInt64, {})};
  });
  const std::vector<int64_t> kept = kept_sizes(x.shape, {dim});
  const std::vector<Tensor> results = builder.multi_result_op_with_region(
      "stablehlo.reduce", {x, iota, init_value, init_index},
      {Tensor{"", x.dtype, kept}, Tensor{"", DType::kInt64, kept}}, "dimensions = " + i64_array({dim}),
      {a, a_index, b, b_index}, region);
  return {builder.convert(results[0], input.dtype), results[1]};
}

// argument 0 and the one dimension `dim_arg` names (absent: every element, flattened, as
// argmax(dim=None) does); a 0-d input is one element. ATen raises on an empty dimension.
ValuesAndIndices arg_extremum_of(OpContext& context, const ir::Argument& dim_arg, bool largest) {
  FunctionBuilder& builder = context.builder();
  Tensor x = context.tensor(0);
  if (x.dtype == DType::kBool && context.op().starts_with("aten::arg")) {
    context.refuse("a bool input (ATen raises)");
  }
  int64_t dim = 0;
  if (dim_arg.kind == ir::Argument::Kind::kNone || x.shape.empty()) {
    // A 0-d input accepts dim 0 and -1 (checked, refused otherwise) and is one element.
    if (dim_arg.kind == ir::Argument::Kind::kInt) normalized_dim(context, dim_arg.integer, 1);
    x = builder.reshape(x, {x.numel()});
  } else if (dim_arg.kind == ir::Argument::Kind::kInt) {
    dim = normalized_dim(context, dim_arg.integer, x.shape.size());
  } else {
    context.refuse("a dim argument that is not an int");
  }
  if (x.shape[static_cast<size_t>(dim)] == 0) context.refuse("a reduction over an empty dimension (ATen raises)");
  return arg_extremum(builder, x, dim, largest);
}

// argmax(self, dim?, keepdim): the indices, shaped as the return (keepdim's size-1 dims).
std::vector<Tensor> arg_index(OpContext& context, bool largest) {
  const ir::TensorType& out = context.return_type(0);
  if (out.dtype != DType::kInt64) context.refuse("an index output of dtype " + ir::dtype_name(out.dtype));
  const ValuesAndIndices r = arg_extremum_of(context, context.arg(1), largest);
  return {context.builder().reshape(r.indices, out.sizes)};
}

// max.dim(self, dim, keepdim) -> (values, indices).
std::vector<Tensor> values_and_indices(OpContext& context, bool largest) {
  const ir::TensorType& values = context.return_type(0);
  const ir::TensorType& indices = context.return_type(1);
  if (values.dtype != context.tensor_dtype(0) || indices.dtype != DType::kInt64) {
    context.refuse("outputs of dtypes " + ir::dtype_name(values.dtype) + ", " +
                   ir::dtype_name(indices.dtype) + " (ATen raises)");
  }
  const ValuesAndIndices r = arg_extremum_of(context, context.arg(1), largest);
  FunctionBuilder& builder = context.builder();
  return {builder.reshape(r.values, values.sizes), builder.reshape(r.indices, indices.sizes)};
}

}  // namespace

std::vector<Tensor> lower_argmax(OpContext& context) { return arg_index(context, /*largest=*/true); }
std::vector<Tensor> lower_argmin(OpContext& context) { return arg_index(context, /*largest=*/false); }
std::vector<Tensor> lower_max_dim(OpContext& context) { return values_and_indices(context, true); }
std::vector<Tensor> lower_min_dim(OpContext& context) { return values_and_indices(context, false); }

}  // namespace torch_tpu::executors::pjrt::lowering
