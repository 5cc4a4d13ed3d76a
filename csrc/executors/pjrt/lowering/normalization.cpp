// Layer, group and batch normalization with their saved statistics (mean and 1/std), as
// PyTorch's CPU kernels compute them: biased variance from the mean (two passes), rstd =
// 1 / sqrt(var + eps), half precision computed in f32 and each return rounded once; batch norm
// accumulates its statistics in double and training updates the running statistics in place
// (OpContext::write_argument). Half-precision
// layer norm and batch norm training follow the steps ATen's kernels round (below). Refused:
// inputs with no elements.
#include <algorithm>
#include <optional>

#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::Argument;
using ir::DType;

bool present(OpContext& context, size_t index) {
  return context.arg(index).kind == Argument::Kind::kTensor;
}

struct Moments {
  Tensor mean;  // shaped `kept`
  Tensor var;   // biased, shaped `kept`
  Tensor rstd;  // shaped `kept`
  Tensor centered;  // x - mean, x's shape
};

// Mean and 1/sqrt(biased variance + eps) of `x` over `dims` (sorted), the other dimensions
// `kept`; `expand` broadcasts a `kept`-shaped statistic back to x's shape.
template <typename Expand>
Moments moments(FunctionBuilder& builder, const Tensor& x, const std::vector<int64_t>& dims,
                const std::vector<int64_t>& kept, double eps, Expand expand) {
  int64_t count = 1;
  for (const int64_t d : dims) count *= x.shape[static_cast<size_t>(d)];
  const Tensor n = builder.float_splat(static_cast<double>(count), x.dtype, kept);
  const Tensor mean = builder.binary("stablehlo.divide", reduce_sum(builder, x, dims, kept), n);
  const Tensor centered = builder.binary("stablehlo.subtract", x, expand(mean));
  const Tensor squares = builder.binary("stablehlo.multiply", centered, centered);
  const Tensor var = builder.binary("stablehlo.divide", reduce_sum(builder, squares, dims, kept), n);
  const Tensor rstd = builder.binary(
      "stablehlo.divide", builder.float_splat(1.0, x.dtype, kept),
      builder.unary("stablehlo.sqrt",
                    builder.binary("stablehlo.add", var, builder.float_splat(eps, x.dtype, kept))));
  return {mean, var, rstd, centered};
}

// The returns of an input with no elements are left to the host kernel (its NaN statistics).
void refuse_empty(OpContext& context, const Tensor& x) {
  if (x.numel() == 0) context.refuse("an input with no elements");
}

// Optional tensor argument `index` (a channel vector) in `compute`, broadcast along dimension 1
// of `shape`; nullopt when absent.
std::optional<Tensor> channel_operand(OpContext& context, size_t index, DType compute,
                                      const std::vector<int64_t>& shape) {
  if (!present(context, index)) return std::nullopt;
  FunctionBuilder& builder = context.builder();
  const Tensor value = builder.convert(context.tensor(index), compute);
  if (value.shape.size() != 1 || value.shape[0] != shape[1]) context.refuse("a per-channel operand of another size");
  return builder.broadcast_in_dim(value, shape, {1});
}

// The sizes of every dimension but 1 of `shape` (batch norm reduces those), and their indices.
std::vector<int64_t> all_but_channels(const std::vector<int64_t>& shape) {
  std::vector<int64_t> dims;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d != 1) dims.push_back(static_cast<int64_t>(d));
  }
  return dims;
}

// out = x * alpha + beta per channel, alpha = rstd * weight, beta = bias - mean * alpha: the
// form of ATen's batch_norm_cpu_transform_input. `mean`, `rstd` are [C] in `compute`.
Tensor batch_norm_transform(OpContext& context, const Tensor& x, const Tensor& mean,
                            const Tensor& rstd) {
  FunctionBuilder& builder = context.builder();
  const DType compute = x.dtype;
  const int64_t channels = x.shape[1];
  Tensor alpha = rstd;
  if (present(context, 1)) {
    alpha = builder.binary("stablehlo.multiply", alpha, builder.convert(context.tensor(1), compute));
  }
  Tensor beta = builder.unary("stablehlo.negate", builder.binary("stablehlo.multiply", mean, alpha));
  if (present(context, 2)) beta = builder.binary("stablehlo.add", builder.convert(context.tensor(2), compute), beta);
  if (alpha.shape != std::vector<int64_t>{channels}) context.refuse("a per-channel operand of another size");
  const Tensor scaled = builder.binary("stablehlo.multiply", x, builder.broadcast_in_dim(alpha, x.shape, {1}));
  return builder.binary("stablehlo.add", scaled, builder.broadcast_in_dim(beta, x.shape, {1}));
}

