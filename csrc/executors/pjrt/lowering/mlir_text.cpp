#include "executors/pjrt/lowering/mlir_text.h"

#include <cctype>
#include <cstdio>
#include <stdexcept>

#include "ir/dtype.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

std::string join_types(const std::vector<Tensor>& tensors) {
  std::string text;
  for (size_t i = 0; i < tensors.size(); ++i) text += (i ? ", " : "") + tensors[i].type();
  return text;
}

std::string join_names(const std::vector<Tensor>& tensors) {
  std::string text;
  for (size_t i = 0; i < tensors.size(); ++i) text += (i ? ", " : "") + tensors[i].name;
  return text;
}

}  // namespace

bool is_floating(ir::DType dtype) {
  return dtype == ir::DType::kFloat16 || dtype == ir::DType::kFloat32 ||
         dtype == ir::DType::kFloat64 || dtype == ir::DType::kBFloat16;
}

std::string element_type(ir::DType dtype) {
  using ir::DType;
  switch (dtype) {
    case DType::kBool: return "i1";
    case DType::kUInt8: return "ui8";
    case DType::kInt8: return "i8";
    case DType::kInt16: return "i16";
    case DType::kInt32: return "i32";
    case DType::kInt64: return "i64";
    case DType::kUInt16: return "ui16";
    case DType::kUInt32: return "ui32";
    case DType::kUInt64: return "ui64";
    case DType::kFloat16: return "f16";
    case DType::kFloat32: return "f32";
    case DType::kFloat64: return "f64";
    case DType::kBFloat16: return "bf16";
    default:
      throw NotSupported("not supported yet: dtype " + ir::dtype_name(dtype) +
                                  " in a StableHLO lowering");
  }
}

std::string tensor_type(ir::DType dtype, const std::vector<int64_t>& shape) {
  std::string text = "tensor<";
  for (const int64_t size : shape) text += std::to_string(size) + "x";
  return text + element_type(dtype) + ">";
}

std::string i64_array(const std::vector<int64_t>& values) {
  std::string text = "array<i64";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? ", " : ": ") + std::to_string(values[i]);
  return text + ">";
}

