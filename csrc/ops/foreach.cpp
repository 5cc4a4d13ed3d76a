// Multi-tensor ops (`torch._foreach_*`, the optimizers' default path on tpu). Their only
// kernel is composite, on CPU too: a loop calling the per-tensor op. On tpu that loop issued
// one queued op per tensor: ~260 for an AdamW step of a 24-parameter model, or as many program
// nodes in fused mode. Here a call whose lists lie on one chip is one queued op instead (the
// generic kernel), running that same loop on CPU views, as CUDA runs one multi-tensor kernel.
// Lists that mix devices take the composite loop tensor by tensor, as CUDA's slow path does.
// So do all lists on the PJRT runtime, whose programs run the per-tensor ops natively.
#include <ATen/core/dispatch/Dispatcher.h>

#include "engine/active_executor.h"
#include "ops/boxed_args.h"
#include "ops/generic_kernel.h"

namespace torch_tpu::ops {

bool is_multi_tensor_op(const c10::OperatorName& name) {
  return name.name.rfind("aten::_foreach_", 0) == 0;
}

void multi_tensor_tpu_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                             torch::jit::Stack* stack) {
  const size_t num_args = op.schema().arguments().size();
  // On opaque buffers (PJRT) the loop's per-tensor ops run as programs (in fused mode, one
  // program XLA fuses); a multi-tensor op of its own would take the host round trip.
  if (!engine::buffers_are_opaque() &&
      all_on_one_tpu_device(BoxedArgs(stack->data() + stack->size() - num_args, num_args))) {
    generic_tpu_kernel(op, keys, stack);
    return;
  }
  // CPU's kernel for these ops is the composite loop; each tensor's op then dispatches on
  // that tensor's own device.
  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
}

}  // namespace torch_tpu::ops
