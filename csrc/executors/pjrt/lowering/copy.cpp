// Copies and fills: the value is converted to the destination's dtype and broadcast to its
// shape; the program lowering writes it at the destination's layout (a view's strides
// included), so x.t().copy_(y) is a scatter and clone's memory format is its return's layout.
#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

Tensor as_output(OpContext& context, const Tensor& value) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  return builder.broadcast_to(builder.convert(value, out.dtype), out.sizes);
}

}  // namespace

// copy_(self, src, non_blocking): src converted (PyTorch casts on copy) into self.
std::vector<Tensor> lower_copy_(OpContext& context) { return {as_output(context, context.tensor(1))}; }

// clone(self, memory_format) and _to_copy(self, dtype, ...): self, converted to the return's dtype.
std::vector<Tensor> lower_clone(OpContext& context) { return {as_output(context, context.tensor(0))}; }

// fill_.Scalar(self, value): the run-time Scalar everywhere.
std::vector<Tensor> lower_fill_(OpContext& context) { return {as_output(context, context.scalar(1))}; }

std::vector<Tensor> lower_zero_(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  return {context.builder().zeros(out.dtype, out.sizes)};
}

}  // namespace torch_tpu::executors::pjrt::lowering
