// An executor that compiles and runs nothing: it counts what it is asked and queues an empty
// task per run, so tests of the engine (deferral, caching, flush policy) need no kernels.
// Buffers are numbers handed out in order; copies only count bytes. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "executors/executor.h"

namespace torch_tpu::executors {

class NullExecutor : public Executor {
 public:
  // Each compiled program, as text (ir::to_text), in compile order.
  struct Compiled : Executable {
    std::string program_text;
    size_t nodes = 0;
  };

  std::string name() const override { return "null"; }
  bool buffers_are_host_memory() const override { return false; }
  std::shared_ptr<const Executable> compile(const ir::Program& program) override;
  PreparedRun prepare_run(std::shared_ptr<const Executable> executable,
                          RunBindings bindings) override;
  runtime::DeviceAddress allocate(int chip, size_t bytes, int64_t stream) override;
  void free(int chip, runtime::DeviceAddress buffer) override;
  int chip_of(runtime::DeviceAddress) const override { return 0; }  // one chip's numbers
  void copy_to_device(const void* host, runtime::DeviceAddress device, size_t bytes,
                      runtime::Stream& stream, ir::DType unit = ir::DType::kUInt8) override;
  void copy_to_host(runtime::DeviceAddress device, void* host, size_t bytes,
                    runtime::Stream& stream) override;
  void copy_on_device(runtime::DeviceAddress from, runtime::DeviceAddress to, size_t bytes,
                      runtime::Stream& stream) override;
  // Count bytes; the host's memory is left as it is.
  void read_now(runtime::DeviceAddress, void*, size_t bytes) override {
    bytes_copied_.fetch_add(static_cast<int64_t>(bytes));
  }
  void write_now(const void*, runtime::DeviceAddress, size_t bytes) override {
    bytes_copied_.fetch_add(static_cast<int64_t>(bytes));
  }

  // Counts live buffers as allocations (it keeps no sizes); unbounded capacity.
  runtime::MemoryStats memory_stats(int chip) const override;
  size_t memory_capacity(int) const override { return SIZE_MAX; }
  void reset_memory_stats(int, StatsReset) override {}  // a count of live buffers only

  int64_t compiles() const { return compiles_.load(); }
  int64_t runs() const { return runs_.load(); }
  int64_t live_buffers() const { return live_buffers_.load(); }
  int64_t bytes_copied() const { return bytes_copied_.load(); }
  // The bindings of every run, in the order the stream ran them.
  std::vector<RunBindings> runs_bound() const;

 private:
  std::atomic<int64_t> compiles_{0};
  std::atomic<int64_t> runs_{0};
  std::atomic<int64_t> live_buffers_{0};
  std::atomic<int64_t> bytes_copied_{0};
  std::atomic<runtime::DeviceAddress> next_buffer_{0x1000};
  mutable std::mutex mutex_;
  std::vector<RunBindings> runs_bound_;
};

}  // namespace torch_tpu::executors
