#include "executors/pjrt/lowering/storage_bytes.h"

#include <algorithm>
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

// A strided layout read without a gather (a gather costs each element's index on a TPU): when
// the strides of its dimensions (size-1 ones aside, stride-0 ones broadcast) nest, each
// dividing the next larger without overlap, the span from the first element is a dense box
// [size_0, stride_0 / stride_1, ..., stride_k] padded at its end; the value is the box's
// leading corner, transposed back into the layout's dimension order. Transposes, step slices
// and expanded views read so. nullopt for other layouts (negative or overlapping strides).
std::optional<Tensor> box_read(FunctionBuilder& builder, const Tensor& elements, const ir::TensorType& type) {
  std::vector<size_t> dims;  // dimensions with a size above 1 and a stride
  std::vector<size_t> broadcast;
  for (size_t d = 0; d < type.sizes.size(); ++d) {
    if (type.sizes[d] == 1) continue;
    if (type.strides[d] < 0) return std::nullopt;
    (type.strides[d] == 0 ? broadcast : dims).push_back(d);
  }
  std::vector<size_t> by_stride = dims;  // outermost (largest stride) first
  std::stable_sort(by_stride.begin(), by_stride.end(),
                   [&](size_t a, size_t b) { return type.strides[a] > type.strides[b]; });
  for (size_t i = 0; i + 1 < by_stride.size(); ++i) {
    const int64_t outer = type.strides[by_stride[i]];
    const int64_t inner = type.strides[by_stride[i + 1]];
    if (outer % inner != 0 || type.sizes[by_stride[i + 1]] * inner > outer) return std::nullopt;
  }
  // The leading corner of the box, in stride order.
  Tensor value;
  if (by_stride.empty()) {
    value = builder.reshape(unit_slice(builder, elements, 0, 1), {});
  } else {
    std::vector<int64_t> box = {type.sizes[by_stride[0]]};
    for (size_t i = 0; i + 1 < by_stride.size(); ++i) {
      box.push_back(type.strides[by_stride[i]] / type.strides[by_stride[i + 1]]);
    }
    box.push_back(type.strides[by_stride.back()]);
    int64_t total = 1;
    for (const int64_t extent : box) total *= extent;
    Tensor flat = elements;
    if (total > flat.shape[0]) {
      flat = builder.op("stablehlo.pad", {flat, builder.zeros(flat.dtype, {})}, flat.dtype, {total},
                        "edge_padding_low = " + i64_array({0}) + ", edge_padding_high = " +
                            i64_array({total - flat.shape[0]}) + ", interior_padding = " + i64_array({0}));
    } else if (total < flat.shape[0]) {
      flat = unit_slice(builder, flat, 0, total);
    }
    std::vector<int64_t> limits;
    for (const size_t d : by_stride) limits.push_back(type.sizes[d]);
    limits.push_back(1);
    const Tensor boxed = builder.reshape(flat, box);
    const Tensor leading = builder.op("stablehlo.slice", {boxed}, flat.dtype, limits,
                                      "start_indices = " + i64_array(std::vector<int64_t>(limits.size(), 0)) +
                                          ", limit_indices = " + i64_array(limits) + ", strides = " +
                                          i64_array(std::vector<int64_t>(limits.size(), 1)));
    limits.pop_back();
    value = builder.reshape(leading, limits);
    // Back into the layout's order of these dimensions.
    std::vector<int64_t> permutation;
    std::vector<int64_t> ordered;
    for (const size_t d : dims) {
      const auto at = std::find(by_stride.begin(), by_stride.end(), d) - by_stride.begin();
      permutation.push_back(at);
      ordered.push_back(type.sizes[d]);
    }
    bool identity = true;
    for (size_t i = 0; i < permutation.size(); ++i) identity &= permutation[i] == static_cast<int64_t>(i);
    if (!identity) {
      value = builder.op("stablehlo.transpose", {value}, value.dtype, ordered,
                         "permutation = " + i64_array(permutation));
    }
  }
  // The size-1 dimensions come back as a reshape, the stride-0 ones as a broadcast.
  std::vector<int64_t> kept_sizes, kept_positions;
  for (size_t d = 0; d < type.sizes.size(); ++d) {
    if (std::find(broadcast.begin(), broadcast.end(), d) != broadcast.end()) continue;
    kept_sizes.push_back(type.sizes[d]);
    kept_positions.push_back(static_cast<int64_t>(d));
  }
  value = builder.reshape(value, kept_sizes);
  if (broadcast.empty()) return value;
  return builder.broadcast_in_dim(value, type.sizes, kept_positions);
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
  if (std::optional<Tensor> boxed = box_read(builder, elements, type)) return *boxed;
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
