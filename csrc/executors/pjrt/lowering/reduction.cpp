// Reductions as stablehlo.reduce with one binary region: sum and mean (add), prod (multiply),
// amax/amin/max/min (maximum, minimum), any/all (or, and). Sums convert the input to the
// output's dtype first (sum's dtype= argument and its int -> int64 promotion); half precision
// sums in f32 and rounds once, as PyTorch's CPU kernels accumulate.
#include <algorithm>

#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

// Sums `dims` of argument 0 (every dimension when `all`); `mean` divides by the count summed.
Tensor sum_over(OpContext& context, std::vector<int64_t> dims, bool all, bool mean = false) {
  const ir::TensorType& out = context.return_type(0);
  if (out.dtype == DType::kBool) context.refuse("a bool sum");
  FunctionBuilder& builder = context.builder();
  const bool half = out.dtype == DType::kBFloat16 || out.dtype == DType::kFloat16;
  const DType compute = half ? DType::kFloat32 : out.dtype;
  const Tensor x = builder.convert(context.tensor(0), compute);
  const auto rank = static_cast<int64_t>(x.shape.size());
  if (all) {
    dims.clear();
    for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
  }
  for (int64_t& dim : dims) {
    if (rank == 0 && (dim == 0 || dim == -1)) continue;
    if (dim < -rank || dim >= rank) context.refuse("dim " + std::to_string(dim) + " out of range");
    if (dim < 0) dim += rank;
  }
  if (rank == 0) dims.clear();
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < rank; ++d) {
    if (!std::binary_search(dims.begin(), dims.end(), d)) kept.push_back(x.shape[static_cast<size_t>(d)]);
  }
  Tensor total = dims.empty() ? x : reduce_sum(builder, x, dims, kept);
  if (mean) {
    if (compute != DType::kFloat32 && compute != DType::kFloat64) context.refuse("mean of an integer dtype");
    int64_t count = 1;
    for (const int64_t d : dims) count *= x.shape[static_cast<size_t>(d)];
    const Tensor divisor = builder.splat(std::to_string(count) + ".0", compute, total.shape);
    total = builder.binary("stablehlo.divide", total, divisor);
  }
  // keepdim's size-1 dimensions are a reshape to the output's sizes.
  return builder.reshape(builder.convert(total, out.dtype), out.sizes);
}

// The maximum (minimum) of argument 0 over the dimensions argument 1 names (every one when
// there is none: max(self)), the dtype kept. A maximum is exact, so half precision needs no f32.
Tensor extremum(OpContext& context, bool largest) {
  const ir::TensorType& out = context.return_type(0);
  const Tensor x = context.tensor(0);
  if (out.dtype != x.dtype) {
    context.refuse("an output of dtype " + ir::dtype_name(out.dtype) + " for an input of dtype " +
                   ir::dtype_name(x.dtype) + " (ATen raises)");
  }
  // max(self) and max.unary_out(self, out) name no dimension: their argument 1 is absent or out.
  const bool has_dims = context.node().args.size() > 1 &&
                        context.arg(1).kind == ir::Argument::Kind::kIntList;
  const std::vector<int64_t> dims = reduction_dims(
      context, has_dims ? 1 : context.node().args.size(), x.shape.size(), /*empty_list_is_all=*/true);
  for (const int64_t d : dims) {
    if (x.shape[static_cast<size_t>(d)] == 0) context.refuse("a reduction over an empty dimension (ATen raises)");
  }
  FunctionBuilder& builder = context.builder();
  if (dims.empty()) return builder.reshape(x, out.sizes);
  const Tensor init = largest ? lowest_value(builder, x.dtype) : highest_value(builder, x.dtype);
  const char* combine = largest ? "stablehlo.maximum" : "stablehlo.minimum";
  if (!is_floating(x.dtype)) {
    return builder.reshape(reduce(builder, x, dims, kept_sizes(x.shape, dims), combine, init), out.sizes);
  }
  // XLA's CPU reduce with a bare stablehlo.maximum drops NaN (seen on the plugin); amax and max
  // propagate it, so a NaN operand wins explicitly.
  const Tensor a = builder.region_argument(x.dtype);
  const Tensor b = builder.region_argument(x.dtype);
  const std::string region = builder.region_body([&] {
    const Tensor either = builder.binary(combine, a, b);
    const Tensor unless_b = builder.op("stablehlo.select", {nan_mask(builder, b), b, either}, x.dtype, {});
    return std::vector<Tensor>{builder.op("stablehlo.select", {nan_mask(builder, a), a, unless_b}, x.dtype, {})};
  });
  return builder.reshape(builder.op_with_region("stablehlo.reduce", {x, init}, x.dtype, kept_sizes(x.shape, dims),
                                                "dimensions = " + i64_array(dims), {a, b}, region),
                         out.sizes);
}

