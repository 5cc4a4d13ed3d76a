// convolution(input, weight, bias?, stride, padding, dilation, transposed, output_padding,
// groups) as one stablehlo.convolution over N, C, spatial... layouts (1-d to 3-d). A
// transposed convolution is the gradient form: the input dilated by the stride, the kernel
// reversed with its feature dimensions swapped per group, padded by dilation * (k - 1) -
// padding (+ output_padding on the high side). Half precision convolves in f32 and rounds once,
// as oneDNN accumulates. Refused: operands of another dtype than the output, negative padding
// of a transposed form (padding > dilation * (k - 1)), and a half-precision transposed form
// (ATen's col2im rounds partial sums to the dtype: about a third of the elements differ).
#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

// An int list argument with one value per spatial dimension (a single value repeats).
std::vector<int64_t> per_dimension(OpContext& context, size_t index, size_t spatial, const char* what) {
  std::vector<int64_t> values = context.arg(index).list;
  if (values.size() == 1) values.assign(spatial, values[0]);
  if (values.size() != spatial) context.refuse(std::string(what) + " of another length than the spatial rank");
  return values;
}

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

  std::vector<std::pair<int64_t, int64_t>> pads;
  std::vector<int64_t> window_strides = stride, lhs_dilation(spatial, 1);
  std::vector<int64_t> expected = {input.shape[0], 0};
  if (transposed) {
    if (compute != out.dtype) context.refuse("half-precision transposed convolution (ATen rounds its partial sums)");
    const std::vector<int64_t> output_padding = per_dimension(context, 7, spatial, "output_padding");
    if (weight.shape[0] != input.shape[1]) context.refuse("a transposed weight of another input channel count");
    std::vector<int64_t> spatial_dims;
    for (size_t d = 2; d < rank; ++d) spatial_dims.push_back(static_cast<int64_t>(d));
    weight = builder.op("stablehlo.reverse", {weight}, compute, weight.shape,
                        "dimensions = " + i64_array(spatial_dims));
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
  const char* kernel_layout = transposed && groups == 1 ? "i" : "o";
  const char* kernel_other = transposed && groups == 1 ? "o" : "i";
  const std::string attributes =
      "batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<" + layout("b", "f", spatial) + "x" +
      layout(kernel_layout, kernel_other, spatial) + "->" + layout("b", "f", spatial) +
      ">, feature_group_count = " + std::to_string(groups) + " : i64, lhs_dilation = " + i64_array(lhs_dilation) +
      ", padding = " + padding_attribute(pads) + ", rhs_dilation = " + i64_array(dilation) +
      ", window_strides = " + i64_array(window_strides);
  Tensor y = builder.op("stablehlo.convolution", {input, weight}, compute, out.sizes, attributes);
  if (context.arg(2).kind == ir::Argument::Kind::kTensor) {
    if (context.tensor_dtype(2) != out.dtype) context.refuse("a bias of another dtype than the output");
    const Tensor bias = builder.convert(context.tensor(2), compute);
    if (bias.shape != std::vector<int64_t>{out.sizes[1]}) context.refuse("a bias of another size than the channels");
    y = builder.binary("stablehlo.add", y, builder.broadcast_in_dim(bias, out.sizes, {1}));
  }
  return {builder.convert(y, out.dtype)};
}

}  // namespace torch_tpu::executors::pjrt::lowering
