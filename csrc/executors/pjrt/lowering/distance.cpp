// Pairwise distances: _cdist_forward(x1, x2, p, compute_mode), out[b, i, j] = ||x1[b, i] -
// x2[b, j]||_p over the last dimension, the batch dimensions broadcast. As ATen: p = 0 counts the
// differing coordinates, p = inf takes the largest difference, and p = 2 goes through a matrix
// product (ATen's _euclidean_dist: [-2 x1, |x1|^2, 1] @ [x2, 1, |x2|^2]^T, clamped at 0, square
// root) when compute_mode asks for it (1) or leaves it to the sizes (absent or 0: more than 25
// rows on either side); otherwise differences are summed directly. _pdist_forward(x, p) is the
// direct form between x's rows i < j, in row-major order of (i, j). float32 and float64 only
// (ATen's CPU kernels have no half-precision form).
#include <cmath>

#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

std::vector<int64_t> iota_dims(size_t count, int64_t from = 0) {
  std::vector<int64_t> dims;
  for (size_t d = 0; d < count; ++d) dims.push_back(from + static_cast<int64_t>(d));
  return dims;
}

// `x` ([..., rows, m]) broadcast to the batch sizes `batch` ([batch..., rows, m]).
Tensor with_batch(OpContext& context, const Tensor& x, const std::vector<int64_t>& batch) {
  std::vector<int64_t> shape = batch;
  shape.push_back(x.shape[x.shape.size() - 2]);
  shape.push_back(x.shape.back());
  try {
    return context.builder().broadcast_to(x, shape);
  } catch (const std::invalid_argument&) {
    context.refuse("batch dimensions that do not broadcast");
  }
}

// ATen's _euclidean_dist on x1 [B.., P, M], x2 [B.., R, M].
Tensor euclidean_by_product(FunctionBuilder& builder, const Tensor& x1, const Tensor& x2,
                            const std::vector<int64_t>& out_shape) {
  const size_t nb = out_shape.size() - 2;
  const int64_t last = static_cast<int64_t>(x1.shape.size()) - 1;
  const auto squared_norm = [&](const Tensor& x) {
    std::vector<int64_t> kept(x.shape.begin(), x.shape.end() - 1);
    Tensor sum = reduce_sum(builder, builder.binary("stablehlo.multiply", x, x), {last}, kept);
    kept.push_back(1);
    return builder.reshape(sum, kept);
  };
  const auto ones_like = [&](const Tensor& norm) {
    return builder.convert(builder.splat("1", DType::kInt64, norm.shape), norm.dtype);
  };
  const auto concat = [&](const std::vector<Tensor>& parts) {
    std::vector<int64_t> shape = parts[0].shape;
    shape.back() = 0;
    for (const Tensor& part : parts) shape.back() += part.shape.back();
    return builder.op("stablehlo.concatenate", parts, parts[0].dtype, shape,
                      "dimension = " + std::to_string(last) + " : i64");
  };
  const Tensor x1_norm = squared_norm(x1), x2_norm = squared_norm(x2);
  const Tensor minus_two = builder.float_splat(-2.0, x1.dtype, x1.shape);
  const Tensor lhs = concat({builder.binary("stablehlo.multiply", x1, minus_two), x1_norm, ones_like(x1_norm)});
  const Tensor rhs = concat({x2, ones_like(x2_norm), x2_norm});
  const std::vector<int64_t> batch = iota_dims(nb);
  const std::string numbers = "dot_dimension_numbers = #stablehlo.dot<" +
                              (nb == 0 ? std::string()
                                       : "lhs_batching_dimensions = " + index_list(batch) +
                                             ", rhs_batching_dimensions = " + index_list(batch) + ", ") +
                              "lhs_contracting_dimensions = " + index_list({last}) +
                              ", rhs_contracting_dimensions = " + index_list({last}) + ">, " +
                              highest_precision();
  const Tensor product = builder.op("stablehlo.dot_general", {lhs, rhs}, x1.dtype, out_shape, numbers);
  const Tensor clamped = builder.binary("stablehlo.maximum", product, builder.zeros(x1.dtype, out_shape));
  return builder.unary("stablehlo.sqrt", clamped);
}

