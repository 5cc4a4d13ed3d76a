#include "executors/pjrt/pjrt_executor.h"

#include <cstdlib>

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <unordered_set>
#include <utility>

#include "executors/pjrt/compile_options.h"
#include "executors/pjrt/lowering/storage_bytes.h"
#include "ir/verifier.h"

namespace torch_tpu::executors::pjrt {
namespace {

using Slot = PjrtExecutor::Slot;

// Slot handles live in their own range, far from the host runtime's chip addresses
// (runtime::chip_base_address), so neither executor mistakes the other's for its own.
constexpr runtime::DeviceAddress kFirstSlotAddress = runtime::DeviceAddress{0x7} << 52;
constexpr runtime::DeviceAddress kSlotAlignment = 256;

// Op names live as long as the process: a queued task names its op by pointer.
const char* intern(const std::string& name) {
  static std::mutex mutex;
  static std::unordered_set<std::string> names;
  std::lock_guard<std::mutex> lock(mutex);
  return names.insert(name).first->c_str();
}

std::string program_name(const ir::Program& program) {
  if (program.nodes.size() == 1) return program.nodes.front().op;
  std::string name = "pjrt program of " + std::to_string(program.nodes.size()) + " nodes (";
  for (size_t n = 0; n < program.nodes.size() && n < 4; ++n) {
    name += (n ? ", " : "") + program.nodes[n].op;
  }
  return name + (program.nodes.size() > 4 ? ", ...)" : ")");
}

std::string hex(runtime::DeviceAddress address) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(address));
  return text;
}

capi::BufferType buffer_type_of(ir::DType unit) {
  switch (unit) {
    case ir::DType::kUInt8: return capi::BufferType::kU8;
    case ir::DType::kInt8: return capi::BufferType::kS8;
    case ir::DType::kInt16: return capi::BufferType::kS16;
    case ir::DType::kInt32: return capi::BufferType::kS32;
    case ir::DType::kInt64: return capi::BufferType::kS64;
    case ir::DType::kUInt16: return capi::BufferType::kU16;
    case ir::DType::kUInt32: return capi::BufferType::kU32;
    case ir::DType::kUInt64: return capi::BufferType::kU64;
    case ir::DType::kFloat16: return capi::BufferType::kF16;
    case ir::DType::kBFloat16: return capi::BufferType::kBF16;
    case ir::DType::kFloat32: return capi::BufferType::kF32;
    case ir::DType::kFloat64: return capi::BufferType::kF64;
    default: return capi::BufferType::kInvalid;
  }
}

// The unit a buffer of `bytes` bytes given as `unit` elements is kept in: `unit` when the
// plugin has that element type and it divides the bytes, else bytes.
ir::DType usable_unit(ir::DType unit, int64_t bytes) {
  if (buffer_type_of(unit) == capi::BufferType::kInvalid || bytes % ir::element_size(unit) != 0) {
    return ir::DType::kUInt8;
  }
  return unit;
}

// `size` host bytes as a 1-D buffer of `unit` elements (usable_unit's) on device `device`.
std::shared_ptr<const Buffer> upload(const Client& client, const void* bytes, int64_t size,
                                     ir::DType unit, int device) {
  const int64_t dims[1] = {size / ir::element_size(unit)};
  return std::make_shared<const Buffer>(
      client.copy_to_device(bytes, buffer_type_of(unit), dims, static_cast<size_t>(device)));
}

// The slot's bytes on the host (zeros before its first write).
std::vector<unsigned char> download(const Slot& slot) {
  std::shared_ptr<const Buffer> buffer;
  int64_t bytes = 0;
  {
    std::lock_guard<std::mutex> lock(slot.mutex);
    buffer = slot.buffer;
    bytes = slot.bytes;
  }
  std::vector<unsigned char> host(static_cast<size_t>(bytes), 0);
  if (buffer != nullptr && bytes > 0) buffer->copy_to_host(host.data(), host.size());
  return host;
}

int64_t bytes_of(const Slot& slot) {
  std::lock_guard<std::mutex> lock(slot.mutex);
  return slot.bytes;
}

void install(Slot& slot, std::shared_ptr<const Buffer> buffer, int64_t bytes, ir::DType unit) {
  std::lock_guard<std::mutex> lock(slot.mutex);
  slot.buffer = std::move(buffer);
  slot.bytes = bytes;
  slot.unit = unit;
}

