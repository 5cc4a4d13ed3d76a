// Depthwise convolution as tap sums (depthwise_convolution.h). Output channel o reads input
// channel o / m (m = the channel multiplier), as PyTorch's groups = C assigns them. For a tap t
// (one index per spatial dimension) the positions read by the outputs are
// t * dilation + out * stride in the padded input: one strided slice per tap.
#include "executors/pjrt/lowering/depthwise_convolution.h"

#include <cstddef>

#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

// Every tap of a kernel of sizes `kernel`, in row-major order.
std::vector<std::vector<int64_t>> taps_of(const std::vector<int64_t>& kernel) {
  std::vector<std::vector<int64_t>> taps = {{}};
  for (const int64_t size : kernel) {
    std::vector<std::vector<int64_t>> longer;
    for (const std::vector<int64_t>& tap : taps) {
      for (int64_t i = 0; i < size; ++i) {
        longer.push_back(tap);
        longer.back().push_back(i);
      }
    }
    taps = std::move(longer);
  }
  return taps;
}

std::vector<int64_t> kernel_sizes(const std::vector<int64_t>& weight_shape) {
  return {weight_shape.begin() + 2, weight_shape.end()};
}

// `x` [N, C, ...] padded by `padding` on both sides of each spatial dimension.
Tensor spatially_padded(FunctionBuilder& builder, const Tensor& x, const std::vector<int64_t>& padding) {
  std::vector<int64_t> edges = {0, 0};
  edges.insert(edges.end(), padding.begin(), padding.end());
  return builder.pad(x, edges, edges, std::vector<int64_t>(x.shape.size(), 0));
}

// [N, C, ...] with each channel repeated `multiplier` times in a row: [N, C * multiplier, ...].
Tensor repeated_channels(FunctionBuilder& builder, const Tensor& x, int64_t multiplier) {
  if (multiplier == 1) return x;
  std::vector<int64_t> wide = {x.shape[0], x.shape[1], multiplier}, dims = {0, 1};
  std::vector<int64_t> merged = {x.shape[0], x.shape[1] * multiplier};
  for (size_t d = 2; d < x.shape.size(); ++d) {
    wide.push_back(x.shape[d]);
    merged.push_back(x.shape[d]);
    dims.push_back(static_cast<int64_t>(d + 1));
  }
  return builder.reshape(builder.broadcast_in_dim(x, wide, dims), merged);
}

// The positions tap `tap` reads for each of the `out` positions of the padded input `x`.
Tensor tap_slice(FunctionBuilder& builder, const Tensor& x, const std::vector<int64_t>& tap,
                 const DepthwiseWindow& window, const std::vector<int64_t>& out) {
  const size_t rank = x.shape.size();
  std::vector<int64_t> starts(rank, 0), limits = x.shape, strides(rank, 1), shape = x.shape;
  for (size_t d = 0; d + 2 < rank; ++d) {
    starts[d + 2] = tap[d] * window.dilation[d];
    limits[d + 2] = starts[d + 2] + (out[d + 2] - 1) * window.stride[d] + 1;
    strides[d + 2] = window.stride[d];
    shape[d + 2] = out[d + 2];
  }
  return builder.op("stablehlo.slice", {x}, x.dtype, shape,
                    "limit_indices = " + i64_array(limits) + ", start_indices = " + i64_array(starts) +
                        ", strides = " + i64_array(strides));
}

// weight[:, 0, tap...] as an [O] vector.
Tensor tap_weights(FunctionBuilder& builder, const Tensor& weight, const std::vector<int64_t>& tap) {
  const size_t rank = weight.shape.size();
  std::vector<int64_t> starts(rank, 0), limits(rank, 1), strides(rank, 1), shape(rank, 1);
  limits[0] = shape[0] = weight.shape[0];
  for (size_t d = 2; d < rank; ++d) {
    starts[d] = tap[d - 2];
    limits[d] = tap[d - 2] + 1;
  }
  const Tensor sliced = builder.op("stablehlo.slice", {weight}, weight.dtype, shape,
                                   "limit_indices = " + i64_array(limits) + ", start_indices = " +
                                       i64_array(starts) + ", strides = " + i64_array(strides));
  return builder.reshape(sliced, {weight.shape[0]});
}

}  // namespace

bool is_depthwise(const std::vector<int64_t>& weight_shape, int64_t groups) {
  if (groups <= 1 || weight_shape.size() < 3 || weight_shape[1] != 1) return false;
  int64_t taps = 1;
  for (size_t d = 2; d < weight_shape.size(); ++d) taps *= weight_shape[d];
  return taps <= kMaxDepthwiseTaps;
}

