// Comparisons and where. A comparison's output is bool, so its computation dtype comes from its
// inputs, at::result_type's (an int tensor against 2.5 compares in float32, PyTorch's default
// dtype; a float32 tensor against a float64 one in float64).
#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;


std::vector<Tensor> compare(OpContext& context, const char* direction) {
  const ir::TensorType& out = context.return_type(0);
  if (out.dtype != DType::kBool) context.refuse("a comparison into a non-bool output");
  FunctionBuilder& builder = context.builder();
  const DType compute = promoted_dtype(context);
  const Tensor other = context.arg(1).kind == ir::Argument::Kind::kTensor ? context.tensor(1) : context.scalar(1);
  const Tensor a = builder.broadcast_to(builder.convert(context.tensor(0), compute), out.sizes);
  const Tensor b = builder.broadcast_to(builder.convert(other, compute), out.sizes);
  return {builder.op("stablehlo.compare", {a, b}, DType::kBool, out.sizes,
                     std::string("comparison_direction = #stablehlo<comparison_direction ") +
                         direction + ">")};
}

}  // namespace

std::vector<Tensor> lower_eq(OpContext& context) { return compare(context, "EQ"); }
std::vector<Tensor> lower_ne(OpContext& context) { return compare(context, "NE"); }
std::vector<Tensor> lower_lt(OpContext& context) { return compare(context, "LT"); }
std::vector<Tensor> lower_le(OpContext& context) { return compare(context, "LE"); }
std::vector<Tensor> lower_gt(OpContext& context) { return compare(context, "GT"); }
std::vector<Tensor> lower_ge(OpContext& context) { return compare(context, "GE"); }

// where.self(condition, self, other): the condition is read as bool and broadcast; the two
// branches are converted to the output's dtype.
std::vector<Tensor> lower_where(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  if (context.tensor_dtype(0) != DType::kBool) context.refuse("a condition that is not bool");
  const Tensor condition = builder.broadcast_to(context.tensor(0), out.sizes);
  const Tensor on_true = builder.broadcast_to(builder.convert(context.tensor(1), out.dtype), out.sizes);
  const Tensor on_false = builder.broadcast_to(builder.convert(context.tensor(2), out.dtype), out.sizes);
  return {builder.op("stablehlo.select", {condition, on_true, on_false}, out.dtype, out.sizes)};
}

}  // namespace torch_tpu::executors::pjrt::lowering
