// max_pool2d_with_indices / max_pool3d_with_indices(self, kernel_size, stride, padding,
// dilation, ceil_mode) -> (out, indices) as one variadic stablehlo.reduce_window over (value,
// flat position within the input plane) pairs, padded with (-inf, the largest index). Its
// region keeps the pair ATen's scan (cpu_max_pool: `val > maxval || isnan(val)`) ends on: the
// larger value, NaN above every number and the LAST NaN among NaNs, otherwise on a tie the
// smaller position, so the FIRST maximum wins in whatever order XLA combines. Half precision
// compares in f32 (exact). An integer input compares in its own dtype, padded with its lowest
// value (ATen's starting maximum; a real element equal to it still wins on its smaller
// position). Refused: bool, windows with no input element (ATen returns -inf there), an output
// shape other than ATen's.
// max_pool{2,3}d_with_indices_backward(grad_output, self, kernel_size, stride, padding,
// dilation, ceil_mode, indices): grad_output scatter-added into the positions `indices` name
// (duplicates from overlapping windows sum). An index outside its plane fails the run (ATen
// does not check it). Half precision sums in f32 and rounds once (see the backward below).
#include <algorithm>
#include <climits>

#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

struct Pooling {
  size_t spatial = 2, lead = 0;
  std::vector<int64_t> kernel, stride, padding, dilation;
  bool ceil_mode = false;
};

// The arguments at 1..5 (forward) or 2..6 (backward) of a max pooling over `shape`.
Pooling pooling_arguments(OpContext& context, size_t first, const std::vector<int64_t>& shape) {
  Pooling p;
  p.spatial = context.op().starts_with("aten::max_pool3d") ? 3 : 2;
  if (shape.size() != p.spatial + 1 && shape.size() != p.spatial + 2) context.refuse("an input of that rank");
  p.lead = shape.size() - p.spatial;
  p.kernel = per_dimension(context, first, p.spatial, "kernel_size", {});
  p.stride = per_dimension(context, first + 1, p.spatial, "stride", p.kernel);
  p.padding = per_dimension(context, first + 2, p.spatial, "padding", std::vector<int64_t>(p.spatial, 0));
  p.dilation = per_dimension(context, first + 3, p.spatial, "dilation", std::vector<int64_t>(p.spatial, 1));
  p.ceil_mode = context.arg(first + 4).integer != 0;
  for (size_t d = 0; d < p.spatial; ++d) {
    if (p.kernel[d] <= 0 || p.stride[d] <= 0 || p.dilation[d] <= 0 || p.padding[d] < 0 ||
        p.padding[d] > p.kernel[d] / 2) {
      context.refuse("a kernel, stride, dilation or padding ATen rejects");
    }
  }
  return p;
}

// ATen's pooling_output_shape.
int64_t output_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const int64_t numerator = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t out = (numerator >= 0 ? numerator / s : -((-numerator + s - 1) / s)) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

// The output sizes of pooling `shape`; refuses a window that covers no input element.
std::vector<int64_t> pooled_shape(OpContext& context, const Pooling& p, const std::vector<int64_t>& shape) {
  std::vector<int64_t> out(shape.begin(), shape.begin() + static_cast<std::ptrdiff_t>(p.lead));
  for (size_t d = 0; d < p.spatial; ++d) {
    const int64_t in = shape[p.lead + d];
    const int64_t size = output_size(in, p.kernel[d], p.stride[d], p.padding[d], p.dilation[d], p.ceil_mode);
    if (size <= 0) context.refuse("an empty output");
    for (int64_t o = 0; o < size; ++o) {
      bool covers = false;
      for (int64_t j = 0; j < p.kernel[d] && !covers; ++j) {
        const int64_t at = o * p.stride[d] - p.padding[d] + j * p.dilation[d];
        covers = at >= 0 && at < in;
      }
      if (!covers) context.refuse("a window over padding only");
    }
    out.push_back(size);
  }
  return out;
}

// The row-major position of each element of `shape` within its plane (the spatial dimensions).
Tensor plane_positions(FunctionBuilder& builder, const std::vector<int64_t>& shape, size_t lead) {
  Tensor positions;
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > lead;) {
    Tensor coordinate = builder.op("stablehlo.iota", {}, DType::kInt64, shape, "iota_dimension = " + std::to_string(d) + " : i64");
    if (stride != 1) {
      coordinate = builder.binary("stablehlo.multiply", coordinate, builder.splat(std::to_string(stride), DType::kInt64, shape));
    }
    positions = positions.name.empty() ? coordinate : builder.binary("stablehlo.add", positions, coordinate);
    stride *= shape[d];
  }
  return positions;
}

