// The host executor's side of fused mode (DESIGN §2, §4): at each flush the runtime hands it a
// stream's pending ops; it assembles them into an IR program (engine/program_assembly.h), finds
// the program's plan in its cache by structure (or plans it: executors/host/program_plan.h)
// and returns the plan's steps as tasks to queue. Installed as the runtime's planner when the
// library loads.
#pragma once

#include <vector>

#include "runtime/stream.h"

namespace torch_tpu::executors::host {

// The planner the runtime calls at each flush (see runtime::FlushHandler's contract).
std::vector<runtime::PlannedTask> plan_program(runtime::Stream& stream,
                                               std::vector<runtime::PendingTask>&& pending,
                                               const char* reason);

}  // namespace torch_tpu::executors::host
