// avg_pool2d / avg_pool3d(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
// divisor_override) as a stablehlo.reduce_window sum over the zero-padded input divided by
// each window's count, as ATen's CPU kernel: the count is divisor_override, else the window
// clipped to the padded input (count_include_pad) or to the input. Counts depend only on the
// output position, so they are constants. Half precision sums in f32 and rounds once. int64
// (the one integer dtype ATen's CPU kernel takes) sums in int64 and divides truncating toward
// zero, as C++ integer division there. Refused: windows that cover no input element (ATen
// writes 0 there).
// avg_pool2d/3d_backward: the transpose of that window sum (see lower_avg_pool_backward).
// _adaptive_avg_pool2d / 3d(self, output_size): window o of a dimension spans
// [floor(o * in / out), ceil((o + 1) * in / out)); ATen divides the window's sum by each
// dimension's extent in turn. Equal windows are one reduce_window, others one slice and sum
// per output position and dimension.
#include <algorithm>
#include <optional>

#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

// A 1-D constant of `values` in `dtype` (small integers, exact in every floating dtype).
Tensor vector_constant(FunctionBuilder& builder, const std::vector<int64_t>& values, DType dtype) {
  const char* fraction = is_floating(dtype) ? ".0" : "";
  std::string literal = "[";
  for (size_t i = 0; i < values.size(); ++i) literal += (i ? ", " : "") + std::to_string(values[i]) + fraction;
  const std::vector<int64_t> shape = {static_cast<int64_t>(values.size())};
  return builder.op("stablehlo.constant", {}, dtype, shape,
                    "value = dense<" + literal + "]> : " + tensor_type(dtype, shape));
}

Tensor window_sum(FunctionBuilder& builder, const Tensor& x, const std::vector<int64_t>& window,
                  const std::vector<int64_t>& strides,
                  const std::vector<std::pair<int64_t, int64_t>>& padding,
                  const std::vector<int64_t>& out_shape) {
  const Tensor a = builder.region_argument(x.dtype);
  const Tensor b = builder.region_argument(x.dtype);
  const std::string result = builder.next_name();
  const std::string scalar = tensor_type(x.dtype, {});
  const std::string region = "      " + result + " = \"stablehlo.add\"(" + a.name + ", " + b.name + ") : (" +
                             scalar + ", " + scalar + ") -> " + scalar + "\n" + "      \"stablehlo.return\"(" +
                             result + ") : (" + scalar + ") -> ()\n";
  std::string pads = "dense<[";
  for (size_t d = 0; d < padding.size(); ++d) {
    pads += (d ? ", [" : "[") + std::to_string(padding[d].first) + ", " + std::to_string(padding[d].second) + "]";
  }
  pads += "]> : tensor<" + std::to_string(padding.size()) + "x2xi64>";
  return builder.op_with_region("stablehlo.reduce_window", {x, builder.zeros(x.dtype, {})}, x.dtype, out_shape,
                                "padding = " + pads + ", window_dimensions = " + i64_array(window) +
                                    ", window_strides = " + i64_array(strides),
                                {a, b}, region);
}

}  // namespace

namespace {

// An avg_pool call's windows over its input (`in` sizes) for its output (`outs` sizes): the
// reduce_window attributes over every dim (1 along the leading ones), and each spatial dim's
// per-position divisor count. Arguments from `first` on: kernel_size, stride, padding,
// ceil_mode, count_include_pad, divisor_override.
struct AvgPoolWindows {
  size_t lead = 0;
  std::vector<int64_t> window, strides, reached, kernel, stride, padding;
  std::vector<std::pair<int64_t, int64_t>> pads;
  std::vector<std::vector<int64_t>> counts;  // per spatial dim, per output position
  std::optional<int64_t> divisor_override;