// Batch statistics as ATen's batch_norm_cpu_collect_stats and update_stats compute them: both
// sums accumulate in double; the mean and the sum of squared deviations are rounded to the
// input's dtype, and 1/std and the running statistics computed in double from those.
struct BatchStatistics {
  Tensor mean;     // [C], the input's dtype
  Tensor var_sum;  // [C], f64: the sum of (x - mean)^2, rounded to the input's dtype once
  Tensor rstd;     // [C], the input's dtype
  int64_t count;   // elements per channel
};

BatchStatistics batch_statistics(FunctionBuilder& builder, const Tensor& x, double eps) {
  const std::vector<int64_t> dims = all_but_channels(x.shape);
  const std::vector<int64_t> channels = {x.shape[1]};
  const int64_t count = x.numel() / x.shape[1];
  const DType wide = DType::kFloat64;
  const auto splat = [&](double value) { return builder.float_splat(value, wide, channels); };
  const auto rounded_in_x = [&](const Tensor& t) { return builder.round_through(t, x.dtype); };
  const Tensor sum = reduce_sum_in_double(builder, x, dims, channels);
  const Tensor mean = builder.convert(builder.binary("stablehlo.divide", sum, splat(static_cast<double>(count))), x.dtype);
  const Tensor centered = builder.binary("stablehlo.subtract", x, builder.broadcast_in_dim(mean, x.shape, {1}));
  const Tensor var_sum = rounded_in_x(
      reduce_sum_in_double(builder, builder.binary("stablehlo.multiply", centered, centered), dims, channels));
  const Tensor var = builder.binary("stablehlo.divide", var_sum, splat(static_cast<double>(count)));
  const Tensor rstd = builder.binary("stablehlo.divide", splat(1.0),
                                     builder.unary("stablehlo.sqrt", builder.binary("stablehlo.add", var, splat(eps))));
  return {mean, var_sum, builder.convert(rstd, x.dtype), count};
}

// ATen's running-statistics update of training, in place on arguments `running` (mean) and
// `running + 1` (var): momentum * batch + (1 - momentum) * running in double, the batch
// variance unbiased.
void update_running_statistics(OpContext& context, size_t running, const BatchStatistics& s, double momentum) {
  FunctionBuilder& builder = context.builder();
  const DType wide = DType::kFloat64;
  for (size_t k = 0; k < 2; ++k) {
    const ir::TensorType& type = context.tensor_type(running + k);
    if (type.sizes != s.mean.shape) context.refuse("running statistics of another size");
    const Tensor old = builder.convert(context.tensor(running + k), wide);
    const Tensor batch =
        k == 0 ? builder.convert(s.mean, wide)
               : builder.binary("stablehlo.divide", s.var_sum,
                                builder.float_splat(static_cast<double>(s.count - 1), wide, old.shape));
    const Tensor rate = builder.float_splat(momentum, wide, old.shape);
    const Tensor keep = builder.float_splat(1.0 - momentum, wide, old.shape);
    const Tensor updated = builder.binary("stablehlo.add", builder.binary("stablehlo.multiply", rate, batch),
                                          builder.binary("stablehlo.multiply", keep, old));
    context.write_argument(running + k, builder.convert(updated, type.dtype));
  }
}

