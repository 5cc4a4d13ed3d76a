// The host executor's side of fused mode (DESIGN §2, §4): at each flush the engine hands it a
// stream's pending ops; it assembles them into an IR program (engine/program_assembly.h), finds
// the program's plan in the engine's executable cache by structure (or plans it:
// executors/host/program_plan.h) and returns the plan's steps as tasks to queue. The Python
// module installs it as the engine's program runner (engine::set_program_runner).
#pragma once

#include "engine/deferral.h"

namespace torch_tpu::executors::host {

// The host executor's program runner (one per process).
engine::ProgramRunner& program_runner();

}  // namespace torch_tpu::executors::host