ir::DType unit_of(const Slot& slot) {
  std::lock_guard<std::mutex> lock(slot.mutex);
  return slot.unit;
}

void check_range(const char* what, int64_t offset, size_t bytes, int64_t slot_bytes) {
  if (offset + static_cast<int64_t>(bytes) > slot_bytes) {
    throw runtime::RuntimeError(std::string(what) + ": " + std::to_string(bytes) +
                                " bytes at offset " + std::to_string(offset) +
                                " run past the end of a buffer of " + std::to_string(slot_bytes));
  }
}

// Reads `bytes` of the slot from `at.offset` into `host` (zeros before its first write).
void read_range(const PjrtExecutor::Located& at, void* host, size_t bytes, const char* what) {
  std::shared_ptr<const Buffer> buffer;
  int64_t slot_bytes = 0;
  {
    std::lock_guard<std::mutex> lock(at.slot->mutex);
    buffer = at.slot->buffer;
    slot_bytes = at.slot->bytes;
  }
  check_range(what, at.offset, bytes, slot_bytes);
  if (buffer != nullptr && at.offset == 0 && static_cast<int64_t>(bytes) == slot_bytes) {
    if (bytes > 0) buffer->copy_to_host(host, bytes);
    return;
  }
  const std::vector<unsigned char> whole = download(*at.slot);
  if (bytes > 0) std::memcpy(host, whole.data() + at.offset, bytes);
}

// Writes `bytes` host bytes into the slot at `at.offset`: a new buffer for the whole slot, in
// the slot's units, on its device (part of a slot round-trips the rest through host memory).
void write_range(const Client& client, const PjrtExecutor::Located& at, const void* host,
                 size_t bytes, const char* what) {
  const int64_t slot_bytes = bytes_of(*at.slot);
  check_range(what, at.offset, bytes, slot_bytes);
  const ir::DType unit = unit_of(*at.slot);
  if (at.offset == 0 && static_cast<int64_t>(bytes) == slot_bytes) {
    install(*at.slot, upload(client, host, slot_bytes, unit, at.slot->device), slot_bytes, unit);
    return;
  }
  std::vector<unsigned char> whole = download(*at.slot);
  if (bytes > 0) std::memcpy(whole.data() + at.offset, host, bytes);
  install(*at.slot, upload(client, whole.data(), slot_bytes, unit, at.slot->device), slot_bytes,
          unit);
}

}  // namespace

// Buffers of recent small run-time operands, per device: Scalars (0-d) and host storages of a
// few bytes (wrapped numbers, `x * 2` passes one). A steady loop (the same alpha or learning
// rate every step) uploads none.
struct PjrtExecutor::OperandBuffers {
  static constexpr size_t kCapacity = 256;  // values kept; a full cache starts over
  static constexpr size_t kMaxHostBytes = 16;

  std::shared_ptr<const Buffer> scalar(const Client& client, const ir::ScalarValue& scalar,
                                       int device) {
    const bool as_bool = scalar.kind == ir::ScalarValue::Kind::kBool;
    const bool as_int = scalar.kind == ir::ScalarValue::Kind::kInt;
    const auto boolean = static_cast<uint8_t>(scalar.integer != 0);
    const void* data = as_bool  ? static_cast<const void*>(&boolean)
                       : as_int ? static_cast<const void*>(&scalar.integer)
                                : static_cast<const void*>(&scalar.real);
    const capi::BufferType type = as_bool  ? capi::BufferType::kPred
                                  : as_int ? capi::BufferType::kS64
                                           : capi::BufferType::kF64;
    return get(client, type, data, as_bool ? 1 : 8, {}, device);
  }

  // `bytes` host bytes as a 1-D buffer of `unit` elements on `device`, uploaded now.
  std::shared_ptr<const Buffer> host_bytes(const Client& client, const void* data, int64_t bytes,
                                           ir::DType unit, int device) {
    if (static_cast<size_t>(bytes) > kMaxHostBytes) return upload(client, data, bytes, unit, device);
    return get(client, buffer_type_of(unit), data, static_cast<size_t>(bytes),
               {bytes / ir::element_size(unit)}, device);
  }

