// histc on integer tensors. CUDA counts integers (its result has the input's dtype) and
// transformers' mixture-of-experts routing relies on it on every device but CPU and MPS;
// PyTorch's CPU kernel only takes floating types. Integer inputs are counted in float64
// (exact for values below 2^53) and the counts returned in the input's dtype; floating inputs
// take the generic kernel. Found by the Hugging Face sweep.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/histc.h>

#include "ops/generic_kernel.h"
#include "ops/histogram.h"

namespace torch_tpu::ops {

void histc(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack) {
  const auto args = torch::jit::last(*stack, 4);
  const at::Tensor self = args[0].toTensor();
  if (!at::isIntegralType(self.scalar_type(), /*includeBool=*/false)) {
    generic_tpu_kernel(op, keys, stack);
    return;
  }
  const int64_t bins = args[1].toInt();
  const at::Scalar min = args[2].toScalar();
  const at::Scalar max = args[3].toScalar();
  at::Tensor counts = at::histc(self.to(at::kDouble), bins, min, max).to(self.scalar_type());
  torch::jit::drop(*stack, 4);
  stack->emplace_back(std::move(counts));
}

}  // namespace torch_tpu::ops