// any (all) of argument 0: true where an element is nonzero (NaN counts), reduced by or
// (and) from false (true), so an empty reduction is false (true) as in ATen. The output is
// bool, or uint8 for a uint8 input, as ATen keeps it.
Tensor logical_reduction(OpContext& context, bool any) {
  const ir::TensorType& out = context.return_type(0);
  if (out.dtype != DType::kBool && out.dtype != DType::kUInt8) {
    context.refuse("an output of dtype " + ir::dtype_name(out.dtype) + " (ATen raises)");
  }
  FunctionBuilder& builder = context.builder();
  const Tensor x = context.tensor(0);
  // any(self) and any.all_out(self, out) name no dimension: their argument 1 is absent or out.
  const bool has_dim = context.node().args.size() > 1 &&
                       context.arg(1).kind != ir::Argument::Kind::kTensor;
  const std::vector<int64_t> dims = reduction_dims(
      context, has_dim ? 1 : context.node().args.size(), x.shape.size(), /*empty_list_is_all=*/false);
  const Tensor truth = x.dtype == DType::kBool
                           ? x
                           : builder.compare(x, builder.zeros(x.dtype, x.shape), "NE");
  Tensor r = truth;
  if (!dims.empty()) {
    r = reduce(builder, truth, dims, kept_sizes(x.shape, dims), any ? "stablehlo.or" : "stablehlo.and",
               builder.splat(any ? "false" : "true", DType::kBool, {}));
  }
  return builder.reshape(builder.convert(r, out.dtype), out.sizes);
}

// prod(self, dtype) and prod.dim_int(self, dim, keepdim, dtype): the input converted to the
// output's dtype (ints and bool to int64, as ATen promotes; int64 products wrap as ATen's).
Tensor product(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const DType in = context.tensor_dtype(0);
  if (out.dtype == DType::kBool) context.refuse("a bool output");
  if (context.writes_an_argument() && in != out.dtype &&
      !(!is_floating(in) && out.dtype == DType::kInt64)) {
    context.refuse("an input of dtype " + ir::dtype_name(in) + " written to an output of dtype " +
                   ir::dtype_name(out.dtype));
  }
  FunctionBuilder& builder = context.builder();
  // Half precision multiplies in f32 and rounds once. ATen's kernel rounds each product to the
  // dtype in its vectorized order (not modelled): the f32 product is the more accurate, within
  // OpInfo's tolerance on every prod / masked.prod sample (measured with PyTorch 2.13 CPU); a
  // product of many factors can drift further from ATen's (each of its roundings is 2^-9 in bf16).
  const DType compute = is_half_precision(out.dtype) ? DType::kFloat32 : out.dtype;
  const Tensor x = builder.convert(context.tensor(0), compute);
  const bool has_dim = context.node().args.size() > 1 && context.arg(1).kind == ir::Argument::Kind::kInt;
  const std::vector<int64_t> dims = reduction_dims(
      context, has_dim ? 1 : context.node().args.size(), x.shape.size(), /*empty_list_is_all=*/true);
  if (dims.empty()) return builder.reshape(builder.convert(x, out.dtype), out.sizes);
  const Tensor one = builder.splat(is_floating(x.dtype) ? "1.000000e+00" : "1", x.dtype, {});
  return builder.reshape(
      builder.convert(reduce(builder, x, dims, kept_sizes(x.shape, dims), "stablehlo.multiply", one), out.dtype),
      out.sizes);
}

}  // namespace

