// Planning a DeferAndFuse program (DESIGN §2): which pending ops run as fused clusters
// (executors/host/fused_cluster.h), which run as they are, and which need not run at all.
// executors/host/program_run.cpp caches plans by structure and runs them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/deferral.h"
#include "engine/program.h"
#include "executors/host/fused_cluster.h"

namespace torch_tpu::executors::host {

// One step of a program: pending tasks that run as they are (one task), as a fused cluster,
// or not at all (pointwise work whose results nobody can read).
struct Step {
  enum class Kind { kSingle, kCluster, kSkip };
  Kind kind = Kind::kSingle;
  // The pending tasks, in issue order. A cluster's tasks need not be adjacent: it may have
  // moved its earlier ops past independent opaque ops (a matmul between silu(a) and its
  // product with the matmul's result), which then run before it.
  std::vector<uint32_t> tasks;
  // >= 0: the cluster is this lane of multi-tensor ops (HostOpWork::lanes): each task's
  // ops on one element of its lists. A run of such ops becomes one cluster per lane.
  int lane = -1;
  // After the step, the host's releases (PendingOp::then) of pending tasks
  // [release_begin, release_end) run: those of every task all of whose predecessors have run.
  uint32_t release_begin = 0;
  uint32_t release_end = 0;
  std::shared_ptr<const ClusterPlan> cluster;
};

struct ProgramPlan {
  std::vector<Step> steps;
  // What one run does, counted once when planned (torch_tpu.metrics()).
  int64_t fused_kernels = 0;
  int64_t bytes_written = 0;  // by fused kernels
  int64_t bytes_avoided = 0;  // intermediates fused kernels (and skipped clusters) never write
  std::string dump;  // readable form, for TORCH_TPU_DUMP_PROGRAMS
};

ProgramPlan plan(const std::vector<engine::PendingOp>& pending);

}  // namespace torch_tpu::executors::host
