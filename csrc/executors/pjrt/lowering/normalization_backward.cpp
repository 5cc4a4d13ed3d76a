// The gradients of layer, group and batch normalization from their saved statistics, in the
// forms of PyTorch's CPU kernels (layer_norm_kernel.cpp, group_norm_kernel.cpp,
// batch_norm_kernel.cpp): per row (group, channel) ds = sum(dy * gamma * x), db = sum(dy *
// gamma), then dx = rstd * gamma * dy + b * x + c with b = (db * mean - ds) * rstd^3 / n and
// c = -b * mean - db * rstd / n (batch norm: dx = (dy - sum(dy) / n - (x - mean) * k) * invstd
// * w, k = sum((x - mean) * dy) * invstd^2 / n). Half precision computes in f32 and rounds
// each gradient once, as ATen's kernels accumulate in float. Each gradient is returned only
// where output_mask asks for it; the node's returns must match the mask. Refused: inputs with
// no elements, statistics or weights of another size, returns other than the mask's, and
// layer/group norm weight (bias) gradients without the weight (bias), which ATen fails on,
// and half-precision layer norm weight and bias gradients (ATen's summation and rounding: a
// random bf16 case differs by up to 0.15).
#include <optional>

#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::Argument;
using ir::DType;

bool present(OpContext& context, size_t index) { return context.arg(index).kind == Argument::Kind::kTensor; }

// The computed gradients (nullopt where the mask does not ask) as the node's returns: each
// present return must be asked for and vice versa; each is converted to its return's dtype
// and reshaped to its sizes (whose element count must match).
std::vector<Tensor> masked_returns(OpContext& context, const std::vector<std::optional<Tensor>>& gradients) {
  const std::vector<Argument>& returns = context.node().returns;
  if (returns.size() != gradients.size()) context.refuse("returns other than the output_mask's");
  std::vector<Tensor> results;
  for (size_t i = 0; i < gradients.size(); ++i) {
    const bool returned = returns[i].kind == Argument::Kind::kTensor;
    if (returned != gradients[i].has_value()) context.refuse("returns other than the output_mask's");
    if (!returned) continue;
    const ir::TensorType& type = context.return_type(results.size());
    if (type.numel() != gradients[i]->numel()) context.refuse("a gradient of another size than its return");
    FunctionBuilder& builder = context.builder();
    results.push_back(builder.reshape(builder.convert(*gradients[i], type.dtype), type.sizes));
  }
  return results;
}

std::vector<int64_t> output_mask(OpContext& context, size_t index) {
  const std::vector<int64_t>& mask = context.arg(index).list;
  if (mask.size() != 3) context.refuse("an output_mask of another length");
  return mask;
}

// The compute dtype of a gradient of input `input`: f32 for half precision, the dtype for
// f32/f64; other dtypes are refused.
DType compute_dtype(OpContext& context, size_t input) {
  const DType dtype = context.tensor_dtype(input);
  if (!is_floating(dtype)) context.refuse("dtype " + ir::dtype_name(dtype));
  return dtype == DType::kFloat32 || dtype == DType::kFloat64 ? dtype : DType::kFloat32;
}

// Tensor argument `index` in `compute` with `numel` elements, reshaped to `shape`.
Tensor statistic(OpContext& context, size_t index, DType compute, const std::vector<int64_t>& shape) {
  Tensor value = context.builder().convert(context.tensor(index), compute);
  int64_t count = 1;
  for (const int64_t size : shape) count *= size;
  if (value.numel() != count) context.refuse("a statistic or weight of another size");
  return context.builder().reshape(value, shape);
}

Tensor mul(FunctionBuilder& b, const Tensor& x, const Tensor& y) { return b.binary("stablehlo.multiply", x, y); }
Tensor add(FunctionBuilder& b, const Tensor& x, const Tensor& y) { return b.binary("stablehlo.add", x, y); }
Tensor sub(FunctionBuilder& b, const Tensor& x, const Tensor& y) { return b.binary("stablehlo.subtract", x, y); }

}  // namespace

