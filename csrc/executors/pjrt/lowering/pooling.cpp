// avg_pool2d / avg_pool3d(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
// divisor_override) as a stablehlo.reduce_window sum over the zero-padded input divided by
// each window's count, as ATen's CPU kernel: the count is divisor_override, else the window
// clipped to the padded input (count_include_pad) or to the input. Counts depend only on the
// output position, so they are constants. Half precision sums in f32 and rounds once. int64
// (the one integer dtype ATen's CPU kernel takes) sums in int64 and divides truncating toward
// zero, as C++ integer division there. Refused: windows that cover no input element (ATen
// writes 0 there).
// _adaptive_avg_pool2d / 3d(self, output_size): window o of a dimension spans
// [floor(o * in / out), ceil((o + 1) * in / out)); ATen divides the window's sum by each
// dimension's extent in turn. Equal windows are one reduce_window, others one slice and sum
// per output position and dimension.
#include <algorithm>

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

std::vector<Tensor> lower_avg_pool(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const bool integral = out.dtype == DType::kInt64 && context.tensor_dtype(0) == DType::kInt64;
  const DType compute = integral ? DType::kInt64 : floating_compute(context, out.dtype);
  FunctionBuilder& builder = context.builder();
  const Tensor x = builder.convert(context.tensor(0), compute);
  const size_t spatial = context.op().starts_with("aten::avg_pool3d") ? 3 : 2;
  const size_t rank = x.shape.size();
  if ((rank != spatial + 1 && rank != spatial + 2) || out.sizes.size() != rank) context.refuse("an input of that rank");
  if (x.numel() == 0) context.refuse("an input with no elements");
  const std::vector<int64_t> kernel = per_dimension(context, 1, spatial, "kernel_size");
  const std::vector<int64_t> stride =
      context.arg(2).list.empty() ? kernel : per_dimension(context, 2, spatial, "stride");
  const std::vector<int64_t> padding = per_dimension(context, 3, spatial, "padding");
  const bool count_include_pad = context.arg(5).integer != 0;
  const bool overridden = context.arg(6).kind == ir::Argument::Kind::kInt;
  if (overridden && context.arg(6).integer == 0) context.refuse("divisor_override 0");

  const size_t lead = rank - spatial;
  std::vector<int64_t> window(lead, 1), strides(lead, 1);
  std::vector<std::pair<int64_t, int64_t>> pads(lead, {0, 0});
  std::vector<int64_t> reached(x.shape.begin(), x.shape.begin() + static_cast<std::ptrdiff_t>(lead));
  std::vector<std::vector<int64_t>> counts(spatial);
  for (size_t d = 0; d < spatial; ++d) {
    const int64_t in = x.shape[lead + d], outs = out.sizes[lead + d];
    const int64_t k = kernel[d], s = stride[d], p = padding[d];
    if (k <= 0 || s <= 0 || p < 0) context.refuse("a non-positive kernel or stride, or negative padding");
    // ceil_mode's last window may reach past the padded input: pad the high side so it exists.
    const int64_t high = std::max<int64_t>(0, (outs - 1) * s + k - p - in);
    window.push_back(k);
    strides.push_back(s);
    pads.emplace_back(p, high);
    reached.push_back((in + p + high - k) / s + 1);
    for (int64_t o = 0; o < outs; ++o) {
      const int64_t start = o * s - p;
      const int64_t end = std::min(start + k, in + p);
      const int64_t clipped = std::min(end, in) - std::max<int64_t>(start, 0);
      if (clipped <= 0) context.refuse("a window over padding only");
      counts[d].push_back(count_include_pad ? end - start : clipped);
    }
  }
  if (reached != out.sizes) context.refuse("an output shape other than the pooling's");
  const Tensor sum = window_sum(builder, x, window, strides, pads, reached);
  Tensor divisor;
  if (overridden) {
    divisor = integral ? builder.splat(std::to_string(context.arg(6).integer), compute, out.sizes)
                       : builder.float_splat(static_cast<double>(context.arg(6).integer), compute, out.sizes);
  } else {
    for (size_t d = 0; d < spatial; ++d) {
      const Tensor along = builder.broadcast_in_dim(vector_constant(builder, counts[d], compute), out.sizes,
                                                    {static_cast<int64_t>(lead + d)});
      divisor = d == 0 ? along : builder.binary("stablehlo.multiply", divisor, along);
    }
  }
  return {builder.convert(builder.binary("stablehlo.divide", sum, divisor), out.dtype)};
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
    std::vector<int64_t> starts, ends;
    for (int64_t o = 0; o < outs; ++o) {
      starts.push_back(o * in / outs);
      ends.push_back(((o + 1) * in + outs - 1) / outs);
      extents[d].push_back(ends.back() - starts.back());
    }
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

}  // namespace torch_tpu::executors::pjrt::lowering
