#include "privateuse1/fusible_ops.h"

#include <unordered_set>

namespace torch_tpu::privateuse1 {
namespace {

using executors::host::FusedTensor;
using executors::host::StorageRef;

bool is_tpu_tensor(const at::Tensor& tensor) {
  return tensor.defined() && tensor.device().type() == c10::DeviceType::PrivateUse1;
}

int64_t offset_bytes(const at::Tensor& tensor) {
  return tensor.storage_offset() * static_cast<int64_t>(tensor.element_size());
}

// A pointwise op as the fused loop engine runs it: the queued op, run with chunk views.
class QueuedPointwiseOp : public executors::host::FusibleOp {
 public:
  QueuedPointwiseOp(const char* name, std::shared_ptr<const QueuedOp> queued,
                    std::vector<int64_t> shape)
      : name_(name), queued_(std::move(queued)), shape_(std::move(shape)) {}

  // Adds the tensor at `slot` (captured tensors, then targets) of the queued op.
  void add(size_t slot, const executors::host::TensorSnapshot& snapshot, const at::Tensor& tensor,
           bool written) {
    slots_.push_back(slot);
    tensors_.push_back(FusedTensor{&snapshot, tensor.storage().unsafeGetStorageImpl(),
                                   offset_bytes(tensor), written});
  }
  size_t slot_of(size_t tensor) const { return slots_[tensor]; }

  const char* name() const override { return name_; }
  c10::IntArrayRef iteration_shape() const override { return shape_; }
  const std::vector<FusedTensor>& tensors() const override { return tensors_; }
  void run(const std::function<at::Tensor(size_t)>& view) const override {
    std::vector<int> tensor_of_slot(queued_->captured.tensors.size() + queued_->targets.size(), -1);
    for (size_t i = 0; i < slots_.size(); ++i) tensor_of_slot[slots_[i]] = static_cast<int>(i);
    run_queued_on(*queued_, [&](size_t slot) { return view(static_cast<size_t>(tensor_of_slot[slot])); });
  }

 private:
  const char* name_;
  std::shared_ptr<const QueuedOp> queued_;
  std::vector<int64_t> shape_;
  std::vector<size_t> slots_;
  std::vector<FusedTensor> tensors_;
};

}  // namespace

bool is_pointwise_op(const std::string& name) {
  static const std::unordered_set<std::string> kPointwise = {
      "aten::abs", "aten::add", "aten::addcdiv", "aten::addcmul", "aten::bitwise_and",
      "aten::bitwise_not", "aten::bitwise_or", "aten::bitwise_xor", "aten::ceil", "aten::clamp",
      "aten::clamp_max", "aten::clamp_min", "aten::cos", "aten::div", "aten::elu", "aten::eq",
      "aten::erf", "aten::exp", "aten::exp2", "aten::expm1", "aten::floor", "aten::fmod",
      "aten::frac", "aten::ge", "aten::gelu", "aten::gelu_backward", "aten::gt",
      "aten::hardsigmoid", "aten::hardswish", "aten::hardtanh", "aten::le", "aten::leaky_relu",
      "aten::lerp", "aten::log", "aten::log1p", "aten::log2", "aten::logical_and",
      "aten::logical_not", "aten::logical_or", "aten::lt", "aten::masked_fill", "aten::maximum",
      "aten::minimum", "aten::mish", "aten::mul", "aten::ne", "aten::neg", "aten::pow",
      "aten::reciprocal", "aten::relu", "aten::remainder", "aten::round", "aten::rsqrt",
      "aten::rsub", "aten::sigmoid", "aten::sigmoid_backward", "aten::sign", "aten::silu",
      "aten::silu_backward", "aten::sin", "aten::softplus", "aten::sqrt", "aten::square",
      "aten::sub", "aten::tanh", "aten::tanh_backward", "aten::threshold_backward",
      "aten::trunc", "aten::where",
  };
  return kPointwise.count(name) > 0;
}

std::shared_ptr<const engine::OpDescription> describe_op(
    const OpPlan& plan, const torch::jit::Stack& args, const std::vector<at::Tensor>& outputs,
    const std::vector<at::Tensor>& fresh, std::shared_ptr<const QueuedOp> queued,
    std::vector<int64_t> structure) {
  auto description = std::make_shared<engine::OpDescription>();
  description->structure = std::move(structure);
  const CapturedArgs& captured = queued->captured;
  // The argument tensors, in the order they were captured.
  std::vector<std::pair<at::Tensor, bool>> captured_tensors;  // tensor, written
  for (size_t a = 0; a < args.size(); ++a) {
    const bool written = a < plan.written_args.size() && plan.written_args[a];
    const c10::IValue& arg = args[a];
    if (arg.isTensor()) {
      captured_tensors.emplace_back(arg.toTensor(), written);
    } else if (arg.isTensorList()) {
      for (const at::Tensor& tensor : arg.toTensorList()) captured_tensors.emplace_back(tensor, written);
    } else if (arg.isOptionalTensorList()) {
      for (const std::optional<at::Tensor> tensor : arg.toOptionalTensorList()) {
        captured_tensors.emplace_back(tensor.value_or(at::Tensor()), written);
      }
    }
  }
  TORCH_INTERNAL_ASSERT(captured_tensors.size() == captured.tensors.size());
  const auto add_ref = [&](const at::Tensor& tensor, bool written) {
    if (!is_tpu_tensor(tensor)) return;
    description->storages.push_back(
        StorageRef{c10::weak_intrusive_ptr<c10::StorageImpl>(tensor.storage().getWeakStorageImpl()),
                   written});
  };
  for (const auto& [tensor, written] : captured_tensors) add_ref(tensor, written);
  for (const at::Tensor& tensor : fresh) add_ref(tensor, true);

  // Pointwise ops with one output shape, writing through out= or in place, can be fused.
  const bool fusible_kind = plan.pointwise && (queued->use_out_variant || fresh.empty());
  if (!fusible_kind || outputs.empty()) return description;
  const c10::IntArrayRef shape = outputs.front().sizes();
  for (const at::Tensor& output : outputs) {
    if (!is_tpu_tensor(output) || output.sizes() != shape) return description;
  }
  auto op = std::make_shared<QueuedPointwiseOp>(plan.name.c_str(), queued, shape.vec());
  for (size_t i = 0; i < captured_tensors.size(); ++i) {
    const auto& [tensor, written] = captured_tensors[i];
    if (is_tpu_tensor(tensor)) op->add(i, captured.tensors[i].snapshot, tensor, written);
  }
  for (size_t t = 0; t < fresh.size(); ++t) {
    op->add(captured.tensors.size() + t, queued->targets[t], fresh[t], true);
  }
  description->fusible = std::move(op);
  return description;
}

}  // namespace torch_tpu::privateuse1
