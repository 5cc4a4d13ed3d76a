// DeferAndFuse programs (DESIGN §2, §4). In fused mode a stream keeps the ops issued on it
// pending (runtime/stream.h); a flush hands them here. The planner groups them into a program
// — fused clusters (executors/host/fused_cluster.h) and single ops — and caches the plan by
// the structure of the pending ops (each op's identity and argument structure, in order), so a
// training loop plans each of its programs once and then only hits the cache.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <utility>
#include <memory>
#include <vector>

#include "executors/host/fusible_op.h"
#include "runtime/stream.h"

namespace torch_tpu::engine {

// What a recorded op tells the planner. Ops without one are opaque: they run as they are, and
// fusion does not reason across them.
struct OpDescription {
  std::vector<int64_t> structure;  // op identity + argument structure (the program cache key)
  // The op as the fused loop engine can run it (pointwise ops); null otherwise.
  std::shared_ptr<const executors::host::FusibleOp> fusible;
  // Every storage the op reads or writes (weakly held), so liveness can be reasoned about.
  executors::host::StorageRefs storages;
  // A pointwise multi-tensor op (torch._foreach_*): its per-element ops, one per list element
  // ("lane"), which the planner may fuse lane by lane with the multi-tensor ops around it.
  std::vector<std::shared_ptr<const executors::host::FusibleOp>> lanes;
};

// Queues `task` on the current stream of `device` with a description for the planner (the
// description is dropped outside fused mode). See engine::launch. Contract: in fused mode a
// task that reads chip memory carries a description naming the storages it touches; the
// planner treats any other task (bar the runtime's event tasks) as reading anything.
// `host_waits_next`: the caller synchronizes the stream right after (a blocking copy to the
// host), so this op never ends a program early: the flush at that sync hands the program to
// the waiting host, which runs it with its whole thread team, instead of to the stream's
// one-thread worker.
void launch_described(int device, const char* op_name, runtime::Task task,
                      std::shared_ptr<const OpDescription> description,
                      bool host_waits_next = false);

// In fused mode, the description of an opaque op touching `tensors` (tensor, written); null
// outside fused mode (no cost in Strict).
std::shared_ptr<const OpDescription> describe_storages(
    const char* op_name, std::initializer_list<std::pair<const at::Tensor*, bool>> tensors);

// The planner the runtime calls at each flush (installed at load).
std::vector<runtime::PlannedTask> plan_program(runtime::Stream& stream,
                                               std::vector<runtime::PendingTask>&& pending,
                                               const char* reason);

}  // namespace torch_tpu::engine
