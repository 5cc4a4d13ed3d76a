// Pointwise ops: inputs are converted to the output's dtype and broadcast to its shape (for a
// functional op PyTorch's output dtype is the computation dtype, so this is its semantics).
// out= and in-place variants compute in the inputs' promoted dtype (promoted_dtype, as
// at::result_type) and cast to the output's. stablehlo.maximum/minimum propagate NaN as
// torch.maximum does (the compile options hold XLA's CPU compiler to StableHLO's semantics).
#include <algorithm>
#include <optional>

#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

// PyTorch's type-promotion categories, lowest first.
int category(DType dtype) {
  switch (dtype) {
    case DType::kBool:
      return 0;
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kFloat32:
    case DType::kFloat64:
      return 2;
    default:
      return 1;  // integral (complex is refused by the element types)
  }
}

bool is_signed_integral(DType dtype) {
  return dtype == DType::kInt8 || dtype == DType::kInt16 || dtype == DType::kInt32 ||
         dtype == DType::kInt64;
}

// c10::promoteTypes for the real dtypes StableHLO lowers (bool, uint8, signed ints, floats).
DType promote(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::kBool) return b;
  if (b == DType::kBool) return a;
  const int ca = category(a), cb = category(b);
  if (ca != cb) return ca > cb ? a : b;
  const auto size = [](DType d) { return ir::element_size(d); };
  if (ca == 2) {
    if ((a == DType::kFloat16 && b == DType::kBFloat16) || (a == DType::kBFloat16 && b == DType::kFloat16)) {
      return DType::kFloat32;
    }
    return size(a) >= size(b) ? a : b;
  }
  // uint8 with a signed type: the signed type, widened to int16 for int8.
  if (a == DType::kUInt8 || b == DType::kUInt8) {
    const DType other = a == DType::kUInt8 ? b : a;
    if (!is_signed_integral(other)) return DType::kInt64;  // unsigned types wider than 8 bits are refused upstream
    return other == DType::kInt8 ? DType::kInt16 : other;
  }
  return size(a) >= size(b) ? a : b;
}

// c10's combine_categories: a higher-priority class wins unless a lower one is of a higher
// category (a float Scalar beside an int tensor makes a float result).
std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (category(*higher) == 2) return higher;
  if (*higher == DType::kBool || category(*lower) == 2) return promote(*higher, *lower);
  return higher;
}

}  // namespace

DType promoted_dtype(OpContext& context) {
  // at::result_type's three priority classes: dimensioned tensors, 0-d tensors, and wrapped
  // numbers (Scalars, and 0-d tensors in host memory, which the IR cannot tell from a user's
  // 0-d CPU tensor; they differ only for a float64 one beside no floating tensor).
  std::optional<DType> dimensioned, zero_dim, wrapped;
  const auto add = [](std::optional<DType>& into, DType dtype) { into = into ? promote(*into, dtype) : dtype; };
  const ir::Node& node = context.node();
  std::vector<int64_t> out_values;
  if (context.writes_an_argument() && !context.in_place()) {
    for (const ir::Argument& ret : node.returns) {
      if (ret.kind == ir::Argument::Kind::kTensor) out_values.push_back(ret.integer);
    }
  }
  for (size_t i = 0; i < node.args.size(); ++i) {
    const ir::Argument& arg = node.args[i];
    if (arg.kind == ir::Argument::Kind::kScalar) {
      switch (arg.scalar.kind) {
        case ir::ScalarValue::Kind::kBool: add(wrapped, DType::kBool); break;
        case ir::ScalarValue::Kind::kInt: add(wrapped, DType::kInt64); break;
        default: add(wrapped, DType::kFloat32); break;  // the default dtype
      }
      continue;
    }
    if (arg.kind != ir::Argument::Kind::kTensor) continue;
    // An out= argument is not an input.
    if (std::find(out_values.begin(), out_values.end(), arg.integer) != out_values.end()) continue;
    const ir::TensorType& type = context.tensor_type(i);
    if (!type.sizes.empty()) {
      add(dimensioned, type.dtype);
    } else if (context.on_host(i)) {
      add(wrapped, category(type.dtype) == 2 ? DType::kFloat32 : type.dtype);
    } else {
      add(zero_dim, type.dtype);
    }
  }
  const std::optional<DType> result = combine(dimensioned, combine(zero_dim, wrapped));
  return result ? *result : context.return_type(0).dtype;
}

