// Ops the generic kernel does not issue (copies between host and chip and between chips):
// each runs as a task of host work, recorded as an IR node over the tpu tensors it touches
// (ops/ir_recording.h): held back with that description in fused mode, run as a one-node
// program in Strict and Debug (engine/program.h).
#pragma once

#include <initializer_list>
#include <utility>

#include <ATen/core/Tensor.h>

#include "runtime/stream.h"

namespace torch_tpu::ops {

// Issues `task` as the op `op_name` (interned) on the current stream of `device`. `tensors`:
// each tensor it touches and whether it writes it (CPU tensors are left out of the node).
// `host_waits_next`: see engine::launch_described.
void launch_task_op(int device, const char* op_name, runtime::Task task,
                    std::initializer_list<std::pair<const at::Tensor*, bool>> tensors,
                    bool host_waits_next = false);

}  // namespace torch_tpu::ops
