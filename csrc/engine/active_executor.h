// The executor the engine compiles and runs programs with (DESIGN §2). One per process, chosen
// before the first op: the Python module installs the host executor. Torch-free.
#pragma once

#include "executors/executor.h"

namespace torch_tpu::engine {

// Installs `executor` (which must outlive its use; null uninstalls).
void set_active_executor(executors::Executor* executor);
// The installed executor. Throws runtime::RuntimeError when none is installed.
executors::Executor& active_executor();

}  // namespace torch_tpu::engine
