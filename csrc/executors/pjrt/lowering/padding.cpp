// reflection_pad{1,2,3}d and replication_pad{1,2,3}d(self, padding) as slices, reverses and
// one concatenate per padded dimension: pure data movement, exact in every dtype. `padding`
// lists (left, right) pairs from the last dimension backwards, as F.pad. A negative amount
// crops: ATen maps each output position to an input one as if the positive sides were padded
// first and the negative ones cut from that, so that is the order here (a crop on one side
// then never moves the other side's mirror or edge). Reflection needs padding below the
// dimension's size (ATen's check).
#include <algorithm>

#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

Tensor slice(FunctionBuilder& builder, const Tensor& x, size_t dim, int64_t start, int64_t limit) {
  std::vector<int64_t> starts(x.shape.size(), 0), limits = x.shape, strides(x.shape.size(), 1);
  starts[dim] = start;
  limits[dim] = limit;
  std::vector<int64_t> shape = x.shape;
  shape[dim] = limit - start;
  return builder.op("stablehlo.slice", {x}, x.dtype, shape,
                    "limit_indices = " + i64_array(limits) + ", start_indices = " + i64_array(starts) +
                        ", strides = " + i64_array(strides));
}

Tensor reverse(FunctionBuilder& builder, const Tensor& x, size_t dim) {
  return builder.op("stablehlo.reverse", {x}, x.dtype, x.shape,
                    "dimensions = " + i64_array({static_cast<int64_t>(dim)}));
}

// `size` copies of x's edge slice along `dim` (x's size there is 1).
Tensor repeated(FunctionBuilder& builder, const Tensor& edge, size_t dim, int64_t size) {
  std::vector<int64_t> shape = edge.shape;
  shape[dim] = size;
  std::vector<int64_t> dimensions;
  for (size_t d = 0; d < shape.size(); ++d) dimensions.push_back(static_cast<int64_t>(d));
  return builder.broadcast_in_dim(edge, shape, dimensions);
}

// x padded along `dim` by `before` and `after` elements: its mirror without the edge
// (reflection) or copies of the edge (replication).
Tensor padded(FunctionBuilder& builder, const Tensor& x, size_t dim, int64_t before, int64_t after,
              bool reflect) {
  if (before == 0 && after == 0) return x;
  const int64_t n = x.shape[dim];
  std::vector<Tensor> parts;
  if (before > 0) {
    parts.push_back(reflect ? reverse(builder, slice(builder, x, dim, 1, before + 1), dim)
                            : repeated(builder, slice(builder, x, dim, 0, 1), dim, before));
  }
  parts.push_back(x);
  if (after > 0) {
    parts.push_back(reflect ? reverse(builder, slice(builder, x, dim, n - 1 - after, n - 1), dim)
                            : repeated(builder, slice(builder, x, dim, n - 1, n), dim, after));
  }
  std::vector<int64_t> shape = x.shape;
  shape[dim] = n + before + after;
  return builder.op("stablehlo.concatenate", parts, x.dtype, shape,
                    "dimension = " + std::to_string(dim) + " : i64");
}

std::vector<Tensor> pad(OpContext& context, bool reflect) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  Tensor x = context.tensor(0);
  if (x.dtype != out.dtype) context.refuse("an output of another dtype");
  const std::vector<int64_t>& padding = context.arg(1).list;
  const size_t padded_dims = padding.size() / 2;
  if (padding.size() % 2 != 0 || padded_dims == 0 || padded_dims > x.shape.size()) {
    context.refuse("a padding list of that length");
  }
  for (size_t p = 0; p < padded_dims; ++p) {
    const size_t dim = x.shape.size() - 1 - p;
    const int64_t before = padding[2 * p], after = padding[2 * p + 1];
    const int64_t n = x.shape[dim];
    if (n == 0) context.refuse("padding an empty dimension");
    if (reflect && (before >= n || after >= n)) context.refuse("reflection padding not below the size");
    x = padded(builder, x, dim, std::max<int64_t>(before, 0), std::max<int64_t>(after, 0), reflect);
    const int64_t cut_before = std::max<int64_t>(-before, 0), cut_after = std::max<int64_t>(-after, 0);
    if (cut_before + cut_after > 0) x = slice(builder, x, dim, cut_before, x.shape[dim] - cut_after);
  }
  if (x.shape != out.sizes) context.refuse("an output shape other than the padded input's");
  return {x};
}

}  // namespace

std::vector<Tensor> lower_reflection_pad(OpContext& context) { return pad(context, /*reflect=*/true); }

std::vector<Tensor> lower_replication_pad(OpContext& context) { return pad(context, /*reflect=*/false); }

}  // namespace torch_tpu::executors::pjrt::lowering