  // `buffer` (a storage of `bytes` bytes as `from` units, on `device`) as `to` units, on the
  // device; the conversion program is compiled once per (from, to, bytes), portable.
  std::shared_ptr<const Buffer> convert(const Client& client, const Buffer& buffer, ir::DType from,
                                        ir::DType to, int64_t bytes, int device) {
    const std::string key = std::to_string(static_cast<int>(from)) + ">" +
                            std::to_string(static_cast<int>(to)) + ":" + std::to_string(bytes);
    std::shared_ptr<const LoadedExecutable> program;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (auto found = conversions.find(key); found != conversions.end()) program = found->second;
    }
    if (program == nullptr) {
      program = std::make_shared<const LoadedExecutable>(
          client.compile(lowering::conversion_module(from, to, bytes),
                         compile_options_bytes(1, 1, /*portable=*/true)));
      std::lock_guard<std::mutex> lock(mutex);
      conversions.emplace(key, program);
    }
    const Buffer* argument = &buffer;
    Event done;
    std::vector<Buffer> outputs =
        program->execute({&argument, 1}, &done, static_cast<size_t>(device));
    done.await();
    return std::make_shared<const Buffer>(std::move(outputs.front()));
  }

 private:
  std::shared_ptr<const Buffer> get(const Client& client, capi::BufferType type, const void* data,
                                    size_t size, std::vector<int64_t> dims, int device) {
    std::string key = std::to_string(device) + ":" + static_cast<char>(type);
    key.append(static_cast<const char*>(data), size);
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (auto found = buffers.find(key); found != buffers.end()) return found->second;
    }
    auto buffer = std::make_shared<const Buffer>(
        client.copy_to_device(data, type, dims, static_cast<size_t>(device)));
    std::lock_guard<std::mutex> lock(mutex);
    if (buffers.size() >= kCapacity) buffers.clear();
    buffers.emplace(std::move(key), buffer);
    return buffer;
  }

  std::mutex mutex;
  std::map<std::string, std::shared_ptr<const Buffer>> buffers;
  std::map<std::string, std::shared_ptr<const LoadedExecutable>> conversions;
};

PjrtExecutor::PjrtExecutor(std::shared_ptr<Client> client, size_t capacity)
    : client_(std::move(client)),
      operand_buffers_(std::make_shared<OperandBuffers>()),
      capacity_(capacity == 0 ? SIZE_MAX : capacity),
      next_address_(kFirstSlotAddress) {
  if (client_ == nullptr) throw std::invalid_argument("PjrtExecutor: no client");
  stats_.resize(client_->devices().size());
}

std::unique_ptr<PjrtExecutor> PjrtExecutor::create(const std::string& plugin,
                                                   const std::vector<std::string>& search_dirs,
                                                   size_t capacity) {
  return std::make_unique<PjrtExecutor>(Client::create(Plugin::load(plugin, search_dirs)),
                                        capacity);
}

void PjrtExecutor::use_disk_cache(const std::filesystem::path& dir) {
  const Plugin& plugin = client_->plugin();
  std::string identity = plugin.path() + "\n" + plugin.version().to_string() + "\n" +
                         client_->platform_name() + " " + client_->platform_version();
  for (const auto& [name, value] : plugin.attributes()) identity += "\n" + name + "=" + value;
  // XLA reads its flags from the environment when the plugin starts; they change what it
  // compiles (torch_tpu sets the CPU plugin's instruction set there).
  if (const char* flags = std::getenv("XLA_FLAGS")) identity += std::string("\nXLA_FLAGS=") + flags;
  disk_cache_ = std::make_unique<ExecutableDiskCache>(dir / client_->platform_name(), identity);
}

std::string PjrtExecutor::name() const { return "pjrt:" + client_->platform_name(); }

