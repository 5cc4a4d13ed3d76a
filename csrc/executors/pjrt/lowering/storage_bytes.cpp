#include "executors/pjrt/lowering/storage_bytes.h"

#include <stdexcept>

#include "ir/printer.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

// First and one-past-last element (from the storage's start) that `type` reaches.
std::pair<int64_t, int64_t> element_span(const ir::TensorType& type) {
  if (type.numel() == 0) return {type.storage_offset, type.storage_offset};
  int64_t last = type.storage_offset;
  for (size_t d = 0; d < type.sizes.size(); ++d) last += (type.sizes[d] - 1) * type.strides[d];
  return {type.storage_offset, last + 1};
}

// storage[begin:end], in the storage's units; the array itself when that is all of it.
Tensor unit_slice(FunctionBuilder& builder, const Tensor& storage, int64_t begin, int64_t end) {
  if (begin == 0 && end == storage.shape[0]) return storage;
  return builder.op("stablehlo.slice", {storage}, storage.dtype, {end - begin},
                    "start_indices = " + i64_array({begin}) + ", limit_indices = " +
                        i64_array({end}) + ", strides = " + i64_array({1}));
}

// 1-D bytes (a multiple of the element size) as 1-D elements of `dtype`.
Tensor bytes_as(FunctionBuilder& builder, const Tensor& bytes, DType dtype) {
  const int64_t size = ir::element_size(dtype);
  const int64_t count = bytes.shape[0] / size;
  if (dtype == DType::kUInt8) return bytes;
  // XLA's pred is a byte; PyTorch's bools are 0 or 1, so any non-zero byte reads as true.
  if (dtype == DType::kBool) {
    return builder.op("stablehlo.compare", {bytes, builder.zeros(DType::kUInt8, bytes.shape)},
                      DType::kBool, bytes.shape,
                      "comparison_direction = #stablehlo<comparison_direction NE>");
  }
  if (size == 1) return builder.op("stablehlo.bitcast_convert", {bytes}, dtype, {count});
  // A narrower-to-wider bitcast takes the bytes of each element as a trailing dimension.
  const Tensor grouped = builder.reshape(bytes, {count, size});
  return builder.op("stablehlo.bitcast_convert", {grouped}, dtype, {count});
}

// i64 indices shaped `sizes`: first + sum_d iota_d * strides[d], each times `scale`.
Tensor strided_indices(FunctionBuilder& builder, const std::vector<int64_t>& sizes,
                       const std::vector<int64_t>& strides, int64_t first, int64_t scale) {
  Tensor indices = builder.splat(std::to_string(first * scale), DType::kInt64, sizes);
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1 || strides[d] == 0) continue;
    const Tensor iota = builder.op("stablehlo.iota", {}, DType::kInt64, sizes,
                                   "iota_dimension = " + std::to_string(d) + " : i64");
    const Tensor step = builder.splat(std::to_string(strides[d] * scale), DType::kInt64, sizes);
    indices = builder.binary("stablehlo.add", indices, builder.binary("stablehlo.multiply", iota, step));
  }
  return indices;
}

// Storage units per element of `dtype`: 1 in a storage of `dtype` elements, else (a byte
// storage) its size in bytes.
int64_t units_per_element(DType storage, DType dtype) {
  if (storage == dtype) return 1;
  if (storage != DType::kUInt8) {
    throw std::logic_error("a " + ir::dtype_name(dtype) + " value over a storage of " +
                           ir::dtype_name(storage) + " elements");
  }
  return ir::element_size(dtype);
}

// `value`'s elements as units of a storage of `unit` (itself flattened, or its bytes).
Tensor to_units(FunctionBuilder& builder, const Tensor& value, DType unit) {
  if (unit == value.dtype) return builder.reshape(value, {value.numel()});
  return to_bytes(builder, value);
}

}  // namespace

DType storage_unit(const std::vector<DType>& value_dtypes, int64_t bytes) {
  if (value_dtypes.empty()) return DType::kUInt8;
  const DType dtype = value_dtypes.front();
  for (const DType other : value_dtypes) {
    if (other != dtype) return DType::kUInt8;
  }
  // A bool storage stays bytes: PyTorch's bools are any byte read as non-zero.
  if (dtype == DType::kBool || bytes % ir::element_size(dtype) != 0) return DType::kUInt8;
  try {
    element_type(dtype);
  } catch (const NotSupported&) {
    return DType::kUInt8;
  }
  return dtype;
}

bool is_contiguous(const ir::TensorType& type) {
  int64_t expected = 1;
  for (size_t d = type.sizes.size(); d-- > 0;) {
    if (type.sizes[d] != 1 && type.strides[d] != expected) return false;
    expected *= type.sizes[d];
  }
  return true;
}

