// upsample_nearest2d and upsample_bilinear2d (output_size and .vec forms) as gathers of
// constant source indices along each spatial dimension. The indices and interpolation weights
// depend only on sizes and scales, so they are computed here with ATen's CPU formulas in its
// arithmetic (float for f32 and half inputs, double for f64) and emitted as constants; nearest
// is pure data movement (exact in every dtype). Bilinear combines the W neighbours first, then
// the H ones, in ATen's order. Half-precision bilinear is computed as f32's and rounded once:
// ATen keeps its weights in the input dtype and rounds the partial sums, which this does not
// model, but the f32 result is within OpInfo's tolerance of it on every bf16 / f16 sample of
// nn.functional.interpolate.bilinear and upsample_bilinear (measured with PyTorch 2.13 CPU).
// Refused: an empty input.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::Argument;
using ir::DType;

// `x`'s slices at `indices` along `dim` (a stablehlo.gather of constant indices).
Tensor select_along(FunctionBuilder& builder, const Tensor& x, size_t dim, const std::vector<int64_t>& indices) {
  const auto count = static_cast<int64_t>(indices.size());
  const Tensor index_tensor = builder.op("stablehlo.constant", {}, DType::kInt64, {count},
                                         "value = dense<" + index_list(indices) + "> : " +
                                             tensor_type(DType::kInt64, {count}));
  std::vector<int64_t> offset_dims, slice_sizes = x.shape, shape = x.shape;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (d != dim) offset_dims.push_back(static_cast<int64_t>(d));
  }
  slice_sizes[dim] = 1;
  shape[dim] = count;
  const std::string d = std::to_string(dim);
  return builder.op("stablehlo.gather", {x, index_tensor}, x.dtype, shape,
                    "dimension_numbers = #stablehlo.gather<offset_dims = " + index_list(offset_dims) +
                        ", collapsed_slice_dims = [" + d + "], start_index_map = [" + d +
                        "], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = " +
                        i64_array(slice_sizes));
}

// A constant vector of `values` in `dtype` (f32 or f64), each printed to round-trip.
template <typename T>
Tensor weight_constant(FunctionBuilder& builder, const std::vector<T>& values, DType dtype) {
  std::string literal = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    char text[40];
    std::snprintf(text, sizeof(text), "%.17e", static_cast<double>(values[i]));
    literal += (i ? ", " : "") + std::string(text);
  }
  const std::vector<int64_t> shape = {static_cast<int64_t>(values.size())};
  return builder.op("stablehlo.constant", {}, dtype, shape, "value = dense<" + literal + "]> : " + tensor_type(dtype, shape));
}

// The scales of the spatial dimensions: the op's scales_h/scales_w (output_size form, at
// arguments `first`...) or scale_factors (.vec form); nullopt where absent.
std::vector<std::optional<double>> scales_of(OpContext& context, size_t spatial) {
  std::vector<std::optional<double>> scales(spatial);
  if (context.op().find(".vec") != std::string::npos) {
    const size_t index = context.op().starts_with("aten::upsample_bilinear2d") ? 3 : 2;
    const Argument& factors = context.arg(index);
    if (factors.kind == Argument::Kind::kDoubleList) {
      if (factors.reals.size() != spatial) context.refuse("scale_factors of another length");
      for (size_t d = 0; d < spatial; ++d) scales[d] = factors.reals[d];
    }
    return scales;
  }
  const size_t first = context.op().starts_with("aten::upsample_bilinear2d") ? 3 : 2;
  for (size_t d = 0; d < spatial; ++d) {
    const Argument& scale = context.arg(first + d);
    if (scale.kind == Argument::Kind::kDouble) scales[d] = scale.real;
  }
  return scales;
}

// ATen's compute_scales_value: 1 / scale when given and positive, else in / out.
template <typename T>
T scale_value(std::optional<double> scale, int64_t in, int64_t out) {
  return scale && *scale > 0.0 ? static_cast<T>(1.0 / *scale) : static_cast<T>(in) / static_cast<T>(out);
}

// ATen's nearest_idx.
int64_t nearest_index(int64_t o, int64_t in, int64_t out, std::optional<double> scale) {
  if (out == in) return o;
  if (out == 2 * in) return o >> 1;
  const float s = scale_value<float>(scale, in, out);
  return std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * s)), in - 1);
}

// The two neighbours and their weights of each output position (ATen's
// compute_source_index_and_lambda with area_pixel_compute_scale), in arithmetic T.
template <typename T>
struct Linear {
  std::vector<int64_t> index0, index1;
  std::vector<T> lambda0, lambda1;
};

