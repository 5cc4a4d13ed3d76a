#include "ops/task_ops.h"

#include <memory>

#include <ATen/core/LegacyTypeDispatch.h>

#include "engine/mode.h"
#include "engine/program.h"
#include "executors/host/host_work.h"
#include "ops/ir_recording.h"

namespace torch_tpu::ops {

void launch_task_op(int device, const char* op_name, runtime::Task task,
                    std::initializer_list<std::pair<const at::Tensor*, bool>> tensors,
                    bool host_waits_next) {
  // The task is the op's kernel, run later on the chip's queue where the caller's thread-local
  // state (grad mode, dispatch exclusions) is not in force: it runs below autograd, as the
  // kernel itself does, so copying into a CPU leaf that requires grad is not an autograd error.
  task = [body = std::move(task)] {
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    body();
  };
  std::shared_ptr<const engine::OpDescription> description = describe_tensors(op_name, tensors);
  if (engine::current_policy().defers_ops()) {
    engine::launch_described(device, op_name, std::move(task), std::move(description),
                             host_waits_next);
    return;
  }
  // Keyed by structure on each call: copies are few next to the ops between them.
  std::shared_ptr<const executors::Executable> executable =
      engine::compile_one_node(op_name, std::move(description));
  executors::RunBindings bindings;
  bindings.recorded.push_back(std::make_shared<const executors::host::TaskWork>(std::move(task)));
  engine::launch_one_node(device, std::move(executable), std::move(bindings));
}

}  // namespace torch_tpu::ops
