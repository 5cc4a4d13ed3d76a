// Writing whole slices at run-time indices along one dimension: index_add, index_copy, and
// embedding_dense_backward (an index_add of gradient rows). index_add and index_copy check their
// indices at run time (ATen raises for one outside [0, size)); float sums may differ from
// ATen's serial order within rounding, so half precision, which ATen rounds after each update,
// is refused for the sums.
#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

struct SliceWrite {
  Tensor self;
  Tensor positions;  // 1-D: the position in self of each of source's elements
  Tensor source;     // 1-D, self's dtype
};

// self (argument 0), dim (1), index (2, 0-d or 1-d), source (3): the position in self of each
// of source's elements (source's slice i along dim goes to self's slice index[i]). Empty when
// nothing is written (an empty index).
std::optional<SliceWrite> slice_write(OpContext& context,
                                      const std::function<std::string(int64_t, int64_t)>& out_of_range_message) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  SliceWrite write{context.tensor(0), {}, context.tensor(3)};
  if (write.self.dtype != out.dtype || write.self.shape != out.sizes) context.refuse("an output of another dtype or shape");
  if (write.source.dtype != out.dtype) context.refuse("a source of another dtype than self");
  if (write.self.shape.empty()) context.refuse("a 0-d input");
  if (context.arg(1).kind != ir::Argument::Kind::kInt) context.refuse("a dim that is not an int");
  const int64_t dim = normalized_dim(context, context.arg(1).integer, write.self.shape.size());
  Tensor index = index_operand(context, 2);
  if (index.shape.size() > 1) context.refuse("an index of rank above 1");
  std::vector<int64_t> expected = write.self.shape;
  expected[static_cast<size_t>(dim)] = index.numel();
  if (write.source.shape != expected) context.refuse("a source shaped otherwise than self with index's count along dim");
  if (index.numel() == 0 || write.source.numel() == 0) return std::nullopt;
  index = builder.reshape(index, {index.numel()});
  const int64_t size = write.self.shape[static_cast<size_t>(dim)];
  context.check(out_of_range(builder, index, size), out_of_range_message(dim, size));
  const Tensor along = builder.broadcast_in_dim(index, write.source.shape, {dim});
  const int64_t count = write.source.numel();
  write.positions = builder.reshape(linear_positions(builder, write.self.shape, write.source.shape, dim, along), {count});
  write.source = builder.reshape(write.source, {count});
  return write;
}

Tensor add_region(FunctionBuilder& builder, const Tensor& flat, const Tensor& positions, const Tensor& updates) {
  return scatter_linear(builder, flat, positions, updates,
                        [](FunctionBuilder& b, const Tensor& x, const Tensor& y) { return b.binary("stablehlo.add", x, y); });
}

}  // namespace

// index_add(self, dim, index, source, alpha): self's slice index[i] += alpha * source's slice i.
std::vector<Tensor> lower_index_add(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  if (is_half_precision(out.dtype)) context.refuse("a half-precision sum (ATen rounds after each update, in order)");
  if (out.dtype == DType::kBool) context.refuse("bool");
  if (!is_floating(out.dtype) && context.arg(4).kind == ir::Argument::Kind::kScalar &&
      context.arg(4).scalar.kind == ir::ScalarValue::Kind::kDouble) {
    context.refuse("a floating alpha for an integral self");
  }
  const std::optional<SliceWrite> write = slice_write(context, [](int64_t, int64_t) { return std::string("index out of range in self"); });
  if (!write) return {context.tensor(0)};
  Tensor updates = write->source;
  if (context.arg(4).kind == ir::Argument::Kind::kScalar) {
    // alpha.to<T>(): the run fails where ATen raises for an alpha beyond self's dtype.
    const Tensor alpha = builder.broadcast_to(scalar_as(context, 4, out.dtype), updates.shape);
    updates = builder.binary("stablehlo.multiply", updates, alpha);
  }
  const Tensor flat = builder.reshape(write->self, {write->self.numel()});
  return {builder.reshape(add_region(builder, flat, write->positions, updates), write->self.shape)};
}