// Batch norm over (input, weight, bias) from its batch statistics (training, updating the
// running statistics at arguments `running` and `running + 1` when given) or from those
// running statistics (evaluation: empty saved statistics).
std::vector<Tensor> batch_norm(OpContext& context, bool training, std::optional<size_t> running,
                               double eps, double momentum = 0.0) {
  const ir::TensorType& out = context.return_type(0);
  const DType compute = floating_compute(context, out.dtype);
  FunctionBuilder& builder = context.builder();
  const Tensor x = builder.convert(context.tensor(0), compute);
  if (x.shape.size() < 2) context.refuse("an input of rank below 2");
  refuse_empty(context, x);
  const std::vector<int64_t> channels = {x.shape[1]};
  if (training) {
    // ATen rounds its half-precision batch statistics in ways not modelled: random bfloat16
    // inputs differ beyond tolerance in about a quarter of the tries.
    if (compute != out.dtype) context.refuse("half-precision training (ATen's rounding of its batch statistics)");
    const BatchStatistics s = batch_statistics(builder, x, eps);
    const Tensor y = batch_norm_transform(context, x, s.mean, s.rstd);
    if (running) update_running_statistics(context, *running, s, momentum);
    return {builder.convert(y, out.dtype), as_return(context, 1, s.mean), as_return(context, 2, s.rstd)};
  }
  if (!running) context.refuse("evaluation mode without running statistics");
  const Tensor mean = builder.convert(context.tensor(*running), compute);
  const Tensor var = builder.convert(context.tensor(*running + 1), compute);
  if (mean.shape != channels || var.shape != channels) context.refuse("running statistics of another size");
  const Tensor rstd = builder.binary(
      "stablehlo.divide", builder.float_splat(1.0, compute, channels),
      builder.unary("stablehlo.sqrt", builder.binary("stablehlo.add", var, builder.float_splat(eps, compute, channels))));
  const Tensor y = batch_norm_transform(context, x, mean, rstd);
  // native_batch_norm's running statistics count as written in evaluation too (its schema
  // says neither): they keep their values.
  for (size_t k = 0; k < 2; ++k) {
    const ir::StorageId storage = context.value_storage(*running + k);
    for (const ir::StorageAccess& access : context.node().accesses) {
      if (access.storage == storage && access.writes()) {
        context.write_argument(*running + k, context.tensor(*running + k));
        break;
      }
    }
  }
  const ir::TensorType& saved_mean = context.return_type(1);
  const ir::TensorType& saved_rstd = context.return_type(2);
  return {builder.convert(y, out.dtype), builder.zeros(saved_mean.dtype, saved_mean.sizes),
          builder.zeros(saved_rstd.dtype, saved_rstd.sizes)};
}

// Half-precision layer norm's x * rstd + (-rstd * mean) (f32), the form of ATen's mixed-type
// kernel, whose compiled loop fuses the multiply and add (one rounding): emulated in f64, where
// the product of two f32 values is exact. Not (x - mean) * rstd: with one normalized element ATen
// returns the fused rounding error of x * rstd (about 1e-6), not 0; bit-exact against PyTorch
// 2.13 CPU on random inputs.
// The result is that rounding error itself, so rstd must be ATen's to the last bit: f32
// 1 / std::sqrt(var + eps), each step correctly rounded. XLA rewrites 1 / sqrt(v) into an rsqrt
// one ulp off (1/sqrt(1e-5) comes out 316.22775 instead of 316.22778), so both steps are taken
// in f64 and rounded to f32 (exact: f64 carries more than twice f32's digits).
Tensor half_precision_normalized(FunctionBuilder& builder, const Tensor& x, const Moments& m, double eps,
                                 const std::vector<int64_t>& kept_dims) {
  const auto f64 = [&](const Tensor& t) { return builder.convert(t, DType::kFloat64); };
  const auto f32 = [&](const Tensor& t) { return builder.convert(t, DType::kFloat32); };
  const Tensor sum = builder.binary("stablehlo.add", m.var, builder.float_splat(eps, DType::kFloat32, m.var.shape));
  const Tensor root = f32(builder.unary("stablehlo.sqrt", f64(sum)));
  const Tensor rstd = f32(builder.binary("stablehlo.divide", builder.float_splat(1.0, DType::kFloat64, root.shape), f64(root)));
  const Tensor bias = builder.binary("stablehlo.multiply", builder.unary("stablehlo.negate", rstd), m.mean);
  const auto wide = [&](const Tensor& t) { return builder.broadcast_in_dim(f64(t), x.shape, kept_dims); };
  const Tensor fused = builder.binary(
      "stablehlo.add", builder.binary("stablehlo.multiply", f64(x), wide(rstd)), wide(bias));
  return f32(fused);
}

}  // namespace

