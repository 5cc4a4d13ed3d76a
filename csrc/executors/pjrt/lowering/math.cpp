// Elementwise math beyond arithmetic: transcendental functions, rounding, sign, NaN tests, the
// floating remainders and powers. A floating op computes in its output's dtype, or in f32 for
// half precision and rounds once, as ATen's CPU kernels do (they widen bf16/f16 to float);
// integral and bool inputs of a functional op arrive converted to its floating output (the
// default dtype). Ops CHLO has and StableHLO lacks (asin, sinh, erf, ...) are emitted as CHLO,
// which every PJRT plugin's compiler legalizes.
#include <cmath>
#include <cstdio>
#include <utility>

#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

// The output's layout and the dtype a floating op of it computes in; refuses a non-floating one.
ir::DType floating_compute_of_output(OpContext& context) {
  return floating_compute(context, context.return_type(0).dtype);
}

// A literal of `value` for a floating splat, exact to the last bit of a double.
std::string real_literal(double value) {
  char text[40];
  std::snprintf(text, sizeof(text), "%.17e", value);
  return text;
}

std::vector<Tensor> floating_unary(OpContext& context, const std::string& op) {
  const ir::TensorType& out = context.return_type(0);
  const DType compute = floating_compute_of_output(context);
  FunctionBuilder& builder = context.builder();
  const Tensor x = elementwise_operand(context, 0, out, compute);
  return {builder.convert(builder.unary(op, x), out.dtype)};
}

// log2 and log10 as log(x) times the base's reciprocal logarithm (StableHLO has only log).
std::vector<Tensor> log_base(OpContext& context, double base) {
  const ir::TensorType& out = context.return_type(0);
  const DType compute = floating_compute_of_output(context);
  FunctionBuilder& builder = context.builder();
  const Tensor x = elementwise_operand(context, 0, out, compute);
  const Tensor scale = builder.splat(real_literal(1.0 / std::log(base)), compute, out.sizes);
  return {builder.convert(builder.binary("stablehlo.multiply", builder.unary("stablehlo.log", x), scale),
                          out.dtype)};
}

std::vector<Tensor> floating_binary(OpContext& context, const std::string& op) {
  const ir::TensorType& out = context.return_type(0);
  const DType compute = floating_compute_of_output(context);
  FunctionBuilder& builder = context.builder();
  const Tensor a = elementwise_operand(context, 0, out, compute);
  const Tensor b = elementwise_operand(context, 1, out, compute);
  return {builder.convert(builder.binary(op, a, b), out.dtype)};
}

// Rounding of an integral or bool tensor is the tensor itself, as in ATen.
std::vector<Tensor> rounding(OpContext& context, const std::string& op) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  const Tensor x = elementwise_operand(context, 0, out, out.dtype);
  if (!is_floating(out.dtype)) return {x};
  return {builder.unary(op, x)};
}

Tensor truncated(FunctionBuilder& builder, const Tensor& x) {
  const Tensor negative = builder.compare(x, builder.zeros(x.dtype, x.shape), "LT");
  return builder.select(negative, builder.unary("stablehlo.ceil", x), builder.unary("stablehlo.floor", x));
}

// Integral division by zero raises in ATen (trunc/floor division, fmod, remainder): the
// program checks its divisors at run time. `b` is the divisor as computed.
void check_integral_divisor(OpContext& context, const Tensor& b) {
  FunctionBuilder& builder = context.builder();
  context.check(builder.compare(b, builder.zeros(b.dtype, b.shape), "EQ"), "ZeroDivisionError");
}

// ATen's integral floor division: the truncated quotient, one less when the signs differ and
// the division is inexact.
Tensor integral_floor_divide(FunctionBuilder& builder, const Tensor& a, const Tensor& b) {
  const Tensor zero = builder.zeros(a.dtype, a.shape);
  const Tensor quotient = builder.binary("stablehlo.divide", a, b);
  const Tensor inexact = builder.compare(builder.binary("stablehlo.remainder", a, b), zero, "NE");
  const Tensor signs_differ = builder.compare(builder.compare(a, zero, "LT"), builder.compare(b, zero, "LT"), "NE");
  const Tensor step_down = builder.binary("stablehlo.and", inexact, signs_differ);
  return builder.select(step_down, builder.binary("stablehlo.subtract", quotient, builder.splat("1", a.dtype, a.shape)),
                        quotient);
}

// Tensor or Scalar arguments 0 and 1 of an integral division op in the output's dtype, the
// divisor checked; a bool output is refused.
std::pair<Tensor, Tensor> integral_division_operands(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  if (out.dtype == DType::kBool) context.refuse("division of bool");
  const Tensor a = elementwise_operand(context, 0, out, out.dtype);
  const Tensor b = elementwise_operand(context, 1, out, out.dtype);
  check_integral_divisor(context, b);
  return {a, b};
}

