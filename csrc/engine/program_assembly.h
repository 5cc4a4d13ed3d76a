// A flush's pending ops as one IR program (DESIGN §2): each described op's node, its tensors
// numbered as the program's values and storages, with the accesses it makes; an opaque task
// (an event, a runtime release) as a node with no arguments. Its structural key is the
// program cache's key, and its text is what TORCH_TPU_DUMP_PROGRAMS writes.
#pragma once

#include <vector>

#include "engine/deferral.h"
#include "ir/program.h"
#include "runtime/device_memory.h"

namespace torch_tpu::engine {

// Storages are external unless an op of the program allocated them (NodeTensor::fresh), and
// live out while a tensor still refers to them (their weak references, at the time of the
// call). `with_issue_sites`: copy each op's issue site into its node (for dumps only).
// `buffers`, when given, receives each program storage's buffer (NodeTensor::buffer, as first
// named), in storage order: what a run of the program binds.
ir::Program assemble_program(const std::vector<PendingOp>& pending,
                             bool with_issue_sites = false,
                             std::vector<runtime::DeviceAddress>* buffers = nullptr);

}  // namespace torch_tpu::engine