// native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight?, bias?,
// output_mask) -> (grad_input?, grad_weight?, grad_bias?): rows M of N = prod(normalized_shape)
// elements each. grad_weight = sum over rows of dy * (x - mean) * rstd, grad_bias = sum of dy.
std::vector<Tensor> lower_native_layer_norm_backward(OpContext& context) {
  const DType compute = compute_dtype(context, 1);
  FunctionBuilder& builder = context.builder();
  const std::vector<int64_t> mask = output_mask(context, 7);
  const Tensor input = context.tensor(1);
  const std::vector<int64_t>& normalized = context.arg(2).list;
  if (normalized.empty() || normalized.size() > input.shape.size()) context.refuse("normalized_shape of that rank");
  const size_t axis = input.shape.size() - normalized.size();
  int64_t n = 1, m = 1;
  for (size_t d = 0; d < input.shape.size(); ++d) {
    if (d >= axis && input.shape[d] != normalized[d - axis]) {
      context.refuse("normalized_shape other than the input's trailing sizes");
    }
    (d < axis ? m : n) *= input.shape[d];
  }
  if (input.numel() == 0) context.refuse("an input with no elements");
  if (context.tensor_type(0).sizes != input.shape) context.refuse("grad_out of another shape than the input");
  const std::vector<int64_t> rows = {m, n};
  const Tensor x = builder.reshape(builder.convert(input, compute), rows);
  const Tensor dy = builder.reshape(builder.convert(context.tensor(0), compute), rows);
  const Tensor mean = statistic(context, 3, compute, {m});
  const Tensor rstd = statistic(context, 4, compute, {m});
  const std::optional<Tensor> gamma =
      present(context, 5) ? std::optional<Tensor>(builder.broadcast_in_dim(statistic(context, 5, compute, {n}), rows, {1}))
                          : std::nullopt;
  const auto per_row = [&](const Tensor& s) { return builder.broadcast_in_dim(s, rows, {0}); };

  // ATen sums half-precision weight and bias gradients in an order (and with roundings) not
  // modelled: a random 4x8x16x16 bf16 case differs by up to 0.15.
  if (compute != input.dtype && (mask[1] != 0 || mask[2] != 0)) {
    context.refuse("half-precision weight or bias gradients (ATen's summation and rounding)");
  }
  std::vector<std::optional<Tensor>> gradients(3);
  if (mask[0] != 0) {
    const Tensor dyg = gamma ? mul(builder, dy, *gamma) : dy;
    const Tensor ds = reduce_sum(builder, mul(builder, dyg, x), {1}, {m});
    const Tensor db = reduce_sum(builder, dyg, {1}, {m});
    const Tensor scale = builder.float_splat(1.0 / static_cast<double>(n), compute, {m});
    const Tensor cubed = mul(builder, mul(builder, rstd, rstd), rstd);
    const Tensor b = mul(builder, mul(builder, sub(builder, mul(builder, db, mean), ds), cubed), scale);
    const Tensor c = sub(builder, builder.unary("stablehlo.negate", mul(builder, b, mean)),
                         mul(builder, mul(builder, db, rstd), scale));
    const Tensor dx = add(builder, add(builder, mul(builder, per_row(rstd), dyg), mul(builder, per_row(b), x)),
                          per_row(c));
    gradients[0] = builder.reshape(dx, input.shape);
  }
  // Weight and bias gradients sum a term per row, each formed as ATen forms it (x normalized
  // as rstd * x + (-rstd * mean), which rounds unlike (x - mean) * rstd where x is close to the
  // mean). The sum runs in f64 and is rounded once: XLA's order of a float32 sum is not ATen's
  // (per-thread partial sums), and OpInfo's samples told the two apart; f64 keeps the
  // difference within ATen's own rounding.
  const auto sum_rows = [&](const Tensor& terms) {
    return builder.convert(reduce_sum_in_double(builder, terms, {0}, {n}), compute);
  };
  if (mask[1] != 0) {
    if (!gamma) context.refuse("grad_weight without a weight");
    const Tensor shift = builder.unary("stablehlo.negate", mul(builder, rstd, mean));
    const Tensor normalized_x = add(builder, mul(builder, per_row(rstd), x), per_row(shift));
    gradients[1] = sum_rows(mul(builder, dy, normalized_x));
  }
  if (mask[2] != 0) {
    if (!present(context, 6)) context.refuse("grad_bias without a bias");
    gradients[2] = sum_rows(dy);
  }
  return masked_returns(context, gradients);
}