  AvgPoolWindows(OpContext& context, size_t first, const std::vector<int64_t>& in,
                 const std::vector<int64_t>& outs) {
    const size_t spatial = context.op().starts_with("aten::avg_pool3d") ? 3 : 2;
    const size_t rank = in.size();
    if ((rank != spatial + 1 && rank != spatial + 2) || outs.size() != rank) context.refuse("an input of that rank");
    kernel = per_dimension(context, first, spatial, "kernel_size");
    stride = context.arg(first + 1).list.empty() ? kernel : per_dimension(context, first + 1, spatial, "stride");
    padding = per_dimension(context, first + 2, spatial, "padding");
    const bool count_include_pad = context.arg(first + 4).integer != 0;
    if (context.arg(first + 5).kind == ir::Argument::Kind::kInt) {
      divisor_override = context.arg(first + 5).integer;
      if (*divisor_override == 0) context.refuse("divisor_override 0");
    }
    lead = rank - spatial;
    window.assign(lead, 1);
    strides.assign(lead, 1);
    pads.assign(lead, {0, 0});
    reached.assign(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(lead));
    counts.resize(spatial);
    for (size_t d = 0; d < spatial; ++d) {
      const int64_t size = in[lead + d], out = outs[lead + d];
      const int64_t k = kernel[d], s = stride[d], p = padding[d];
      if (k <= 0 || s <= 0 || p < 0) context.refuse("a non-positive kernel or stride, or negative padding");
      // ceil_mode's last window may reach past the padded input: pad the high side so it exists.
      const int64_t high = std::max<int64_t>(0, (out - 1) * s + k - p - size);
      window.push_back(k);
      strides.push_back(s);
      pads.emplace_back(p, high);
      reached.push_back((size + p + high - k) / s + 1);
      for (int64_t o = 0; o < out; ++o) {
        const int64_t start = o * s - p;
        const int64_t end = std::min(start + k, size + p);
        const int64_t clipped = std::min(end, size) - std::max<int64_t>(start, 0);
        if (clipped <= 0) context.refuse("a window over padding only");
        counts[d].push_back(count_include_pad ? end - start : clipped);
      }
    }
    if (reached != outs) context.refuse("an output shape other than the pooling's");
  }

  // Each output position's divisor, in `dtype`, over `out_sizes`.
  Tensor divisor(FunctionBuilder& builder, DType dtype, const std::vector<int64_t>& out_sizes) const {
    if (divisor_override) {
      return is_floating(dtype) ? builder.float_splat(static_cast<double>(*divisor_override), dtype, out_sizes)
                                : builder.splat(std::to_string(*divisor_override), dtype, out_sizes);
    }
    Tensor product;
    for (size_t d = 0; d < counts.size(); ++d) {
      const Tensor along = builder.broadcast_in_dim(vector_constant(builder, counts[d], dtype), out_sizes,
                                                    {static_cast<int64_t>(lead + d)});
      product = d == 0 ? along : builder.binary("stablehlo.multiply", product, along);
    }
    return product;
  }
};

}  // namespace

std::vector<Tensor> lower_avg_pool(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const bool integral = out.dtype == DType::kInt64 && context.tensor_dtype(0) == DType::kInt64;
  const DType compute = integral ? DType::kInt64 : floating_compute(context, out.dtype);
  FunctionBuilder& builder = context.builder();
  const Tensor x = builder.convert(context.tensor(0), compute);
  if (x.numel() == 0) context.refuse("an input with no elements");
  const AvgPoolWindows w(context, 1, x.shape, out.sizes);
  const Tensor sum = window_sum(builder, x, w.window, w.strides, w.pads, w.reached);
  return {builder.convert(builder.binary("stablehlo.divide", sum, w.divisor(builder, compute, out.sizes)), out.dtype)};
}

// avg_pool2d/3d_backward(grad_output, self, kernel_size, ...): each output position's gradient
// divided by its divisor, then spread over its window clipped to the input, as ATen's CPU
// kernel adds it there: the transpose of the forward's window sum (the quotients spread
// `stride - 1` apart, padded by `kernel - 1`, summed over stride-1 windows, then cropped from
// the padded input's coordinates to the input's). Half precision is refused: ATen adds each
// window's share in the dtype, rounding after every addition, which this sum does not model.
std::vector<Tensor> lower_avg_pool_backward(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  if (out.dtype != DType::kFloat32 && out.dtype != DType::kFloat64) {
    context.refuse("a gradient in " + ir::dtype_name(out.dtype) +
                   " (ATen rounds each window's share as it adds it: not modelled)");
  }
  const DType compute = out.dtype;
  FunctionBuilder& builder = context.builder();
  const Tensor grad = builder.convert(context.tensor(0), compute);
  const std::vector<int64_t>& in = context.tensor_type(1).sizes;
  if (in != out.sizes) context.refuse("a gradient of another shape than the input");
  if (grad.numel() == 0 || out.numel() == 0) context.refuse("empty tensors");
  const AvgPoolWindows w(context, 2, in, grad.shape);
  const Tensor quotients = builder.binary("stablehlo.divide", grad, w.divisor(builder, compute, grad.shape));
  const size_t rank = in.size();
  std::vector<int64_t> edge(rank, 0), interior(rank, 0), crop_low(rank, 0), crop_high(rank, 0);
  std::vector<int64_t> ones(rank, 1), spread_shape(rank);
  for (size_t d = w.lead; d < rank; ++d) {
    const int64_t k = w.window[d], s = w.strides[d], p = w.pads[d].first;
    edge[d] = k - 1;
    interior[d] = s - 1;
    const int64_t covered = (grad.shape[d] - 1) * s + k;  // padded positions some window covers
    crop_low[d] = -p;
    crop_high[d] = in[d] + p - covered;
  }
  const Tensor spread = builder.pad(quotients, edge, edge, interior);
  for (size_t d = 0; d < rank; ++d) spread_shape[d] = spread.shape[d] - w.window[d] + 1;
  const Tensor sums = window_sum(builder, spread, w.window, ones,
                                 std::vector<std::pair<int64_t, int64_t>>(rank, {0, 0}), spread_shape);
  return {builder.convert(builder.pad(sums, crop_low, crop_high, std::vector<int64_t>(rank, 0)), out.dtype)};
}

