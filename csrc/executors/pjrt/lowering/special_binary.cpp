// Binary elementwise ops whose special cases StableHLO has no single op for, each following
// ATen's CPU kernel case by case:
//   fmax / fmin: the other operand where one is NaN (NaN only when both are); bools or / and.
//   copysign: |self| with other's sign bit (-0.0 and a NaN's sign count), in floating point.
//   heaviside: values where self == 0, 0 where self < 0 (or NaN), 1 where self > 0.
//   xlogy: 0 where self == 0 and other is not NaN, NaN where other is, self * log(other) else.
//   logaddexp: a where a and b are the same infinity, max + log1p(exp(-|a - b|)) else.
// Operands convert to the dtype the op computes in (its output's, f32 for half precision) and
// the result rounds once.
#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

struct Operands {
  const ir::TensorType& out;
  DType compute;
  Tensor a;
  Tensor b;
};

Operands operands(OpContext& context, DType compute) {
  const ir::TensorType& out = context.return_type(0);
  return {out, compute, elementwise_operand(context, 0, out, compute), elementwise_operand(context, 1, out, compute)};
}

DType floating_or_exact(OpContext& context) {
  const DType out = context.return_type(0).dtype;
  return is_floating(out) ? floating_compute(context, out) : out;
}

std::vector<Tensor> rounded(OpContext& context, const Operands& o, const Tensor& value) {
  return {context.builder().convert(value, o.out.dtype)};
}

std::vector<Tensor> nan_ignoring(OpContext& context, const char* combine) {
  const Operands o = operands(context, floating_or_exact(context));
  FunctionBuilder& builder = context.builder();
  Tensor value = builder.binary(combine, o.a, o.b);
  if (is_floating(o.compute)) {
    value = builder.select(nan_mask(builder, o.a), o.b, builder.select(nan_mask(builder, o.b), o.a, value));
  }
  return rounded(context, o, value);
}

}  // namespace

std::vector<Tensor> lower_fmax(OpContext& context) { return nan_ignoring(context, "stablehlo.maximum"); }
std::vector<Tensor> lower_fmin(OpContext& context) { return nan_ignoring(context, "stablehlo.minimum"); }

std::vector<Tensor> lower_copysign(OpContext& context) {
  const Operands o = operands(context, floating_compute(context, context.return_type(0).dtype));
  FunctionBuilder& builder = context.builder();
  const DType bits = o.compute == DType::kFloat64 ? DType::kInt64 : DType::kInt32;
  const std::string sign = o.compute == DType::kFloat64 ? "-9223372036854775808" : "-2147483648";
  const Tensor sign_bit = builder.splat(sign, bits, o.out.sizes);
  const auto as_bits = [&](const Tensor& x) { return builder.op("stablehlo.bitcast_convert", {x}, bits, x.shape); };
  const Tensor magnitude = as_bits(builder.unary("stablehlo.abs", o.a));
  const Tensor signed_bits = builder.binary("stablehlo.or", magnitude, builder.binary("stablehlo.and", as_bits(o.b), sign_bit));
  return rounded(context, o, builder.op("stablehlo.bitcast_convert", {signed_bits}, o.compute, o.out.sizes));
}

std::vector<Tensor> lower_heaviside(OpContext& context) {
  if (context.tensor_dtype(0) != context.tensor_dtype(1)) context.refuse("operands of different dtypes (ATen raises)");
  const Operands o = operands(context, floating_or_exact(context));
  FunctionBuilder& builder = context.builder();
  const Tensor zero = builder.zeros(o.compute, o.out.sizes);
  if (o.compute == DType::kBool) {
    // self == false takes values; self == true is 1.
    return rounded(context, o, builder.binary("stablehlo.or", o.a, o.b));
  }
  const Tensor step = builder.convert(builder.compare(o.a, zero, "GT"), o.compute);
  return rounded(context, o, builder.select(builder.compare(o.a, zero, "EQ"), o.b, step));
}

std::vector<Tensor> lower_xlogy(OpContext& context) {
  const Operands o = operands(context, floating_compute(context, context.return_type(0).dtype));
  FunctionBuilder& builder = context.builder();
  const Tensor zero = builder.zeros(o.compute, o.out.sizes);
  const Tensor product = builder.binary("stablehlo.multiply", o.a, builder.unary("stablehlo.log", o.b));
  const Tensor value = builder.select(builder.compare(o.a, zero, "EQ"), zero, product);
  return rounded(context, o, builder.select(nan_mask(builder, o.b), o.b, value));
}

std::vector<Tensor> lower_logaddexp(OpContext& context) {
  const Operands o = operands(context, floating_compute(context, context.return_type(0).dtype));
  FunctionBuilder& builder = context.builder();
  const Tensor larger = builder.binary("stablehlo.maximum", o.a, o.b);
  const Tensor gap = builder.unary("stablehlo.negate",
                                   builder.unary("stablehlo.abs", builder.binary("stablehlo.subtract", o.a, o.b)));
  const Tensor value =
      builder.binary("stablehlo.add", larger, builder.unary("stablehlo.log_plus_one", builder.unary("stablehlo.exponential", gap)));
  const Tensor infinite = builder.compare(builder.unary("stablehlo.abs", o.a),
                                          builder.broadcast_to(highest_value(builder, o.compute), o.out.sizes), "EQ");
  const Tensor same_infinity = builder.binary("stablehlo.and", infinite, builder.compare(o.a, o.b, "EQ"));
  return rounded(context, o, builder.select(same_infinity, o.a, value));
}

}  // namespace torch_tpu::executors::pjrt::lowering
