// The host executor behind the executor interface (DESIGN §2): one-node programs (each Strict
// and Debug op) run the work their op recorded (host_work.h) as a task on the stream, and its
// buffers are the chips' caching allocators'. Fused programs are planned from their ops'
// recorded work by the program runner (program_run.h), not compiled from the IR alone.
#pragma once

#include "executors/executor.h"

namespace torch_tpu::executors::host {

// The process's host executor.
Executor& host_executor();

}  // namespace torch_tpu::executors::host
