// Fused mode on an executor that compiles programs from the IR alone (PJRT, DESIGN §2): each
// flush's pending ops become one program, compiled by the active executor (cached by
// structure; on PJRT one StableHLO module that XLA fuses) and bound to the buffers its ops
// recorded. Opaque tasks (event marks, waits) split the pending ops into programs around them,
// in order. A program the executor cannot express whole runs op by op as one-node programs
// (each op was checked alone when recorded: engine::check_expressible_alone).
#pragma once

#include "engine/deferral.h"

namespace torch_tpu::engine {

// The runner the Python module installs with such an executor.
ProgramRunner& compiled_program_runner();

}  // namespace torch_tpu::engine
