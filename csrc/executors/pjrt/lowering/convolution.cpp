// convolution(input, weight, bias?, stride, padding, dilation, transposed, output_padding,
// groups) as one stablehlo.convolution over N, C, spatial... layouts (1-d to 3-d). A
// transposed convolution is the gradient form: the input dilated by the stride, the kernel
// reversed with its feature dimensions swapped per group, padded by dilation * (k - 1) -
// padding (+ output_padding on the high side). Half precision convolves in f32 and rounds once,
// as oneDNN accumulates. A grouped float32 convolution convolves in f64 and rounds once: XLA's
// f32 order for a depthwise one is beyond OpInfo's tolerance from ATen's (2.9e-6 past it on
// the sweep's groups=4 conv2d), the nearly exact result within it; splitting the groups into
// separate convolutions does not change XLA's order. (f64 is cheap on the CPU plugin; a TPU
// emulates it at many times f32's cost, and would rather take XLA's f32 order.) Refused: operands of another dtype than the output, negative padding
// of a transposed form (padding > dilation * (k - 1)), and a half-precision transposed form
// (ATen's col2im rounds partial sums to the dtype: about a third of the elements differ).
// convolution_backward of ordinary and transposed convolutions in f32 and f64 (below). Depthwise forms are
// tap sums (depthwise_convolution.h), which XLA's CPU backend does not expand to dense.
#include "executors/pjrt/lowering/depthwise_convolution.h"
#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

// "b, f, 0, 1" with the two leading labels given.
std::string layout(const char* first, const char* second, size_t spatial) {
  std::string text = std::string(first) + ", " + second;
  for (size_t d = 0; d < spatial; ++d) text += ", " + std::to_string(d);
  return "[" + text + "]";
}

std::string padding_attribute(const std::vector<std::pair<int64_t, int64_t>>& padding) {
  std::string text = "dense<[";
  for (size_t d = 0; d < padding.size(); ++d) {
    text += (d ? ", [" : "[") + std::to_string(padding[d].first) + ", " + std::to_string(padding[d].second) + "]";
  }
  return text + "]> : tensor<" + std::to_string(padding.size()) + "x2xi64>";
}

// A spatially reversed transposed-convolution weight [C_in, C_out / groups, k...] as an
// ordinary convolution's [C_out, C_in / groups, k...] (groups > 1; one group names its layout
// [i, o, ...] instead).
Tensor regrouped_kernel(FunctionBuilder& builder, const Tensor& weight, int64_t groups) {
  const size_t rank = weight.shape.size();
  const int64_t in = weight.shape[0], out_per_group = weight.shape[1];
  std::vector<int64_t> split = {groups, in / groups, out_per_group};
  std::vector<int64_t> permutation = {0, 2, 1};
  std::vector<int64_t> swapped = {groups, out_per_group, in / groups};
  std::vector<int64_t> merged = {groups * out_per_group, in / groups};
  for (size_t d = 2; d < rank; ++d) {
    split.push_back(weight.shape[d]);
    permutation.push_back(static_cast<int64_t>(d + 1));
    swapped.push_back(weight.shape[d]);
    merged.push_back(weight.shape[d]);
  }
  const Tensor transposed = builder.op("stablehlo.transpose", {builder.reshape(weight, split)}, weight.dtype,
                                       swapped, "permutation = " + i64_array(permutation));
  return builder.reshape(transposed, merged);
}

// One stablehlo.convolution: the operands' and result's layouts ("[b, f, 0, 1]"), and its
// window attributes, one value per spatial dimension.
struct ConvolutionSpec {
  std::string lhs_layout, rhs_layout, out_layout;
  std::vector<int64_t> window_strides, lhs_dilation, rhs_dilation;
  std::vector<std::pair<int64_t, int64_t>> padding;
  int64_t feature_groups = 1, batch_groups = 1;
};

