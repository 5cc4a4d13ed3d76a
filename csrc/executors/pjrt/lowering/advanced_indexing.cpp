// Advanced indexing: self[indices] (index.Tensor) and its write, self[indices] = values
// (index_put, _index_put_impl_). The index list holds index tensors (int64 / int32, negative
// ones counting from the end, each checked at run time) and None for a sliced dimension;
// trailing dimensions it leaves out are sliced too. The index tensors broadcast together to B;
// the result has B where the indexed dimensions were when they are adjacent, else B first
// (PyTorch's rule). A bool / uint8 mask is refused: its result's shape depends on its data.
#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

// Where each element of self[indices] lives in self.
struct AdvancedIndex {
  std::vector<int64_t> shape;      // the result's sizes
  std::vector<int64_t> broadcast;  // B, the index tensors' common sizes
  Tensor positions;                // i64 of `shape`: each element's position in self
};

std::vector<int64_t> broadcast_shapes(OpContext& context, const std::vector<std::vector<int64_t>>& shapes) {
  size_t rank = 0;
  for (const auto& shape : shapes) rank = std::max(rank, shape.size());
  std::vector<int64_t> result(rank, 1);
  for (const auto& shape : shapes) {
    const size_t lead = rank - shape.size();
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t& size = result[lead + d];
      if (shape[d] == size || shape[d] == 1) continue;
      if (size != 1) context.refuse("index tensors that do not broadcast together");
      size = shape[d];
    }
  }
  return result;
}

// The positions of self[indices], argument `list` holding the indices. The run fails where an
// index is outside [-size, size) (only when the result has elements: ATen checks per element).
AdvancedIndex advanced_index(OpContext& context, const std::vector<int64_t>& self_shape, size_t list) {
  FunctionBuilder& builder = context.builder();
  const std::vector<std::optional<Tensor>> entries = context.optional_tensor_list(list);
  if (entries.size() > self_shape.size()) context.refuse("more indices than dimensions");
  std::vector<size_t> indexed;
  std::vector<std::vector<int64_t>> shapes;
  for (size_t d = 0; d < entries.size(); ++d) {
    if (!entries[d]) continue;
    const DType dtype = entries[d]->dtype;
    if (dtype == DType::kBool || dtype == DType::kUInt8) {
      context.refuse("a boolean mask index (its result's shape depends on its data)");
    }
    if (dtype != DType::kInt64 && dtype != DType::kInt32) context.refuse("indices of dtype " + ir::dtype_name(dtype));
    indexed.push_back(d);
    shapes.push_back(entries[d]->shape);
  }
  if (indexed.empty()) context.refuse("an index list without index tensors");
  AdvancedIndex result;
  result.broadcast = broadcast_shapes(context, shapes);
  const std::vector<int64_t>& b = result.broadcast;
  const bool adjacent = indexed.back() - indexed.front() + 1 == indexed.size();
  const size_t b_start = adjacent ? indexed.front() : 0;
  // The result dimension of each sliced dimension of self.
  std::vector<std::pair<size_t, size_t>> sliced;  // (self dim, result dim)
  for (size_t d = 0; d < self_shape.size(); ++d) {
    const bool is_indexed = d < entries.size() && entries[d].has_value();
    if (is_indexed) {
      if (d == indexed.front() && adjacent) result.shape.insert(result.shape.end(), b.begin(), b.end());
      continue;
    }
    sliced.emplace_back(d, 0);
    result.shape.push_back(self_shape[d]);
  }
  if (!adjacent) result.shape.insert(result.shape.begin(), b.begin(), b.end());
  for (size_t r = 0, s = 0; r < result.shape.size(); ++r) {
    if (r >= b_start && r < b_start + b.size()) continue;
    sliced[s++].second = r;
  }
  int64_t count = 1;
  for (const int64_t size : result.shape) count *= size;
  if (count == 0) return result;

  const std::vector<int64_t> strides = row_major_strides(self_shape);
  std::vector<int64_t> b_dims;
  for (size_t d = 0; d < b.size(); ++d) b_dims.push_back(static_cast<int64_t>(b_start + d));
  std::optional<Tensor> positions;
  const auto accumulate = [&](const Tensor& term) {
    positions = positions ? builder.binary("stablehlo.add", *positions, term) : term;
  };
  for (const size_t d : indexed) {
    const int64_t size = self_shape[d];
    const Tensor index = builder.broadcast_to(builder.convert(*entries[d], DType::kInt64), b);
    const Tensor size_splat = builder.splat(std::to_string(size), DType::kInt64, b);
    const Tensor negative = builder.compare(index, builder.zeros(DType::kInt64, b), "LT");
    const Tensor wrapped = builder.select(negative, builder.binary("stablehlo.add", index, size_splat), index);
    context.check(out_of_range(builder, wrapped, size), "an index is out of bounds for dimension " +
                                                            std::to_string(d) + " with size " + std::to_string(size));
    const Tensor scaled = builder.binary("stablehlo.multiply", wrapped,
                                         builder.splat(std::to_string(strides[d]), DType::kInt64, b));
    accumulate(builder.broadcast_in_dim(scaled, result.shape, b_dims));
  }
  for (const auto& [self_dim, result_dim] : sliced) {
    accumulate(coordinate_term(builder, result.shape, result_dim, strides[self_dim]));
  }
  result.positions = *positions;
  return result;
}

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (const int64_t size : shape) count *= size;
  return count;
}

}  // namespace