Tensor depthwise_forward(FunctionBuilder& builder, const Tensor& input, const Tensor& weight,
                         const DepthwiseWindow& window, const std::vector<int64_t>& out_shape) {
  const int64_t multiplier = weight.shape[0] / input.shape[1];
  const Tensor x = repeated_channels(builder, spatially_padded(builder, input, window.padding), multiplier);
  Tensor sum = builder.zeros(input.dtype, out_shape);
  for (const std::vector<int64_t>& tap : taps_of(kernel_sizes(weight.shape))) {
    const Tensor scale = builder.broadcast_in_dim(tap_weights(builder, weight, tap), out_shape, {1});
    sum = builder.binary("stablehlo.add", sum,
                         builder.binary("stablehlo.multiply", tap_slice(builder, x, tap, window, out_shape), scale));
  }
  return sum;
}

Tensor depthwise_grad_input(FunctionBuilder& builder, const Tensor& grad, const Tensor& weight,
                            const DepthwiseWindow& window, const std::vector<int64_t>& input_shape) {
  const size_t rank = input_shape.size();
  const int64_t channels = input_shape[1], multiplier = weight.shape[0] / channels;
  std::vector<int64_t> padded_shape = input_shape;
  for (size_t d = 2; d < rank; ++d) padded_shape[d] += 2 * window.padding[d - 2];
  // Each tap's products, summed over the multiplier's output channels, land on the padded
  // positions the tap read: placed there by padding (interior padding undoes the stride).
  Tensor sum = builder.zeros(grad.dtype, padded_shape);
  for (const std::vector<int64_t>& tap : taps_of(kernel_sizes(weight.shape))) {
    const Tensor scale = builder.broadcast_in_dim(tap_weights(builder, weight, tap), grad.shape, {1});
    Tensor products = builder.binary("stablehlo.multiply", grad, scale);
    if (multiplier > 1) {
      std::vector<int64_t> split = {grad.shape[0], channels, multiplier}, kept = {grad.shape[0], channels};
      split.insert(split.end(), grad.shape.begin() + 2, grad.shape.end());
      kept.insert(kept.end(), grad.shape.begin() + 2, grad.shape.end());
      products = reduce_sum(builder, builder.reshape(products, split), {2}, kept);
    }
    std::vector<int64_t> low(rank, 0), high(rank, 0), interior(rank, 0);
    for (size_t d = 2; d < rank; ++d) {
      low[d] = tap[d - 2] * window.dilation[d - 2];
      interior[d] = window.stride[d - 2] - 1;
      high[d] = padded_shape[d] - low[d] - ((grad.shape[d] - 1) * window.stride[d - 2] + 1);
    }
    sum = builder.binary("stablehlo.add", sum, builder.pad(products, low, high, interior));
  }
  std::vector<int64_t> starts(rank, 0), limits = padded_shape, strides(rank, 1);
  for (size_t d = 2; d < rank; ++d) {
    starts[d] = window.padding[d - 2];
    limits[d] = starts[d] + input_shape[d];
  }
  return builder.op("stablehlo.slice", {sum}, sum.dtype, input_shape,
                    "limit_indices = " + i64_array(limits) + ", start_indices = " + i64_array(starts) +
                        ", strides = " + i64_array(strides));
}

Tensor depthwise_grad_weight(FunctionBuilder& builder, const Tensor& grad, const Tensor& input,
                             const DepthwiseWindow& window, const std::vector<int64_t>& weight_shape) {
  const int64_t outputs = weight_shape[0], multiplier = outputs / input.shape[1];
  const Tensor x = repeated_channels(builder, spatially_padded(builder, input, window.padding), multiplier);
  std::vector<int64_t> all_but_channels;
  for (size_t d = 0; d < grad.shape.size(); ++d) {
    if (d != 1) all_but_channels.push_back(static_cast<int64_t>(d));
  }
  std::vector<Tensor> columns;
  for (const std::vector<int64_t>& tap : taps_of(kernel_sizes(weight_shape))) {
    const Tensor products = builder.binary("stablehlo.multiply", tap_slice(builder, x, tap, window, grad.shape), grad);
    columns.push_back(builder.reshape(reduce_sum(builder, products, all_but_channels, {outputs}), {outputs, 1}));
  }
  const Tensor stacked =
      columns.size() == 1
          ? columns[0]
          : builder.op("stablehlo.concatenate", columns, grad.dtype, {outputs, static_cast<int64_t>(columns.size())},
                       "dimension = 1 : i64");
  return builder.reshape(stacked, weight_shape);
}

}  // namespace torch_tpu::executors::pjrt::lowering