// ATen's Python-style remainder: fmod's result moved into the divisor's sign.
Tensor python_remainder(FunctionBuilder& builder, const Tensor& a, const Tensor& b) {
  const Tensor zero = builder.zeros(a.dtype, a.shape);
  const Tensor mod = builder.binary("stablehlo.remainder", a, b);
  const Tensor signs_differ = builder.compare(builder.compare(b, zero, "LT"), builder.compare(mod, zero, "LT"), "NE");
  const Tensor adjust = builder.binary("stablehlo.and", builder.compare(mod, zero, "NE"), signs_differ);
  return builder.select(adjust, builder.binary("stablehlo.add", mod, b), mod);
}

// ATen's floor division of floats (Python's algorithm): (a - fmod(a, b)) / b, one less when the
// remainder's sign differs from b's, then the nearest integer to that quotient; a zero divisor
// gives a / b (inf or NaN) and a zero quotient keeps the sign of a / b.
Tensor floor_divide(FunctionBuilder& builder, const Tensor& a, const Tensor& b) {
  const Tensor zero = builder.zeros(a.dtype, a.shape);
  const Tensor one = builder.splat("1.0", a.dtype, a.shape);
  const Tensor half = builder.splat("0.5", a.dtype, a.shape);
  const Tensor quotient = builder.binary("stablehlo.divide", a, b);
  const Tensor mod = builder.binary("stablehlo.remainder", a, b);
  Tensor div = builder.binary("stablehlo.divide", builder.binary("stablehlo.subtract", a, mod), b);
  const Tensor signs_differ = builder.compare(builder.compare(b, zero, "LT"), builder.compare(mod, zero, "LT"), "NE");
  const Tensor step_down = builder.binary("stablehlo.and", builder.compare(mod, zero, "NE"), signs_differ);
  div = builder.select(step_down, builder.binary("stablehlo.subtract", div, one), div);
  Tensor floored = builder.unary("stablehlo.floor", div);
  const Tensor round_up = builder.compare(builder.binary("stablehlo.subtract", div, floored), half, "GT");
  floored = builder.select(round_up, builder.binary("stablehlo.add", floored, one), floored);
  // copysign(0, a / b): zero times the (finite, since b != 0) quotient carries its sign bit.
  const Tensor zero_result = builder.binary("stablehlo.multiply", zero, quotient);
  const Tensor nonzero = builder.select(builder.compare(div, zero, "NE"), floored, zero_result);
  return builder.select(builder.compare(b, zero, "EQ"), quotient, nonzero);
}

}  // namespace

std::vector<Tensor> lower_sin(OpContext& context) { return floating_unary(context, "stablehlo.sine"); }
std::vector<Tensor> lower_cos(OpContext& context) { return floating_unary(context, "stablehlo.cosine"); }
std::vector<Tensor> lower_tan(OpContext& context) { return floating_unary(context, "stablehlo.tan"); }
std::vector<Tensor> lower_asin(OpContext& context) { return floating_unary(context, "chlo.asin"); }
std::vector<Tensor> lower_acos(OpContext& context) { return floating_unary(context, "chlo.acos"); }
std::vector<Tensor> lower_atan(OpContext& context) { return floating_unary(context, "chlo.atan"); }
std::vector<Tensor> lower_sinh(OpContext& context) { return floating_unary(context, "chlo.sinh"); }
std::vector<Tensor> lower_cosh(OpContext& context) { return floating_unary(context, "chlo.cosh"); }
std::vector<Tensor> lower_asinh(OpContext& context) { return floating_unary(context, "chlo.asinh"); }
std::vector<Tensor> lower_acosh(OpContext& context) { return floating_unary(context, "chlo.acosh"); }
std::vector<Tensor> lower_atanh(OpContext& context) { return floating_unary(context, "chlo.atanh"); }
std::vector<Tensor> lower_erf(OpContext& context) { return floating_unary(context, "chlo.erf"); }
std::vector<Tensor> lower_expm1(OpContext& context) {
  return floating_unary(context, "stablehlo.exponential_minus_one");
}
std::vector<Tensor> lower_log1p(OpContext& context) { return floating_unary(context, "stablehlo.log_plus_one"); }
std::vector<Tensor> lower_log2(OpContext& context) { return log_base(context, 2.0); }
std::vector<Tensor> lower_log10(OpContext& context) { return log_base(context, 10.0); }
std::vector<Tensor> lower_atan2(OpContext& context) { return floating_binary(context, "stablehlo.atan2"); }