std::shared_ptr<const Executable> PjrtExecutor::compile(const ir::Program& program) {
  ir::verify_or_throw(program);
  auto executable = std::make_shared<PjrtExecutable>();
  executable->lowered = lowering::lower_program(program);
  executable->op_name = intern(program_name(program));
  const auto started = std::chrono::steady_clock::now();
  const std::string& mlir = executable->lowered.mlir;
  // Portable: one executable serves every device (the run names its device).
  const std::string options = compile_options_bytes(1, 1, /*portable=*/true);
  bool loaded = false;
  if (disk_cache_ != nullptr) {
    if (std::optional<std::string> serialized = disk_cache_->load(mlir, options)) {
      try {
        executable->loaded = client_->load_serialized(*serialized);
        loaded = true;
      } catch (const PjrtError&) {
        disk_cache_->remove(mlir, options);  // unreadable: compiled again below
      }
    }
  }
  if (!loaded) {
    try {
      executable->loaded = client_->compile(mlir, options);
    } catch (const PjrtError& error) {
      // The plugin's message names no op; ours does (the module text is in lowered.mlir).
      throw PjrtError(std::string("PJRT_Client_Compile of ") + executable->op_name, error.code(),
                      error.plugin_message());
    }
    if (disk_cache_ != nullptr) disk_cache_->store(mlir, options, executable->loaded.serialize());
  }
  for (const ir::Storage& storage : program.storages) {
    executable->storage_bytes.push_back(storage.bytes);
    executable->storage_on_host.push_back(storage.on_host);
  }
  executable->compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  // The record keeps the program's text and run count, not the executable: a loaded executable
  // holds JIT memory mappings (about six on the CPU plugin), and the engine's executable cache
  // is what bounds how many stay loaded.
  std::lock_guard<std::mutex> lock(compiled_mutex_);
  compiled_.push_back({executable->op_name, executable->lowered.mlir, executable->runs,
                       executable->compile_seconds});
  return executable;
}

void PjrtExecutor::check_expressible(const ir::Program& program) const {
  lowering::lower_program(program);
}