// index_copy(self, dim, index, source): self's slice index[i] = source's slice i; the last
// write wins where an index repeats (ATen's serial loop).
std::vector<Tensor> lower_index_copy(OpContext& context) {
  FunctionBuilder& builder = context.builder();
  const std::optional<SliceWrite> write = slice_write(context, [](int64_t dim, int64_t size) {
    return "index_copy_(): an index is out of bounds for dimension " + std::to_string(dim) + " with size " + std::to_string(size);
  });
  if (!write) return {context.tensor(0)};
  const Tensor flat = builder.reshape(write->self, {write->self.numel()});
  return {builder.reshape(assign_linear_last_wins(builder, flat, write->positions, write->source), write->self.shape)};
}

// embedding_dense_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq):
// zeros [num_weights, D] with grad_output's row i added to row indices[i]. ATen's CPU kernel
// skips an index equal to padding_idx and, without raising, one outside [0, num_weights): so
// does this (those rows go to a scratch row that is cut off).
std::vector<Tensor> lower_embedding_dense_backward(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  const Tensor grad = context.tensor(0);
  if (grad.dtype != out.dtype) context.refuse("an output of another dtype");
  if (out.dtype != DType::kFloat32 && out.dtype != DType::kFloat64) {
    context.refuse("a gradient of dtype " + ir::dtype_name(out.dtype) + " (half precision: ATen rounds after each row)");
  }
  if (context.arg(2).kind != ir::Argument::Kind::kInt || context.arg(3).kind != ir::Argument::Kind::kInt ||
      context.arg(4).kind != ir::Argument::Kind::kBool) {
    context.refuse("num_weights, padding_idx or scale_grad_by_freq not constant");
  }
  if (context.arg(4).integer != 0) context.refuse("scale_grad_by_freq=True");
  const int64_t rows = context.arg(2).integer;
  const int64_t padding_idx = context.arg(3).integer;
  Tensor indices = index_operand(context, 1);
  if (grad.shape.empty() || out.sizes.size() != 2 || out.sizes[0] != rows) context.refuse("an unexpected shape");
  const int64_t width = grad.shape.back();
  const int64_t count = indices.numel();
  if (out.sizes[1] != width || grad.numel() != count * width) context.refuse("a gradient not shaped as indices + [D]");
  if (count == 0 || rows * width == 0) return {builder.zeros(out.dtype, out.sizes)};
  indices = builder.reshape(indices, {count});
  const Tensor skipped = builder.binary(
      "stablehlo.or", out_of_range(builder, indices, rows),
      builder.compare(indices, builder.splat(std::to_string(padding_idx), DType::kInt64, {count}), "EQ"));
  const Tensor row = builder.select(skipped, builder.splat(std::to_string(rows), DType::kInt64, {count}), indices);
  const std::vector<int64_t> shape = {count, width};
  const Tensor positions = builder.binary(
      "stablehlo.add",
      builder.binary("stablehlo.multiply", builder.broadcast_in_dim(row, shape, {0}),
                     builder.splat(std::to_string(width), DType::kInt64, shape)),
      coordinate_term(builder, shape, 1, 1));
  const int64_t total = (rows + 1) * width;
  const Tensor sums = add_region(builder, builder.zeros(out.dtype, {total}), builder.reshape(positions, {count * width}),
                                 builder.reshape(grad, {count * width}));
  const Tensor kept = builder.op("stablehlo.slice", {sums}, out.dtype, {rows * width},
                                 "start_indices = " + i64_array({0}) + ", limit_indices = " + i64_array({rows * width}) +
                                     ", strides = " + i64_array({1}));
  return {builder.reshape(kept, out.sizes)};
}

}  // namespace torch_tpu::executors::pjrt::lowering
