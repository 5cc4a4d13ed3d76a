// A PJRT client and the objects it hands out (torch-free): events, device buffers, compiled
// executables. Each is a move-only owner of a PJRT handle and keeps its Client (and so the
// plugin) alive, so handles are always destroyed before the client that made them. Every PJRT
// failure is thrown as PjrtError; an entry the plugin lacks as PluginError.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "executors/pjrt/compile_options.h"
#include "executors/pjrt/plugin.h"

namespace torch_tpu::executors::pjrt {

class Client;

// Completion of asynchronous work (a copy, a run). Move-only; destroying it does not wait.
class Event {
 public:
  Event() = default;
  Event(std::shared_ptr<const Client> client, capi::Event* event);
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  ~Event();

  // True once the work finished (successfully or not). Does not block.
  bool ready() const;
  // Blocks until the work finished; throws PjrtError with the work's failure.
  void await() const;
  bool valid() const { return event_ != nullptr; }

 private:
  void reset();
  std::shared_ptr<const Client> client_;
  capi::Event* event_ = nullptr;
};

// An immutable array in a device's memory. Move-only; destroying it frees the memory once the
// work using it is done.
class Buffer {
 public:
  Buffer() = default;
  Buffer(std::shared_ptr<const Client> client, capi::Buffer* buffer);
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  ~Buffer();

  capi::BufferType element_type() const;
  std::vector<int64_t> dimensions() const;
  // Bytes a host copy needs (dense, major-to-minor).
  size_t host_size() const;
  // Starts a copy into `dst` (at least host_size() bytes, valid until the event fires).
  Event copy_to_host_async(void* dst, size_t bytes) const;
  // Copies into `dst` and waits for it.
  void copy_to_host(void* dst, size_t bytes) const;
  // Fires when the buffer's value has been computed (or failed).
  Event ready_event() const;

  capi::Buffer* handle() const { return buffer_; }

 private:
  void reset();
  std::shared_ptr<const Client> client_;
  capi::Buffer* buffer_ = nullptr;
};

// A compiled program loaded on the client's devices. Move-only; thread-safe to execute.
class LoadedExecutable {
 public:
  LoadedExecutable() = default;
  LoadedExecutable(std::shared_ptr<const Client> client, capi::LoadedExecutable* executable);
  LoadedExecutable(LoadedExecutable&& other) noexcept;
  LoadedExecutable& operator=(LoadedExecutable&& other) noexcept;
  ~LoadedExecutable();

  size_t num_outputs() const { return num_outputs_; }
  // Queues one run and returns its outputs at once (they become ready asynchronously); `done`,
  // when given, receives the run's completion event. `device_index`: the client's device to
  // run on, for an executable compiled portable (compile_options_bytes); none: the device
  // chosen at compile time. An argument the module aliases to a result (tf.aliasing_output) is
  // donated: its buffer becomes that result's and must not be used again; list in
  // `keep_arguments` those that must not be (XLA then copies).
  std::vector<Buffer> execute(std::span<const Buffer* const> arguments, Event* done = nullptr,
                              std::optional<size_t> device_index = std::nullopt,
                              std::span<const int64_t> keep_arguments = {}) const;
  // The plugin's serialization of the compiled program (for an on-disk cache; valid for the
  // same plugin build only).
  std::string serialize() const;

 private:
  void reset();
  std::shared_ptr<const Client> client_;
  capi::LoadedExecutable* executable_ = nullptr;
  size_t num_outputs_ = 0;
};

// One addressable device of a client.
struct DeviceInfo {
  int id = 0;                // PJRT's device id
  std::string kind;          // e.g. "cpu", "TPU v5 lite"
  std::string debug_string;  // verbose, for error messages
};

// A PJRT client on a loaded plugin. Create with Client::create; thread-safe.
class Client : public std::enable_shared_from_this<Client> {
 public:
  // Creates a client with no options. Throws PjrtError (e.g. NOT_FOUND from libtpu on a
  // machine without a TPU) or PluginError.
  static std::shared_ptr<Client> create(std::shared_ptr<const Plugin> plugin);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const Plugin& plugin() const { return *plugin_; }
  const std::string& platform_name() const { return platform_name_; }
  const std::string& platform_version() const { return platform_version_; }
  // The addressable devices, in the plugin's order (index = our device index).
  const std::vector<DeviceInfo>& devices() const { return devices_; }

  // Copies a dense, major-to-minor host array to device `device_index`; returns once `data`
  // may be reused (the device copy may still be in flight: see Buffer::ready_event).
  Buffer copy_to_device(const void* data, capi::BufferType type, std::span<const int64_t> dims,
                        size_t device_index = 0) const;
  // The PJRT handle of device `device_index`; throws RuntimeError naming the count when out of
  // range.
  capi::Device* device_handle(size_t device_index) const;

  // Compiles a StableHLO module given as MLIR (text or bytecode) with serialized
  // CompileOptionsProto `options`. Blocks; throws PjrtError with the compiler's message.
  LoadedExecutable compile(std::string_view mlir,
                           const std::string& options = compile_options_bytes()) const;

  // Loads an executable from LoadedExecutable::serialize() bytes of the same plugin build (an
  // on-disk cache hit). Throws PjrtError when the plugin cannot read them.
  LoadedExecutable load_serialized(std::string_view bytes) const;

  const capi::Api& api() const { return plugin_->api(); }
  capi::Client* handle() const { return client_; }

  // For create() only.
  Client(std::shared_ptr<const Plugin> plugin, capi::Client* client);

 private:
  void describe();

  std::shared_ptr<const Plugin> plugin_;
  capi::Client* client_;
  std::string platform_name_;
  std::string platform_version_;
  std::vector<DeviceInfo> devices_;
  std::vector<capi::Device*> device_handles_;
};

// Bytes per element of `type`; throws std::invalid_argument for types without a fixed size.
size_t element_size(capi::BufferType type);

}  // namespace torch_tpu::executors::pjrt
