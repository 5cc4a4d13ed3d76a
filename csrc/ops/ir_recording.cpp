#include "ops/ir_recording.h"

#include <string>

#include <ATen/core/jit_type.h>

#include "engine/mode.h"
#include "executors/host/fusible_op.h"
#include "privateuse1/tpu_tensor.h"

namespace torch_tpu::ops {
namespace {

// ir::DType numbers ScalarType's values; the cast in to_ir_dtype relies on it.
static_assert(static_cast<int>(ir::DType::kFloat32) == static_cast<int>(c10::ScalarType::Float));
static_assert(static_cast<int>(ir::DType::kBFloat16) == static_cast<int>(c10::ScalarType::BFloat16));
static_assert(static_cast<int>(ir::DType::kBool) == static_cast<int>(c10::ScalarType::Bool));
static_assert(static_cast<int>(ir::DType::kUInt64) == static_cast<int>(c10::ScalarType::UInt64));
static_assert(static_cast<int>(ir::DType::kFloat8E4M3FNUZ) ==
              static_cast<int>(c10::ScalarType::Float8_e4m3fnuz));

using privateuse1::is_tpu;

ir::TensorType type_of(const at::Tensor& tensor) {
  ir::TensorType type;
  type.dtype = to_ir_dtype(tensor.scalar_type());
  type.sizes.assign(tensor.sizes().begin(), tensor.sizes().end());
  type.strides.assign(tensor.strides().begin(), tensor.strides().end());
  type.storage_offset = tensor.storage_offset();
  return type;
}

engine::NodeTensor node_tensor(const at::Tensor& tensor, bool read, bool written, bool fresh) {
  engine::NodeTensor node_tensor;
  node_tensor.storage = tensor.storage().unsafeGetStorageImpl();
  node_tensor.storage_bytes = static_cast<int64_t>(tensor.storage().nbytes());
  node_tensor.type = type_of(tensor);
  node_tensor.on_host = !is_tpu(tensor);
  node_tensor.buffer = reinterpret_cast<runtime::DeviceAddress>(tensor.storage().data());
  node_tensor.read = read || node_tensor.on_host;
  node_tensor.written = written && !node_tensor.on_host;
  node_tensor.fresh = fresh;
  return node_tensor;
}

ir::ScalarValue scalar_of(const c10::IValue& value) {
  ir::ScalarValue scalar;
  if (value.isBool()) {
    scalar.kind = ir::ScalarValue::Kind::kBool;
    scalar.integer = value.toBool() ? 1 : 0;
  } else if (value.isInt()) {
    scalar.kind = ir::ScalarValue::Kind::kInt;
    scalar.integer = value.toInt();
  } else if (value.isComplexDouble()) {
    const c10::complex<double> complex = value.toComplexDouble();
    scalar.kind = ir::ScalarValue::Kind::kComplex;
    scalar.real = complex.real();
    scalar.imag = complex.imag();
  } else {
    scalar.kind = ir::ScalarValue::Kind::kDouble;
    scalar.real = value.toScalar().toDouble();
  }
  return scalar;
}

// The schema type under Optional[...].
c10::TypeKind base_kind(const c10::Argument& argument) {
  const c10::TypePtr& type = argument.real_type();
  if (const auto optional = type->cast<c10::OptionalType>()) return optional->getElementType()->kind();
  return type->kind();
}

class NodeRecorder {
 public:
  NodeRecorder(const OpPlan& plan, engine::OpDescription& description)
      : plan_(plan), description_(description) {}

  ir::Argument argument(const c10::Argument& schema_arg, const c10::IValue& value, size_t index) {
    using Kind = ir::Argument::Kind;
    const bool read = !(index < plan_.out_args.size() && plan_.out_args[index]);
    const bool written = index < plan_.written_args.size() && plan_.written_args[index];
    if (value.isNone()) return ir::Argument::none();
    if (value.isTensor()) {
      const at::Tensor& tensor = value.toTensor();
      return tensor.defined() ? ir::Argument::tensor(slot(tensor, read, written, false)) : ir::Argument::none();
    }
    if (value.isTensorList()) {
      std::vector<int64_t> slots;
      for (const at::Tensor& tensor : value.toTensorList()) slots.push_back(slot(tensor, read, written, false));
      return ir::Argument::tensor_list(std::move(slots));
    }
    if (value.isOptionalTensorList()) {
      std::vector<int64_t> slots;
      for (const std::optional<at::Tensor> tensor : value.toOptionalTensorList()) {
        slots.push_back(tensor.has_value() && tensor->defined() ? slot(*tensor, read, written, false)
                                                                : ir::kNoValue);
      }
      return ir::Argument::tensor_list(std::move(slots));
    }
    if (index < plan_.scalar_args.size() && plan_.scalar_args[index]) {
      if (value.isList()) {
        ir::Argument list;
        list.kind = Kind::kScalarList;
        for (const c10::IValue& element : value.toListRef()) list.scalars.push_back(scalar_of(element));
        return list;
      }
      return ir::Argument::scalar_value(scalar_of(value));
    }
    switch (base_kind(schema_arg)) {
      case c10::TypeKind::ScalarTypeType: return ir::Argument::dtype(to_ir_dtype(value.toScalarType()));
      case c10::TypeKind::LayoutType: return ir::Argument::enum_value(Kind::kLayout, value.toInt());
      case c10::TypeKind::MemoryFormatType: return ir::Argument::enum_value(Kind::kMemoryFormat, value.toInt());
      default: break;
    }
    if (value.isBool()) return ir::Argument::boolean(value.toBool());
    if (value.isInt()) return ir::Argument::int_value(value.toInt());
    if (value.isDouble()) return ir::Argument::double_value(value.toDouble());
    if (value.isComplexDouble()) {
      const c10::complex<double> complex = value.toComplexDouble();
      return ir::Argument::complex_value(complex.real(), complex.imag());
    }
    if (value.isIntList()) return ir::Argument::int_list(value.toIntVector());
    if (value.isDoubleList()) return ir::Argument::double_list(value.toDoubleVector());
    if (value.isBoolList()) {
      std::vector<int64_t> bools;
      for (const bool element : value.toBoolList()) bools.push_back(element ? 1 : 0);
      return ir::Argument::bool_list(std::move(bools));
    }
    if (value.isString()) return ir::Argument::string(value.toStringRef());
    if (value.isDevice()) {
      const c10::Device device = value.toDevice();
      return ir::Argument::enum_value(Kind::kDevice, device.is_cpu() ? -1 : device.index());
    }
    if (value.isGenerator()) return ir::Argument::enum_value(Kind::kGenerator, 0);
    // Anything else (a Dimname, a Stream) is named by its kind: structure, not a value.
    return ir::Argument::string("<" + value.tagKind() + ">");
  }