Executor::PreparedRun PjrtExecutor::prepare_run(std::shared_ptr<const Executable> executable,
                                                RunBindings bindings) {
  auto compiled = std::dynamic_pointer_cast<const PjrtExecutable>(std::move(executable));
  if (compiled == nullptr) {
    throw std::invalid_argument("PjrtExecutor::prepare_run: not a PJRT executable");
  }
  const lowering::LoweredProgram& lowered = compiled->lowered;
  compiled->runs->fetch_add(1, std::memory_order_relaxed);
  if (bindings.storages.size() != compiled->storage_bytes.size() ||
      bindings.scalars.size() != lowered.scalar_kinds.size()) {
    throw std::invalid_argument(
        std::string("PjrtExecutor::prepare_run: ") + compiled->op_name + " takes " +
        std::to_string(compiled->storage_bytes.size()) + " storages and " +
        std::to_string(lowered.scalar_kinds.size()) + " scalars; bound " +
        std::to_string(bindings.storages.size()) + " and " +
        std::to_string(bindings.scalars.size()));
  }
  // Slots are bound now, in issue order: a later free() cannot take them from this run. Host
  // storages are uploaded now, to the device the slots are on: their memory is the caller's
  // only during the call.
  struct Bound {
    ir::StorageId storage;
    Located at;
    std::shared_ptr<const Buffer> host;  // a host storage's bytes
  };
  auto located = [&](const std::vector<ir::StorageId>& storages) {
    std::vector<Bound> bound;
    for (const ir::StorageId s : storages) {
      Located at;
      if (!compiled->storage_on_host[static_cast<size_t>(s)]) {
        at = locate(bindings.storages[static_cast<size_t>(s)]);
      }
      bound.push_back({s, std::move(at), nullptr});
    }
    return bound;
  };
  std::vector<Bound> parameters = located(lowered.parameter_storages);
  std::vector<Bound> results = located(lowered.result_storages);
  // The device every bound slot is on (the engine runs an op on its tensors' chip); a program
  // with slots on two devices fails when it runs, below.
  int device = 0;
  bool devices_agree = true;
  bool device_known = false;
  for (const std::vector<Bound>* list : {&parameters, &results}) {
    for (const Bound& bound : *list) {
      if (bound.at.slot == nullptr) continue;
      if (device_known && bound.at.slot->device != device) devices_agree = false;
      device = device_known ? device : bound.at.slot->device;
      device_known = true;
    }
  }
  for (Bound& bound : parameters) {
    const auto s = static_cast<size_t>(bound.storage);
    if (!compiled->storage_on_host[s]) continue;
    bound.host = operand_buffers_->host_bytes(
        *client_, reinterpret_cast<const void*>(bindings.storages[s]), compiled->storage_bytes[s],
        lowered.storage_units[s], device);
  }
  auto task = [client = client_, operand_cache = operand_buffers_, compiled, device, devices_agree,
               parameters = std::move(parameters), results = std::move(results),
               addresses = bindings.storages, scalars = std::move(bindings.scalars)] {
    if (!devices_agree) {
      throw runtime::RuntimeError(std::string(compiled->op_name) +
                                  " reads or writes buffers of more than one device");
    }
    auto check = [&](ir::StorageId s, const Located& at) {
      const runtime::DeviceAddress address = addresses[static_cast<size_t>(s)];
      if (at.slot == nullptr || at.offset != 0) {
        throw runtime::RuntimeError("storage s" + std::to_string(s) + " is bound to " +
                                    hex(address) + ", which is not a buffer of the pjrt:" +
                                    client->platform_name() + " executor");
      }
    };
    std::vector<std::shared_ptr<const Buffer>> arguments;
    for (const auto& [s, at, host] : parameters) {
      if (host != nullptr) {
        arguments.push_back(host);
        continue;
      }
      check(s, at);
      const int64_t expected = compiled->storage_bytes[static_cast<size_t>(s)];
      std::lock_guard<std::mutex> lock(at.slot->mutex);
      if (at.slot->bytes != expected) {
        throw runtime::RuntimeError("storage s" + std::to_string(s) + " has " +
                                    std::to_string(expected) +
                                    " bytes in the program but its buffer has " +
                                    std::to_string(at.slot->bytes));
      }
      // A slot never written reads as zeros; the zeros become its buffer. One another program
      // wrote in other units is converted on the device, and keeps the new units.
      const ir::DType unit = compiled->lowered.storage_units[static_cast<size_t>(s)];
      if (at.slot->buffer == nullptr) {
        const std::vector<unsigned char> zeros(static_cast<size_t>(expected), 0);
        at.slot->buffer = upload(*client, zeros.data(), expected, unit, device);
        at.slot->unit = unit;
      } else if (at.slot->unit != unit) {
        at.slot->buffer =
            operand_cache->convert(*client, *at.slot->buffer, at.slot->unit, unit, expected, device);
        at.slot->unit = unit;
      }
      arguments.push_back(at.slot->buffer);
    }
    for (const ir::ScalarValue& scalar : scalars) {
      arguments.push_back(operand_cache->scalar(*client, scalar, device));
    }
    for (const auto& [s, at, host] : results) check(s, at);
    std::vector<const Buffer*> argument_list;
    for (const auto& argument : arguments) argument_list.push_back(argument.get());
    // A parameter's buffer is donated to its storage's new contents only when nothing but its
    // slot and this run hold it: another slot sharing it (a whole copy), a cached operand or
    // queued work keeps it, and XLA copies instead.
    std::vector<int64_t> keep;
    for (const auto& [parameter, result] : compiled->lowered.donatable) {
      if (arguments[parameter].use_count() > 2) keep.push_back(static_cast<int64_t>(parameter));
    }
    Event done;
    std::vector<Buffer> outputs =
        compiled->loaded.execute(argument_list, &done, static_cast<size_t>(device), keep);
    // Waiting here keeps a failing run's error with this task, which names the op.
    done.await();
    // A violated run-time check fails the run. A one-op program's storages keep their
    // contents, as when ATen raises; a fused program's results are installed first, so the
    // other ops' results are not lost (the failing op's outputs hold what XLA computed).
    const lowering::LoweredProgram& lowered_program = compiled->lowered;
    auto install_results = [&] {
      for (size_t r = 0; r < results.size(); ++r) {
        const auto& [s, at, host] = results[r];
        install(*at.slot, std::make_shared<const Buffer>(std::move(outputs[r])),
                compiled->storage_bytes[static_cast<size_t>(s)],
                lowered_program.storage_units[static_cast<size_t>(s)]);
      }
    };
    if (lowered_program.several_writing_nodes) install_results();
    for (size_t c = 0; c < lowered_program.check_messages.size(); ++c) {
      bool violated = false;
      outputs[results.size() + c].copy_to_host(&violated, sizeof(violated));
      if (violated) throw runtime::RuntimeError(lowered_program.check_messages[c]);
    }
    if (!lowered_program.several_writing_nodes) install_results();
  };
  return {compiled->op_name, std::move(task)};
}

