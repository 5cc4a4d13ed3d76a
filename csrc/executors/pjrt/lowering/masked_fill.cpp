// masked_fill(self, mask, value): value where the bool mask (broadcast with self) holds, self
// elsewhere. value is a Scalar or a 0-d tensor, converted to self's dtype as ATen's
// Scalar::to<T>() converts it (the program failing where ATen raises for an overflow).
#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {

std::vector<Tensor> lower_masked_fill(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  if (context.tensor_dtype(0) != out.dtype) context.refuse("an output of another dtype than self");
  if (context.tensor_dtype(1) != ir::DType::kBool) context.refuse("a mask that is not bool (ATen raises)");
  Tensor value;
  if (context.arg(2).kind == ir::Argument::Kind::kScalar) {
    value = scalar_as(context, 2, out.dtype);
  } else {
    if (!context.tensor_type(2).sizes.empty()) context.refuse("a value tensor that is not 0-d");
    value = value_as(context, context.tensor(2), out.dtype);
  }
  Tensor self;
  Tensor mask;
  try {
    self = builder.broadcast_to(context.tensor(0), out.sizes);
    mask = builder.broadcast_to(context.tensor(1), out.sizes);
  } catch (const std::invalid_argument&) {
    context.refuse("self or mask that do not broadcast to the output");
  }
  return {builder.select(mask, builder.broadcast_to(value, out.sizes), self)};
}

}  // namespace torch_tpu::executors::pjrt::lowering
