// The executor interface (DESIGN §2): what the engine asks of whatever runs programs on chips.
// An executor compiles an IR program into an executable (slow, once per structure: the engine
// caches executables by ir::structural_key), runs executables on device buffers in stream
// order, and owns device buffers. The host executor (executors/host/) runs programs on the
// host runtime's software chips; a PJRT executor runs them through a PJRT plugin; the null
// executor (executors/null_executor.h) runs nothing, for the engine's tests. Torch-free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/program.h"
#include "runtime/device_memory.h"
#include "runtime/memory_stats.h"
#include "runtime/stream.h"

namespace torch_tpu::executors {

// Thrown by Executor::compile for a program this executor cannot express at all (an op without
// a lowering, a dtype it lacks), as opposed to one that failed to compile: the caller may run
// the op another way (ops/ runs it on host kernels, counted as a fallback). The message starts
// with "not supported yet: ".
class NotSupported : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A compiled program. Each executor subclasses it; the engine only stores and passes it back.
// Immutable once made, so one executable serves concurrent runs.
class Executable {
 public:
  virtual ~Executable() = default;
};

// What issuing an op recorded for an executor that runs recorded work: the host executor keeps
// each op's CPU kernel call (executors/host/host_work.h) and, for pointwise ops, how to run it
// on chunks (executors/host/host_op_work.h). An executor that compiles nodes from the IR alone
// needs none.
class RecordedWork {
 public:
  virtual ~RecordedWork() = default;
};

// What one run reads and writes. `storages` has one entry per storage of the program the
// executable was compiled from: the buffer bound to it, or 0 for a created storage that is not
// live out (the executor keeps such scratch itself); for a host storage (ir::Storage::on_host),
// the host address of its bytes, valid during the call to run(). `scalars` are ir::dynamic_scalars of the
// program being run (equal in structure, not in values, to the one compiled). An executor that
// runs recorded work (the host executor) takes `recorded` instead, one entry per node: what
// issuing the node recorded, which holds its tensors; it needs no `storages` or `scalars`.
struct RunBindings {
  std::vector<runtime::DeviceAddress> storages;
  std::vector<ir::ScalarValue> scalars;
  std::vector<std::shared_ptr<const RecordedWork>> recorded;
  // Where the host issued the run (a one-node program: its op), named with its error; or null.
  const char* issued_at = nullptr;
};

class Executor {
 public:
  virtual ~Executor() = default;
  Executor() = default;
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Names the executor in metrics and cache keys ("host", "pjrt:cpu", "null").
  virtual std::string name() const = 0;

  // True when a buffer's device address maps to host memory the host's own kernels may read and
  // write (the host runtime's chips); false for opaque buffers reached only through the copies
  // below (PJRT: on a TPU or GPU they are not in host memory at all).
  virtual bool buffers_are_host_memory() const = 0;

  // Compiles a verified program. Thread-safe. Throws std::exception naming the op it cannot
  // compile (the engine turns that into the user's error).
  virtual std::shared_ptr<const Executable> compile(const ir::Program& program) = 0;
  // Throws NotSupported for a program compile() would refuse as inexpressible, without
  // compiling it: fused mode checks each op alone as it is recorded, and compiles it with the
  // rest of its program at the flush. The default expresses everything.
  virtual void check_expressible(const ir::Program& program) const { (void)program; }

  // A run of `executable` with `bindings`, bound now (buffers, Scalars, host operands) and done
  // by `task` when a stream reaches it, for a caller that queues it in its own order (a program
  // runner at a flush). `name` (interned) names the op or program in errors. Throws
  // std::invalid_argument when the bindings do not fit the executable.
  struct PreparedRun {
    const char* name = nullptr;
    runtime::Task task;
  };
  virtual PreparedRun prepare_run(std::shared_ptr<const Executable> executable,
                                  RunBindings bindings) = 0;

  // Queues a run on `stream` after the work queued there before it and returns at once; its
  // failure is kept by the stream and raised at the next sync point, naming the op.
  void run(std::shared_ptr<const Executable> executable, RunBindings bindings,
           runtime::Stream& stream) {
    const char* issued_at = bindings.issued_at;
    PreparedRun prepared = prepare_run(std::move(executable), std::move(bindings));
    stream.enqueue(prepared.name, std::move(prepared.task), issued_at);
  }

  // A device buffer of `bytes` on `chip`, usable by work queued on `stream` from now on.
  // Throws runtime::OutOfMemoryError when the chip has no room.
  virtual runtime::DeviceAddress allocate(int chip, size_t bytes, int64_t stream) = 0;
  // Gives back a buffer once the work queued on its stream so far has run.
  virtual void free(int chip, runtime::DeviceAddress buffer) = 0;
  // The chip a live buffer of this executor is on; -1 for an address it does not know.
  virtual int chip_of(runtime::DeviceAddress buffer) const = 0;

  // Copies queued on `stream` (asynchronous: host memory must stay valid until the stream
  // reaches them; synchronize the stream to wait). `unit`: what the bytes are elements of, for
  // an executor whose buffers are typed arrays (PJRT keeps them so, and programs read them
  // without a conversion); others ignore it.
  virtual void copy_to_device(const void* host, runtime::DeviceAddress device, size_t bytes,
                              runtime::Stream& stream, ir::DType unit = ir::DType::kUInt8) = 0;
  virtual void copy_to_host(runtime::DeviceAddress device, void* host, size_t bytes,
                            runtime::Stream& stream) = 0;
  virtual void copy_on_device(runtime::DeviceAddress from, runtime::DeviceAddress to, size_t bytes,
                              runtime::Stream& stream) = 0;
  // The same copies made now, on the calling thread, by work that is itself a task queued on
  // the buffer's chip (so in that queue's order): host code that reads or writes device data
  // from inside the queue, as a collective through a host transport does. `device` may point
  // inside a buffer; [device, device + bytes) must lie within it.
  virtual void read_now(runtime::DeviceAddress device, void* host, size_t bytes) = 0;
  virtual void write_now(const void* host, runtime::DeviceAddress device, size_t bytes) = 0;

  // Allocation statistics of `chip`'s buffers, in CUDA's shape (runtime/memory_stats.h), and
  // its capacity in bytes. Thread-safe.
  virtual runtime::MemoryStats memory_stats(int chip) const = 0;
  virtual size_t memory_capacity(int chip) const = 0;
  // MemoryStats::reset_peaks or reset_accumulated on `chip`'s statistics.
  enum class StatsReset { kPeaks, kAccumulated };
  virtual void reset_memory_stats(int chip, StatsReset which) = 0;
};

}  // namespace torch_tpu::executors