void PjrtExecutor::check_chip(int chip, const char* what) const {
  const size_t devices = client_->devices().size();
  if (chip < 0 || static_cast<size_t>(chip) >= devices) {
    throw std::invalid_argument(std::string("PjrtExecutor::") + what + ": chip " +
                                std::to_string(chip) + " is not one of the pjrt:" +
                                client_->platform_name() + " client's " + std::to_string(devices) +
                                " devices");
  }
}

runtime::DeviceAddress PjrtExecutor::allocate(int chip, size_t bytes, int64_t) {
  check_chip(chip, "allocate");
  auto slot = std::make_shared<Slot>();
  slot->device = chip;
  slot->bytes = static_cast<int64_t>(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  runtime::MemoryStats& stats = stats_[static_cast<size_t>(chip)];
  const auto in_use = static_cast<size_t>(stats.allocated_bytes[runtime::kAllPools].current);
  if (bytes > capacity_ - in_use) {
    ++stats.num_ooms;
    throw runtime::OutOfMemoryError(chip, bytes, capacity_ - in_use, capacity_);
  }
  for (runtime::StatArray* stat : {&stats.allocation, &stats.segment, &stats.active}) {
    (*stat)[runtime::kAllPools].increase(1);
  }
  for (runtime::StatArray* stat : {&stats.allocated_bytes, &stats.reserved_bytes,
                                   &stats.active_bytes, &stats.requested_bytes}) {
    (*stat)[runtime::kAllPools].increase(static_cast<int64_t>(bytes));
  }
  ++stats.num_device_alloc;
  const runtime::DeviceAddress address = next_address_;
  // Addresses are never reused, and a gap keeps one past the end outside every slot.
  next_address_ += ((bytes + kSlotAlignment - 1) / kSlotAlignment + 1) * kSlotAlignment;
  slots_.emplace(address, std::move(slot));
  return address;
}

void PjrtExecutor::free(int, runtime::DeviceAddress buffer) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = slots_.find(buffer);
  if (found == slots_.end()) {
    throw std::invalid_argument("PjrtExecutor::free: " + hex(buffer) + " is not a live buffer");
  }
  const int64_t bytes = bytes_of(*found->second);
  runtime::MemoryStats& stats = stats_[static_cast<size_t>(found->second->device)];
  slots_.erase(found);
  for (runtime::StatArray* stat : {&stats.allocation, &stats.segment, &stats.active}) {
    (*stat)[runtime::kAllPools].decrease(1);
  }
  for (runtime::StatArray* stat : {&stats.allocated_bytes, &stats.reserved_bytes,
                                   &stats.active_bytes, &stats.requested_bytes}) {
    (*stat)[runtime::kAllPools].decrease(bytes);
  }
  ++stats.num_device_free;
}

int PjrtExecutor::chip_of(runtime::DeviceAddress buffer) const {
  const Located at = locate(buffer);
  return at.slot == nullptr ? -1 : at.slot->device;
}

runtime::MemoryStats PjrtExecutor::memory_stats(int chip) const {
  check_chip(chip, "memory_stats");
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_[static_cast<size_t>(chip)];
}

size_t PjrtExecutor::memory_capacity(int chip) const {
  check_chip(chip, "memory_capacity");
  return capacity_;
}

void PjrtExecutor::reset_memory_stats(int chip, StatsReset which) {
  check_chip(chip, "reset_memory_stats");
  std::lock_guard<std::mutex> lock(mutex_);
  runtime::MemoryStats& stats = stats_[static_cast<size_t>(chip)];
  if (which == StatsReset::kPeaks) {
    stats.reset_peaks();
  } else {
    stats.reset_accumulated();
  }
}

PjrtExecutor::Located PjrtExecutor::locate(runtime::DeviceAddress address) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = slots_.upper_bound(address);
  if (found == slots_.begin()) return {};
  --found;
  const auto offset = static_cast<int64_t>(address - found->first);
  std::lock_guard<std::mutex> slot_lock(found->second->mutex);
  if (offset > 0 && offset >= found->second->bytes) return {};
  return {found->second, offset};
}

std::vector<PjrtExecutor::CompiledProgram> PjrtExecutor::compiled_programs() const {
  std::lock_guard<std::mutex> lock(compiled_mutex_);
  std::vector<CompiledProgram> programs;
  for (const ProgramRecord& record : compiled_) {
    programs.push_back({record.name, record.mlir, record.runs->load(), record.compile_seconds});
  }
  return programs;
}

