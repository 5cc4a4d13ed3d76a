// Reductions as stablehlo.reduce with an add region. The input is converted to the output's
// dtype first (sum's dtype= argument and its int -> int64 promotion); half precision sums in
// f32 and rounds once, as PyTorch's CPU kernels accumulate.
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

}  // namespace torch_tpu::executors::pjrt::lowering