namespace {

// x's windows [starts[o], ends[o]) along `dim` summed, one per output position.
Tensor adaptive_sum_along(FunctionBuilder& builder, const Tensor& x, size_t dim, const std::vector<int64_t>& starts,
                          const std::vector<int64_t>& ends) {
  const int64_t in = x.shape[dim];
  const auto outs = static_cast<int64_t>(starts.size());
  std::vector<int64_t> shape = x.shape;
  shape[dim] = outs;
  if (in % outs == 0) {
    std::vector<int64_t> window(x.shape.size(), 1);
    window[dim] = in / outs;
    return window_sum(builder, x, window, window, std::vector<std::pair<int64_t, int64_t>>(x.shape.size(), {0, 0}),
                      shape);
  }
  std::vector<Tensor> sums;
  std::vector<int64_t> kept = x.shape;
  kept.erase(kept.begin() + static_cast<std::ptrdiff_t>(dim));
  std::vector<int64_t> one = x.shape;
  one[dim] = 1;
  for (int64_t o = 0; o < outs; ++o) {
    std::vector<int64_t> first(x.shape.size(), 0), limit = x.shape, steps(x.shape.size(), 1);
    first[dim] = starts[static_cast<size_t>(o)];
    limit[dim] = ends[static_cast<size_t>(o)];
    std::vector<int64_t> sliced = x.shape;
    sliced[dim] = limit[dim] - first[dim];
    const Tensor window = builder.op("stablehlo.slice", {x}, x.dtype, sliced,
                                     "limit_indices = " + i64_array(limit) + ", start_indices = " + i64_array(first) +
                                         ", strides = " + i64_array(steps));
    sums.push_back(builder.reshape(reduce_sum(builder, window, {static_cast<int64_t>(dim)}, kept), one));
  }
  return builder.op("stablehlo.concatenate", sums, x.dtype, shape, "dimension = " + std::to_string(dim) + " : i64");
}

// The windows of an adaptive pool's dimension: output o spans [floor(o * in / out),
// ceil((o + 1) * in / out)).
std::pair<std::vector<int64_t>, std::vector<int64_t>> adaptive_windows(int64_t in, int64_t outs) {
  std::vector<int64_t> starts, ends;
  for (int64_t o = 0; o < outs; ++o) {
    starts.push_back(o * in / outs);
    ends.push_back(((o + 1) * in + outs - 1) / outs);
  }
  return {starts, ends};
}

// The transpose of adaptive_sum_along: each of x's positions along `dim` added to every
// position of its window in a dimension of size `in`.
Tensor adaptive_spread_along(FunctionBuilder& builder, const Tensor& x, size_t dim, int64_t in,
                             const std::vector<int64_t>& starts, const std::vector<int64_t>& ends) {
  const int64_t outs = x.shape[dim];
  std::vector<int64_t> shape = x.shape;
  shape[dim] = in;
  if (in % outs == 0) {  // disjoint windows of one size: each value repeated across its window
    std::vector<int64_t> repeated = x.shape, dims;
    repeated.insert(repeated.begin() + static_cast<std::ptrdiff_t>(dim) + 1, in / outs);
    for (size_t d = 0; d < x.shape.size(); ++d) dims.push_back(static_cast<int64_t>(d <= dim ? d : d + 1));
    return builder.reshape(builder.broadcast_in_dim(x, repeated, dims), shape);
  }
  Tensor sum = builder.zeros(x.dtype, shape);
  const std::vector<int64_t> none(x.shape.size(), 0), steps(x.shape.size(), 1);
  for (int64_t o = 0; o < outs; ++o) {
    std::vector<int64_t> first(x.shape.size(), 0), limit = x.shape, one = x.shape;
    first[dim] = o;
    limit[dim] = o + 1;
    one[dim] = 1;
    const Tensor value = builder.op("stablehlo.slice", {x}, x.dtype, one,
                                    "limit_indices = " + i64_array(limit) + ", start_indices = " +
                                        i64_array(first) + ", strides = " + i64_array(steps));
    std::vector<int64_t> window = x.shape, all(x.shape.size());
    window[dim] = ends[static_cast<size_t>(o)] - starts[static_cast<size_t>(o)];
    for (size_t d = 0; d < all.size(); ++d) all[d] = static_cast<int64_t>(d);
    std::vector<int64_t> low = none, high = none;
    low[dim] = starts[static_cast<size_t>(o)];
    high[dim] = in - ends[static_cast<size_t>(o)];
    sum = builder.binary("stablehlo.add", sum, builder.pad(builder.broadcast_in_dim(value, window, all), low, high, none));
  }
  return sum;
}

}  // namespace