size_t PjrtExecutor::live_slots() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return slots_.size();
}

std::shared_ptr<const Buffer> PjrtExecutor::current_buffer(runtime::DeviceAddress address) const {
  const Located at = locate(address);
  if (at.slot == nullptr) throw std::invalid_argument(hex(address) + " is not a PJRT buffer");
  std::lock_guard<std::mutex> lock(at.slot->mutex);
  return at.slot->buffer;
}

void PjrtExecutor::copy_to_device(const void* host, runtime::DeviceAddress device, size_t bytes,
                                  runtime::Stream& stream, ir::DType unit) {
  const Located at = locate(device);
  if (at.slot == nullptr) throw std::invalid_argument(hex(device) + " is not a PJRT buffer");
  if (at.offset == 0 && static_cast<int64_t>(bytes) == bytes_of(*at.slot)) {
    // PJRT copies the host bytes during the call; the new buffer replaces the slot's in stream
    // order, after the work queued before that still reads the old one.
    const ir::DType kept = usable_unit(unit, static_cast<int64_t>(bytes));
    stream.enqueue("tpu::copy_to_device",
                   [at, kept, buffer = upload(*client_, host, static_cast<int64_t>(bytes), kept,
                                              at.slot->device)]() mutable {
                     install(*at.slot, std::move(buffer), bytes_of(*at.slot), kept);
                   });
    return;
  }
  stream.enqueue("tpu::copy_to_device", [client = client_, at, host, bytes] {
    write_range(*client, at, host, bytes, "copy_to_device");
  });
}

void PjrtExecutor::copy_to_host(runtime::DeviceAddress device, void* host, size_t bytes,
                                runtime::Stream& stream) {
  const Located at = locate(device);
  if (at.slot == nullptr) throw std::invalid_argument(hex(device) + " is not a PJRT buffer");
  stream.enqueue("tpu::copy_to_host",
                 [at, host, bytes] { read_range(at, host, bytes, "copy_to_host"); });
}

void PjrtExecutor::copy_on_device(runtime::DeviceAddress from, runtime::DeviceAddress to,
                                  size_t bytes, runtime::Stream& stream) {
  const Located source = locate(from);
  const Located target = locate(to);
  if (source.slot == nullptr) throw std::invalid_argument(hex(from) + " is not a PJRT buffer");
  if (target.slot == nullptr) throw std::invalid_argument(hex(to) + " is not a PJRT buffer");
  stream.enqueue("tpu::copy_on_device", [client = client_, source, target, bytes] {
    std::shared_ptr<const Buffer> shared;
    int64_t source_bytes = 0;
    ir::DType source_unit = ir::DType::kUInt8;
    {
      std::lock_guard<std::mutex> lock(source.slot->mutex);
      shared = source.slot->buffer;
      source_bytes = source.slot->bytes;
      source_unit = source.slot->unit;
    }
    const int64_t whole_target = bytes_of(*target.slot);
    // Buffers are immutable: a whole copy on one device is the same buffer in a second slot.
    if (source.slot->device == target.slot->device && source.offset == 0 && target.offset == 0 &&
        static_cast<int64_t>(bytes) == source_bytes && source_bytes == whole_target) {
      install(*target.slot, std::move(shared), whole_target, source_unit);
      return;
    }
    std::vector<unsigned char> staged(bytes);
    read_range(source, staged.data(), bytes, "copy_on_device");
    write_range(*client, target, staged.data(), bytes, "copy_on_device");
  });
}

void PjrtExecutor::read_now(runtime::DeviceAddress device, void* host, size_t bytes) {
  const Located at = locate(device);
  if (at.slot == nullptr) throw std::invalid_argument(hex(device) + " is not a PJRT buffer");
  read_range(at, host, bytes, "read_now");
}

void PjrtExecutor::write_now(const void* host, runtime::DeviceAddress device, size_t bytes) {
  const Located at = locate(device);
  if (at.slot == nullptr) throw std::invalid_argument(hex(device) + " is not a PJRT buffer");
  write_range(*client_, at, host, bytes, "write_now");
}

}  // namespace torch_tpu::executors::pjrt