// The direct form: |x1[i] - x2[j]| reduced over the last dimension by p's rule.
Tensor direct(FunctionBuilder& builder, const Tensor& x1, const Tensor& x2, double p,
              const std::vector<int64_t>& out_shape) {
  const size_t nb = out_shape.size() - 2;
  std::vector<int64_t> wide = out_shape;
  wide.push_back(x1.shape.back());
  std::vector<int64_t> x1_dims = iota_dims(nb), x2_dims = iota_dims(nb);
  x1_dims.push_back(static_cast<int64_t>(nb));
  x1_dims.push_back(static_cast<int64_t>(nb) + 2);
  x2_dims.push_back(static_cast<int64_t>(nb) + 1);
  x2_dims.push_back(static_cast<int64_t>(nb) + 2);
  const Tensor difference = builder.unary(
      "stablehlo.abs", builder.binary("stablehlo.subtract", builder.broadcast_in_dim(x1, wide, x1_dims),
                                      builder.broadcast_in_dim(x2, wide, x2_dims)));
  const std::vector<int64_t> last = {static_cast<int64_t>(nb) + 2};
  const DType dtype = x1.dtype;
  if (std::isinf(p)) {
    return reduce(builder, difference, last, out_shape, "stablehlo.maximum", builder.zeros(dtype, {}));
  }
  if (p == 0.0) {
    const Tensor differs = builder.compare(difference, builder.zeros(dtype, wide), "NE");
    return reduce_sum(builder, builder.convert(differs, dtype), last, out_shape);
  }
  if (p == 1.0) return reduce_sum(builder, difference, last, out_shape);
  if (p == 2.0) {
    return builder.unary("stablehlo.sqrt",
                         reduce_sum(builder, builder.binary("stablehlo.multiply", difference, difference), last, out_shape));
  }
  const Tensor powered = builder.binary("stablehlo.power", difference, builder.float_splat(p, dtype, wide));
  return builder.binary("stablehlo.power", reduce_sum(builder, powered, last, out_shape),
                        builder.float_splat(1.0 / p, dtype, out_shape));
}

// The p argument (index 2 of cdist, 1 of pdist): a non-negative float.
double norm_order(OpContext& context, size_t index) {
  if (context.arg(index).kind != ir::Argument::Kind::kDouble) context.refuse("a p that is not a float");
  const double p = context.arg(index).real;
  if (p < 0 || std::isnan(p)) context.refuse("a negative or NaN p");
  return p;
}

void check_floating(OpContext& context, const ir::TensorType& out) {
  if (out.dtype != DType::kFloat32 && out.dtype != DType::kFloat64) context.refuse("a non-float32/64 output");
}

}  // namespace

std::vector<Tensor> lower_cdist_forward(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  check_floating(context, out);
  const Tensor x1 = context.tensor(0), x2 = context.tensor(1);
  if (x1.dtype != out.dtype || x2.dtype != out.dtype) context.refuse("inputs of another dtype than the output");
  if (x1.shape.size() < 2 || x2.shape.size() < 2 || x1.shape.back() != x2.shape.back()) {
    context.refuse("inputs that are not [..., rows, features] with one feature count");
  }
  const double p = norm_order(context, 2);
  const ir::Argument& mode_arg = context.arg(3);
  int64_t mode = 0;
  if (mode_arg.kind == ir::Argument::Kind::kInt) {
    mode = mode_arg.integer;
  } else if (mode_arg.kind != ir::Argument::Kind::kNone) {
    context.refuse("a compute_mode that is not an int");
  }
  if (out.sizes.size() < 2) context.refuse("an output of rank below 2");
  const std::vector<int64_t> batch(out.sizes.begin(), out.sizes.end() - 2);
  const Tensor a = with_batch(context, x1, batch), b = with_batch(context, x2, batch);
  const int64_t rows1 = a.shape[a.shape.size() - 2], rows2 = b.shape[b.shape.size() - 2];
  if (out.sizes[batch.size()] != rows1 || out.sizes[batch.size() + 1] != rows2) {
    context.refuse("an output shape other than cdist's");
  }
  const bool by_product = p == 2.0 && (mode == 1 || (mode == 0 && (rows1 > 25 || rows2 > 25)));
  return {by_product ? euclidean_by_product(builder, a, b, out.sizes) : direct(builder, a, b, p, out.sizes)};
}

// _pdist_forward(x [n, m], p): the distances between rows i < j, [n (n - 1) / 2]: the direct
// form's n x n distances read at the positions i n + j (a constant list, at most kMaxPairs).
std::vector<Tensor> lower_pdist_forward(OpContext& context) {
  constexpr int64_t kMaxPairs = 1 << 16;
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  check_floating(context, out);
  const Tensor x = context.tensor(0);
  if (x.dtype != out.dtype || x.shape.size() != 2) context.refuse("an input that is not a matrix of the output's dtype");
  const double p = norm_order(context, 1);
  const int64_t n = x.shape[0];
  const int64_t pairs = n * (n - 1) / 2;
  if (out.sizes != std::vector<int64_t>{pairs}) context.refuse("an output shape other than pdist's");
  if (pairs == 0) return {builder.zeros(out.dtype, out.sizes)};
  if (pairs > kMaxPairs) context.refuse("more than " + std::to_string(kMaxPairs) + " pairs (a constant list of positions)");
  std::string positions = "[";
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = i + 1; j < n; ++j) positions += (positions.size() > 1 ? ", " : "") + std::to_string(i * n + j);
  }
  positions += "]";
  const Tensor all = direct(builder, x, x, p, {n, n});
  return {take_linear(builder, all, builder.splat(positions, DType::kInt64, {pairs}))};
}

}  // namespace torch_tpu::executors::pjrt::lowering