std::vector<Tensor> lower_adaptive_avg_pool(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const DType compute = floating_compute(context, out.dtype);
  FunctionBuilder& builder = context.builder();
  const Tensor x = builder.convert(context.tensor(0), compute);
  const size_t spatial = context.op().starts_with("aten::_adaptive_avg_pool3d") ? 3 : 2;
  // The OpInfo sweep finds half-precision 3-d pools off by more than one rounding.
  if (spatial == 3 && compute != out.dtype) context.refuse("half-precision 3-d adaptive pooling (ATen's rounding)");
  const size_t rank = x.shape.size();
  if ((rank != spatial + 1 && rank != spatial + 2) || out.sizes.size() != rank) context.refuse("an input of that rank");
  if (x.numel() == 0) context.refuse("an input with no elements");
  const size_t lead = rank - spatial;
  Tensor sum = x;
  std::vector<std::vector<int64_t>> extents(spatial);
  for (size_t d = 0; d < spatial; ++d) {
    const int64_t in = x.shape[lead + d], outs = out.sizes[lead + d];
    if (outs <= 0) context.refuse("an empty output size");
    const auto [starts, ends] = adaptive_windows(in, outs);
    for (int64_t o = 0; o < outs; ++o) extents[d].push_back(ends[static_cast<size_t>(o)] - starts[static_cast<size_t>(o)]);
    sum = adaptive_sum_along(builder, sum, lead + d, starts, ends);
  }
  if (sum.shape != out.sizes) context.refuse("an output shape other than the pooling's");
  for (size_t d = 0; d < spatial; ++d) {
    const Tensor extent = builder.broadcast_in_dim(vector_constant(builder, extents[d], compute), out.sizes,
                                                   {static_cast<int64_t>(lead + d)});
    sum = builder.binary("stablehlo.divide", sum, extent);
  }
  return {builder.convert(sum, out.dtype)};
}

// _adaptive_avg_pool2d/3d_backward(grad_output, self): each output position's gradient divided
// by its window's extents in turn (as ATen's CPU kernel, gout / kh / kw), then added to every
// input position of its window, one dimension at a time. float32 and float64; half precision
// keeps the host round trip (ATen rounds each share as it adds it).
std::vector<Tensor> lower_adaptive_avg_pool_backward(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  if (out.dtype != DType::kFloat32 && out.dtype != DType::kFloat64) {
    context.refuse("a gradient in " + ir::dtype_name(out.dtype) +
                   " (ATen rounds each window's share as it adds it: not modelled)");
  }
  FunctionBuilder& builder = context.builder();
  Tensor grad = builder.convert(context.tensor(0), out.dtype);
  const std::vector<int64_t>& in = context.tensor_type(1).sizes;
  const size_t spatial = context.op().starts_with("aten::_adaptive_avg_pool3d") ? 3 : 2;
  const size_t rank = in.size();
  if ((rank != spatial + 1 && rank != spatial + 2) || grad.shape.size() != rank || in != out.sizes) {
    context.refuse("an input of that rank, or a gradient of another shape");
  }
  if (grad.numel() == 0 || out.numel() == 0) context.refuse("empty tensors");
  const size_t lead = rank - spatial;
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> windows;
  for (size_t d = 0; d < spatial; ++d) {
    windows.push_back(adaptive_windows(in[lead + d], grad.shape[lead + d]));
    std::vector<int64_t> extents;
    for (size_t o = 0; o < windows[d].first.size(); ++o) extents.push_back(windows[d].second[o] - windows[d].first[o]);
    const Tensor extent = builder.broadcast_in_dim(vector_constant(builder, extents, out.dtype), grad.shape,
                                                   {static_cast<int64_t>(lead + d)});
    grad = builder.binary("stablehlo.divide", grad, extent);
  }
  for (size_t d = 0; d < spatial; ++d) {
    grad = adaptive_spread_along(builder, grad, lead + d, in[lead + d], windows[d].first, windows[d].second);
  }
  return {grad};
}

}  // namespace torch_tpu::executors::pjrt::lowering
