// More elementwise math, each as ATen's CPU kernel defines it:
//   erfc (CHLO's), exp2 = 2^x, frac = x - trunc(x) (floating only);
//   signbit: the sign bit (-0.0 and a negative NaN's count; x < 0 for integers);
//   nan_to_num(x, nan=0, posinf=max, neginf=lowest): floating values replaced, others kept.
// Floating results compute in the output's dtype, half precision in f32 rounded once.
#include <functional>
#include <limits>

#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::Argument;
using ir::DType;

std::vector<Tensor> floating(OpContext& context, const std::function<Tensor(FunctionBuilder&, const Tensor&)>& f) {
  const ir::TensorType& out = context.return_type(0);
  const DType compute = floating_compute(context, out.dtype);
  FunctionBuilder& builder = context.builder();
  return {builder.convert(f(builder, elementwise_operand(context, 0, out, compute)), out.dtype)};
}

double largest_finite(DType dtype) {
  switch (dtype) {
    case DType::kFloat16: return 65504.0;
    case DType::kBFloat16: return 3.3895313892515355e38;
    case DType::kFloat32: return std::numeric_limits<float>::max();
    default: return std::numeric_limits<double>::max();
  }
}

}  // namespace

std::vector<Tensor> lower_erfc(OpContext& context) {
  return floating(context, [](FunctionBuilder& b, const Tensor& x) { return b.unary("chlo.erfc", x); });
}

std::vector<Tensor> lower_exp2(OpContext& context) {
  return floating(context, [](FunctionBuilder& b, const Tensor& x) {
    return b.binary("stablehlo.power", b.splat("2.0", x.dtype, x.shape), x);
  });
}

std::vector<Tensor> lower_frac(OpContext& context) {
  if (!is_floating(context.tensor_dtype(0))) context.refuse("an integral input (ATen raises)");
  return floating(context, [](FunctionBuilder& b, const Tensor& x) {
    const Tensor negative = b.compare(x, b.zeros(x.dtype, x.shape), "LT");
    const Tensor truncated = b.select(negative, b.unary("stablehlo.ceil", x), b.unary("stablehlo.floor", x));
    return b.binary("stablehlo.subtract", x, truncated);
  });
}

std::vector<Tensor> lower_signbit(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  const Tensor x = context.tensor(0);
  if (x.dtype == DType::kBool) return {builder.zeros(DType::kBool, out.sizes)};
  if (!is_floating(x.dtype)) return {builder.compare(x, builder.zeros(x.dtype, x.shape), "LT")};
  // Widening keeps the sign bit, NaN's included.
  const bool wide = x.dtype == DType::kFloat64;
  const Tensor value = builder.convert(x, wide ? DType::kFloat64 : DType::kFloat32);
  const DType bits = wide ? DType::kInt64 : DType::kInt32;
  const Tensor as_bits = builder.op("stablehlo.bitcast_convert", {value}, bits, value.shape);
  return {builder.compare(as_bits, builder.zeros(bits, value.shape), "LT")};
}

std::vector<Tensor> lower_nan_to_num(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  const Tensor x = builder.convert(context.tensor(0), out.dtype);
  if (!is_floating(out.dtype)) return {x};
  const auto replacement = [&](size_t index, double fallback) {
    const Argument& arg = context.arg(index);
    if (arg.kind != Argument::Kind::kNone && arg.kind != Argument::Kind::kDouble) context.refuse("a replacement of that kind");
    const double value = arg.kind == Argument::Kind::kDouble ? arg.real : fallback;
    // Converted from f64 as static_cast<scalar_t> converts (a finite value too large becomes inf).
    return builder.convert(builder.float_splat(value, DType::kFloat64, out.sizes), out.dtype);
  };
  const double largest = largest_finite(out.dtype);
  const Tensor infinity = builder.broadcast_to(highest_value(builder, out.dtype), out.sizes);
  Tensor y = builder.select(nan_mask(builder, x), replacement(1, 0.0), x);
  y = builder.select(builder.compare(x, infinity, "EQ"), replacement(2, largest), y);
  y = builder.select(builder.compare(x, builder.unary("stablehlo.negate", infinity), "EQ"), replacement(3, -largest), y);
  return {y};
}

}  // namespace torch_tpu::executors::pjrt::lowering
