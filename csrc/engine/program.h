// DeferAndFuse programs (DESIGN §2, §4). In fused mode a stream keeps the ops issued on it
// pending (runtime/stream.h); a flush hands them here. The planner groups them into a program
// — fused clusters (executors/host/fused_cluster.h) and single ops — and caches the plan by
// the structure of the pending ops (each op's identity and argument structure, in order), so a
// training loop plans each of its programs once and then only hits the cache.
#pragma once

#include <cstdint>
#include <utility>
#include <memory>
#include <vector>

#include "executors/host/fusible_op.h"
#include "ir/program.h"
#include "runtime/stream.h"

namespace torch_tpu::engine {

// One tensor a recorded op names, as its program will number it (engine/program_assembly.h).
struct NodeTensor {
  const void* storage = nullptr;  // its storage's identity
  int64_t storage_bytes = 0;
  ir::TensorType type;
  bool read = true;      // false for an out= argument and a fresh result
  bool written = false;
  bool fresh = false;    // a result the op allocated: the program creates its storage
  bool on_host = false;  // a CPU tensor argument: its bytes are a run-time operand
};

// What a recorded op tells the planner. Ops without one are opaque: they run as they are, and
// fusion does not reason across them.
struct OpDescription {
  // The op as an IR node. Its tensor arguments and returns name `node_tensors` by index, and
  // its accesses are empty: assembling the program numbers values and storages.
  ir::Node node;
  std::vector<NodeTensor> node_tensors;
  // The op as the fused loop engine can run it (pointwise ops); null otherwise.
  std::shared_ptr<const executors::host::FusibleOp> fusible;
  // Every storage the op reads or writes (weakly held), so liveness can be reasoned about.
  executors::host::StorageRefs storages;
  // A pointwise multi-tensor op (torch._foreach_*): its per-element ops, one per list element
  // ("lane"), which the planner may fuse lane by lane with the multi-tensor ops around it.
  std::vector<std::shared_ptr<const executors::host::FusibleOp>> lanes;
};

inline const OpDescription* description_of(const runtime::PendingTask& task) {
  return static_cast<const OpDescription*>(task.description.get());
}

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

// The planner the runtime calls at each flush (installed at load).
std::vector<runtime::PlannedTask> plan_program(runtime::Stream& stream,
                                               std::vector<runtime::PendingTask>&& pending,
                                               const char* reason);

}  // namespace torch_tpu::engine