  ir::Argument result(const c10::IValue& value, const std::vector<at::Tensor>& fresh) {
    if (value.isTensor()) {
      const at::Tensor& tensor = value.toTensor();
      return tensor.defined() ? ir::Argument::tensor(slot(tensor, false, false, is_fresh(tensor, fresh)))
                              : ir::Argument::none();
    }
    if (value.isTensorList()) {
      std::vector<int64_t> slots;
      for (const at::Tensor& tensor : value.toTensorList()) {
        slots.push_back(slot(tensor, false, false, is_fresh(tensor, fresh)));
      }
      return ir::Argument::tensor_list(std::move(slots));
    }
    return ir::Argument::none();
  }

 private:
  int64_t slot(const at::Tensor& tensor, bool read, bool written, bool fresh) {
    if (tensor.defined() && !is_tpu(tensor)) {
      // A program on opaque buffers reads its host operands when it runs, maybe at a flush:
      // kept until then, and a user's CPU tensor read as of now, as its CPU kernel would. On
      // any executor the kept storage also holds its identity: a CPU temporary freed before
      // the flush (a compiled graph's converted scalar) would otherwise let a later result's
      // storage take its address, and the program would see one storage for both.
      const at::Tensor kept =
          tensor.unsafeGetTensorImpl()->is_wrapped_number() ? tensor : tensor.clone();
      description_.host_storages.push_back(kept.storage());
      description_.node_tensors.push_back(node_tensor(kept, read, written, fresh));
    } else {
      description_.node_tensors.push_back(node_tensor(tensor, read, written, fresh));
    }
    return static_cast<int64_t>(description_.node_tensors.size() - 1);
  }

  static bool is_fresh(const at::Tensor& tensor, const std::vector<at::Tensor>& fresh) {
    for (const at::Tensor& allocated : fresh) {
      if (allocated.is_same(tensor)) return true;
    }
    return false;
  }

  const OpPlan& plan_;
  engine::OpDescription& description_;
};

}  // namespace

ir::DType to_ir_dtype(c10::ScalarType dtype) { return static_cast<ir::DType>(dtype); }

void record_node(const c10::FunctionSchema& schema, const OpPlan& plan, BoxedArgs args,
                 const torch::jit::Stack& results, const std::vector<at::Tensor>& fresh,
                 engine::OpDescription& description) {
  NodeRecorder recorder(plan, description);
  ir::Node& node = description.node;
  node.op = plan.name;
  const auto& schema_args = schema.arguments();
  node.args.reserve(args.size());
  description.node_tensors.reserve(args.size() + results.size());
  for (size_t i = 0; i < args.size(); ++i) node.args.push_back(recorder.argument(schema_args[i], args[i], i));
  node.returns.reserve(results.size());
  for (const c10::IValue& value : results) node.returns.push_back(recorder.result(value, fresh));
}

std::shared_ptr<const engine::OpDescription> describe_tensors(
    const char* op_name, std::initializer_list<std::pair<const at::Tensor*, bool>> tensors) {
  auto description = std::make_shared<engine::OpDescription>();
  description->node.op = op_name;
  for (const auto& [tensor, written] : tensors) {
    if (!is_tpu(*tensor)) continue;
    description->node.args.push_back(
        ir::Argument::tensor(static_cast<int64_t>(description->node_tensors.size())));
    description->node_tensors.push_back(node_tensor(*tensor, /*read=*/!written, written, /*fresh=*/false));
    description->storages.push_back(engine::StorageRef{
        c10::weak_intrusive_ptr<c10::StorageImpl>(tensor->storage().getWeakStorageImpl()), written});
  }
  return description;
}

}  // namespace torch_tpu::ops