template <typename T>
Linear<T> linear_neighbours(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  Linear<T> result;
  const T ratio = align_corners ? (out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0))
                                : scale_value<T>(scale, in, out);
  for (int64_t o = 0; o < out; ++o) {
    if (out == in) {
      result.index0.push_back(o);
      result.index1.push_back(o);
      result.lambda0.push_back(T(1));
      result.lambda1.push_back(T(0));
      continue;
    }
    T real = align_corners ? ratio * static_cast<T>(o) : ratio * (static_cast<T>(o) + T(0.5)) - T(0.5);
    if (!align_corners && real < T(0)) real = T(0);
    const int64_t i0 = std::min(static_cast<int64_t>(std::floor(real)), in - 1);
    const T lambda1 = std::min(std::max(real - static_cast<T>(i0), T(0)), T(1));
    result.index0.push_back(i0);
    result.index1.push_back(i0 + (i0 < in - 1 ? 1 : 0));
    result.lambda1.push_back(lambda1);
    result.lambda0.push_back(T(1) - lambda1);
  }
  return result;
}

// x interpolated linearly along `dim` (weights broadcast along it).
template <typename T>
Tensor interpolate_along(FunctionBuilder& builder, const Tensor& x, size_t dim, const Linear<T>& n) {
  const Tensor a = select_along(builder, x, dim, n.index0);
  const Tensor b = select_along(builder, x, dim, n.index1);
  const std::vector<int64_t> along = {static_cast<int64_t>(dim)};
  const Tensor w0 = builder.broadcast_in_dim(weight_constant(builder, n.lambda0, x.dtype), a.shape, along);
  const Tensor w1 = builder.broadcast_in_dim(weight_constant(builder, n.lambda1, x.dtype), a.shape, along);
  return builder.binary("stablehlo.add", builder.binary("stablehlo.multiply", a, w0),
                        builder.binary("stablehlo.multiply", b, w1));
}

// The input and output of a 2-d upsample (batched N, C, H, W), checked.
Tensor input_of(OpContext& context) {
  const Tensor x = context.tensor(0);
  const ir::TensorType& out = context.return_type(0);
  if (x.shape.size() != 4 || out.sizes.size() != 4 || out.sizes[0] != x.shape[0] || out.sizes[1] != x.shape[1]) {
    context.refuse("an input other than N, C, H, W");
  }
  if (x.dtype != out.dtype) context.refuse("an output of another dtype");
  if (x.numel() == 0) context.refuse("an input with no elements");
  return x;
}

}  // namespace

// upsample_nearest2d(self, output_size, scales_h?, scales_w?), .vec(input, output_size?,
// scale_factors?): output sizes are the return's.
std::vector<Tensor> lower_upsample_nearest2d(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  Tensor y = input_of(context);
  const std::vector<std::optional<double>> scales = scales_of(context, 2);
  for (size_t d = 0; d < 2; ++d) {
    const int64_t in = y.shape[d + 2], outs = out.sizes[d + 2];
    if (in == outs) continue;
    std::vector<int64_t> indices;
    for (int64_t o = 0; o < outs; ++o) indices.push_back(nearest_index(o, in, outs, scales[d]));
    y = select_along(builder, y, d + 2, indices);
  }
  return {y};
}

// upsample_bilinear2d(self, output_size, align_corners, scales_h?, scales_w?), .vec(input,
// output_size?, align_corners, scale_factors?).
std::vector<Tensor> lower_upsample_bilinear2d(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  if (!is_floating(out.dtype)) context.refuse("dtype " + ir::dtype_name(out.dtype));
  FunctionBuilder& builder = context.builder();
  const Tensor x = builder.convert(input_of(context), floating_compute(context, out.dtype));
  const bool align_corners = context.arg(2).integer != 0;
  const std::vector<std::optional<double>> scales = scales_of(context, 2);
  const int64_t h = x.shape[2], w = x.shape[3], oh = out.sizes[2], ow = out.sizes[3];
  if (x.dtype == DType::kFloat32) {
    const Tensor along_w = interpolate_along(builder, x, 3, linear_neighbours<float>(w, ow, align_corners, scales[1]));
    return {builder.convert(
        interpolate_along(builder, along_w, 2, linear_neighbours<float>(h, oh, align_corners, scales[0])), out.dtype)};
  }
  const Tensor along_w = interpolate_along(builder, x, 3, linear_neighbours<double>(w, ow, align_corners, scales[1]));
  return {interpolate_along(builder, along_w, 2, linear_neighbours<double>(h, oh, align_corners, scales[0]))};
}

}  // namespace torch_tpu::executors::pjrt::lowering
