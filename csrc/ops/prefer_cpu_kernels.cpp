// Ops with a CPU kernel of their own and also a composite kernel would run the composite on
// tpu, because a backend fallback (our generic kernel) ranks below composite kernels. These
// ops get the generic kernel registered explicitly, so they run PyTorch's CPU kernel like
// every other op:
// - CompositeExplicitAutograd decompositions give other numbers than the CPU kernel and
//   sometimes fail outright (native_layer_norm's goes through batch norm, which rejects
//   bfloat16 inputs with float32 parameters). Found by the OpInfo sweep.
// - CompositeExplicitAutogradNonFunctional kernels are the wrappers of structured ops (add,
//   mul, mm, sum, ...): on every call they run the op's meta function on the host (building a
//   TensorIterator), allocate through the dispatcher and call the out= overload. Through the
//   generic kernel, output shapes come from the shape cache after the first call and the CPU
//   kernel still runs through out=: `a + b` on 8x8 went from 2.6 to 1.65 us of host time.
//   The hottest of them are registered through unboxed entry points (unboxed.cpp).
// - Multi-tensor (`_foreach_*`) ops have only a composite kernel, on CPU too; they get the
//   multi-tensor kernel (foreach.cpp), one queued op per list instead of one per tensor.
#include <optional>
#include <string>
#include <utility>

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include "ops/generic_kernel.h"
#include "ops/prefer_cpu_kernels.h"

namespace torch_tpu::ops {
namespace {

bool prefers_cpu_kernel(const c10::OperatorHandle& op) {
  return !op.hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1) &&
         (op.hasKernelForDispatchKey(c10::DispatchKey::CPU) || is_multi_tensor_op(op.operator_name())) &&
         (op.hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd) ||
          op.hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutogradNonFunctional));
}

}  // namespace

void register_generic_kernel_over_composites(torch::Library& library) {
  auto& dispatcher = c10::Dispatcher::singleton();
  for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
    if (name.name.rfind("aten::", 0) != 0) continue;
    const std::optional<c10::OperatorHandle> op = dispatcher.findOp(name);
    if (!op.has_value() || !prefers_cpu_kernel(*op)) continue;
    std::string qualified = name.name.substr(6);
    if (!name.overload_name.empty()) qualified += "." + name.overload_name;
    if (std::optional<torch::CppFunction> unboxed = unboxed_generic_kernel(name)) {
      library.impl(qualified.c_str(), std::move(*unboxed));
    } else if (is_multi_tensor_op(name)) {
      library.impl(qualified.c_str(),
                   torch::CppFunction::makeFromBoxedFunction<&multi_tensor_tpu_kernel>());
    } else {
      library.impl(qualified.c_str(),
                   torch::CppFunction::makeFromBoxedFunction<&generic_tpu_kernel>());
    }
  }
}

}  // namespace torch_tpu::ops
