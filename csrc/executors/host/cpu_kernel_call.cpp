#include "executors/host/cpu_kernel_call.h"

#include <stdexcept>

#include <ATen/core/LegacyTypeDispatch.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/Exception.h>

namespace torch_tpu::executors::host {
namespace {

const c10::DispatchKeySet kCpuKeys(c10::DispatchKey::CPU);

void run_unchecked(const CpuKernelCall& call) {
  std::vector<KernelView> views;
  torch::jit::Stack cpu_stack = cpu_args(call.captured, views);
  if (call.use_out_variant) {
    cpu_stack.reserve(cpu_stack.size() + call.targets.size());
    views.reserve(views.size() + call.targets.size());
    for (const auto& target : call.targets) {
      cpu_stack.push_back(target.cpu_view());
      views.emplace_back(&target, cpu_stack.back().toTensor());
    }
  }
  call_cpu(call.cpu_op, cpu_stack);
  for (const auto& [snapshot, view] : views) snapshot->write_back_if_moved(view);
  if (call.use_out_variant || call.targets.empty()) return;
  size_t position = 0;
  size_t next_target = 0;
  const auto copy_if_fresh = [&](const at::Tensor& result) {
    if (call.fresh_returns[position++]) call.targets[next_target++].cpu_view().copy_(result);
  };
  for (const c10::IValue& value : cpu_stack) {
    if (value.isTensorList()) {
      for (const at::Tensor& tensor : value.toTensorList()) copy_if_fresh(tensor);
    } else if (value.isTensor() || value.isNone()) {
      copy_if_fresh(value.isTensor() ? value.toTensor() : at::Tensor());
    }
  }
}

}  // namespace

void call_cpu(const c10::OperatorHandle& op, torch::jit::Stack& stack) {
  const at::AutoDispatchBelowADInplaceOrView below_autograd;
  op.redispatchBoxed(kCpuKeys, &stack);
}

void run_kernel_call(const CpuKernelCall& call) {
  try {
    run_unchecked(call);
  } catch (const c10::Error& error) {
    throw std::runtime_error(error.what_without_backtrace());
  }
}

void run_kernel_call_on(const CpuKernelCall& call, const std::function<at::Tensor(size_t)>& view) {
  std::vector<KernelView> unused;
  // Captured tpu tensors keep their index; targets follow them.
  const std::function<at::Tensor(size_t)> captured_view = [&](size_t index) { return view(index); };
  torch::jit::Stack cpu_stack = cpu_args(call.captured, unused, &captured_view);
  if (call.use_out_variant) {
    for (size_t t = 0; t < call.targets.size(); ++t) {
      cpu_stack.push_back(view(call.captured.tensors.size() + t));
    }
  }
  call_cpu(call.cpu_op, cpu_stack);
}

void CpuKernelCall::run() const { run_kernel_call(*this); }

}  // namespace torch_tpu::executors::host