Tensor reduce(FunctionBuilder& builder, const Tensor& x, const std::vector<int64_t>& dims,
              const std::vector<int64_t>& kept, const std::string& combine, const Tensor& init) {
  const Tensor a = builder.region_argument(x.dtype);
  const Tensor b = builder.region_argument(x.dtype);
  const std::string result = builder.next_name();
  const std::string scalar = tensor_type(x.dtype, {});
  const std::string region = "      " + result + " = \"" + combine + "\"(" + a.name + ", " + b.name +
                             ") : (" + scalar + ", " + scalar + ") -> " + scalar + "\n" +
                             "      \"stablehlo.return\"(" + result + ") : (" + scalar + ") -> ()\n";
  return builder.op_with_region("stablehlo.reduce", {x, init}, x.dtype, kept,
                                "dimensions = " + i64_array(dims), {a, b}, region);
}

Tensor reduce_sum(FunctionBuilder& builder, const Tensor& x, const std::vector<int64_t>& dims,
                  const std::vector<int64_t>& kept) {
  return reduce(builder, x, dims, kept, "stablehlo.add", builder.zeros(x.dtype, {}));
}

Tensor reduce_sum_in_double(FunctionBuilder& builder, const Tensor& x, const std::vector<int64_t>& dims,
                            const std::vector<int64_t>& kept) {
  const Tensor wide = x.dtype == ir::DType::kFloat32 ? builder.convert(x, ir::DType::kFloat64) : x;
  return reduce_sum(builder, wide, dims, kept);
}

Tensor reduce_keepdim(FunctionBuilder& builder, const Tensor& x, int64_t dim,
                      const std::string& combine, const Tensor& init) {
  std::vector<int64_t> kept;
  std::vector<int64_t> keepdim = x.shape;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (static_cast<int64_t>(d) != dim) kept.push_back(x.shape[d]);
  }
  keepdim[static_cast<size_t>(dim)] = 1;
  return builder.reshape(reduce(builder, x, {dim}, kept, combine, init), keepdim);
}

int64_t normalized_dim(OpContext& context, int64_t dim, size_t rank) {
  const auto r = static_cast<int64_t>(rank);
  if (dim < -r || dim >= r || r == 0) context.refuse("dim " + std::to_string(dim) + " of rank " + std::to_string(r));
  return dim < 0 ? dim + r : dim;
}

std::vector<Tensor> lower_sum_dims(OpContext& context) {
  const ir::Argument& dim = context.arg(1);
  // An absent or empty dim list sums every dimension, as PyTorch does.
  if (dim.kind == ir::Argument::Kind::kIntList && !dim.list.empty()) {
    return {sum_over(context, dim.list, /*all=*/false)};
  }
  return {sum_over(context, {}, /*all=*/true)};
}

std::vector<Tensor> lower_sum(OpContext& context) { return {sum_over(context, {}, /*all=*/true)}; }

// mean.dim(self, dim, keepdim, dtype): the sum in f32 (f64 for f64), divided, then rounded.
std::vector<Tensor> lower_mean_dims(OpContext& context) {
  const ir::Argument& dim = context.arg(1);
  if (dim.kind == ir::Argument::Kind::kIntList && !dim.list.empty()) {
    return {sum_over(context, dim.list, /*all=*/false, /*mean=*/true)};
  }
  return {sum_over(context, {}, /*all=*/true, /*mean=*/true)};
}

std::vector<Tensor> lower_amax(OpContext& context) { return {extremum(context, /*largest=*/true)}; }
std::vector<Tensor> lower_amin(OpContext& context) { return {extremum(context, /*largest=*/false)}; }
std::vector<Tensor> lower_max(OpContext& context) { return {extremum(context, /*largest=*/true)}; }
std::vector<Tensor> lower_min(OpContext& context) { return {extremum(context, /*largest=*/false)}; }
std::vector<Tensor> lower_any(OpContext& context) { return {logical_reduction(context, /*any=*/true)}; }
std::vector<Tensor> lower_all(OpContext& context) { return {logical_reduction(context, /*any=*/false)}; }
std::vector<Tensor> lower_prod(OpContext& context) { return {product(context)}; }

}  // namespace torch_tpu::executors::pjrt::lowering