Tensor convolve(FunctionBuilder& builder, const Tensor& lhs, const Tensor& rhs, const std::vector<int64_t>& shape,
                const ConvolutionSpec& spec) {
  const std::string attributes =
      "batch_group_count = " + std::to_string(spec.batch_groups) + " : i64, dimension_numbers = #stablehlo.conv<" +
      spec.lhs_layout + "x" + spec.rhs_layout + "->" + spec.out_layout + ">, feature_group_count = " +
      std::to_string(spec.feature_groups) + " : i64, lhs_dilation = " + i64_array(spec.lhs_dilation) +
      ", padding = " + padding_attribute(spec.padding) + ", rhs_dilation = " + i64_array(spec.rhs_dilation) +
      ", window_strides = " + i64_array(spec.window_strides) + ", " + highest_precision();
  return builder.op("stablehlo.convolution", {lhs, rhs}, lhs.dtype, shape, attributes);
}

Tensor reversed_spatially(FunctionBuilder& builder, const Tensor& weight) {
  std::vector<int64_t> spatial_dims;
  for (size_t d = 2; d < weight.shape.size(); ++d) spatial_dims.push_back(static_cast<int64_t>(d));
  return builder.op("stablehlo.reverse", {weight}, weight.dtype, weight.shape, "dimensions = " + i64_array(spatial_dims));
}

}  // namespace

std::vector<Tensor> lower_convolution(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const DType compute = floating_compute(context, out.dtype);
  for (const size_t i : {size_t{0}, size_t{1}}) {
    if (context.tensor_dtype(i) != out.dtype) context.refuse("operands of another dtype than the output");
  }
  FunctionBuilder& builder = context.builder();
  const Tensor input = builder.convert(context.tensor(0), compute);
  Tensor weight = builder.convert(context.tensor(1), compute);
  const size_t rank = input.shape.size();
  if (rank < 3 || rank > 5 || weight.shape.size() != rank || out.sizes.size() != rank) {
    context.refuse("an input of rank " + std::to_string(rank) + " (batched 1-d to 3-d expected)");
  }
  if (input.numel() == 0 || weight.numel() == 0) context.refuse("operands with no elements");
  const size_t spatial = rank - 2;
  const std::vector<int64_t> stride = per_dimension(context, 3, spatial, "stride");
  const std::vector<int64_t> padding = per_dimension(context, 4, spatial, "padding");
  const std::vector<int64_t> dilation = per_dimension(context, 5, spatial, "dilation");
  const bool transposed = context.arg(6).integer != 0;
  const int64_t groups = context.arg(8).integer;
  if (groups <= 0 || input.shape[1] % groups != 0) context.refuse("groups that do not divide the channels");
  // ATen's own f32 rounding moves a 3-d convolution beyond OpInfo's tolerance of the exact value
  // (the sweep's dilated 4x4x4 conv3d by 4.4e-6, its 4 -> 8 channel conv_transpose3d by 3.0e-6,
  // computed in f64): no summation order of XLA's matches it.
  const bool depthwise = !transposed && is_depthwise(weight.shape, groups);
  if (spatial == 3 && compute == DType::kFloat32 && !depthwise) {
    context.refuse("a 3-d float32 convolution (ATen's summation order)");
  }
  const DType convolve_in = groups > 1 && compute == DType::kFloat32 ? DType::kFloat64 : compute;

  std::vector<std::pair<int64_t, int64_t>> pads;
  std::vector<int64_t> window_strides = stride, lhs_dilation(spatial, 1);
  std::vector<int64_t> expected = {input.shape[0], 0};
  if (transposed) {
    if (compute != out.dtype) context.refuse("half-precision transposed convolution (ATen rounds its partial sums)");
    const std::vector<int64_t> output_padding = per_dimension(context, 7, spatial, "output_padding");
    if (weight.shape[0] != input.shape[1]) context.refuse("a transposed weight of another input channel count");
    weight = reversed_spatially(builder, weight);
    if (groups > 1) weight = regrouped_kernel(builder, weight, groups);
    expected[1] = groups == 1 ? weight.shape[1] : weight.shape[0];
    for (size_t d = 0; d < spatial; ++d) {
      const int64_t reach = dilation[d] * (weight.shape[d + 2] - 1);
      if (padding[d] > reach) context.refuse("padding beyond dilation * (kernel - 1) in a transposed convolution");
      pads.emplace_back(reach - padding[d], reach - padding[d] + output_padding[d]);
      window_strides[d] = 1;
      lhs_dilation[d] = stride[d];
      expected.push_back((input.shape[d + 2] - 1) * stride[d] - 2 * padding[d] + reach + output_padding[d] + 1);
    }
  } else {
    if (weight.shape[1] * groups != input.shape[1]) context.refuse("a weight of another input channel count");
    expected[1] = weight.shape[0];
    for (size_t d = 0; d < spatial; ++d) {
      pads.emplace_back(padding[d], padding[d]);
      const int64_t reach = dilation[d] * (weight.shape[d + 2] - 1);
      expected.push_back((input.shape[d + 2] + 2 * padding[d] - reach - 1) / stride[d] + 1);
    }
  }
  if (expected != out.sizes) context.refuse("an output shape other than the convolution's");
  ConvolutionSpec spec;
  spec.lhs_layout = spec.out_layout = layout("b", "f", spatial);
  spec.rhs_layout = transposed && groups == 1 ? layout("i", "o", spatial) : layout("o", "i", spatial);
  spec.window_strides = window_strides;
  spec.lhs_dilation = lhs_dilation;
  spec.rhs_dilation = dilation;
  spec.padding = pads;
  spec.feature_groups = groups;
  const Tensor lhs = builder.convert(input, convolve_in), rhs = builder.convert(weight, convolve_in);
  Tensor y = builder.convert(depthwise
                                 ? depthwise_forward(builder, lhs, rhs, {stride, padding, dilation}, out.sizes)
                                 : convolve(builder, lhs, rhs, out.sizes, spec),
                             compute);
  if (context.arg(2).kind == ir::Argument::Kind::kTensor) {
    if (context.tensor_dtype(2) != out.dtype) context.refuse("a bias of another dtype than the output");
    const Tensor bias = builder.convert(context.tensor(2), compute);
    if (bias.shape != std::vector<int64_t>{out.sizes[1]}) context.refuse("a bias of another size than the channels");
    y = builder.binary("stablehlo.add", y, builder.broadcast_in_dim(bias, out.sizes, {1}));
  }
  return {builder.convert(y, out.dtype)};
}

