// var.correction(self, dim?, *, correction?, keepdim): sum((x - mean)^2) / max(N - correction, 0),
// two passes in f64 and rounded once: ATen's CPU kernel (Welford) accumulates every floating
// dtype in double, so an f32 computation would differ in the last bit. N = 0 gives NaN and a
// non-positive divisor inf or NaN, as ATen's do. std is its square root (taken in f64, as
// ATen's kernel takes it), var_mean and std_mean return the f64 mean too.
#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

// The correction as a 0-d f64: absent is 1 (Bessel's), a Scalar is a run-time operand.
Tensor correction_of(OpContext& context, size_t index) {
  FunctionBuilder& builder = context.builder();
  const ir::Argument& arg = context.arg(index);
  if (arg.kind == ir::Argument::Kind::kNone) return builder.splat("1.000000e+00", DType::kFloat64, {});
  if (arg.kind != ir::Argument::Kind::kScalar) context.refuse("a correction that is not a Scalar");
  return builder.convert(context.scalar(index), DType::kFloat64);
}

// The variance and mean of argument 0 over the dimensions argument 1 names, in f64, shaped as
// the reduction's result before keepdim.
struct Spread {
  Tensor variance;
  Tensor mean;
};

Spread spread_of(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const DType in = context.tensor_dtype(0);
  if (!is_floating(in)) context.refuse("an input of dtype " + ir::dtype_name(in) + " (ATen raises)");
  if (out.dtype != in) context.refuse("an output of dtype " + ir::dtype_name(out.dtype) + " for " + ir::dtype_name(in));
  FunctionBuilder& builder = context.builder();
  const Tensor x = builder.convert(context.tensor(0), DType::kFloat64);
  // An absent or empty dim list reduces every dimension, as ATen's var does.
  const std::vector<int64_t> dims = reduction_dims(context, 1, x.shape.size(), /*empty_list_is_all=*/true);
  const std::vector<int64_t> kept = kept_sizes(x.shape, dims);
  std::vector<int64_t> keepdim = x.shape;
  int64_t count = 1;
  for (const int64_t d : dims) {
    count *= x.shape[static_cast<size_t>(d)];
    keepdim[static_cast<size_t>(d)] = 1;
  }
  const Tensor n = builder.splat(std::to_string(count) + ".0", DType::kFloat64, {});
  const auto summed = [&](const Tensor& t) { return dims.empty() ? t : reduce_sum(builder, t, dims, kept); };
  const Tensor mean = builder.binary("stablehlo.divide", summed(x), builder.broadcast_to(n, kept));
  const Tensor deviation = builder.binary(
      "stablehlo.subtract", x, builder.broadcast_to(builder.reshape(mean, keepdim), x.shape));
  const Tensor squares = summed(builder.binary("stablehlo.multiply", deviation, deviation));
  const Tensor divisor = builder.binary("stablehlo.maximum",
                                        builder.binary("stablehlo.subtract", n, correction_of(context, 2)),
                                        builder.zeros(DType::kFloat64, {}));
  return {builder.binary("stablehlo.divide", squares, builder.broadcast_to(divisor, kept)), mean};
}

Tensor root(OpContext& context, const Tensor& variance) {
  return context.builder().unary("stablehlo.sqrt", variance);
}

}  // namespace

std::vector<Tensor> lower_var(OpContext& context) { return {as_return(context, 0, spread_of(context).variance)}; }

std::vector<Tensor> lower_std(OpContext& context) {
  return {as_return(context, 0, root(context, spread_of(context).variance))};
}

std::vector<Tensor> lower_var_mean(OpContext& context) {
  const Spread spread = spread_of(context);
  return {as_return(context, 0, spread.variance), as_return(context, 1, spread.mean)};
}

std::vector<Tensor> lower_std_mean(OpContext& context) {
  const Spread spread = spread_of(context);
  return {as_return(context, 0, root(context, spread.variance)), as_return(context, 1, spread.mean)};
}

}  // namespace torch_tpu::executors::pjrt::lowering
