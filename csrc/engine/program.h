// Recorded ops (DESIGN §2, §4). In fused mode the engine keeps the ops issued on a stream
// pending (engine/deferral.h), each with its description: its IR node, the storages it
// touches and the work its executor recorded. A flush assembles them into one IR program
// (engine/program_assembly.h), whose structure keys the executor's plan cache; the host
// executor plans and runs it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <c10/core/Storage.h>
#include <c10/core/StorageImpl.h>
#include <c10/util/intrusive_ptr.h>

#include "engine/deferral.h"
#include "executors/executor.h"
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
  // Its storage's data pointer when recorded: the buffer (or, on the host, the bytes) a run of
  // the program binds. A flush may come after the storage's tensors died; its buffer is freed
  // only behind the pending ops (engine::after_issued_work).
  runtime::DeviceAddress buffer = 0;
};

// A storage an op touches, held weakly: the planner asks whether any tensor still refers to it
// (a weak reference also keeps the identity from being reused while the op is pending).
struct StorageRef {
  c10::weak_intrusive_ptr<c10::StorageImpl> storage;
  bool written = false;
  const c10::StorageImpl* id() const { return storage._unsafe_get_target(); }
};
using StorageRefs = std::vector<StorageRef>;

// What a recorded op tells the planner. Ops without one are opaque: they run as they are, and
// fusion does not reason across them.
struct OpDescription {
  // The op as an IR node. Its tensor arguments and returns name `node_tensors` by index, and
  // its accesses are empty: assembling the program numbers values and storages.
  ir::Node node;
  std::vector<NodeTensor> node_tensors;
  // Every storage the op reads or writes (weakly held), so liveness can be reasoned about.
  StorageRefs storages;
  // The executor may fuse it with the ops around it: a program need not end before it.
  bool may_fuse = false;
  // What the executor recorded to run it (executors/executor.h); null for an opaque op.
  std::shared_ptr<const executors::RecordedWork> work;
  // The host storages its node reads (NodeTensor::on_host), kept until a run has bound them:
  // a wrapped number dies with the call, and a flush comes later.
  std::vector<c10::Storage> host_storages;
};

inline const OpDescription* description_of(const PendingOp& op) { return op.description.get(); }

// Queues `task` on the current stream of `device`, or, in fused mode, holds it back with a
// description for the planner (dropped outside fused mode). See engine::launch. Contract: in fused mode a
// task that reads chip memory carries a description naming the storages it touches; the
// planner treats any other task (bar the runtime's event tasks) as reading anything.
// `host_waits_next`: the caller synchronizes the stream right after (a blocking copy to the
// host), so this op never ends a program early: the flush at that sync hands the program to
// the waiting host, which runs it with its whole thread team, instead of to the stream's
// one-thread worker.
void launch_described(int device, const char* op_name, runtime::Task task,
                      std::shared_ptr<const OpDescription> description,
                      bool host_waits_next = false);

// Strict and Debug (DESIGN §2): the op `description` records, as a one-node program compiled
// by the active executor (engine/active_executor.h). The engine's executable cache keys it by
// structure, so each structure is verified and compiled once. `op_name` is interned.
std::shared_ptr<const executors::Executable> compile_one_node(
    const char* op_name, std::shared_ptr<const OpDescription> description);

// Strict and Debug on an executor whose buffers are opaque (executors/executor.h): the op
// `description` records as a one-node program compiled by the active executor, cached by the
// program's structure (which, unlike a call signature, says which arguments share a storage
// and where in it they lie), and what a run of it binds: each program storage's device address
// (its tensor's data pointer) and the program's Scalars. `executable` is null when the
// executor cannot express the op (executors::NotSupported, its message in `not_supported`):
// the caller runs it another way. A host storage is bound by its bytes' address, which the run
// reads when it is queued (Executor::run uploads them): `host_storages` keeps those bytes (the
// description's copies of the CPU tensors) alive until then.
struct BoundOneNode {
  std::shared_ptr<const executors::Executable> executable;
  executors::RunBindings bindings;
  std::string not_supported;
  std::vector<c10::Storage> host_storages;
};
BoundOneNode compile_and_bind_one_node(const char* op_name,
                                       std::shared_ptr<const OpDescription> description);

// Fused mode on an executor that compiles from the IR: empty when the active executor can
// express the op `description` records on its own (Executor::check_expressible), else its
// refusal. An op it cannot express must not be deferred: its program could not run.
std::string check_expressible_alone(const char* op_name,
                                    std::shared_ptr<const OpDescription> description);

// Queues a run of a one-node program from compile_one_node on the current stream of `device`,
// with the op's issue site added to `bindings`; in Debug mode waits for it and raises its error.
void launch_one_node(int device, std::shared_ptr<const executors::Executable> executable,
                     executors::RunBindings bindings);

}  // namespace torch_tpu::engine