Tensor read_value(FunctionBuilder& builder, const Tensor& storage, const ir::TensorType& type) {
  element_type(type.dtype);  // refuses dtypes without a StableHLO element type
  const int64_t size = units_per_element(storage.dtype, type.dtype);
  if (type.numel() == 0) return builder.zeros(type.dtype, type.sizes);
  const auto [first, end] = element_span(type);
  const Tensor span = unit_slice(builder, storage, first * size, end * size);
  const Tensor elements = storage.dtype == type.dtype ? span : bytes_as(builder, span, type.dtype);
  if (is_contiguous(type)) return builder.reshape(elements, type.sizes);
  // Element i of the value is elements[sum_d i_d * strides[d]] (offset already sliced off).
  const Tensor indices = strided_indices(builder, type.sizes, type.strides, 0, 1);
  return builder.op("stablehlo.gather", {elements, indices}, type.dtype, type.sizes,
                    "dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], "
                    "start_index_map = [0], index_vector_dim = " +
                        std::to_string(type.sizes.size()) +
                        ">, indices_are_sorted = false, slice_sizes = " + i64_array({1}));
}

Tensor to_bytes(FunctionBuilder& builder, const Tensor& value) {
  const int64_t count = value.numel();
  const Tensor flat = builder.reshape(value, {count});
  if (value.dtype == DType::kUInt8) return flat;
  if (value.dtype == DType::kBool) return builder.convert(flat, DType::kUInt8);
  const int64_t size = ir::element_size(value.dtype);
  if (size == 1) return builder.op("stablehlo.bitcast_convert", {flat}, DType::kUInt8, {count});
  // A wider-to-narrower bitcast adds the element's bytes as a trailing dimension.
  const Tensor grouped = builder.op("stablehlo.bitcast_convert", {flat}, DType::kUInt8, {count, size});
  return builder.reshape(grouped, {count * size});
}

Tensor write_value(FunctionBuilder& builder, const std::optional<Tensor>& before, int64_t bytes,
                   DType unit, const ir::TensorType& type, const Tensor& value) {
  if (value.shape != type.sizes || value.dtype != type.dtype) {
    throw std::logic_error("write_value: a " + value.type() + " written at layout " +
                           ir::to_text(type));
  }
  const int64_t size = units_per_element(unit, type.dtype);
  const int64_t units = bytes / ir::element_size(unit);
  auto storage_before = [&] { return before ? *before : builder.zeros(unit, {units}); };
  if (type.numel() == 0) return storage_before();
  for (size_t d = 0; d < type.sizes.size(); ++d) {
    if (type.sizes[d] > 1 && type.strides[d] == 0) {
      throw NotSupported("not supported yet: a write into the overlapping layout " +
                                  ir::to_text(type));
    }
  }
  if (is_contiguous(type)) {
    const Tensor written = to_units(builder, value, unit);
    const int64_t begin = type.storage_offset * size;
    if (begin == 0 && written.shape[0] == units) return written;
    const Tensor storage = storage_before();
    const Tensor start = builder.splat(std::to_string(begin), DType::kInt64, {});
    return builder.op("stablehlo.dynamic_update_slice", {storage, written, start}, unit,
                      storage.shape);
  }
  // Each element's units are a window of `size` units at its offset.
  const int64_t count = type.numel();
  const Tensor updates = builder.reshape(to_units(builder, value, unit), {count, size});
  const Tensor starts = builder.reshape(
      strided_indices(builder, type.sizes, type.strides, type.storage_offset, size), {count, 1});
  const Tensor storage = storage_before();
  const Tensor old_unit = builder.region_argument(unit);
  const Tensor new_unit = builder.region_argument(unit);
  const std::string region = "      \"stablehlo.return\"(" + new_unit.name + ") : (" +
                             new_unit.type() + ") -> ()\n";
  return builder.op_with_region(
      "stablehlo.scatter", {storage, starts, updates}, unit, storage.shape,
      "indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<"
      "update_window_dims = [1], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, "
      "unique_indices = false",
      {old_unit, new_unit}, region);
}

std::string conversion_module(DType from, DType to, int64_t bytes) {
  FunctionBuilder builder;
  const Tensor storage = builder.parameter(from, {bytes / ir::element_size(from)});
  const Tensor as_bytes = from == DType::kUInt8 ? storage : to_bytes(builder, storage);
  return builder.finish_module({to == DType::kUInt8 ? as_bytes : bytes_as(builder, as_bytes, to)});
}

}  // namespace torch_tpu::executors::pjrt::lowering
