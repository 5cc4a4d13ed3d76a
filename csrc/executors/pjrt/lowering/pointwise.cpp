// Pointwise ops: inputs are converted to the output's dtype and broadcast to its shape (for a
// functional op PyTorch's output dtype is the computation dtype, so this is its semantics).
// out= and in-place variants compute in the inputs' promoted dtype and cast to the output's: we
// lower those whose promoted dtype is the output's (see promotes_to_output) and refuse the rest.
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

// Whether an out= or in-place variant's input `index`, of another dtype than the output, still
// promotes to the output's dtype: it is 0-d (a wrapped number, `x.add_(1)`) of no higher
// category, and a dimensioned tensor input has the output's dtype. Dimensioned tensors decide
// the result type within a category, so the computation dtype is the output's.
bool promotes_to_output(OpContext& context, size_t index, DType out) {
  if (!context.tensor_type(index).sizes.empty() ||
      category(context.tensor_dtype(index)) > category(out)) {
    return false;
  }
  for (size_t other = 0; other < context.node().args.size(); ++other) {
    if (other == index || context.arg(other).kind != ir::Argument::Kind::kTensor) continue;
    const ir::TensorType& type = context.tensor_type(other);
    if (!type.sizes.empty() && type.dtype == out) return true;
  }
  return false;
}

}  // namespace

Tensor elementwise_operand(OpContext& context, size_t index, const ir::TensorType& out,
                           DType compute) {
  FunctionBuilder& builder = context.builder();
  const ir::Argument& arg = context.arg(index);
  Tensor value;
  if (arg.kind == ir::Argument::Kind::kTensor) {
    if (context.writes_an_argument() && context.tensor_dtype(index) != out.dtype &&
        !promotes_to_output(context, index, out.dtype)) {
      context.refuse("an input of dtype " + ir::dtype_name(context.tensor_dtype(index)) +
                     " written to an output of dtype " + ir::dtype_name(out.dtype));
    }
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

// a + b * alpha (sub: a - b * alpha); alpha, when present, is a run-time Scalar.
std::vector<Tensor> add_or_sub(OpContext& context, const char* op) {
  const ir::TensorType& out = context.return_type(0);
  if (out.dtype == DType::kBool) context.refuse("bool arithmetic");
  FunctionBuilder& builder = context.builder();
  const Tensor a = operand(context, 0, out);
  Tensor b = operand(context, 1, out);
  const ir::Argument* alpha = context.node().args.size() > 2 ? &context.arg(2) : nullptr;
  if (alpha != nullptr && alpha->kind == ir::Argument::Kind::kScalar) {
    b = builder.binary("stablehlo.multiply", b, operand(context, 2, out));
  }
  return {builder.binary(op, a, b)};
}

std::vector<Tensor> binary(OpContext& context, const char* op) {
  const ir::TensorType& out = context.return_type(0);
  return {context.builder().binary(op, operand(context, 0, out), operand(context, 1, out))};
}

std::vector<Tensor> unary(OpContext& context, const char* op) {
  const ir::TensorType& out = context.return_type(0);
  return {context.builder().unary(op, operand(context, 0, out))};
}

}  // namespace

std::vector<Tensor> lower_add(OpContext& context) { return add_or_sub(context, "stablehlo.add"); }
std::vector<Tensor> lower_sub(OpContext& context) { return add_or_sub(context, "stablehlo.subtract"); }
std::vector<Tensor> lower_mul(OpContext& context) { return binary(context, "stablehlo.multiply"); }

std::vector<Tensor> lower_div(OpContext& context) {
  // True division: PyTorch's output is floating, so converting first is exact.
  const DType out = context.return_type(0).dtype;
  if (out != DType::kFloat16 && out != DType::kBFloat16 && out != DType::kFloat32 &&
      out != DType::kFloat64) {
    context.refuse("a non-floating output (true division returns a floating dtype)");
  }
  return binary(context, "stablehlo.divide");
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
  return {nan_propagating(context.builder(), "stablehlo.maximum", operand(context, 0, out), operand(context, 1, out))};
}
std::vector<Tensor> lower_minimum(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  return {nan_propagating(context.builder(), "stablehlo.minimum", operand(context, 0, out), operand(context, 1, out))};
}

std::vector<Tensor> lower_relu(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  if (out.dtype == DType::kBool) context.refuse("relu of bool");
  FunctionBuilder& builder = context.builder();
  const Tensor x = operand(context, 0, out);
  // relu(NaN) is NaN.
  return {nan_propagating(builder, "stablehlo.maximum", x, builder.zeros(out.dtype, out.sizes))};
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