// index.Tensor(self, indices): self[indices].
std::vector<Tensor> lower_index(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  const Tensor self = context.tensor(0);
  if (self.dtype != out.dtype) context.refuse("indexing into another dtype");
  const AdvancedIndex index = advanced_index(context, self.shape, 1);
  if (index.shape != out.sizes) context.refuse("an output shape other than the indexing result's");
  if (element_count(index.shape) == 0) return {builder.zeros(out.dtype, out.sizes)};
  if (self.numel() == 0) context.refuse("an empty input");
  return {take_linear(builder, self, index.positions)};
}

// index_put(self, indices, values, accumulate) / _index_put_impl_(..., unsafe): self with
// self[indices] = values (broadcast to the indexing result), or += when accumulating (repeated
// positions sum). Without accumulate, ATen's serial loop leaves the last write where positions
// repeat: exact here while B has at most one dimension above 1 (ATen then writes in increasing
// order along it); with more, ATen's order follows its TensorIterator's stride-sorted
// dimensions, so that is refused. Half-precision accumulation is refused: ATen rounds to half
// after each update in its order, which XLA's scatter does not keep.
std::vector<Tensor> lower_index_put(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  const Tensor self = context.tensor(0);
  const Tensor values = context.tensor(2);
  if (self.dtype != out.dtype || values.dtype != out.dtype) context.refuse("values or an output of another dtype");
  if (self.shape != out.sizes) context.refuse("an output shape other than self's");
  if (context.arg(3).kind != ir::Argument::Kind::kBool) context.refuse("an accumulate flag that is not a bool");
  const bool accumulate = context.arg(3).integer != 0;
  if (accumulate && is_half_precision(out.dtype)) context.refuse("half-precision accumulation (ATen rounds per update, in order)");
  const AdvancedIndex index = advanced_index(context, self.shape, 1);
  if (element_count(index.shape) == 0) return {self};
  if (self.numel() == 0) context.refuse("an empty input");
  if (!accumulate) {
    int64_t long_dims = 0;
    for (const int64_t size : index.broadcast) long_dims += size > 1 ? 1 : 0;
    if (long_dims > 1) context.refuse("overwriting through index tensors of several dimensions (ATen's order of repeated writes follows strides)");
  }
  Tensor updates;
  try {
    updates = builder.broadcast_to(values, index.shape);
  } catch (const std::invalid_argument&) {
    context.refuse("values that do not broadcast to the indexing result");
  }
  const int64_t count = element_count(index.shape);
  const Tensor positions = builder.reshape(index.positions, {count});
  updates = builder.reshape(updates, {count});
  const Tensor flat = builder.reshape(self, {self.numel()});
  Tensor written;
  if (accumulate) {
    const char* add = out.dtype == DType::kBool ? "stablehlo.or" : "stablehlo.add";
    written = scatter_linear(builder, flat, positions, updates,
                             [add](FunctionBuilder& b, const Tensor& x, const Tensor& y) { return b.binary(add, x, y); });
  } else {
    written = assign_linear_last_wins(builder, flat, positions, updates);
  }
  return {builder.reshape(written, self.shape)};
}

}  // namespace torch_tpu::executors::pjrt::lowering