namespace {

// `x` without its last `count` positions along `dim`.
Tensor without_last(FunctionBuilder& builder, const Tensor& x, size_t dim, int64_t count) {
  const size_t rank = x.shape.size();
  std::vector<int64_t> starts(rank, 0), limits = x.shape, steps(rank, 1);
  limits[dim] -= count;
  return builder.op("stablehlo.slice", {x}, x.dtype, limits,
                    "limit_indices = " + i64_array(limits) + ", start_indices = " + i64_array(starts) +
                        ", strides = " + i64_array(steps));
}

// A convolution's stride, padding and dilation, one value per spatial dimension.
struct ConvolutionWindow {
  std::vector<int64_t> stride, padding, dilation;
};

// The weight gradient [O, C/g, k...] of an ordinary convolution of `input` [N, C, ...] whose
// output gradient is `grad` [N, O, ...]: the input's channels are the batch and its batch the
// features; grad's batch is the kernel's input features and its channels the output features.
Tensor ordinary_grad_weight(FunctionBuilder& builder, Tensor input, const Tensor& grad,
                            const std::vector<int64_t>& weight_shape, const ConvolutionWindow& window,
                            int64_t groups) {
  const size_t rank = input.shape.size(), spatial = rank - 2;
  ConvolutionSpec spec;
  spec.lhs_layout = layout("f", "b", spatial);
  spec.rhs_layout = layout("i", "o", spatial);
  spec.out_layout = layout("f", "b", spatial);
  spec.window_strides = window.dilation;
  spec.lhs_dilation.assign(spatial, 1);
  spec.rhs_dilation = window.stride;
  spec.batch_groups = groups;
  for (size_t d = 0; d < spatial; ++d) {
    const int64_t covered = (weight_shape[d + 2] - 1) * window.dilation[d] + (grad.shape[d + 2] - 1) * window.stride[d] + 1;
    int64_t high = covered - input.shape[d + 2] - window.padding[d];
    if (high < 0) {
      // Input elements no window reached: sliced off rather than negatively padded.
      input = without_last(builder, input, d + 2, -high);
      high = 0;
    }
    spec.padding.emplace_back(window.padding[d], high);
  }
  return convolve(builder, input, grad, weight_shape, spec);
}

// The input gradient [N, C_in, ...] of a transposed convolution with weight [C_in, C_out/g,
// k...]: the ordinary convolution of `grad` [N, C_out, ...] by that weight read as [O, I/g]
// (the transposed form is that convolution's adjoint). Rows of grad past the last window
// (output_padding) are sliced off.
Tensor transposed_grad_input(FunctionBuilder& builder, Tensor grad, const Tensor& weight,
                             const std::vector<int64_t>& input_shape, const ConvolutionWindow& window,
                             int64_t groups, OpContext& context) {
  const size_t rank = grad.shape.size(), spatial = rank - 2;
  ConvolutionSpec spec;
  spec.lhs_layout = spec.out_layout = layout("b", "f", spatial);
  spec.rhs_layout = layout("o", "i", spatial);
  spec.window_strides = window.stride;
  spec.lhs_dilation.assign(spatial, 1);
  spec.rhs_dilation = window.dilation;
  spec.feature_groups = groups;
  for (size_t d = 0; d < spatial; ++d) {
    const int64_t needed = (input_shape[d + 2] - 1) * window.stride[d] + window.dilation[d] * (weight.shape[d + 2] - 1) + 1;
    int64_t high = needed - grad.shape[d + 2] - window.padding[d];
    if (high < 0) {
      grad = without_last(builder, grad, d + 2, -high);
      high = 0;
    }
    if (window.padding[d] < 0) context.refuse("negative padding");
    spec.padding.emplace_back(window.padding[d], high);
  }
  return convolve(builder, grad, weight, input_shape, spec);
}

}  // namespace

