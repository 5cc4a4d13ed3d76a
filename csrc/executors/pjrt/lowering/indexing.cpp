// Reading elements at run-time indices: gather, index_select and take. An index out of range is an
// error in ATen, which XLA would clamp silently, so each program checks its indices at run time
// (OpContext::check) and fails naming the op. Every dtype.
#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (const int64_t size : shape) count *= size;
  return count;
}

}  // namespace

// gather(self, dim, index, sparse_grad): out[i..] = self[i.. with index[i..] along dim]. A 0-d
// self or index counts as 1-D of one element (ATen's ensure_nonempty_dim); out has index's sizes.
std::vector<Tensor> lower_gather(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  const Tensor self = at_least_1d(builder, context.tensor(0));
  if (self.dtype != out.dtype) context.refuse("gather into another dtype");
  const std::vector<int64_t> shape = out.sizes.empty() ? std::vector<int64_t>{1} : out.sizes;
  if (shape.size() != self.shape.size()) context.refuse("an index of another rank than the input");
  if (context.arg(1).kind != ir::Argument::Kind::kInt) context.refuse("a dim that is not an int");
  const int64_t dim = normalized_dim(context, context.arg(1).integer, self.shape.size());
  const Tensor index = at_least_1d(builder, index_operand(context, 2));
  if (index.shape != shape) context.refuse("an output shape other than the index's");
  if (index.numel() == 0) return {builder.zeros(out.dtype, out.sizes)};
  if (self.numel() == 0) context.refuse("an empty input");
  const int64_t size = self.shape[static_cast<size_t>(dim)];
  context.check(out_of_range(builder, index, size),
                "an index is out of bounds for dimension " + std::to_string(dim) + " with size " + std::to_string(size));
  const Tensor taken = take_linear(builder, self, linear_positions(builder, self.shape, shape, dim, index));
  return {builder.reshape(taken, out.sizes)};
}

// index_select(self, dim, index): self's slices along dim at the (1-d or 0-d) index's values; a
// 0-d self counts as 1-D of one element, its result 0-d.
std::vector<Tensor> lower_index_select(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  const Tensor self = at_least_1d(builder, context.tensor(0));
  if (self.dtype != out.dtype) context.refuse("index_select into another dtype");
  if (context.arg(1).kind != ir::Argument::Kind::kInt) context.refuse("a dim that is not an int");
  const int64_t dim = normalized_dim(context, context.arg(1).integer, self.shape.size());
  Tensor index = index_operand(context, 2);
  if (index.shape.size() > 1) context.refuse("an index of rank above 1");
  std::vector<int64_t> shape = self.shape;
  shape[static_cast<size_t>(dim)] = index.numel();
  if (element_count(shape) != element_count(out.sizes) ||
      (out.sizes.size() == self.shape.size() && out.sizes != shape)) {
    context.refuse("an output shape other than index_select's");
  }
  if (index.numel() == 0) return {builder.zeros(out.dtype, out.sizes)};
  if (self.numel() == 0) context.refuse("an empty input");
  index = builder.reshape(index, {index.numel()});
  context.check(out_of_range(builder, index, self.shape[static_cast<size_t>(dim)]), "index out of range in self");
  const Tensor along = builder.broadcast_in_dim(index, shape, {dim});
  const Tensor taken = take_linear(builder, self, linear_positions(builder, self.shape, shape, dim, along));
  return {builder.reshape(taken, out.sizes)};
}

// take(self, index): self's elements, seen as 1-D, at index (any shape); negative indices count
// from the end, as ATen's take does.
std::vector<Tensor> lower_take(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  const Tensor self = context.tensor(0);
  if (self.dtype != out.dtype) context.refuse("take into another dtype");
  const Tensor index = index_operand(context, 1);
  if (out.sizes != index.shape) context.refuse("an output shape other than the index's");
  if (index.numel() == 0) return {builder.zeros(out.dtype, out.sizes)};
  if (self.numel() == 0) context.refuse("an empty input");
  const int64_t count = self.numel();
  const Tensor size = builder.splat(std::to_string(count), ir::DType::kInt64, index.shape);
  const Tensor negative = builder.compare(index, builder.zeros(ir::DType::kInt64, index.shape), "LT");
  const Tensor wrapped = builder.select(negative, builder.binary("stablehlo.add", index, size), index);
  context.check(out_of_range(builder, wrapped, count),
                "out of range: tried to access an index beyond a tensor of " + std::to_string(count) + " elements");
  return {take_linear(builder, self, wrapped)};
}

}  // namespace torch_tpu::executors::pjrt::lowering