// native_group_norm_backward(grad_out, input, mean, rstd, weight?, N, C, HxW, group,
// output_mask): ds, db per (n, c) over HxW; per group sums of ds * gamma, db * gamma give dx;
// grad_weight[c] = sum_n (ds - db * mean) * rstd, grad_bias[c] = sum_n db.
std::vector<Tensor> lower_native_group_norm_backward(OpContext& context) {
  const DType compute = compute_dtype(context, 1);
  FunctionBuilder& builder = context.builder();
  const std::vector<int64_t> mask = output_mask(context, 9);
  const Tensor input = context.tensor(1);
  const int64_t n = context.arg(5).integer, c = context.arg(6).integer, hxw = context.arg(7).integer;
  const int64_t groups = context.arg(8).integer;
  if (input.shape.size() < 2 || input.shape[0] != n || input.shape[1] != c || groups <= 0 || c % groups != 0 ||
      input.numel() != n * c * hxw) {
    context.refuse("N, C, HxW or group inconsistent with the input");
  }
  if (input.numel() == 0) context.refuse("an input with no elements");
  if (context.tensor_type(0).sizes != input.shape) context.refuse("grad_out of another shape than the input");
  const int64_t d = c / groups;
  const std::vector<int64_t> planes = {n, c, hxw};
  const Tensor x = builder.reshape(builder.convert(input, compute), planes);
  const Tensor dy = builder.reshape(builder.convert(context.tensor(0), compute), planes);
  const Tensor mean = statistic(context, 2, compute, {n, groups});
  const Tensor rstd = statistic(context, 3, compute, {n, groups});
  const std::optional<Tensor> gamma = present(context, 4) ? std::optional<Tensor>(statistic(context, 4, compute, {c}))
                                                          : std::nullopt;
  const Tensor ds = reduce_sum(builder, mul(builder, dy, x), {2}, {n, c});
  const Tensor db = reduce_sum(builder, dy, {2}, {n, c});
  // [n, groups] statistics broadcast over the channels of their group.
  const auto per_channel = [&](const Tensor& s) {
    return builder.reshape(builder.broadcast_in_dim(s, {n, groups, d}, {0, 1}), {n, c});
  };

  std::vector<std::optional<Tensor>> gradients(3);
  if (mask[0] != 0) {
    const Tensor gamma_nc = gamma ? builder.broadcast_in_dim(*gamma, {n, c}, {1}) : builder.float_splat(1.0, compute, {n, c});
    const std::vector<int64_t> grouped = {n, groups, d};
    const Tensor ds_g = reduce_sum(builder, builder.reshape(mul(builder, ds, gamma_nc), grouped), {2}, {n, groups});
    const Tensor db_g = reduce_sum(builder, builder.reshape(mul(builder, db, gamma_nc), grouped), {2}, {n, groups});
    const Tensor scale = builder.float_splat(1.0 / static_cast<double>(d * hxw), compute, {n, groups});
    const Tensor cubed = mul(builder, mul(builder, rstd, rstd), rstd);
    const Tensor b = mul(builder, mul(builder, sub(builder, mul(builder, db_g, mean), ds_g), cubed), scale);
    const Tensor c3 = sub(builder, builder.unary("stablehlo.negate", mul(builder, b, mean)),
                          mul(builder, mul(builder, db_g, rstd), scale));
    const Tensor c1 = mul(builder, per_channel(rstd), gamma_nc);
    const auto spread = [&](const Tensor& s) { return builder.broadcast_in_dim(s, planes, {0, 1}); };
    const Tensor dx = add(builder, add(builder, mul(builder, spread(c1), dy), mul(builder, spread(per_channel(b)), x)),
                          spread(per_channel(c3)));
    gradients[0] = builder.reshape(dx, input.shape);
  }
  if (mask[1] != 0) {
    if (!gamma) context.refuse("grad_weight without a weight");
    const Tensor terms = mul(builder, sub(builder, ds, mul(builder, db, per_channel(mean))), per_channel(rstd));
    gradients[1] = reduce_sum(builder, terms, {0}, {c});
  }
  if (mask[2] != 0) {
    if (!gamma) context.refuse("grad_bias without a weight");
    gradients[2] = reduce_sum(builder, db, {0}, {c});
  }
  return masked_returns(context, gradients);
}