DType elementwise_compute(OpContext& context) {
  return context.writes_an_argument() ? promoted_dtype(context) : context.return_type(0).dtype;
}

Tensor elementwise_operand(OpContext& context, size_t index, const ir::TensorType& out,
                           DType compute) {
  FunctionBuilder& builder = context.builder();
  const ir::Argument& arg = context.arg(index);
  // An out= or in-place variant computes in its inputs' promoted dtype and casts to the
  // output's; a lowering computing in the output's dtype (or in f32 for a half-precision one)
  // is right only when the two agree.
  if (context.writes_an_argument()) {
    const DType promoted = promoted_dtype(context);
    // Ops that compute integral inputs in floating point (true division, sin) write a floating
    // output from a floating computation.
    const bool floated = category(promoted) < 2 && is_floating(compute) && is_floating(out.dtype);
    if (promoted != out.dtype && promoted != compute && !floated) {
      context.refuse("inputs promoted to " + ir::dtype_name(promoted) + " written to an output of dtype " +
                     ir::dtype_name(out.dtype));
    }
  }
  Tensor value;
  if (arg.kind == ir::Argument::Kind::kTensor) {
    value = context.tensor(index);
  } else if (arg.kind == ir::Argument::Kind::kScalar) {
    value = context.scalar(index);
  } else {
    context.refuse("argument " + std::to_string(index) + " is neither a tensor nor a Scalar");
  }
  return builder.broadcast_to(builder.convert(value, compute), out.sizes);
}

namespace {

Tensor operand(OpContext& context, size_t index, const ir::TensorType& out) {
  return elementwise_operand(context, index, out, out.dtype);
}

// An arithmetic op's operands in the dtype it computes in (elementwise_compute), its result
// cast to the output's dtype.
struct Arithmetic {
  OpContext& context;
  const ir::TensorType& out;
  DType compute;

  explicit Arithmetic(OpContext& c) : context(c), out(c.return_type(0)), compute(elementwise_compute(c)) {}
  Tensor operand(size_t index) const { return elementwise_operand(context, index, out, compute); }
  std::vector<Tensor> result(const Tensor& value) const { return {context.builder().convert(value, out.dtype)}; }
};

bool half_precision(DType dtype) { return dtype == DType::kFloat16 || dtype == DType::kBFloat16; }

// a + b * alpha (sub: a - b * alpha); alpha, when present, is a run-time Scalar. For bool, add
// is ATen's a || (b && alpha). In half precision each step rounds to the dtype, with a Scalar
// operand and alpha rounded first: ATen's per-element CPU path (the elements after the last
// whole vector). Its vector path fuses b * alpha + a with one rounding, which differs by an
// ulp at most, only where alpha is not 1.
std::vector<Tensor> add_or_sub(OpContext& context, const char* op) {
  const Arithmetic arithmetic(context);
  const bool is_add = std::string(op) == "stablehlo.add";
  if (arithmetic.compute == DType::kBool && !is_add) context.refuse("bool subtraction (ATen raises)");
  FunctionBuilder& builder = context.builder();
  const Tensor a = arithmetic.operand(0);
  Tensor b = arithmetic.operand(1);
  const ir::Argument* alpha = context.node().args.size() > 2 ? &context.arg(2) : nullptr;
  const bool is_bool = arithmetic.compute == DType::kBool;
  if (alpha != nullptr && alpha->kind == ir::Argument::Kind::kScalar) {
    b = builder.binary(is_bool ? "stablehlo.and" : "stablehlo.multiply", b, arithmetic.operand(2));
  }
  return arithmetic.result(builder.binary(is_bool ? "stablehlo.or" : op, a, b));
}

// mul and div in half precision compute in f32 and round once, with Scalar operands in f32:
// ATen's CPU kernels take a one-element operand's original value in f32 (binary_op_scalar).
std::vector<Tensor> binary(OpContext& context, const char* op) {
  Arithmetic arithmetic(context);
  if (half_precision(arithmetic.compute)) arithmetic.compute = DType::kFloat32;
  return arithmetic.result(context.builder().binary(op, arithmetic.operand(0), arithmetic.operand(1)));
}

std::vector<Tensor> unary(OpContext& context, const char* op) {
  const Arithmetic arithmetic(context);
  return arithmetic.result(context.builder().unary(op, arithmetic.operand(0)));
}

}  // namespace

