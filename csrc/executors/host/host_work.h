// What the host executor runs for one issued op (executors/executor.h's RecordedWork): a CPU
// kernel call (cpu_kernel_call.h) or a plain task (a copy between host and chip). A Strict or
// Debug op binds it to its one-node program's run (host_executor.h); a fused program runs it
// for each op it does not fuse.
#pragma once

#include <utility>

#include "executors/executor.h"
#include "runtime/stream.h"

namespace torch_tpu::executors::host {

class HostWork : public RecordedWork {
 public:
  // Runs the op on the chip's memory. Throws what the op's kernel throws.
  virtual void run() const = 0;
};

// Host work that is a task of its own.
class TaskWork final : public HostWork {
 public:
  explicit TaskWork(runtime::Task task) : task_(std::move(task)) {}
  void run() const override { task_(); }

 private:
  runtime::Task task_;
};

}  // namespace torch_tpu::executors::host
