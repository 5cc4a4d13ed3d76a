// A dispatcher call as the IR node fused mode records (engine/program.h, OpDescription::node):
// the op's schema name, its arguments in schema order (tensors as slots of
// OpDescription::node_tensors, Scalars as run-time operands, everything else as constants) and
// its returns, with which tensors it reads, writes or allocates.
#pragma once

#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/core/function_schema.h>
#include <ATen/core/stack.h>

#include "engine/program.h"
#include "ir/dtype.h"
#include "ops/boxed_args.h"
#include "ops/op_plan.h"

namespace torch_tpu::ops {

ir::DType to_ir_dtype(c10::ScalarType dtype);

// Fills `description.node` and `description.node_tensors` for a call of `schema` with `args`
// that returned `results`; `fresh` are the results it allocated.
void record_node(const c10::FunctionSchema& schema, const OpPlan& plan, BoxedArgs args,
                 const torch::jit::Stack& results, const std::vector<at::Tensor>& fresh,
                 engine::OpDescription& description);

// The description of an op that is not a generic-kernel call (a copy between host and chip)
// touching `tensors` (tensor, written): a node named `op_name` with its tpu tensors as
// arguments.
std::shared_ptr<const engine::OpDescription> describe_tensors(
    const char* op_name, std::initializer_list<std::pair<const at::Tensor*, bool>> tensors);

}  // namespace torch_tpu::ops
