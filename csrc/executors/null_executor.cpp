#include "executors/null_executor.h"

#include <utility>

#include "ir/printer.h"

namespace torch_tpu::executors {

std::shared_ptr<const Executable> NullExecutor::compile(const ir::Program& program) {
  compiles_.fetch_add(1);
  auto compiled = std::make_shared<Compiled>();
  compiled->program_text = ir::to_text(program);
  compiled->nodes = program.nodes.size();
  return compiled;
}

Executor::PreparedRun NullExecutor::prepare_run(std::shared_ptr<const Executable> executable,
                                                RunBindings bindings) {
  runs_.fetch_add(1);
  return {"null::run", [this, executable = std::move(executable), bindings = std::move(bindings)] {
            std::lock_guard<std::mutex> lock(mutex_);
            runs_bound_.push_back(bindings);
          }};
}

runtime::DeviceAddress NullExecutor::allocate(int, size_t bytes, int64_t) {
  live_buffers_.fetch_add(1);
  // 256-byte aligned and never reused, so a test can tell buffers apart.
  return next_buffer_.fetch_add(((bytes + 255) / 256 + 1) * 256);
}

void NullExecutor::free(int, runtime::DeviceAddress) { live_buffers_.fetch_sub(1); }

runtime::MemoryStats NullExecutor::memory_stats(int) const {
  runtime::MemoryStats stats;
  stats.allocation[runtime::kAllPools].current = live_buffers_.load();
  return stats;
}

void NullExecutor::copy_to_device(const void*, runtime::DeviceAddress, size_t bytes,
                                  runtime::Stream&, ir::DType) {
  bytes_copied_.fetch_add(static_cast<int64_t>(bytes));
}

void NullExecutor::copy_to_host(runtime::DeviceAddress, void*, size_t bytes, runtime::Stream&) {
  bytes_copied_.fetch_add(static_cast<int64_t>(bytes));
}

void NullExecutor::copy_on_device(runtime::DeviceAddress, runtime::DeviceAddress, size_t bytes,
                                  runtime::Stream&) {
  bytes_copied_.fetch_add(static_cast<int64_t>(bytes));
}

std::vector<RunBindings> NullExecutor::runs_bound() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return runs_bound_;
}

}  // namespace torch_tpu::executors
