// Depthwise convolution (one input channel per group, any channel multiplier) as a sum over
// the kernel's taps of strided slices times per-channel weights, forward and backward.
// stablehlo.convolution with feature_group_count = C is what XLA's CPU backend expands into a
// dense C x C convolution: a 12,288-channel causal conv1d (linear-attention models) allocated
// 4.8 GB and took 116 s; the tap sums take milliseconds. Each sum runs in `accumulate` (f64 for
// float32, as grouped convolutions do in convolution.cpp) and is rounded once by the caller.
#pragma once

#include <cstdint>
#include <vector>

#include "executors/pjrt/lowering/mlir_text.h"

namespace torch_tpu::executors::pjrt::lowering {

struct DepthwiseWindow {
  std::vector<int64_t> stride, padding, dilation;  // one value per spatial dimension
};

// True for a convolution this file lowers: groups > 1, one input channel per group, and at most
// kMaxDepthwiseTaps kernel taps (each tap is one slice in the program).
bool is_depthwise(const std::vector<int64_t>& weight_shape, int64_t groups);
constexpr int64_t kMaxDepthwiseTaps = 128;

// convolution's output [N, C * m, out...] of `input` [N, C, in...] by `weight` [C * m, 1, k...].
Tensor depthwise_forward(FunctionBuilder& builder, const Tensor& input, const Tensor& weight,
                         const DepthwiseWindow& window, const std::vector<int64_t>& out_shape);
// The gradient of the input (its shape `input_shape`) from `grad` [N, C * m, out...].
Tensor depthwise_grad_input(FunctionBuilder& builder, const Tensor& grad, const Tensor& weight,
                            const DepthwiseWindow& window, const std::vector<int64_t>& input_shape);
// The gradient of the weight (its shape) from `grad` and `input`.
Tensor depthwise_grad_weight(FunctionBuilder& builder, const Tensor& grad, const Tensor& input,
                             const DepthwiseWindow& window, const std::vector<int64_t>& weight_shape);

}  // namespace torch_tpu::executors::pjrt::lowering