std::vector<Tensor> lower_add(OpContext& context) { return add_or_sub(context, "stablehlo.add"); }
std::vector<Tensor> lower_sub(OpContext& context) { return add_or_sub(context, "stablehlo.subtract"); }

// rsub(self, other, alpha): other - self * alpha (alpha a run-time Scalar).
std::vector<Tensor> lower_rsub(OpContext& context) {
  const Arithmetic arithmetic(context);
  if (arithmetic.compute == DType::kBool) context.refuse("bool subtraction (ATen raises)");
  FunctionBuilder& builder = context.builder();
  Tensor self = arithmetic.operand(0);
  if (context.node().args.size() > 2 && context.arg(2).kind == ir::Argument::Kind::kScalar) {
    self = builder.binary("stablehlo.multiply", self, arithmetic.operand(2));
  }
  return arithmetic.result(builder.binary("stablehlo.subtract", arithmetic.operand(1), self));
}
std::vector<Tensor> lower_mul(OpContext& context) { return binary(context, "stablehlo.multiply"); }

std::vector<Tensor> lower_div(OpContext& context) {
  // True division: PyTorch's output is floating; integral inputs are divided in the default
  // floating dtype.
  const ir::TensorType& out = context.return_type(0);
  if (!is_floating(out.dtype)) context.refuse("a non-floating output (true division returns a floating dtype)");
  Arithmetic arithmetic(context);
  if (!is_floating(arithmetic.compute) || half_precision(arithmetic.compute)) {
    arithmetic.compute = DType::kFloat32;  // half precision as binary(): f32, rounded once
  }
  return arithmetic.result(
      context.builder().binary("stablehlo.divide", arithmetic.operand(0), arithmetic.operand(1)));
}

std::vector<Tensor> lower_neg(OpContext& context) {
  if (context.return_type(0).dtype == DType::kBool) context.refuse("negation of bool");
  return unary(context, "stablehlo.negate");
}

std::vector<Tensor> lower_exp(OpContext& context) { return unary(context, "stablehlo.exponential"); }
std::vector<Tensor> lower_sqrt(OpContext& context) { return unary(context, "stablehlo.sqrt"); }
std::vector<Tensor> lower_rsqrt(OpContext& context) { return unary(context, "stablehlo.rsqrt"); }
std::vector<Tensor> lower_log(OpContext& context) { return unary(context, "stablehlo.log"); }
std::vector<Tensor> lower_tanh(OpContext& context) { return unary(context, "stablehlo.tanh"); }
std::vector<Tensor> lower_sigmoid(OpContext& context) { return unary(context, "stablehlo.logistic"); }

std::vector<Tensor> lower_abs(OpContext& context) {
  if (context.return_type(0).dtype == DType::kBool) context.refuse("abs of bool");
  return unary(context, "stablehlo.abs");
}

