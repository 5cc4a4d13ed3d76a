// histc as ATen's CPU kernel computes it (Histogram.cpp, HistogramKernel.cpp): the range is
// [min, max], or the data's own when min == max, widened by 1 on each side when still empty;
// its ends are rounded to the input's dtype (the first and last of linspace's bin edges); an
// element x in [left, right] lands in bin int64((x - left) * bins / (right - left)) in the
// input's arithmetic (half precision rounds each step), the right edge in the last bin;
// elements outside the range and NaNs are not counted.
#include "executors/pjrt/lowering/op_lowering.h"

#include <string>

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

// The largest count every element of `dtype` holds exactly: beyond it ATen's per-thread partial
// counts would round in an order the program cannot reproduce.
int64_t exact_count_limit(DType dtype) {
  switch (dtype) {
    case DType::kBFloat16: return int64_t{1} << 8;
    case DType::kFloat16: return int64_t{1} << 11;
    case DType::kFloat32: return int64_t{1} << 24;
    default: return int64_t{1} << 53;
  }
}

}  // namespace

std::vector<Tensor> lower_histc(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const DType dtype = context.tensor_dtype(0);
  if (!is_floating(dtype)) context.refuse("histc of dtype " + ir::dtype_name(dtype));
  const int64_t bins = context.arg(1).integer;
  if (bins <= 0) context.refuse("bins <= 0 (ATen raises)");
  FunctionBuilder& builder = context.builder();
  const Tensor input = context.tensor(0);
  const int64_t count = input.numel();
  if (count > exact_count_limit(dtype)) {
    context.refuse("more elements than " + ir::dtype_name(dtype) + " counts exactly");
  }
  const Tensor flat = builder.reshape(input, {count});

  // The range, in f64 as ATen picks it.
  auto f64 = [&](double value) { return builder.float_splat(value, DType::kFloat64, {}); };
  Tensor left = scalar_as(context, 2, DType::kFloat64);
  Tensor right = scalar_as(context, 3, DType::kFloat64);
  if (count > 0) {
    const Tensor wide = builder.convert(flat, DType::kFloat64);
    // Reduced from +inf and -inf (f64's bit patterns): NaN propagates, as in ATen's aminmax.
    const Tensor data_min = reduce(builder, wide, {0}, {}, "stablehlo.minimum",
                                   builder.splat("0x7FF0000000000000", DType::kFloat64, {}));
    const Tensor data_max = reduce(builder, wide, {0}, {}, "stablehlo.maximum",
                                   builder.splat("0xFFF0000000000000", DType::kFloat64, {}));
    const Tensor use_data = builder.compare(left, right, "EQ");
    left = builder.select(use_data, data_min, left);
    right = builder.select(use_data, data_max, right);
  }
  const Tensor empty_range = builder.compare(left, right, "EQ");
  left = builder.select(empty_range, builder.binary("stablehlo.subtract", left, f64(1.0)), left);
  right = builder.select(empty_range, builder.binary("stablehlo.add", right, f64(1.0)), right);
  auto is_finite = [&](const Tensor& value) {
    return builder.op("stablehlo.is_finite", {value}, DType::kBool, {});
  };
  const Tensor finite = builder.binary("stablehlo.and", is_finite(left), is_finite(right));
  context.check(builder.unary("stablehlo.not", finite), "torch.histc: range of [min, max] is not finite");
  context.check(builder.binary("stablehlo.and", finite, builder.compare(left, right, "GE")),
                "torch.histc: max must be larger than min");

  // Each element's bin in the input's arithmetic: f32 for half precision, rounded to it after
  // every step as c10::Half and c10::BFloat16 do.
  const DType compute = dtype == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
  const bool half = compute != dtype;
  auto rounded = [&](const Tensor& value) {
    return half ? builder.round_through(value, dtype) : value;
  };
  // The ends, picked in f64, rounded to the input dtype.
  const Tensor edge_left = builder.convert(builder.convert(left, dtype), compute);
  const Tensor edge_right = builder.convert(builder.convert(right, dtype), compute);
  const Tensor x = builder.convert(flat, compute);
  const std::vector<int64_t> shape = {count};
  const Tensor lefts = builder.broadcast_to(edge_left, shape);
  const Tensor rights = builder.broadcast_to(edge_right, shape);
  const Tensor offset = rounded(builder.binary("stablehlo.subtract", x, lefts));
  const Tensor scaled = rounded(builder.binary(
      "stablehlo.multiply", offset, rounded(builder.float_splat(static_cast<double>(bins), compute, shape))));
  const Tensor width = rounded(builder.binary("stablehlo.subtract", rights, lefts));
  const Tensor position = builder.convert(rounded(builder.binary("stablehlo.divide", scaled, width)), DType::kInt64);
  const Tensor last = builder.splat(std::to_string(bins - 1), DType::kInt64, shape);
  const Tensor bin = builder.op("stablehlo.clamp", {builder.zeros(DType::kInt64, shape), position, last},
                                DType::kInt64, shape);
  const Tensor counted = builder.binary("stablehlo.and", builder.compare(x, lefts, "GE"),
                                        builder.compare(x, rights, "LE"));

  // Counts in the compute dtype (exact below exact_count_limit), by a scatter-add of 1 for each
  // counted element and 0 for the rest.
  const Tensor ones = builder.convert(counted, compute);
  const Tensor counts = scatter_linear(builder, builder.zeros(compute, {bins}), builder.reshape(bin, {count, 1}),
                                       ones, [](FunctionBuilder& b, const Tensor& current, const Tensor& update) {
                                         return b.binary("stablehlo.add", current, update);
                                       });
  return {builder.reshape(builder.convert(counts, out.dtype), out.sizes)};
}

}  // namespace torch_tpu::executors::pjrt::lowering
