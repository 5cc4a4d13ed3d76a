// Convolutions: PyTorch routes convolutions on devices it does not know to
// convolution_overrideable / convolution_backward_overrideable. Ours run the CPU backend's
// aten::convolution / aten::convolution_backward through the generic kernel, which infers the
// output shapes and queues the work on the chip.

#include "ops/convolution.h"
#include "ops/generic_kernel.h"

namespace torch_tpu::ops {
namespace {

const c10::OperatorHandle& op_named(const char* name, const char* overload) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  static std::unordered_map<std::string, c10::OperatorHandle> handles;
  const std::string key = std::string(name) + "." + overload;
  auto it = handles.find(key);
  if (it == handles.end()) {
    it = handles.emplace(key, c10::Dispatcher::singleton().findSchemaOrThrow(name, overload)).first;
  }
  return it->second;
}

}  // namespace

// convolution_overrideable has exactly aten::convolution's arguments.
void convolution_forward(const c10::OperatorHandle&, c10::DispatchKeySet keys,
                         torch::jit::Stack* stack) {
  generic_tpu_kernel(op_named("aten::convolution", ""), keys, stack);
}

// convolution_backward_overrideable lacks convolution_backward's bias_sizes (4th argument);
// the bias has one entry per output channel.
void convolution_backward(const c10::OperatorHandle&, c10::DispatchKeySet keys,
                          torch::jit::Stack* stack) {
  constexpr size_t kNumArgs = 10;  // grad_output, input, weight, stride, padding, dilation,
                                   // transposed, output_padding, groups, output_mask
  auto args = torch::jit::last(*stack, kNumArgs);
  const at::Tensor& weight = args[2].toTensor();
  const bool transposed = args[6].toBool();
  const int64_t groups = args[8].toInt();
  const int64_t out_channels = transposed ? weight.size(1) * groups : weight.size(0);
  stack->insert(stack->end() - (kNumArgs - 3), c10::IValue(std::vector<int64_t>{out_channels}));
  generic_tpu_kernel(op_named("aten::convolution_backward", ""), keys, stack);
}

}  // namespace torch_tpu::ops