std::vector<Tensor> lower_reciprocal(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const DType compute = floating_compute_of_output(context);
  FunctionBuilder& builder = context.builder();
  const Tensor x = elementwise_operand(context, 0, out, compute);
  return {builder.convert(builder.binary("stablehlo.divide", builder.splat("1.0", compute, out.sizes), x),
                          out.dtype)};
}

std::vector<Tensor> lower_ceil(OpContext& context) { return rounding(context, "stablehlo.ceil"); }
std::vector<Tensor> lower_floor(OpContext& context) { return rounding(context, "stablehlo.floor"); }
// torch.round rounds half to even (nearbyint).
std::vector<Tensor> lower_round(OpContext& context) { return rounding(context, "stablehlo.round_nearest_even"); }

std::vector<Tensor> lower_trunc(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const Tensor x = elementwise_operand(context, 0, out, out.dtype);
  if (!is_floating(out.dtype)) return {x};
  return {truncated(context.builder(), x)};
}

// round.decimals(self, decimals): ATen scales by 10^|decimals|, rounds half to even and scales
// back, each step rounded in the tensor's dtype; half precision is refused because XLA may keep
// the steps in f32.
std::vector<Tensor> lower_round_decimals(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  if (out.dtype != DType::kFloat32 && out.dtype != DType::kFloat64) {
    context.refuse("round with decimals in " + ir::dtype_name(out.dtype));
  }
  const ir::Argument& decimals = context.arg(1);
  if (decimals.kind != ir::Argument::Kind::kInt) context.refuse("decimals that is not an int");
  FunctionBuilder& builder = context.builder();
  const Tensor x = elementwise_operand(context, 0, out, out.dtype);
  const bool negative = decimals.integer < 0;
  const double power = std::pow(10.0, static_cast<double>(negative ? -decimals.integer : decimals.integer));
  // ATen computes 10^decimals in the tensor's dtype.
  const double scale = out.dtype == DType::kFloat32 ? static_cast<double>(static_cast<float>(power)) : power;
  const Tensor ten_pow = builder.splat(real_literal(scale), out.dtype, out.sizes);
  if (negative) {
    const Tensor rounded = builder.unary("stablehlo.round_nearest_even", builder.binary("stablehlo.divide", x, ten_pow));
    return {builder.binary("stablehlo.multiply", rounded, ten_pow)};
  }
  const Tensor rounded = builder.unary("stablehlo.round_nearest_even", builder.binary("stablehlo.multiply", x, ten_pow));
  return {builder.binary("stablehlo.divide", rounded, ten_pow)};
}

// sign: (0 < x) - (x < 0) as ATen computes it, so sign(NaN) is 0; bool is itself.
std::vector<Tensor> lower_sign(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  const Tensor x = elementwise_operand(context, 0, out, out.dtype);
  if (out.dtype == DType::kBool) return {x};
  const Tensor zero = builder.zeros(out.dtype, out.sizes);
  const Tensor positive = builder.convert(builder.compare(zero, x, "LT"), out.dtype);
  const Tensor negative = builder.convert(builder.compare(x, zero, "LT"), out.dtype);
  return {builder.binary("stablehlo.subtract", positive, negative)};
}

std::vector<Tensor> lower_isnan(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  if (out.dtype != DType::kBool) context.refuse("isnan into a non-bool output");
  FunctionBuilder& builder = context.builder();
  const Tensor x = builder.broadcast_to(context.tensor(0), out.sizes);
  if (!is_floating(x.dtype)) return {builder.zeros(DType::kBool, out.sizes)};
  return {builder.compare(x, x, "NE")};
}

// isneginf / isposinf: x == -inf / +inf; never for an integral or bool input (whose lowest and
// highest values are finite).
namespace {
std::vector<Tensor> infinity_test(OpContext& context, bool negative) {
  const ir::TensorType& out = context.return_type(0);
  if (out.dtype != DType::kBool) context.refuse("an infinity test into a non-bool output");
  FunctionBuilder& builder = context.builder();
  const Tensor x = builder.broadcast_to(context.tensor(0), out.sizes);
  if (!is_floating(x.dtype)) return {builder.zeros(DType::kBool, out.sizes)};
  const Tensor infinity = negative ? lowest_value(builder, x.dtype) : highest_value(builder, x.dtype);
  return {builder.compare(x, builder.broadcast_to(infinity, out.sizes), "EQ")};
}
}  // namespace

std::vector<Tensor> lower_isneginf(OpContext& context) { return infinity_test(context, true); }
std::vector<Tensor> lower_isposinf(OpContext& context) { return infinity_test(context, false); }

