// What the indexing and scatter lowerings share: row-major positions into a flattened tensor,
// reading and writing elements at run-time positions, index operands and their range checks,
// and a Scalar converted to a tensor's dtype as ATen converts it.
#include <limits>

#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

// The C++ type name ATen's overflow error gives for `dtype`.
std::string aten_type_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat16: return "c10::Half";
    case DType::kBFloat16: return "c10::BFloat16";
    case DType::kFloat32: return "float";
    case DType::kInt8: return "signed char";
    case DType::kInt16: return "short";
    case DType::kInt32: return "int";
    case DType::kInt64: return "int64_t";
    default: return ir::dtype_name(dtype);
  }
}

// The largest finite value of a floating dtype, and the limits of a signed integral one, as
// doubles (ATen's overflow test compares the double against them).
double largest_finite(DType dtype) {
  switch (dtype) {
    case DType::kFloat16: return 65504.0;
    case DType::kBFloat16: return 3.3895313892515355e38;
    default: return static_cast<double>(std::numeric_limits<float>::max());
  }
}

std::pair<int64_t, int64_t> integral_limits(DType dtype) {
  switch (dtype) {
    case DType::kInt8: return {std::numeric_limits<int8_t>::lowest(), std::numeric_limits<int8_t>::max()};
    case DType::kInt16: return {std::numeric_limits<int16_t>::lowest(), std::numeric_limits<int16_t>::max()};
    case DType::kInt32: return {std::numeric_limits<int32_t>::lowest(), std::numeric_limits<int32_t>::max()};
    default: return {std::numeric_limits<int64_t>::lowest(), std::numeric_limits<int64_t>::max()};
  }
}

}  // namespace

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

Tensor at_least_1d(FunctionBuilder& builder, const Tensor& x) {
  return x.shape.empty() ? builder.reshape(x, {1}) : x;
}

Tensor take_linear(FunctionBuilder& builder, const Tensor& self, const Tensor& linear) {
  const Tensor flat = builder.reshape(self, {self.numel()});
  return builder.op("stablehlo.gather", {flat, linear}, self.dtype, linear.shape,
                    "dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], "
                    "start_index_map = [0], index_vector_dim = " +
                        std::to_string(linear.shape.size()) +
                        ">, indices_are_sorted = false, slice_sizes = " + i64_array({1}));
}

Tensor coordinate_term(FunctionBuilder& builder, const std::vector<int64_t>& shape, size_t dim, int64_t stride) {
  const Tensor coordinate = builder.op("stablehlo.iota", {}, DType::kInt64, shape,
                                       "iota_dimension = " + std::to_string(dim) + " : i64");
  return builder.binary("stablehlo.multiply", coordinate,
                        builder.splat(std::to_string(stride), DType::kInt64, shape));
}

Tensor linear_positions(FunctionBuilder& builder, const std::vector<int64_t>& self_shape,
                        const std::vector<int64_t>& shape, int64_t dim, const Tensor& along) {
  const std::vector<int64_t> strides = row_major_strides(self_shape);
  Tensor linear = builder.binary("stablehlo.multiply", along,
                                 builder.splat(std::to_string(strides[static_cast<size_t>(dim)]), DType::kInt64, shape));
  for (size_t d = 0; d < shape.size(); ++d) {
    if (static_cast<int64_t>(d) == dim) continue;
    linear = builder.binary("stablehlo.add", linear, coordinate_term(builder, shape, d, strides[d]));
  }
  return linear;
}

Tensor index_operand(OpContext& context, size_t index) {
  const DType dtype = context.tensor_dtype(index);
  if (dtype != DType::kInt64 && dtype != DType::kInt32) context.refuse("indices of dtype " + ir::dtype_name(dtype));
  return context.builder().convert(context.tensor(index), DType::kInt64);
}

Tensor out_of_range(FunctionBuilder& builder, const Tensor& index, int64_t size) {
  const Tensor below = builder.compare(index, builder.zeros(DType::kInt64, index.shape), "LT");
  const Tensor above = builder.compare(index, builder.splat(std::to_string(size), DType::kInt64, index.shape), "GE");
  return builder.binary("stablehlo.or", below, above);
}

Tensor scatter_linear(FunctionBuilder& builder, const Tensor& flat, const Tensor& positions,
                      const Tensor& updates, const ScatterCombine& combine) {
  const Tensor current = builder.region_argument(flat.dtype);
  const Tensor update = builder.region_argument(flat.dtype);
  const std::string region = builder.region_body([&] { return std::vector<Tensor>{combine(builder, current, update)}; });
  return builder.op_with_region(
      "stablehlo.scatter", {flat, positions, updates}, flat.dtype, flat.shape,
      "scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], "
      "scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, indices_are_sorted = false, "
      "unique_indices = false",
      {current, update}, region);
}

