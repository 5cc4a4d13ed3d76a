// Fused mode's view of the generic kernel's ops (DeferAndFuse): which ops are pointwise, and
// the description of each recorded op the planner works from (engine/program.h): its
// structure, the storages it touches, and — for pointwise ops — how to run it on chunks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/stack.h>

#include "engine/program.h"
#include "ops/boxed_args.h"
#include "ops/op_plan.h"
#include "executors/host/cpu_kernel_call.h"

namespace torch_tpu::ops {

// Whether `name` ("aten::add", "aten::add_") is an elementwise op of its (broadcast) inputs.
bool is_pointwise_op(const std::string& name);

// The description of a generic op recorded in fused mode, for the planner: the storages it
// touches and, for pointwise ops, how to run it on chunks. `args` are its arguments, `outputs`
// the tensors it returns. Its IR node is recorded separately (ops/ir_recording.h).
std::shared_ptr<engine::OpDescription> describe_op(
    const OpPlan& plan, BoxedArgs args, const std::vector<at::Tensor>& outputs,
    const std::vector<at::Tensor>& fresh, std::shared_ptr<const executors::host::CpuKernelCall> queued);

}  // namespace torch_tpu::ops
