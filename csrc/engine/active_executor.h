// The executor the engine compiles and runs programs with (DESIGN §2). One per process, chosen
// before the first op: the Python module installs the host executor. Torch-free.
#pragma once

#include "executors/executor.h"

namespace torch_tpu::engine {

// Installs `executor` (which must outlive its use; null uninstalls).
void set_active_executor(executors::Executor* executor);
// The installed executor. Throws runtime::RuntimeError when none is installed.
executors::Executor& active_executor();
// True when the installed executor's buffers are opaque to the host (PJRT): what host kernels
// do on tpu tensors then goes through host copies (ops/host_copies.h).
bool buffers_are_opaque();

}  // namespace torch_tpu::engine