std::string index_list(const std::vector<int64_t>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

std::string highest_precision() {
  return "precision_config = [#stablehlo<precision HIGHEST>, #stablehlo<precision HIGHEST>]";
}

int64_t Tensor::numel() const {
  int64_t count = 1;
  for (const int64_t size : shape) count *= size;
  return count;
}

std::string FunctionBuilder::next_name() {
  std::string name = "%";
  name += std::to_string(next_++);
  return name;
}

Tensor FunctionBuilder::parameter(ir::DType dtype, std::vector<int64_t> shape) {
  std::string name = "%arg";
  name += std::to_string(parameters_.size());
  Tensor tensor{std::move(name), dtype, std::move(shape)};
  parameters_.push_back(tensor);
  return tensor;
}

Tensor FunctionBuilder::op(const std::string& name, const std::vector<Tensor>& operands,
                           ir::DType dtype, std::vector<int64_t> shape,
                           const std::string& attributes) {
  Tensor result{next_name(), dtype, std::move(shape)};
  body_ += "    " + result.name + " = \"" + name + "\"(" + join_names(operands) + ")";
  if (!attributes.empty()) body_ += " {" + attributes + "}";
  body_ += " : (" + join_types(operands) + ") -> " + result.type() + "\n";
  return result;
}

Tensor FunctionBuilder::op_with_region(const std::string& name, const std::vector<Tensor>& operands,
                                       ir::DType dtype, std::vector<int64_t> shape,
                                       const std::string& attributes,
                                       const std::vector<Tensor>& region_arguments,
                                       const std::string& region) {
  Tensor result{next_name(), dtype, std::move(shape)};
  body_ += "    " + result.name + " = \"" + name + "\"(" + join_names(operands) + ") ({\n";
  append_region(region_arguments, region);
  if (!attributes.empty()) body_ += " {" + attributes + "}";
  body_ += " : (" + join_types(operands) + ") -> " + result.type() + "\n";
  return result;
}

Tensor FunctionBuilder::region_argument(ir::DType dtype) { return {next_name(), dtype, {}}; }

Tensor FunctionBuilder::compare(const Tensor& a, const Tensor& b, const std::string& direction) {
  return op("stablehlo.compare", {a, b}, ir::DType::kBool, a.shape,
            "comparison_direction = #stablehlo<comparison_direction " + direction + ">");
}

Tensor FunctionBuilder::select(const Tensor& condition, const Tensor& on_true, const Tensor& on_false) {
  return op("stablehlo.select", {condition, on_true, on_false}, on_true.dtype, on_true.shape);
}

std::vector<Tensor> FunctionBuilder::multi_result_op_with_region(
    const std::string& name, const std::vector<Tensor>& operands, const std::vector<Tensor>& results,
    const std::string& attributes, const std::vector<Tensor>& region_arguments,
    const std::string& region) {
  const std::string base = next_name();
  std::vector<Tensor> named;
  for (size_t i = 0; i < results.size(); ++i) {
    named.push_back({base + "#" + std::to_string(i), results[i].dtype, results[i].shape});
  }
  body_ += "    " + base + ":" + std::to_string(results.size()) + " = \"" + name + "\"(" +
           join_names(operands) + ") ({\n";
  append_region(region_arguments, region);
  if (!attributes.empty()) body_ += " {" + attributes + "}";
  body_ += " : (" + join_types(operands) + ") -> (" + join_types(named) + ")\n";
  return named;
}

std::string FunctionBuilder::region_body(const std::function<std::vector<Tensor>()>& emit) {
  // The ops `emit` adds go to a stream of their own; the function's body is put back even when
  // `emit` throws (a lowering refusing), so the builder stays usable.
  std::string function_body;
  body_.swap(function_body);
  struct Restore {
    std::string& body;
    std::string& saved;
    ~Restore() { body.swap(saved); }
  } restore{body_, function_body};
  const std::vector<Tensor> results = emit();
  body_ += "      \"stablehlo.return\"(" + join_names(results) + ") : (" + join_types(results) +
           ") -> ()\n";
  return body_;
}

void FunctionBuilder::append_region(const std::vector<Tensor>& arguments, const std::string& region) {
  body_ += "    ^bb" + std::to_string(next_++) + "(";
  for (size_t i = 0; i < arguments.size(); ++i) {
    body_ += (i ? ", " : "") + arguments[i].name + ": " + arguments[i].type();
  }
  body_ += "):\n" + region + "    })";
}

Tensor FunctionBuilder::splat(const std::string& literal, ir::DType dtype,
                              std::vector<int64_t> shape) {
  const std::string type = tensor_type(dtype, shape);
  return op("stablehlo.constant", {}, dtype, std::move(shape),
            "value = dense<" + literal + "> : " + type);
}

Tensor FunctionBuilder::zeros(ir::DType dtype, std::vector<int64_t> shape) {
  const char* literal = dtype == ir::DType::kBool ? "false" : is_floating(dtype) ? "0.000000e+00" : "0";
  return splat(literal, dtype, std::move(shape));
}

Tensor FunctionBuilder::reshape(const Tensor& x, std::vector<int64_t> shape) {
  if (x.shape == shape) return x;
  return op("stablehlo.reshape", {x}, x.dtype, std::move(shape));
}

Tensor FunctionBuilder::convert(const Tensor& x, ir::DType dtype) {
  if (x.dtype == dtype) return x;
  return op("stablehlo.convert", {x}, dtype, x.shape);
}

Tensor FunctionBuilder::round_through(const Tensor& x, ir::DType dtype) {
  return convert(convert(x, dtype), x.dtype);
}

Tensor FunctionBuilder::pad(const Tensor& x, const std::vector<int64_t>& low,
                            const std::vector<int64_t>& high, const std::vector<int64_t>& interior) {
  std::vector<int64_t> shape = x.shape;
  for (size_t d = 0; d < shape.size(); ++d) {
    shape[d] = low[d] + high[d] + shape[d] + (shape[d] > 0 ? (shape[d] - 1) * interior[d] : 0);
  }
  return op("stablehlo.pad", {x, zeros(x.dtype, {})}, x.dtype, shape,
            "edge_padding_low = " + i64_array(low) + ", edge_padding_high = " + i64_array(high) +
                ", interior_padding = " + i64_array(interior));
}

Tensor FunctionBuilder::broadcast_to(const Tensor& x, const std::vector<int64_t>& shape) {
  if (x.shape == shape) return x;
  if (x.shape.size() > shape.size()) {
    throw std::invalid_argument("cannot broadcast " + x.type() + " to " +
                                tensor_type(x.dtype, shape));
  }
  std::vector<int64_t> dimensions;
  const size_t lead = shape.size() - x.shape.size();
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (x.shape[d] != 1 && x.shape[d] != shape[lead + d]) {
      throw std::invalid_argument("cannot broadcast " + x.type() + " to " +
                                  tensor_type(x.dtype, shape));
    }
    dimensions.push_back(static_cast<int64_t>(lead + d));
  }
  return op("stablehlo.broadcast_in_dim", {x}, x.dtype, shape,
            "broadcast_dimensions = " + i64_array(dimensions));
}

