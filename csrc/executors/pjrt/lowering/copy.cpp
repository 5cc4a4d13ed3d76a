// Copies, fills and roll: the value is converted to the destination's dtype and broadcast to its
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

// fill_.Tensor(self, value): the 0-d tensor's value everywhere.
std::vector<Tensor> lower_fill_tensor(OpContext& context) {
  if (!context.tensor_type(1).sizes.empty()) context.refuse("a value tensor that is not 0-d (ATen raises)");
  return {as_output(context, context.tensor(1))};
}

// roll(self, shifts, dims): each named dimension rotated by its shift (the last `shift`
// elements first) as two slices concatenated; no dims rolls the flattened tensor.
std::vector<Tensor> lower_roll(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  const std::vector<int64_t>& shifts = context.arg(1).list;
  const std::vector<int64_t>& dims = context.arg(2).list;
  const bool flat = dims.empty();
  if (flat ? shifts.size() != 1 : shifts.size() != dims.size()) context.refuse("shifts and dims of different lengths (ATen raises)");
  Tensor x = builder.convert(context.tensor(0), out.dtype);
  if (flat) x = builder.reshape(x, {x.numel()});
  for (size_t i = 0; i < shifts.size(); ++i) {
    const size_t dim = flat ? 0 : static_cast<size_t>(normalized_dim(context, dims[i], x.shape.size()));
    const int64_t size = x.shape[dim];
    if (size == 0) continue;
    const int64_t shift = ((shifts[i] % size) + size) % size;
    if (shift == 0) continue;
    const auto part = [&](int64_t start, int64_t limit) {
      std::vector<int64_t> starts(x.shape.size(), 0), limits = x.shape, steps(x.shape.size(), 1), shape = x.shape;
      starts[dim] = start;
      limits[dim] = limit;
      shape[dim] = limit - start;
      return builder.op("stablehlo.slice", {x}, x.dtype, shape,
                        "limit_indices = " + i64_array(limits) + ", start_indices = " + i64_array(starts) +
                            ", strides = " + i64_array(steps));
    };
    x = builder.op("stablehlo.concatenate", {part(size - shift, size), part(0, size - shift)}, x.dtype, x.shape,
                   "dimension = " + std::to_string(dim) + " : i64");
  }
  return {builder.reshape(x, out.sizes)};
}

std::vector<Tensor> lower_zero_(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  return {context.builder().zeros(out.dtype, out.sizes)};
}

}  // namespace torch_tpu::executors::pjrt::lowering