// native_batch_norm_backward(grad_out, input, weight?, running_mean?, running_var?, save_mean?,
// save_invstd?, train, eps, output_mask): training uses the saved batch statistics, evaluation
// the running ones (invstd = 1 / sqrt(running_var + eps), dx = dy * invstd * w).
// grad_weight = sum((x - mean) * dy) * invstd, grad_bias = sum(dy), per channel.
std::vector<Tensor> lower_native_batch_norm_backward(OpContext& context) {
  const DType compute = compute_dtype(context, 1);
  FunctionBuilder& builder = context.builder();
  const std::vector<int64_t> mask = output_mask(context, 9);
  const bool train = context.arg(7).integer != 0;
  const Tensor input = context.tensor(1);
  if (input.shape.size() < 2) context.refuse("an input of rank below 2");
  if (input.numel() == 0) context.refuse("an input with no elements");
  if (context.tensor_type(0).sizes != input.shape) context.refuse("grad_out of another shape than the input");
  const int64_t channels = input.shape[1];
  const std::vector<int64_t> stat_shape = {channels};
  const Tensor x = builder.convert(input, compute);
  const Tensor dy = builder.convert(context.tensor(0), compute);
  Tensor mean, invstd;
  if (train) {
    if (!present(context, 5) || !present(context, 6)) context.refuse("training without saved statistics");
    mean = statistic(context, 5, compute, stat_shape);
    invstd = statistic(context, 6, compute, stat_shape);
  } else {
    if (!present(context, 3) || !present(context, 4)) context.refuse("evaluation without running statistics");
    mean = statistic(context, 3, compute, stat_shape);
    const Tensor var = statistic(context, 4, compute, stat_shape);
    invstd = builder.binary(
        "stablehlo.divide", builder.float_splat(1.0, compute, stat_shape),
        builder.unary("stablehlo.sqrt", add(builder, var, builder.float_splat(context.arg(8).real, compute, stat_shape))));
  }
  const std::optional<Tensor> weight =
      present(context, 2) ? std::optional<Tensor>(statistic(context, 2, compute, stat_shape)) : std::nullopt;
  std::vector<int64_t> dims;
  for (size_t d = 0; d < input.shape.size(); ++d) {
    if (d != 1) dims.push_back(static_cast<int64_t>(d));
  }
  const auto spread = [&](const Tensor& s) { return builder.broadcast_in_dim(s, input.shape, {1}); };
  const auto wide = [&](const Tensor& t) { return builder.convert(t, DType::kFloat64); };
  const auto narrow = [&](const Tensor& t) { return builder.convert(t, compute); };
  // Both sums accumulate in double (f64 sums, as ATen's accscalar_t), each rounded where ATen
  // stores it in the input's dtype.
  const Tensor centered = sub(builder, x, spread(mean));
  const Tensor sum = reduce_sum_in_double(builder, dy, dims, stat_shape);
  const bool dotp_needed = mask[1] != 0 || (mask[0] != 0 && train);
  const std::optional<Tensor> dotp =
      dotp_needed ? std::optional<Tensor>(reduce_sum_in_double(builder, mul(builder, centered, dy), dims, stat_shape))
                  : std::nullopt;

  std::vector<std::optional<Tensor>> gradients(3);
  if (mask[0] != 0) {
    const Tensor scale = weight ? mul(builder, invstd, *weight) : invstd;
    if (train) {
      const double count = static_cast<double>(input.numel() / channels);
      const Tensor k = builder.binary("stablehlo.divide", mul(builder, mul(builder, narrow(*dotp), invstd), invstd),
                                      builder.float_splat(count, compute, stat_shape));
      const Tensor grad_mean =
          narrow(builder.binary("stablehlo.divide", sum, builder.float_splat(count, sum.dtype, stat_shape)));
      const Tensor inner = sub(builder, sub(builder, dy, spread(grad_mean)), mul(builder, centered, spread(k)));
      gradients[0] = mul(builder, inner, spread(scale));
    } else {
      gradients[0] = mul(builder, dy, spread(scale));
    }
  }
  if (mask[1] != 0) gradients[1] = mul(builder, *dotp, wide(invstd));
  if (mask[2] != 0) gradients[2] = sum;
  return masked_returns(context, gradients);
}

}  // namespace torch_tpu::executors::pjrt::lowering