// convolution_backward(grad_output, input, weight, bias_sizes?, stride, padding, dilation,
// transposed, output_padding, groups, output_mask) -> (grad_input?, grad_weight?, grad_bias?)
// of an ordinary convolution: grad_input is the transposed convolution of grad_output by the
// weight; grad_weight convolves the input (its channels as the batch, batch_group_count =
// groups) with grad_output as the kernel; grad_bias sums grad_output over all but its channels.
// Of a transposed convolution (the adjoint of the ordinary convolution of grad_output by the
// weight): grad_input is that ordinary convolution, grad_weight its weight gradient with
// grad_output as the input and the input as the output gradient. f32 and f64 only:
// half-precision forms stay on the host kernel.
std::vector<Tensor> lower_convolution_backward(OpContext& context) {
  const DType dtype = context.tensor_dtype(0);
  if (dtype != DType::kFloat32 && dtype != DType::kFloat64) context.refuse("dtype " + ir::dtype_name(dtype));
  if (context.tensor_dtype(1) != dtype || context.tensor_dtype(2) != dtype) context.refuse("operands of mixed dtypes");
  const bool transposed = context.arg(7).integer != 0;
  // The OpInfo sweep finds 3-d weight gradients beyond float32's tolerance (XLA's summation).
  if (context.tensor_type(1).sizes.size() == 5 && dtype == DType::kFloat32 &&
      !is_depthwise(context.tensor_type(2).sizes, context.arg(9).integer)) {
    context.refuse("a 3-d float32 convolution's backward");
  }
  FunctionBuilder& builder = context.builder();
  const Tensor grad = context.tensor(0);
  Tensor input = context.tensor(1);
  const Tensor weight = context.tensor(2);
  const size_t rank = input.shape.size();
  if (rank < 3 || rank > 5 || weight.shape.size() != rank || grad.shape.size() != rank) {
    context.refuse("an input of rank " + std::to_string(rank) + " (batched 1-d to 3-d expected)");
  }
  if (grad.numel() == 0 || input.numel() == 0 || weight.numel() == 0) context.refuse("operands with no elements");
  const size_t spatial = rank - 2;
  const std::vector<int64_t> stride = per_dimension(context, 4, spatial, "stride");
  const std::vector<int64_t> padding = per_dimension(context, 5, spatial, "padding");
  const std::vector<int64_t> dilation = per_dimension(context, 6, spatial, "dilation");
  const int64_t groups = context.arg(9).integer;
  const std::vector<int64_t>& mask = context.arg(10).list;
  if (mask.size() != 3) context.refuse("an output_mask of another length");
  const ConvolutionWindow window = {stride, padding, dilation};
  std::vector<Tensor> results;
  if (transposed) {
    // Weight [C_in, C_out/g, k...]: the adjoint of the ordinary convolution of grad by it.
    if (groups <= 0 || weight.shape[0] != input.shape[1] || grad.shape[1] != weight.shape[1] * groups ||
        input.shape[1] % groups != 0) {
      context.refuse("groups inconsistent with the operands");
    }
    if (mask[0] != 0) results.push_back(transposed_grad_input(builder, grad, weight, input.shape, window, groups, context));
    if (mask[1] != 0) results.push_back(ordinary_grad_weight(builder, grad, input, weight.shape, window, groups));
  }
  if (!transposed &&
      (groups <= 0 || input.shape[1] != weight.shape[1] * groups || weight.shape[0] % groups != 0)) {
    context.refuse("groups inconsistent with the operands");
  }
  const bool depthwise = !transposed && is_depthwise(weight.shape, groups);
  if (depthwise) {
    // Summed in f64 for float32 and rounded once, as the forward.
    const auto wide = [&](const Tensor& t) { return builder.convert(t, DType::kFloat64); };
    const DepthwiseWindow taps = {stride, padding, dilation};
    if (mask[0] != 0) {
      results.push_back(builder.convert(depthwise_grad_input(builder, wide(grad), wide(weight), taps, input.shape), dtype));
    }
    if (mask[1] != 0) {
      results.push_back(builder.convert(depthwise_grad_weight(builder, wide(grad), wide(input), taps, weight.shape), dtype));
    }
  }
  if (mask[0] != 0 && !depthwise && !transposed) {
    ConvolutionSpec spec;
    spec.lhs_layout = spec.out_layout = layout("b", "f", spatial);
    spec.rhs_layout = groups == 1 ? layout("i", "o", spatial) : layout("o", "i", spatial);
    spec.window_strides.assign(spatial, 1);
    spec.lhs_dilation = stride;
    spec.rhs_dilation = dilation;
    spec.feature_groups = groups;
    for (size_t d = 0; d < spatial; ++d) {
      const int64_t reach = dilation[d] * (weight.shape[d + 2] - 1);
      const int64_t low = reach - padding[d];
      const int64_t high = input.shape[d + 2] + padding[d] - 1 - (grad.shape[d + 2] - 1) * stride[d];
      if (low < 0 || high < 0) context.refuse("padding beyond dilation * (kernel - 1)");
      spec.padding.emplace_back(low, high);
    }
    // [O, C/g, k...] reversed acts as the kernel [i = O, o = C] (one group) or regrouped.
    const Tensor reversed = reversed_spatially(builder, weight);
    const Tensor kernel = groups == 1 ? reversed : regrouped_kernel(builder, reversed, groups);
    results.push_back(convolve(builder, grad, kernel, input.shape, spec));
  }
  if (mask[1] != 0 && !depthwise && !transposed) {
    results.push_back(ordinary_grad_weight(builder, input, grad, weight.shape, window, groups));
  }
  if (mask[2] != 0) {
    std::vector<int64_t> dims;
    for (size_t d = 0; d < rank; ++d) {
      if (d != 1) dims.push_back(static_cast<int64_t>(d));
    }
    results.push_back(reduce_sum(builder, grad, dims, {grad.shape[1]}));
  }
  size_t tensor_returns = 0;
  for (const ir::Argument& ret : context.node().returns) tensor_returns += ret.kind == ir::Argument::Kind::kTensor;
  if (tensor_returns != results.size()) context.refuse("returns other than the output_mask's");
  for (size_t r = 0; r < results.size(); ++r) {
    if (results[r].shape != context.return_type(r).sizes || context.return_type(r).dtype != dtype) {
      context.refuse("a gradient of another shape or dtype than its return");
    }
  }
  return results;
}

}  // namespace torch_tpu::executors::pjrt::lowering
