// Reading elements at run-time indices: gather and index_select. An index out of range is an
// error in ATen, which XLA would clamp silently, so each program checks its indices at run time
// (OpContext::check) and fails naming the op. Every dtype.
#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

// Row-major strides of `shape`, in elements.
std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

// `self`'s elements at the row-major positions `linear` (i64, any shape).
Tensor take_linear(FunctionBuilder& builder, const Tensor& self, const Tensor& linear) {
  const Tensor flat = builder.reshape(self, {self.numel()});
  return builder.op("stablehlo.gather", {flat, linear}, self.dtype, linear.shape,
                    "dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], "
                    "start_index_map = [0], index_vector_dim = " +
                        std::to_string(linear.shape.size()) +
                        ">, indices_are_sorted = false, slice_sizes = " + i64_array({1}));
}

// The row-major position in `self_shape` of each element of `shape` whose coordinate along
// `dim` is `along` (i64 of `shape`) and whose other coordinates are its own.
Tensor linear_positions(FunctionBuilder& builder, const std::vector<int64_t>& self_shape,
                        const std::vector<int64_t>& shape, int64_t dim, const Tensor& along) {
  const std::vector<int64_t> strides = row_major_strides(self_shape);
  Tensor linear = builder.binary("stablehlo.multiply", along,
                                 builder.splat(std::to_string(strides[static_cast<size_t>(dim)]), DType::kInt64, shape));
  for (size_t d = 0; d < shape.size(); ++d) {
    if (static_cast<int64_t>(d) == dim) continue;
    const Tensor coordinate = builder.op("stablehlo.iota", {}, DType::kInt64, shape,
                                         "iota_dimension = " + std::to_string(d) + " : i64");
    linear = builder.binary("stablehlo.add", linear,
                            builder.binary("stablehlo.multiply", coordinate,
                                           builder.splat(std::to_string(strides[d]), DType::kInt64, shape)));
  }
  return linear;
}

// Tensor argument `index` as i64, after checking that it is an integral tensor.
Tensor index_operand(OpContext& context, size_t index) {
  const DType dtype = context.tensor_dtype(index);
  if (dtype != DType::kInt64 && dtype != DType::kInt32) context.refuse("indices of dtype " + ir::dtype_name(dtype));
  return context.builder().convert(context.tensor(index), DType::kInt64);
}

// True where an index lies outside [0, size).
Tensor out_of_range(FunctionBuilder& builder, const Tensor& index, int64_t size) {
  const Tensor below = builder.compare(index, builder.zeros(DType::kInt64, index.shape), "LT");
  const Tensor above = builder.compare(index, builder.splat(std::to_string(size), DType::kInt64, index.shape), "GE");
  return builder.binary("stablehlo.or", below, above);
}

}  // namespace

// gather(self, dim, index, sparse_grad): out[i..] = self[i.. with index[i..] along dim].
std::vector<Tensor> lower_gather(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  const Tensor self = context.tensor(0);
  if (self.dtype != out.dtype) context.refuse("gather into another dtype");
  if (self.shape.empty()) context.refuse("a 0-d input");
  if (out.sizes.size() != self.shape.size()) context.refuse("an index of another rank than the input");
  if (context.arg(1).kind != ir::Argument::Kind::kInt) context.refuse("a dim that is not an int");
  const int64_t dim = normalized_dim(context, context.arg(1).integer, self.shape.size());
  const Tensor index = index_operand(context, 2);
  if (index.numel() == 0) return {builder.zeros(out.dtype, out.sizes)};
  if (self.numel() == 0) context.refuse("an empty input");
  const int64_t size = self.shape[static_cast<size_t>(dim)];
  context.check(out_of_range(builder, index, size),
                "an index is out of bounds for dimension " + std::to_string(dim) + " with size " + std::to_string(size));
  return {take_linear(builder, self, linear_positions(builder, self.shape, out.sizes, dim, index))};
}

// index_select(self, dim, index): self's slices along dim at the (1-d or 0-d) index's values.
std::vector<Tensor> lower_index_select(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  const Tensor self = context.tensor(0);
  if (self.dtype != out.dtype) context.refuse("index_select into another dtype");
  if (self.shape.empty()) context.refuse("a 0-d input");
  if (context.arg(1).kind != ir::Argument::Kind::kInt) context.refuse("a dim that is not an int");
  const int64_t dim = normalized_dim(context, context.arg(1).integer, self.shape.size());
  Tensor index = index_operand(context, 2);
  if (index.shape.size() > 1) context.refuse("an index of rank above 1");
  if (out.sizes.size() != self.shape.size() || out.sizes[static_cast<size_t>(dim)] != index.numel()) {
    context.refuse("an output shape other than index_select's");
  }
  if (index.numel() == 0) return {builder.zeros(out.dtype, out.sizes)};
  if (self.numel() == 0) context.refuse("an empty input");
  index = builder.reshape(index, {index.numel()});
  context.check(out_of_range(builder, index, self.shape[static_cast<size_t>(dim)]), "index out of range in self");
  const Tensor along = builder.broadcast_in_dim(index, out.sizes, {dim});
  return {take_linear(builder, self, linear_positions(builder, self.shape, out.sizes, dim, along))};
}

}  // namespace torch_tpu::executors::pjrt::lowering
