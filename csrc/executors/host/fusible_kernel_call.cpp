#include "executors/host/fusible_kernel_call.h"

#include <ATen/core/stack.h>

namespace torch_tpu::executors::host {

void FusibleKernelCall::add(size_t slot, const TensorSnapshot& snapshot,
                            const at::Tensor& tensor, bool written, bool read) {
  if (slot >= tensor_at_slot_.size()) tensor_at_slot_.resize(slot + 1, -1);
  tensor_at_slot_[slot] = static_cast<int>(tensors_.size());
  const int64_t offset_bytes = tensor.storage_offset() * static_cast<int64_t>(tensor.element_size());
  tensors_.push_back(FusedTensor{&snapshot, tensor.storage().unsafeGetStorageImpl(),
                                                  offset_bytes, written, read});
}

void FusibleKernelCall::run(const std::function<at::Tensor(size_t)>& view) const {
  const auto slot_view = [&](size_t slot) { return view(static_cast<size_t>(tensor_at_slot_[slot])); };
  if (lane_ >= 0) {
    run_lane(slot_view);
  } else {
    run_kernel_call_on(*call_, slot_view);
  }
}

void FusibleKernelCall::run_lane(const std::function<at::Tensor(size_t)>& slot_view) const {
  const CapturedArgs& captured = call_->captured;
  const auto lane = static_cast<size_t>(lane_);
  torch::jit::Stack stack;
  for (const CapturedArgs::Arg& arg : captured.args) {
    if (arg.kind == CapturedArgs::Arg::Kind::kTensorList) {
      stack.emplace_back(c10::List<at::Tensor>({slot_view(arg.first_tensor + lane)}));
    } else if (arg.kind == CapturedArgs::Arg::Kind::kTensor) {
      const CapturedArgs::Tensor& element = captured.tensors[arg.first_tensor];
      stack.emplace_back(element.snapshot.defined() ? slot_view(arg.first_tensor) : element.host);
    } else if (arg.value.isList()) {  // a scalar per lane
      c10::impl::GenericList one(arg.value.toList().elementType());
      one.push_back(arg.value.toList().get(lane));
      stack.emplace_back(std::move(one));
    } else {
      stack.push_back(arg.value);
    }
  }
  if (call_->targets.empty()) {  // in place
    call_cpu(call_->cpu_op, stack);
    return;
  }
  const at::Tensor out = slot_view(captured.tensors.size() + lane);
  if (lane_out_variant_.has_value()) {
    stack.emplace_back(c10::List<at::Tensor>({out}));
    call_cpu(*lane_out_variant_, stack);
  } else {
    call_cpu(call_->cpu_op, stack);
    out.copy_(stack.front().toTensorList().get(0));
  }
}

}  // namespace torch_tpu::executors::host