std::string padding_attribute(const std::vector<std::pair<int64_t, int64_t>>& padding) {
  std::string text = "dense<[";
  for (size_t d = 0; d < padding.size(); ++d) {
    text += (d ? ", [" : "[") + std::to_string(padding[d].first) + ", " + std::to_string(padding[d].second) + "]";
  }
  return text + "]> : tensor<" + std::to_string(padding.size()) + "x2xi64>";
}

Tensor sliced(FunctionBuilder& builder, const Tensor& x, const std::vector<int64_t>& shape) {
  if (x.shape == shape) return x;
  return builder.op("stablehlo.slice", {x}, x.dtype, shape,
                    "limit_indices = " + i64_array(shape) + ", start_indices = " +
                        i64_array(std::vector<int64_t>(shape.size(), 0)) + ", strides = " +
                        i64_array(std::vector<int64_t>(shape.size(), 1)));
}

}  // namespace

std::vector<Tensor> lower_max_pool_with_indices(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const ir::TensorType& indices_type = context.return_type(1);
  if (out.dtype == DType::kBool || context.tensor_dtype(0) != out.dtype) context.refuse("dtype " + ir::dtype_name(out.dtype));
  if (indices_type.dtype != DType::kInt64) context.refuse("indices of another dtype than int64");
  FunctionBuilder& builder = context.builder();
  const bool floating = is_floating(out.dtype);
  const DType compute = !floating || out.dtype == DType::kFloat64 ? out.dtype : DType::kFloat32;
  const Tensor x = builder.convert(context.tensor(0), compute);
  if (x.numel() == 0) context.refuse("an input with no elements");
  const Pooling p = pooling_arguments(context, 1, x.shape);
  const std::vector<int64_t> shape = pooled_shape(context, p, x.shape);
  if (shape != out.sizes || shape != indices_type.sizes) context.refuse("an output shape other than the pooling's");

  std::vector<int64_t> window(p.lead, 1), strides(p.lead, 1), dilations(p.lead, 1), reached = shape;
  std::vector<std::pair<int64_t, int64_t>> pads(p.lead, {0, 0});
  for (size_t d = 0; d < p.spatial; ++d) {
    const int64_t in = x.shape[p.lead + d], extent = p.dilation[d] * (p.kernel[d] - 1) + 1;
    const int64_t high = std::max(p.padding[d], (shape[p.lead + d] - 1) * p.stride[d] + extent - p.padding[d] - in);
    window.push_back(p.kernel[d]);
    strides.push_back(p.stride[d]);
    dilations.push_back(p.dilation[d]);
    pads.emplace_back(p.padding[d], high);
    reached[p.lead + d] = (in + p.padding[d] + high - extent) / p.stride[d] + 1;
  }
  const Tensor positions = plane_positions(builder, x.shape, p.lead);
  const Tensor a = builder.region_argument(compute);
  const Tensor a_index = builder.region_argument(DType::kInt64);
  const Tensor b = builder.region_argument(compute);
  const Tensor b_index = builder.region_argument(DType::kInt64);
  const std::string region = builder.region_body([&] {
    if (!floating) {
      // No NaN: the larger value, on a tie the smaller position.
      const Tensor take_a = builder.binary(
          "stablehlo.or", builder.compare(a, b, "GT"),
          builder.binary("stablehlo.and", builder.compare(a, b, "EQ"), builder.compare(a_index, b_index, "LT")));
      return std::vector<Tensor>{builder.op("stablehlo.select", {take_a, a, b}, compute, {}),
                                 builder.op("stablehlo.select", {take_a, a_index, b_index}, DType::kInt64, {})};
    }
    const Tensor a_nan = nan_mask(builder, a);
    const Tensor b_nan = nan_mask(builder, b);
    const Tensor both_nan = builder.binary("stablehlo.and", a_nan, b_nan);
    const Tensor a_wins = builder.binary("stablehlo.or", builder.compare(a, b, "GT"),
                                         builder.binary("stablehlo.and", a_nan, builder.unary("stablehlo.not", b_nan)));
    const Tensor tie = builder.binary("stablehlo.or", builder.compare(a, b, "EQ"), both_nan);
    // Among NaNs ATen's scan ends on the last; among equal numbers it keeps the first.
    const Tensor preferred = builder.select(both_nan, builder.compare(a_index, b_index, "GT"),
                                            builder.compare(a_index, b_index, "LT"));
    const Tensor take_a = builder.binary("stablehlo.or", a_wins, builder.binary("stablehlo.and", tie, preferred));
    return std::vector<Tensor>{builder.op("stablehlo.select", {take_a, a, b}, compute, {}),
                               builder.op("stablehlo.select", {take_a, a_index, b_index}, DType::kInt64, {})};
  });
  const std::vector<Tensor> results = builder.multi_result_op_with_region(
      "stablehlo.reduce_window",
      {x, positions, lowest_value(builder, compute), builder.splat(std::to_string(INT64_MAX), DType::kInt64, {})},
      {Tensor{"", compute, reached}, Tensor{"", DType::kInt64, reached}},
      "padding = " + padding_attribute(pads) + ", window_dilations = " + i64_array(dilations) +
          ", window_dimensions = " + i64_array(window) + ", window_strides = " + i64_array(strides),
      {a, a_index, b, b_index}, region);
  return {builder.convert(sliced(builder, results[0], shape), out.dtype), sliced(builder, results[1], shape)};
}

