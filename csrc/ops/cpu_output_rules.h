// Where PyTorch's Meta kernels and its CPU kernels disagree about an op's outputs, the CPU
// kernel wins: it is what runs on the chip. Each rule was found by a conformance sweep
// (conformance/opinfo, conformance/modules) and names the disagreement it settles.
#pragma once

#include <string>

#include <ATen/core/stack.h>

#include "ops/boxed_args.h"
#include "ops/shape_cache.h"

namespace torch_tpu::ops {

// Rewrites `specs` (from the Meta kernel) to what the CPU kernel of `op_name` ("aten::name",
// no overload) returns for `args`.
void apply_cpu_output_rules(const std::string& op_name, BoxedArgs args,
                            OutputSpecs& specs);

// True for functional ops whose CPU out= kernel accepts fewer inputs than the functional one
// (so they run functionally and have their results copied).
bool out_variant_is_narrower(const std::string& op_name);

}  // namespace torch_tpu::ops