std::vector<Tensor> lower_maximum(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  return {context.builder().binary("stablehlo.maximum", operand(context, 0, out), operand(context, 1, out))};
}
std::vector<Tensor> lower_minimum(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  return {context.builder().binary("stablehlo.minimum", operand(context, 0, out), operand(context, 1, out))};
}

std::vector<Tensor> lower_relu(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  if (out.dtype == DType::kBool) context.refuse("relu of bool");
  FunctionBuilder& builder = context.builder();
  const Tensor x = operand(context, 0, out);
  // relu(NaN) is NaN.
  return {builder.binary("stablehlo.maximum", x, builder.zeros(out.dtype, out.sizes))};
}

// addcmul(self, tensor1, tensor2, *, value) = self + value * tensor1 * tensor2, and addcdiv with
// tensor1 / tensor2, in ATen's order of operations; value is a run-time Scalar.
// Half precision computes in f32 and rounds once, as ATen's CPU kernels for these ops do.
ir::TensorType computed_in_f32(const ir::TensorType& out) {
  ir::TensorType compute = out;
  if (out.dtype == DType::kFloat16 || out.dtype == DType::kBFloat16) compute.dtype = DType::kFloat32;
  return compute;
}

std::vector<Tensor> add_product_or_quotient(OpContext& context, const char* op) {
  const ir::TensorType& out = context.return_type(0);
  if (!is_floating(out.dtype)) context.refuse("a non-floating output");
  const ir::TensorType compute = computed_in_f32(out);
  FunctionBuilder& builder = context.builder();
  const Tensor self = elementwise_operand(context, 0, out, compute.dtype);
  const Tensor t1 = elementwise_operand(context, 1, out, compute.dtype);
  const Tensor t2 = elementwise_operand(context, 2, out, compute.dtype);
  const Tensor value = elementwise_operand(context, 3, out, compute.dtype);
  const Tensor scaled = builder.binary("stablehlo.multiply", value, t1);
  return {builder.convert(builder.binary("stablehlo.add", self, builder.binary(op, scaled, t2)),
                          out.dtype)};
}

std::vector<Tensor> lower_addcmul(OpContext& context) {
  return add_product_or_quotient(context, "stablehlo.multiply");
}
std::vector<Tensor> lower_addcdiv(OpContext& context) {
  return add_product_or_quotient(context, "stablehlo.divide");
}

// lerp.Scalar(self, end, weight): ATen's two-sided form, self + w * (end - self) below w = 0.5
// and end - (end - self) * (1 - w) from it, so lerp(a, b, 1) is exactly b.
std::vector<Tensor> lower_lerp_scalar(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  if (!is_floating(out.dtype)) context.refuse("a non-floating output");
  const ir::TensorType compute = computed_in_f32(out);
  FunctionBuilder& builder = context.builder();
  const Tensor self = elementwise_operand(context, 0, out, compute.dtype);
  const Tensor end = elementwise_operand(context, 1, out, compute.dtype);
  const Tensor weight = elementwise_operand(context, 2, out, compute.dtype);
  const Tensor diff = builder.binary("stablehlo.subtract", end, self);
  const Tensor low = builder.binary("stablehlo.add", self, builder.binary("stablehlo.multiply", weight, diff));
  const Tensor one = builder.splat("1.0", compute.dtype, out.sizes);
  const Tensor high = builder.binary(
      "stablehlo.subtract", end,
      builder.binary("stablehlo.multiply", diff, builder.binary("stablehlo.subtract", one, weight)));
  const Tensor half = builder.splat("0.5", compute.dtype, out.sizes);
  const Tensor below = builder.op("stablehlo.compare", {weight, half}, DType::kBool, out.sizes,
                                  "comparison_direction = #stablehlo<comparison_direction LT>");
  return {builder.convert(builder.op("stablehlo.select", {below, low, high}, compute.dtype, out.sizes),
                          out.dtype)};
}

}  // namespace torch_tpu::executors::pjrt::lowering
