#include "executors/host/host_executor.h"

#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_set>

#include "executors/host/host_work.h"
#include "executors/host/vector_math.h"
#include "runtime/chip.h"

namespace torch_tpu::executors::host {
namespace {

// Op names live as long as the process: a queued task names its op by pointer.
const char* intern_op_name(const std::string& name) {
  static std::mutex mutex;
  static std::unordered_set<std::string> names;
  std::lock_guard<std::mutex> lock(mutex);
  return names.insert(name).first->c_str();
}

// A compiled one-node program: its op's recorded work is all a run needs.
struct OneNodeProgram final : Executable {
  explicit OneNodeProgram(const char* op_name) : op_name(op_name) {}
  const char* op_name;  // interned
};

runtime::Chip& chip_at(runtime::DeviceAddress address) {
  runtime::Chip* chip = runtime::Runtime::instance().chip_of(address);
  if (chip == nullptr) {
    throw std::invalid_argument("host executor: " + std::to_string(address) +
                                " is not a chip address");
  }
  return *chip;
}

class HostExecutor final : public Executor {
 public:
  // Sets MKL's vector math up on this one thread before any kernel runs on a team
  // (vector_math.cpp says why).
  HostExecutor() { vector_math(); }

  std::string name() const override { return "host"; }
  bool buffers_are_host_memory() const override { return true; }

  std::shared_ptr<const Executable> compile(const ir::Program& program) override {
    if (program.nodes.size() != 1) {
      throw std::invalid_argument(
          "not supported yet: the host executor compiles one-node programs; a fused program "
          "is planned from its ops' recorded work (executors/host/program_run.h)");
    }
    return std::make_shared<const OneNodeProgram>(intern_op_name(program.nodes.front().op));
  }

  PreparedRun prepare_run(std::shared_ptr<const Executable> executable,
                          RunBindings bindings) override {
    if (bindings.recorded.size() != 1 || bindings.recorded.front() == nullptr) {
      throw std::invalid_argument("host executor: a one-node run needs its op's recorded work");
    }
    const char* op_name = static_cast<const OneNodeProgram&>(*executable).op_name;
    // The host layer records only HostWork (host_work.h).
    std::shared_ptr<const HostWork> work =
        std::static_pointer_cast<const HostWork>(std::move(bindings.recorded.front()));
    return {op_name, [work = std::move(work)] { work->run(); }};
  }

  runtime::DeviceAddress allocate(int chip, size_t bytes, int64_t stream) override {
    return runtime::Runtime::instance().chip(chip).allocator().allocate(bytes, stream);
  }

  // The caching allocator hands a block out again only to its own stream, whose queued work
  // then runs first.
  void free(int chip, runtime::DeviceAddress buffer) override {
    runtime::Runtime::instance().chip(chip).allocator().free(buffer);
  }

  int chip_of(runtime::DeviceAddress buffer) const override {
    const runtime::Chip* chip = runtime::Runtime::instance().chip_of(buffer);
    return chip == nullptr ? -1 : chip->index();
  }

  void copy_to_device(const void* host, runtime::DeviceAddress device, size_t bytes,
                      runtime::Stream& stream, ir::DType = ir::DType::kUInt8) override {
    runtime::Chip& chip = chip_at(device);
    stream.enqueue("tpu::copy_to_device",
                   [&chip, host, device, bytes] { std::memcpy(chip.host_address(device), host, bytes); });
  }

  void copy_to_host(runtime::DeviceAddress device, void* host, size_t bytes,
                    runtime::Stream& stream) override {
    runtime::Chip& chip = chip_at(device);
    stream.enqueue("tpu::copy_to_host",
                   [&chip, host, device, bytes] { std::memcpy(host, chip.host_address(device), bytes); });
  }

  void copy_on_device(runtime::DeviceAddress from, runtime::DeviceAddress to, size_t bytes,
                      runtime::Stream& stream) override {
    runtime::Chip& source = chip_at(from);
    runtime::Chip& target = chip_at(to);
    stream.enqueue("tpu::copy_on_device", [&source, &target, from, to, bytes] {
      std::memmove(target.host_address(to), source.host_address(from), bytes);
    });
  }

  void read_now(runtime::DeviceAddress device, void* host, size_t bytes) override {
    std::memcpy(host, chip_at(device).host_address(device), bytes);
  }

  void write_now(const void* host, runtime::DeviceAddress device, size_t bytes) override {
    std::memcpy(chip_at(device).host_address(device), host, bytes);
  }

  runtime::MemoryStats memory_stats(int chip) const override {
    return runtime::Runtime::instance().chip(chip).allocator().stats();
  }
  size_t memory_capacity(int chip) const override {
    return runtime::Runtime::instance().chip(chip).memory().capacity();
  }
  void reset_memory_stats(int chip, StatsReset which) override {
    runtime::CachingAllocator& allocator = runtime::Runtime::instance().chip(chip).allocator();
    if (which == StatsReset::kPeaks) {
      allocator.reset_peak_stats();
    } else {
      allocator.reset_accumulated_stats();
    }
  }
};

}  // namespace

Executor& host_executor() {
  static HostExecutor executor;
  return executor;
}

}  // namespace torch_tpu::executors::host
