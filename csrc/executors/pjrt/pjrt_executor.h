// The PJRT executor (DESIGN §2, §3): compiles IR programs to StableHLO (lowering/) and runs them
// on a PJRT client's devices (chip i = the client's device i), in stream order. Executables are
// compiled portable, once, and each run goes to the device its storages live on. PJRT buffers are immutable, so a storage is
// a slot holding its CURRENT buffer: a run reads the slots of the storages
// it reads and installs new buffers into the slots of the live-out storages it writes, and a
// copy into a storage replaces its buffer. Device addresses are handles into the slot table,
// never host addresses. A buffer is a 1-D array of the storage's unit (its dtype, or bytes for a
// storage viewed as several dtypes: lowering/storage_bytes.h); one a program expects in other
// units is converted on the device first. Torch-free; thread-safe.
#pragma once

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "executors/executor.h"
#include "executors/pjrt/client.h"
#include "executors/pjrt/executable_disk_cache.h"
#include "executors/pjrt/lowering/lower_program.h"

namespace torch_tpu::executors::pjrt {

// A program compiled by a PjrtExecutor: the loaded executable and which storage (or Scalar)
// each of its parameters and results is.
struct PjrtExecutable final : Executable {
  lowering::LoweredProgram lowered;
  LoadedExecutable loaded;
  std::vector<int64_t> storage_bytes;  // per program storage
  std::vector<bool> storage_on_host;   // per program storage: host memory, bound by address
  const char* op_name = nullptr;       // interned: the op, or a list of a program's ops
  double compile_seconds = 0.0;        // compiling it (or loading it from the disk cache)
  // prepare_run calls; shared with the executor's record of the program, which outlives it.
  std::shared_ptr<std::atomic<int64_t>> runs = std::make_shared<std::atomic<int64_t>>(0);
};

class PjrtExecutor final : public Executor {
 public:
  // Runs on `client`'s devices, each of whose buffers may hold at most `capacity` bytes together
  // (0: no bound beyond the device's own). A bound keeps out-of-memory errors the same on every
  // runtime: PJRT's CPU plugin would take host memory until the process dies.
  explicit PjrtExecutor(std::shared_ptr<Client> client, size_t capacity = 0);
  // Loads the named plugin ("cpu", "tpu" or a path; see plugin.h) and makes a client on it.
  static std::unique_ptr<PjrtExecutor> create(const std::string& plugin,
                                               const std::vector<std::string>& search_dirs = {},
                                               size_t capacity = 0);

  // Keeps compiled executables under `dir`/<platform> too, and loads them from there instead
  // of compiling (executable_disk_cache.h). Call before the first compile.
  void use_disk_cache(const std::filesystem::path& dir);
  // The disk cache, or null without one.
  const ExecutableDiskCache* disk_cache() const { return disk_cache_.get(); }

  // "pjrt:<platform>", e.g. "pjrt:cpu".
  std::string name() const override;
  // PJRT buffers are opaque: the host reaches them only through copies.
  bool buffers_are_host_memory() const override { return false; }
  // Verifies, lowers (throws "not supported yet: ..." for what lowering/ cannot express) and
  // compiles (throws PjrtError naming the op, with the compiler's message). Blocks; thread-safe.
  std::shared_ptr<const Executable> compile(const ir::Program& program) override;
  // Lowers `program` (verified) and drops the module: cheap beside a compile.
  void check_expressible(const ir::Program& program) const override;
  // Binds each storage's slot now (bindings.storages: one address per program storage, 0 for
  // scratch; a host storage's is the host address of its bytes, uploaded now); the task runs
  // the executable on the device of those slots. A missing slot, a slot whose size is not the
  // program's, slots on different devices, or a PJRT failure fails the task: the stream raises
  // it at its next sync point, naming the op.
  // Bindings of the wrong count, or another executor's executable, throw std::invalid_argument.
  PreparedRun prepare_run(std::shared_ptr<const Executable> executable,
                          RunBindings bindings) override;
  // A new slot of `bytes` on device `chip`, with no buffer yet (it reads as zeros until
  // written). Throws runtime::OutOfMemoryError past the chip's capacity, std::invalid_argument
  // for a chip the client does not have.
  runtime::DeviceAddress allocate(int chip, size_t bytes, int64_t stream) override;
  // Drops the slot from the table; work already queued keeps its buffer alive until it ran.
  void free(int chip, runtime::DeviceAddress buffer) override;
  int chip_of(runtime::DeviceAddress buffer) const override;
  // Whole-slot copies replace (to device) or read (to host) the slot's buffer; a whole-slot copy
  // to the device uploads at the call, so the host may reuse its memory at once. copy_on_device
  // of a whole slot into an equal-sized one shares the immutable buffer. A copy of part of a
  // slot (an address inside it, or fewer bytes), or between devices, round-trips through host
  // memory.
  void copy_to_device(const void* host, runtime::DeviceAddress device, size_t bytes,
                      runtime::Stream& stream, ir::DType unit = ir::DType::kUInt8) override;
  void copy_to_host(runtime::DeviceAddress device, void* host, size_t bytes,
                    runtime::Stream& stream) override;
  void copy_on_device(runtime::DeviceAddress from, runtime::DeviceAddress to, size_t bytes,
                      runtime::Stream& stream) override;
  // A whole slot's buffer is read or replaced as above; part of one round-trips the slot.
  void read_now(runtime::DeviceAddress device, void* host, size_t bytes) override;
  void write_now(const void* host, runtime::DeviceAddress device, size_t bytes) override;

