// What the reduction, arg-reduction, scan and sort lowerings share: the dimensions a dim
// argument names, the identities of maximum and minimum, comparisons and NaN masks.
#include <algorithm>
#include <limits>

#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

template <typename T>
std::string integer_literal(bool lowest) {
  return std::to_string(lowest ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max());
}

// -inf / +inf (floating, as hex bit patterns of the type's width), or the integer limits.
std::string extreme_literal(DType dtype, bool lowest) {
  switch (dtype) {
    case DType::kBool: return lowest ? "false" : "true";
    case DType::kFloat16: return lowest ? "0xFC00" : "0x7C00";
    case DType::kBFloat16: return lowest ? "0xFF80" : "0x7F80";
    case DType::kFloat32: return lowest ? "0xFF800000" : "0x7F800000";
    case DType::kFloat64: return lowest ? "0xFFF0000000000000" : "0x7FF0000000000000";
    case DType::kUInt8: return integer_literal<uint8_t>(lowest);
    case DType::kInt8: return integer_literal<int8_t>(lowest);
    case DType::kInt16: return integer_literal<int16_t>(lowest);
    case DType::kInt32: return integer_literal<int32_t>(lowest);
    case DType::kInt64: return integer_literal<int64_t>(lowest);
    case DType::kUInt16: return integer_literal<uint16_t>(lowest);
    case DType::kUInt32: return integer_literal<uint32_t>(lowest);
    case DType::kUInt64: return integer_literal<uint64_t>(lowest);
    default:
      throw NotSupported("not supported yet: the extremes of dtype " + ir::dtype_name(dtype) +
                         " in a StableHLO lowering");
  }
}

}  // namespace

std::vector<int64_t> reduction_dims(OpContext& context, size_t index, size_t rank,
                                    bool empty_list_is_all) {
  const auto r = static_cast<int64_t>(rank);
  std::vector<int64_t> named;
  const ir::Argument* arg = index < context.node().args.size() ? &context.arg(index) : nullptr;
  if (arg != nullptr && arg->kind == ir::Argument::Kind::kInt) {
    named = {arg->integer};
  } else if (arg != nullptr && arg->kind == ir::Argument::Kind::kIntList &&
             (!arg->list.empty() || !empty_list_is_all)) {
    named = arg->list;
  } else if (arg != nullptr && arg->kind != ir::Argument::Kind::kNone &&
             arg->kind != ir::Argument::Kind::kIntList) {
    context.refuse("argument " + std::to_string(index) + " is not a dimension");
  } else {
    for (int64_t d = 0; d < r; ++d) named.push_back(d);
  }
  std::vector<int64_t> dims;
  for (const int64_t dim : named) {
    if (r == 0 && (dim == 0 || dim == -1)) continue;
    if (dim < -r || dim >= r) context.refuse("dim " + std::to_string(dim) + " of rank " + std::to_string(r));
    dims.push_back(dim < 0 ? dim + r : dim);
  }
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  return dims;
}

std::vector<int64_t> kept_sizes(const std::vector<int64_t>& shape, const std::vector<int64_t>& dims) {
  std::vector<int64_t> kept;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!std::binary_search(dims.begin(), dims.end(), static_cast<int64_t>(d))) kept.push_back(shape[d]);
  }
  return kept;
}

Tensor lowest_value(FunctionBuilder& builder, DType dtype) {
  return builder.splat(extreme_literal(dtype, /*lowest=*/true), dtype, {});
}

Tensor highest_value(FunctionBuilder& builder, DType dtype) {
  return builder.splat(extreme_literal(dtype, /*lowest=*/false), dtype, {});
}

Tensor nan_mask(FunctionBuilder& builder, const Tensor& x) { return builder.compare(x, x, "NE"); }


}  // namespace torch_tpu::executors::pjrt::lowering