Tensor assign_linear_last_wins(FunctionBuilder& builder, const Tensor& flat, const Tensor& positions,
                               const Tensor& updates) {
  if (positions.numel() == 0) return flat;
  // The largest ordinal writing each element is the same whatever order XLA applies the
  // updates in (unlike a plain overwriting scatter); the element then reads that update.
  const Tensor ordinals = builder.op("stablehlo.iota", {}, DType::kInt64, positions.shape, "iota_dimension = 0 : i64");
  const Tensor winner = scatter_linear(builder, builder.splat("-1", DType::kInt64, flat.shape), positions, ordinals,
                                       [](FunctionBuilder& b, const Tensor& x, const Tensor& y) {
                                         return b.binary("stablehlo.maximum", x, y);
                                       });
  const Tensor zero = builder.zeros(DType::kInt64, flat.shape);
  const Tensor written = builder.compare(winner, zero, "GE");
  const Tensor source = builder.select(written, winner, zero);
  return builder.select(written, take_linear(builder, updates, source), flat);
}

Tensor written_mask(FunctionBuilder& builder, int64_t count, const Tensor& positions) {
  return scatter_linear(builder, builder.zeros(DType::kBool, {count}), positions,
                        builder.splat("true", DType::kBool, positions.shape),
                        [](FunctionBuilder&, const Tensor&, const Tensor& y) { return y; });
}

Tensor value_as(OpContext& context, const Tensor& value, DType dtype) {
  FunctionBuilder& builder = context.builder();
  if (value.dtype == DType::kBool) return builder.convert(value, dtype);
  // Scalar::to<T>() reads a double or an int64.
  const Tensor scalar = builder.convert(value, is_floating(value.dtype) ? DType::kFloat64 : DType::kInt64);
  if (dtype == DType::kBool) return builder.compare(scalar, builder.zeros(scalar.dtype, {}), "NE");
  const std::string overflow = "value cannot be converted to type " + aten_type_name(dtype) + " without overflow";
  if (is_floating(dtype)) {
    const bool can_overflow = dtype != DType::kFloat64 && (scalar.dtype == DType::kFloat64 || dtype == DType::kFloat16);
    if (can_overflow) {
      // Infinities and NaN convert; a finite value beyond the type's range raises.
      const Tensor magnitude = builder.unary("stablehlo.abs", builder.convert(scalar, DType::kFloat64));
      const Tensor beyond = builder.compare(magnitude, builder.float_splat(largest_finite(dtype), DType::kFloat64, {}), "GT");
      // +inf as hex bits: the MLIR parser has no "inf" literal.
      const Tensor finite = builder.compare(magnitude, builder.splat("0x7FF0000000000000", DType::kFloat64, {}), "NE");
      context.check(builder.binary("stablehlo.and", beyond, finite), overflow);
    }
    // ATen rounds to float first, then to half precision.
    if (dtype == DType::kFloat16 || dtype == DType::kBFloat16) {
      return builder.convert(builder.convert(scalar, DType::kFloat32), dtype);
    }
    return builder.convert(scalar, dtype);
  }
  if (dtype != DType::kInt8 && dtype != DType::kInt16 && dtype != DType::kInt32 && dtype != DType::kInt64) {
    context.refuse("a Scalar converted to " + ir::dtype_name(dtype));
  }
  const auto [lowest, highest] = integral_limits(dtype);
  if (scalar.dtype == DType::kFloat64) {
    const Tensor nan = builder.compare(scalar, scalar, "NE");
    const Tensor below = builder.compare(scalar, builder.float_splat(static_cast<double>(lowest), DType::kFloat64, {}), "LT");
    const Tensor above = builder.compare(scalar, builder.float_splat(static_cast<double>(highest), DType::kFloat64, {}), "GT");
    context.check(builder.binary("stablehlo.or", nan, builder.binary("stablehlo.or", below, above)), overflow);
  } else if (dtype != DType::kInt64) {
    const Tensor below = builder.compare(scalar, builder.splat(std::to_string(lowest), DType::kInt64, {}), "LT");
    const Tensor above = builder.compare(scalar, builder.splat(std::to_string(highest), DType::kInt64, {}), "GT");
    context.check(builder.binary("stablehlo.or", below, above), overflow);
  }
  return builder.convert(scalar, dtype);
}

Tensor scalar_as(OpContext& context, size_t index, DType dtype) {
  return value_as(context, context.scalar(index), dtype);
}

bool is_half_precision(DType dtype) { return dtype == DType::kFloat16 || dtype == DType::kBFloat16; }

}  // namespace torch_tpu::executors::pjrt::lowering
