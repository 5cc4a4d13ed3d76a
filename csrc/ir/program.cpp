#include "ir/program.h"

#include <stdexcept>
#include <utility>

namespace torch_tpu::ir {

int64_t TensorType::numel() const {
  int64_t count = 1;
  for (const int64_t size : sizes) count *= size;
  return count;
}

int64_t TensorType::extent_bytes() const {
  const int64_t element = element_size(dtype);
  if (numel() == 0) return 0;  // reaches no byte, wherever it starts (as PyTorch's storage checks)
  int64_t last = storage_offset;
  for (size_t d = 0; d < sizes.size(); ++d) last += (sizes[d] - 1) * strides[d];
  return (last + 1) * element;
}

Argument Argument::tensor(ValueId value) { return {.kind = Kind::kTensor, .integer = value}; }
Argument Argument::tensor_list(std::vector<int64_t> values) {
  return {.kind = Kind::kTensorList, .list = std::move(values)};
}
Argument Argument::boolean(bool value) { return {.kind = Kind::kBool, .integer = value ? 1 : 0}; }
Argument Argument::int_value(int64_t value) { return {.kind = Kind::kInt, .integer = value}; }
Argument Argument::double_value(double value) { return {.kind = Kind::kDouble, .real = value}; }
Argument Argument::complex_value(double real, double imag) {
  return {.kind = Kind::kComplex, .real = real, .imag = imag};
}
Argument Argument::scalar_value(ScalarValue value) { return {.kind = Kind::kScalar, .scalar = value}; }
Argument Argument::int_list(std::vector<int64_t> values) {
  return {.kind = Kind::kIntList, .list = std::move(values)};
}
Argument Argument::bool_list(std::vector<int64_t> values) {
  return {.kind = Kind::kBoolList, .list = std::move(values)};
}
Argument Argument::double_list(std::vector<double> values) {
  return {.kind = Kind::kDoubleList, .reals = std::move(values)};
}
Argument Argument::string(std::string value) { return {.kind = Kind::kString, .text = std::move(value)}; }
Argument Argument::dtype(DType value) {
  return {.kind = Kind::kDType, .integer = static_cast<int64_t>(value)};
}

Argument Argument::enum_value(Kind kind, int64_t value) {
  if (kind != Kind::kLayout && kind != Kind::kMemoryFormat && kind != Kind::kDevice &&
      kind != Kind::kGenerator) {
    throw std::invalid_argument("Argument::enum_value: not an enum-valued kind");
  }
  return {.kind = kind, .integer = value};
}

StorageId Program::add_storage(int64_t bytes, bool external, bool live_out, bool on_host) {
  storages.push_back(Storage{bytes, external, live_out, on_host});
  return static_cast<StorageId>(storages.size() - 1);
}

ValueId Program::add_input(TensorType type, StorageId storage) {
  values.push_back(Value{std::move(type), storage, -1});
  return static_cast<ValueId>(values.size() - 1);
}

int32_t Program::add_node(Node node) {
  nodes.push_back(std::move(node));
  return static_cast<int32_t>(nodes.size() - 1);
}

ValueId Program::add_return(TensorType type, StorageId storage, bool append_to_returns) {
  if (nodes.empty()) throw std::logic_error("Program::add_return: no node to return from");
  values.push_back(Value{std::move(type), storage, static_cast<int32_t>(nodes.size() - 1)});
  const auto id = static_cast<ValueId>(values.size() - 1);
  if (append_to_returns) nodes.back().returns.push_back(Argument::tensor(id));
  return id;
}

std::vector<ScalarValue> dynamic_scalars(const Program& program) {
  std::vector<ScalarValue> scalars;
  for (const Node& node : program.nodes) {
    for (const Argument& arg : node.args) {
      if (arg.kind == Argument::Kind::kScalar) scalars.push_back(arg.scalar);
      if (arg.kind == Argument::Kind::kScalarList) scalars.insert(scalars.end(), arg.scalars.begin(), arg.scalars.end());
    }
  }
  return scalars;
}

}  // namespace torch_tpu::ir