  // Per device: slots are allocations (each its own segment: nothing is cached); bytes are
  // slot sizes. Throw std::invalid_argument for a chip the client does not have.
  runtime::MemoryStats memory_stats(int chip) const override;
  // The capacity given, or the largest size_t when none was.
  size_t memory_capacity(int chip) const override;
  void reset_memory_stats(int chip, StatsReset which) override;

  // Every program compiled so far, in compile order: its name, StableHLO text, runs and
  // compile time (python -m torch_tpu.tpu_report compiles them again for a TPU topology).
  struct CompiledProgram {
    std::string name;
    std::string mlir;
    int64_t runs = 0;
    double compile_seconds = 0.0;
  };
  std::vector<CompiledProgram> compiled_programs() const;

  const Client& client() const { return *client_; }
  // Slots allocated and not freed.
  size_t live_slots() const;
  // The slot's current buffer (null before its first write), as of the work that has run; for
  // tests and the engine's inspection. Throws std::invalid_argument for an unknown address.
  std::shared_ptr<const Buffer> current_buffer(runtime::DeviceAddress address) const;

  // One storage's current contents. Shared by the table and queued tasks (so a free does not
  // pull it from under work already queued); guarded by its own mutex.
  struct Slot {
    mutable std::mutex mutex;
    int device = 0;  // fixed at allocation
    int64_t bytes = 0;
    std::shared_ptr<const Buffer> buffer;
    // The buffer's element type: a 1-D array of bytes / element_size(unit) elements.
    ir::DType unit = ir::DType::kUInt8;
  };

  // An address resolved: the slot it lies in, and how far into it.
  struct Located {
    std::shared_ptr<Slot> slot;  // null: no slot there
    int64_t offset = 0;
  };

 private:
  Located locate(runtime::DeviceAddress address) const;
  // Throws std::invalid_argument naming `what` unless `chip` is one of the client's devices.
  void check_chip(int chip, const char* what) const;

  std::shared_ptr<Client> client_;
  std::unique_ptr<ExecutableDiskCache> disk_cache_;
  // Buffers of recent Scalars and small host storages, shared with queued runs.
  struct OperandBuffers;
  std::shared_ptr<OperandBuffers> operand_buffers_;
  const size_t capacity_;
  mutable std::mutex mutex_;  // guards slots_, next_address_ and stats_
  std::map<runtime::DeviceAddress, std::shared_ptr<Slot>> slots_;  // by first address
  runtime::DeviceAddress next_address_;
  std::vector<runtime::MemoryStats> stats_;  // per device
  struct ProgramRecord {
    const char* name;
    std::string mlir;
    std::shared_ptr<std::atomic<int64_t>> runs;
    double compile_seconds;
  };
  mutable std::mutex compiled_mutex_;
  std::vector<ProgramRecord> compiled_;
};

}  // namespace torch_tpu::executors::pjrt
