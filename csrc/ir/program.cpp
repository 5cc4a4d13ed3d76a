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
  if (numel() == 0) return storage_offset * element;
  int64_t last = storage_offset;
  for (size_t d = 0; d < sizes.size(); ++d) last += (sizes[d] - 1) * strides[d];
  return (last + 1) * element;
}

Argument Argument::tensor(ValueId value) {
  Argument arg;
  arg.kind = Kind::kTensor;
  arg.integer = value;
  return arg;
}

Argument Argument::tensor_list(std::vector<int64_t> values) {
  Argument arg;
  arg.kind = Kind::kTensorList;
  arg.list = std::move(values);
  return arg;
}

Argument Argument::boolean(bool value) {
  Argument arg;
  arg.kind = Kind::kBool;
  arg.integer = value ? 1 : 0;
  return arg;
}

Argument Argument::int_value(int64_t value) {
  Argument arg;
  arg.kind = Kind::kInt;
  arg.integer = value;
  return arg;
}

Argument Argument::double_value(double value) {
  Argument arg;
  arg.kind = Kind::kDouble;
  arg.real = value;
  return arg;
}

Argument Argument::complex_value(double real, double imag) {
  Argument arg;
  arg.kind = Kind::kComplex;
  arg.real = real;
  arg.imag = imag;
  return arg;
}

Argument Argument::scalar_value(ScalarValue value) {
  Argument arg;
  arg.kind = Kind::kScalar;
  arg.scalar = value;
  return arg;
}

Argument Argument::int_list(std::vector<int64_t> values) {
  Argument arg;
  arg.kind = Kind::kIntList;
  arg.list = std::move(values);
  return arg;
}

Argument Argument::bool_list(std::vector<int64_t> values) {
  Argument arg;
  arg.kind = Kind::kBoolList;
  arg.list = std::move(values);
  return arg;
}

Argument Argument::double_list(std::vector<double> values) {
  Argument arg;
  arg.kind = Kind::kDoubleList;
  arg.reals = std::move(values);
  return arg;
}

Argument Argument::string(std::string value) {
  Argument arg;
  arg.kind = Kind::kString;
  arg.text = std::move(value);
  return arg;
}

Argument Argument::dtype(DType value) {
  Argument arg;
  arg.kind = Kind::kDType;
  arg.integer = static_cast<int64_t>(value);
  return arg;
}

Argument Argument::enum_value(Kind kind, int64_t value) {
  if (kind != Kind::kLayout && kind != Kind::kMemoryFormat && kind != Kind::kDevice &&
      kind != Kind::kGenerator) {
    throw std::invalid_argument("Argument::enum_value: not an enum-valued kind");
  }
  Argument arg;
  arg.kind = kind;
  arg.integer = value;
  return arg;
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