// fmod: C's fmod, the remainder with the dividend's sign (stablehlo.remainder's definition).
std::vector<Tensor> lower_fmod(OpContext& context) {
  if (!is_floating(context.return_type(0).dtype)) {
    const auto [a, b] = integral_division_operands(context);
    return {context.builder().binary("stablehlo.remainder", a, b)};
  }
  return floating_binary(context, "stablehlo.remainder");
}

std::vector<Tensor> lower_remainder(OpContext& context) {
  if (!is_floating(context.return_type(0).dtype)) {
    const auto [a, b] = integral_division_operands(context);
    return {python_remainder(context.builder(), a, b)};
  }
  const ir::TensorType& out = context.return_type(0);
  const DType compute = floating_compute_of_output(context);
  FunctionBuilder& builder = context.builder();
  const Tensor a = elementwise_operand(context, 0, out, compute);
  const Tensor b = elementwise_operand(context, 1, out, compute);
  return {builder.convert(python_remainder(builder, a, b), out.dtype)};
}

namespace {

// Division rounded toward zero ("trunc") or down ("floor"): integral division truncates
// (StableHLO's divide) or floors, as ATen's; floating "floor" is ATen's floor division and
// "trunc" truncates the quotient rounded to the output's dtype (ATen's trunc(bf16(a / b))).
std::vector<Tensor> rounded_division(OpContext& context, bool floor) {
  FunctionBuilder& builder = context.builder();
  const ir::TensorType& out = context.return_type(0);
  if (!is_floating(out.dtype)) {
    const auto [a, b] = integral_division_operands(context);
    return {floor ? integral_floor_divide(builder, a, b) : builder.binary("stablehlo.divide", a, b)};
  }
  const DType compute = floating_compute_of_output(context);
  const Tensor a = elementwise_operand(context, 0, out, compute);
  const Tensor b = elementwise_operand(context, 1, out, compute);
  if (floor) return {builder.convert(floor_divide(builder, a, b), out.dtype)};
  return {truncated(builder, builder.convert(builder.binary("stablehlo.divide", a, b), out.dtype))};
}

}  // namespace

// ATen's integral power (powi): exact repeated squaring, which wraps as any product order does,
// and for a negative exponent 1 for base 1, +-1 for base -1, 0 otherwise.
Tensor integral_power(FunctionBuilder& builder, const Tensor& base, const Tensor& exponent) {
  const Tensor zero = builder.zeros(base.dtype, base.shape);
  const Tensor one = builder.splat("1", base.dtype, base.shape);
  const Tensor minus_one = builder.splat("-1", base.dtype, base.shape);
  const Tensor two = builder.splat("2", base.dtype, base.shape);
  const Tensor negative_exponent = builder.compare(exponent, zero, "LT");
  const Tensor power = builder.binary("stablehlo.power", base, builder.select(negative_exponent, zero, exponent));
  const Tensor odd = builder.compare(builder.binary("stablehlo.remainder", exponent, two), zero, "NE");
  const Tensor of_minus_one = builder.select(odd, minus_one, one);
  const Tensor reciprocal = builder.select(builder.compare(base, one, "EQ"), one,
                                           builder.select(builder.compare(base, minus_one, "EQ"), of_minus_one, zero));
  return builder.select(negative_exponent, reciprocal, power);
}

// div with rounding_mode (an absent mode is true division) and floor_divide.
std::vector<Tensor> lower_div_mode(OpContext& context) {
  const ir::Argument& mode = context.arg(2);
  if (mode.kind == ir::Argument::Kind::kNone) return lower_div(context);
  if (mode.kind != ir::Argument::Kind::kString || (mode.text != "trunc" && mode.text != "floor")) {
    context.refuse("rounding_mode '" + mode.text + "'");
  }
  return rounded_division(context, mode.text == "floor");
}

std::vector<Tensor> lower_floor_divide(OpContext& context) { return rounded_division(context, /*floor=*/true); }

// pow.Tensor_Tensor, pow.Scalar (a Scalar base) and pow.Tensor_Scalar: floating outputs compute
// in f32 for half precision; integral ones as ATen's powi (PyTorch refuses a negative Scalar
// exponent of an integral tensor before dispatch). Bool outputs are refused.
std::vector<Tensor> lower_pow(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  if (is_floating(out.dtype)) return floating_binary(context, "stablehlo.power");
  if (out.dtype == DType::kBool) context.refuse("pow into bool");
  const Tensor base = elementwise_operand(context, 0, out, out.dtype);
  const Tensor exponent = elementwise_operand(context, 1, out, out.dtype);
  return {integral_power(context.builder(), base, exponent)};
}

}  // namespace torch_tpu::executors::pjrt::lowering