// native_layer_norm(input, normalized_shape, weight?, bias?, eps) -> (out, mean, rstd): the
// statistics over the trailing normalized_shape dimensions, kept as size 1.
std::vector<Tensor> lower_native_layer_norm(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const DType compute = floating_compute(context, out.dtype);
  FunctionBuilder& builder = context.builder();
  const Tensor x = builder.convert(context.tensor(0), compute);
  refuse_empty(context, x);
  const std::vector<int64_t>& normalized = context.arg(1).list;
  if (normalized.empty() || normalized.size() > x.shape.size()) context.refuse("normalized_shape of that rank");
  const size_t axis = x.shape.size() - normalized.size();
  if (!std::equal(normalized.begin(), normalized.end(), x.shape.begin() + static_cast<std::ptrdiff_t>(axis))) {
    context.refuse("normalized_shape other than the input's trailing sizes");
  }
  std::vector<int64_t> dims, kept(x.shape.begin(), x.shape.begin() + static_cast<std::ptrdiff_t>(axis));
  std::vector<int64_t> kept_dims;
  for (size_t d = 0; d < x.shape.size(); ++d) (d < axis ? kept_dims : dims).push_back(static_cast<int64_t>(d));
  const Moments m = moments(builder, x, dims, kept, context.arg(4).real,
                            [&](const Tensor& s) { return builder.broadcast_in_dim(s, x.shape, kept_dims); });
  Tensor y = compute == out.dtype
                 ? builder.binary("stablehlo.multiply", m.centered, builder.broadcast_in_dim(m.rstd, x.shape, kept_dims))
                 : half_precision_normalized(builder, x, m, context.arg(4).real, kept_dims);
  if (present(context, 2)) y = builder.binary("stablehlo.multiply", y, converted_operand(context, 2, compute, x.shape));
  if (present(context, 3)) y = builder.binary("stablehlo.add", y, converted_operand(context, 3, compute, x.shape));
  return {builder.convert(y, out.dtype), as_return(context, 1, m.mean), as_return(context, 2, m.rstd)};
}

// native_group_norm(input, weight?, bias?, N, C, HxW, group, eps) -> (out, mean [N, group],
// rstd [N, group]): statistics over each group of C/group channels and all their positions.
std::vector<Tensor> lower_native_group_norm(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const DType compute = floating_compute(context, out.dtype);
  FunctionBuilder& builder = context.builder();
  const Tensor x = builder.convert(context.tensor(0), compute);
  refuse_empty(context, x);
  const int64_t n = context.arg(3).integer, c = context.arg(4).integer, hxw = context.arg(5).integer;
  const int64_t groups = context.arg(6).integer;
  if (x.shape.size() < 2 || x.shape[0] != n || x.shape[1] != c || groups <= 0 || c % groups != 0 ||
      x.numel() != n * c * hxw) {
    context.refuse("N, C, HxW or group inconsistent with the input");
  }
  const Tensor grouped = builder.reshape(x, {n, groups, c / groups * hxw});
  const std::vector<int64_t> kept = {n, groups};
  const Moments m = moments(builder, grouped, {2}, kept, context.arg(7).real,
                            [&](const Tensor& s) { return builder.broadcast_in_dim(s, grouped.shape, {0, 1}); });
  const Tensor normalized = builder.reshape(
      builder.binary("stablehlo.multiply", m.centered, builder.broadcast_in_dim(m.rstd, grouped.shape, {0, 1})),
      x.shape);
  Tensor y = normalized;
  if (const auto weight = channel_operand(context, 1, compute, x.shape)) y = builder.binary("stablehlo.multiply", y, *weight);
  if (const auto bias = channel_operand(context, 2, compute, x.shape)) y = builder.binary("stablehlo.add", y, *bias);
  return {builder.convert(y, out.dtype), as_return(context, 1, m.mean), as_return(context, 2, m.rstd)};
}

// native_batch_norm(input, weight?, bias?, running_mean?, running_var?, training, momentum,
// eps); training updates the running statistics in place (the op plan marks those writes,
// which the schema omits).
std::vector<Tensor> lower_native_batch_norm(OpContext& context) {
  const bool training = context.arg(5).integer != 0;
  if (present(context, 3) != present(context, 4)) context.refuse("one running statistic without the other");
  const std::optional<size_t> running = present(context, 3) ? std::optional<size_t>(3) : std::nullopt;
  return batch_norm(context, training, running, context.arg(7).real, context.arg(6).real);
}

// _native_batch_norm_legit(input, weight?, bias?, running_mean!, running_var!, training,
// momentum, eps).
std::vector<Tensor> lower_native_batch_norm_legit(OpContext& context) {
  return batch_norm(context, context.arg(5).integer != 0, 3, context.arg(7).real, context.arg(6).real);
}

// _native_batch_norm_legit.no_stats(input, weight?, bias?, training, momentum, eps).
std::vector<Tensor> lower_native_batch_norm_legit_no_stats(OpContext& context) {
  return batch_norm(context, context.arg(3).integer != 0, std::nullopt, context.arg(5).real);
}

// _native_batch_norm_legit_no_training(input, weight?, bias?, running_mean, running_var,
// momentum, eps).
std::vector<Tensor> lower_native_batch_norm_legit_no_training(OpContext& context) {
  return batch_norm(context, /*training=*/false, 3, context.arg(6).real);
}

}  // namespace torch_tpu::executors::pjrt::lowering