std::vector<Tensor> lower_max_pool_with_indices_backward(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  if (!is_floating(out.dtype) || context.tensor_dtype(0) != out.dtype || context.tensor_dtype(1) != out.dtype) {
    context.refuse("dtype " + ir::dtype_name(out.dtype) + " or mixed dtypes");
  }
  const DType index_dtype = context.tensor_dtype(7);
  if (index_dtype != DType::kInt64) context.refuse("indices of dtype " + ir::dtype_name(index_dtype));
  const std::vector<int64_t>& input_shape = context.tensor_type(1).sizes;
  if (input_shape != out.sizes) context.refuse("a gradient of another shape than the input");
  const Pooling p = pooling_arguments(context, 2, input_shape);
  const std::vector<int64_t>& grad_shape = context.tensor_type(0).sizes;
  if (context.tensor_type(7).sizes != grad_shape || grad_shape.size() != input_shape.size()) {
    context.refuse("indices of another shape than grad_output");
  }
  // Half precision accumulates in f32 and rounds once. Where windows overlap, ATen adds each
  // gradient into the half-precision grad_input (every addition rounded): the f32 sum is the
  // more accurate, within OpInfo's tolerance on all 1440 bf16 / f16 samples of
  // max_pool2d_with_indices_backward (measured with PyTorch 2.13 CPU); an element many windows
  // pick can differ from ATen's by a rounding per addition.
  const DType compute = floating_compute(context, out.dtype);
  FunctionBuilder& builder = context.builder();
  int64_t planes = 1, plane = 1, pooled = 1;
  for (size_t d = 0; d < input_shape.size(); ++d) {
    (d < p.lead ? planes : plane) *= input_shape[d];
    if (d >= p.lead) pooled *= grad_shape[d];
  }
  for (size_t d = 0; d < p.lead; ++d) {
    if (grad_shape[d] != input_shape[d]) context.refuse("grad_output of another batch or channel count");
  }
  if (planes * plane == 0) context.refuse("an input with no elements");
  if (pooled == 0) return {builder.zeros(out.dtype, out.sizes)};
  const Tensor grad = builder.reshape(builder.convert(context.tensor(0), compute), {planes, pooled});
  const Tensor index = builder.reshape(context.tensor(7), {planes, pooled});
  const Tensor below = builder.compare(index, builder.zeros(DType::kInt64, index.shape), "LT");
  const Tensor above = builder.compare(index, builder.splat(std::to_string(plane), DType::kInt64, index.shape), "GE");
  context.check(builder.binary("stablehlo.or", below, above), "an index is out of range of its input plane");
  const Tensor row = builder.op("stablehlo.iota", {}, DType::kInt64, {planes, pooled, 1}, "iota_dimension = 0 : i64");
  const Tensor coordinates = builder.op("stablehlo.concatenate", {row, builder.reshape(index, {planes, pooled, 1})},
                                        DType::kInt64, {planes, pooled, 2}, "dimension = 2 : i64");
  const Tensor lhs = builder.region_argument(compute);
  const Tensor rhs = builder.region_argument(compute);
  const std::string region =
      builder.region_body([&] { return std::vector<Tensor>{builder.op("stablehlo.add", {lhs, rhs}, compute, {})}; });
  const Tensor scattered = builder.op_with_region(
      "stablehlo.scatter", {builder.zeros(compute, {planes, plane}), coordinates, grad}, compute, {planes, plane},
      "indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0, 1], "
      "scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 2>, unique_indices = false",
      {lhs, rhs}, region);
  return {builder.convert(builder.reshape(scattered, out.sizes), out.dtype)};
}

}  // namespace torch_tpu::executors::pjrt::lowering
