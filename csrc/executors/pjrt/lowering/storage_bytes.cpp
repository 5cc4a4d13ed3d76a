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

// storage[begin:end] (bytes); the array itself when that is all of it.
Tensor byte_slice(FunctionBuilder& builder, const Tensor& storage, int64_t begin, int64_t end) {
  if (begin == 0 && end == storage.shape[0]) return storage;
  return builder.op("stablehlo.slice", {storage}, DType::kUInt8, {end - begin},
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

}  // namespace

bool is_contiguous(const ir::TensorType& type) {
  int64_t expected = 1;
  for (size_t d = type.sizes.size(); d-- > 0;) {
    if (type.sizes[d] != 1 && type.strides[d] != expected) return false;
    expected *= type.sizes[d];
  }
  return true;
}

Tensor read_value(FunctionBuilder& builder, const Tensor& storage, const ir::TensorType& type) {
  const int64_t size = ir::element_size(type.dtype);
  element_type(type.dtype);  // refuses dtypes without a StableHLO element type
  if (type.numel() == 0) return builder.zeros(type.dtype, type.sizes);
  const auto [first, end] = element_span(type);
  const Tensor elements = bytes_as(builder, byte_slice(builder, storage, first * size, end * size),
                                   type.dtype);
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
                   const ir::TensorType& type, const Tensor& value) {
  if (value.shape != type.sizes || value.dtype != type.dtype) {
    throw std::logic_error("write_value: a " + value.type() + " written at layout " +
                           ir::to_text(type));
  }
  const int64_t size = ir::element_size(type.dtype);
  auto storage_before = [&] { return before ? *before : builder.zeros(DType::kUInt8, {bytes}); };
  if (type.numel() == 0) return storage_before();
  for (size_t d = 0; d < type.sizes.size(); ++d) {
    if (type.sizes[d] > 1 && type.strides[d] == 0) {
      throw NotSupported("not supported yet: a write into the overlapping layout " +
                                  ir::to_text(type));
    }
  }
  if (is_contiguous(type)) {
    const Tensor written = to_bytes(builder, value);
    const int64_t begin = type.storage_offset * size;
    if (begin == 0 && written.shape[0] == bytes) return written;
    const Tensor storage = storage_before();
    const Tensor start = builder.splat(std::to_string(begin), DType::kInt64, {});
    return builder.op("stablehlo.dynamic_update_slice", {storage, written, start}, DType::kUInt8,
                      storage.shape);
  }
  // Each element's bytes are a window of `size` bytes at its byte offset.
  const int64_t count = type.numel();
  const Tensor updates = builder.reshape(to_bytes(builder, value), {count, size});
  const Tensor starts = builder.reshape(
      strided_indices(builder, type.sizes, type.strides, type.storage_offset, size), {count, 1});
  const Tensor storage = storage_before();
  const Tensor old_byte = builder.region_argument(DType::kUInt8);
  const Tensor new_byte = builder.region_argument(DType::kUInt8);
  const std::string region = "      \"stablehlo.return\"(" + new_byte.name + ") : (" +
                             new_byte.type() + ") -> ()\n";
  return builder.op_with_region(
      "stablehlo.scatter", {storage, starts, updates}, DType::kUInt8, storage.shape,
      "indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<"
      "update_window_dims = [1], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, "
      "unique_indices = false",
      {old_byte, new_byte}, region);
}

}  // namespace torch_tpu::executors::pjrt::lowering