Tensor FunctionBuilder::broadcast_in_dim(const Tensor& x, const std::vector<int64_t>& shape,
                                         const std::vector<int64_t>& dimensions) {
  return op("stablehlo.broadcast_in_dim", {x}, x.dtype, shape,
            "broadcast_dimensions = " + i64_array(dimensions));
}

Tensor FunctionBuilder::float_splat(double value, ir::DType dtype, std::vector<int64_t> shape) {
  // 17 significant digits round-trip a double; the parser rounds once to f32/bf16/f16.
  char literal[40];
  std::snprintf(literal, sizeof(literal), "%.16e", value);
  return splat(literal, dtype, std::move(shape));
}

Tensor FunctionBuilder::binary(const std::string& name, const Tensor& a, const Tensor& b) {
  return op(name, {a, b}, a.dtype, a.shape);
}

Tensor FunctionBuilder::unary(const std::string& name, const Tensor& x) {
  return op(name, {x}, x.dtype, x.shape);
}

std::vector<bool> FunctionBuilder::parameters_used(const std::vector<Tensor>& results) const {
  std::vector<bool> used(parameters_.size(), false);
  for (size_t i = 0; i < parameters_.size(); ++i) {
    const std::string& name = parameters_[i].name;
    for (const Tensor& result : results) used[i] = used[i] || result.name == name;
    // An operand is the name followed by a delimiter ("%arg1" must not match "%arg12").
    for (size_t at = body_.find(name); !used[i] && at != std::string::npos; at = body_.find(name, at + 1)) {
      const size_t end = at + name.size();
      used[i] = end == body_.size() || !std::isdigit(static_cast<unsigned char>(body_[end]));
    }
  }
  return used;
}

std::string FunctionBuilder::finish_module(const std::vector<Tensor>& results,
                                           const std::vector<std::pair<size_t, size_t>>& aliases) const {
  std::string text = "\"builtin.module\"() ({\n  \"func.func\"() ({\n  ^bb0(";
  for (size_t i = 0; i < parameters_.size(); ++i) {
    text += (i ? ", " : "") + parameters_[i].name + ": " + parameters_[i].type();
  }
  text += "):\n" + body_;
  text += "    \"func.return\"(" + join_names(results) + ") : (" + join_types(results) + ") -> ()\n";
  std::string argument_attributes;
  if (!aliases.empty()) {
    std::vector<std::string> per_parameter(parameters_.size(), "{}");
    for (const auto& [parameter, result] : aliases) {
      per_parameter.at(parameter) = "{tf.aliasing_output = " + std::to_string(result) + " : i32}";
    }
    argument_attributes = "arg_attrs = [";
    for (size_t i = 0; i < per_parameter.size(); ++i) argument_attributes += (i ? ", " : "") + per_parameter[i];
    argument_attributes += "], ";
  }
  text += "  }) {" + argument_attributes + "function_type = (" + join_types(parameters_) + ") -> (" +
          join_types(results) + "), sym_name = \"main\"} : () -> ()\n}) : () -> ()\n";
  return text;
}

}  // namespace torch_tpu::executors::pjrt::lowering
