// The register-level fused loop: a cluster whose ops all have a PointwiseExpression and whose
// tensors are float32/bfloat16/float16 runs as one loop over cache-resident float blocks —
// each element is loaded once, goes through every op of the cluster, and is stored once —
// instead of one PyTorch kernel call per op and chunk. Each result is rounded as the unfused op
// would store it, giving Strict's numbers; TORCH_TPU_FUSED_EXCESS_PRECISION=1 keeps bf16/f16
// intermediates in float32 instead (executors/host/pointwise_program.h). The interpreter here runs
// a cluster until it has been hot long enough to be compiled
// (executors/host/pointwise_codegen.h); both give the same bits.
#pragma once

#include <cstdint>
#include <vector>

#include "executors/host/fused_cluster.h"

namespace torch_tpu::executors::host {

// Whether the loop can run this cluster (see pointwise_program_supports).
bool pointwise_loop_supports(const ClusterPlan& plan, const std::vector<const FusibleOp*>& ops);

// Runs the cluster; requires pointwise_loop_supports().
void run_pointwise_loop(const ClusterPlan& plan, const std::vector<const FusibleOp*>& ops);

// Fused kernels the interpreter ran (for torch_tpu.metrics(); compiled runs are counted in
// pointwise_codegen.h). Fused kernels counted by neither ran PyTorch's kernels on chunks.
int64_t interpreted_kernel_runs();

}  // namespace torch_tpu::executors::host
