// The register-level fused loop: a cluster whose ops all have a PointwiseExpression and whose
// tensors are float32/bfloat16/float16 runs as one loop over cache-resident float blocks —
// each element is loaded once, goes through every op of the cluster, and is stored once —
// instead of one PyTorch kernel call per op and chunk. Intermediates stay in float32 and are
// rounded to their dtype only when stored to chip memory (as XLA's fusions do by default,
// xla_allow_excess_precision): a bfloat16 chain can differ from Strict by the roundings of
// values that never reach memory, in Strict's favour of fewer digits.
#pragma once

#include <vector>

#include "executors/host/fused_cluster.h"

namespace torch_tpu::executors::host {

// Whether the loop can run this cluster (flat plan, known ops, floating dtypes).
bool pointwise_loop_supports(const ClusterPlan& plan, const std::vector<const FusibleOp*>& ops);

// Runs the cluster; requires pointwise_loop_supports().
void run_pointwise_loop(const ClusterPlan& plan, const std::vector<const FusibleOp*>& ops);

}  // namespace torch_tpu::executors::host
