#include "executors/pjrt/client.h"

#include <stdexcept>
#include <utility>

namespace torch_tpu::executors::pjrt {


size_t element_size(capi::BufferType type) {
  using T = capi::BufferType;
  switch (type) {
    case T::kPred: case T::kS8: case T::kU8: return 1;
    case T::kS16: case T::kU16: case T::kF16: case T::kBF16: return 2;
    case T::kS32: case T::kU32: case T::kF32: return 4;
    case T::kS64: case T::kU64: case T::kF64: case T::kC64: return 8;
    case T::kC128: return 16;
    default: break;
  }
  throw std::invalid_argument("PJRT buffer type " + std::to_string(static_cast<int>(type)) +
                              " has no fixed element size");
}

// ---- Event ----

Event::Event(std::shared_ptr<const Client> client, capi::Event* event)
    : client_(std::move(client)), event_(event) {}

Event::Event(Event&& other) noexcept
    : client_(std::move(other.client_)), event_(std::exchange(other.event_, nullptr)) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    reset();
    client_ = std::move(other.client_);
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

Event::~Event() { reset(); }

void Event::reset() {
  if (Plugin::process_exiting()) event_ = nullptr;
  if (event_ == nullptr) return;
  auto args = make_args<capi::EventDestroyArgs>();
  args.event = std::exchange(event_, nullptr);
  drop_error(client_->api(), client_->api().event_destroy(&args));
}

bool Event::ready() const {
  if (event_ == nullptr) return true;
  auto is_ready = client_->plugin().entry(&capi::Api::event_is_ready, "PJRT_Event_IsReady");
  auto args = make_args<capi::EventIsReadyArgs>();
  args.event = event_;
  throw_if_error(client_->api(), is_ready(&args), "PJRT_Event_IsReady");
  return args.is_ready;
}

void Event::await() const {
  if (event_ == nullptr) return;
  auto await = client_->plugin().entry(&capi::Api::event_await, "PJRT_Event_Await");
  auto args = make_args<capi::EventAwaitArgs>();
  args.event = event_;
  throw_if_error(client_->api(), await(&args), "PJRT_Event_Await");
}

// ---- Buffer ----

Buffer::Buffer(std::shared_ptr<const Client> client, capi::Buffer* buffer)
    : client_(std::move(client)), buffer_(buffer) {}

Buffer::Buffer(Buffer&& other) noexcept
    : client_(std::move(other.client_)), buffer_(std::exchange(other.buffer_, nullptr)) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    reset();
    client_ = std::move(other.client_);
    buffer_ = std::exchange(other.buffer_, nullptr);
  }
  return *this;
}

Buffer::~Buffer() { reset(); }

void Buffer::reset() {
  if (Plugin::process_exiting()) buffer_ = nullptr;
  if (buffer_ == nullptr) return;
  auto args = make_args<capi::BufferDestroyArgs>();
  args.buffer = std::exchange(buffer_, nullptr);
  drop_error(client_->api(), client_->api().buffer_destroy(&args));
}

capi::BufferType Buffer::element_type() const {
  auto get = client_->plugin().entry(&capi::Api::buffer_element_type, "PJRT_Buffer_ElementType");
  auto args = make_args<capi::BufferElementTypeArgs>();
  args.buffer = buffer_;
  throw_if_error(client_->api(), get(&args), "PJRT_Buffer_ElementType");
  return args.type;
}

std::vector<int64_t> Buffer::dimensions() const {
  auto get = client_->plugin().entry(&capi::Api::buffer_dimensions, "PJRT_Buffer_Dimensions");
  auto args = make_args<capi::BufferDimensionsArgs>();
  args.buffer = buffer_;
  throw_if_error(client_->api(), get(&args), "PJRT_Buffer_Dimensions");
  return std::vector<int64_t>(args.dims, args.dims + args.num_dims);
}

size_t Buffer::host_size() const {
  auto to_host = client_->plugin().entry(&capi::Api::buffer_to_host_buffer,
                                         "PJRT_Buffer_ToHostBuffer");
  auto args = make_args<capi::BufferToHostBufferArgs>();
  args.src = buffer_;  // dst stays nullptr: the plugin only reports the size
  throw_if_error(client_->api(), to_host(&args), "PJRT_Buffer_ToHostBuffer");
  return args.dst_size;
}

Event Buffer::copy_to_host_async(void* dst, size_t bytes) const {
  auto to_host = client_->plugin().entry(&capi::Api::buffer_to_host_buffer,
                                         "PJRT_Buffer_ToHostBuffer");
  auto args = make_args<capi::BufferToHostBufferArgs>();
  args.src = buffer_;
  args.dst = dst;
  args.dst_size = bytes;
  throw_if_error(client_->api(), to_host(&args), "PJRT_Buffer_ToHostBuffer");
  return Event(client_, args.event);
}

void Buffer::copy_to_host(void* dst, size_t bytes) const { copy_to_host_async(dst, bytes).await(); }

Event Buffer::ready_event() const {
  auto get = client_->plugin().entry(&capi::Api::buffer_ready_event, "PJRT_Buffer_ReadyEvent");
  auto args = make_args<capi::BufferReadyEventArgs>();
  args.buffer = buffer_;
  throw_if_error(client_->api(), get(&args), "PJRT_Buffer_ReadyEvent");
  return Event(client_, args.event);
}

// ---- LoadedExecutable ----

namespace {

// The executable behind a loaded one, destroyed on scope exit (NumOutputs and Serialize take it).
class ExecutableView {
 public:
  ExecutableView(const Client& client, capi::LoadedExecutable* loaded) : client_(client) {
    auto get = client.plugin().entry(&capi::Api::loaded_executable_get_executable,
                                     "PJRT_LoadedExecutable_GetExecutable");
    destroy_ = client.plugin().entry(&capi::Api::executable_destroy, "PJRT_Executable_Destroy");
    auto args = make_args<capi::LoadedExecutableGetExecutableArgs>();
    args.loaded = loaded;
    throw_if_error(client.api(), get(&args), "PJRT_LoadedExecutable_GetExecutable");
    executable_ = args.executable;
  }
  ~ExecutableView() {
    auto args = make_args<capi::ExecutableDestroyArgs>();
    args.executable = executable_;
    drop_error(client_.api(), destroy_(&args));
  }
  ExecutableView(const ExecutableView&) = delete;
  ExecutableView& operator=(const ExecutableView&) = delete;
  capi::Executable* get() const { return executable_; }

 private:
  const Client& client_;
  capi::Function<capi::ExecutableDestroyArgs> destroy_;
  capi::Executable* executable_ = nullptr;
};

}  // namespace

LoadedExecutable::LoadedExecutable(std::shared_ptr<const Client> client,
                                   capi::LoadedExecutable* executable)
    : client_(std::move(client)), executable_(executable) {
  try {
    ExecutableView view(*client_, executable_);
    auto count = client_->plugin().entry(&capi::Api::executable_num_outputs,
                                         "PJRT_Executable_NumOutputs");
    auto args = make_args<capi::ExecutableNumOutputsArgs>();
    args.executable = view.get();
    throw_if_error(client_->api(), count(&args), "PJRT_Executable_NumOutputs");
    num_outputs_ = args.num_outputs;
  } catch (...) {
    reset();
    throw;
  }
}

LoadedExecutable::LoadedExecutable(LoadedExecutable&& other) noexcept
    : client_(std::move(other.client_)),
      executable_(std::exchange(other.executable_, nullptr)),
      num_outputs_(other.num_outputs_) {}

LoadedExecutable& LoadedExecutable::operator=(LoadedExecutable&& other) noexcept {
  if (this != &other) {
    reset();
    client_ = std::move(other.client_);
    executable_ = std::exchange(other.executable_, nullptr);
    num_outputs_ = other.num_outputs_;
  }
  return *this;
}

LoadedExecutable::~LoadedExecutable() { reset(); }

void LoadedExecutable::reset() {
  if (Plugin::process_exiting()) executable_ = nullptr;
  if (executable_ == nullptr) return;
  auto args = make_args<capi::LoadedExecutableDestroyArgs>();
  args.executable = std::exchange(executable_, nullptr);
  drop_error(client_->api(), client_->api().loaded_executable_destroy(&args));
}

std::vector<Buffer> LoadedExecutable::execute(std::span<const Buffer* const> arguments,
                                              Event* done, std::optional<size_t> device_index,
                                              std::span<const int64_t> keep_arguments) const {
  auto run = client_->plugin().entry(&capi::Api::loaded_executable_execute,
                                     "PJRT_LoadedExecutable_Execute");
  std::vector<capi::Buffer*> inputs;
  inputs.reserve(arguments.size());
  for (const Buffer* argument : arguments) inputs.push_back(argument->handle());
  std::vector<capi::Buffer*> outputs(num_outputs_, nullptr);
  capi::Buffer* const* input_list = inputs.data();
  capi::Buffer** output_list = outputs.data();
  capi::Event* complete = nullptr;

  auto options = make_args<capi::ExecuteOptions>();
  options.non_donatable_input_indices = keep_arguments.data();
  options.num_non_donatable_input_indices = keep_arguments.size();
  auto args = make_args<capi::LoadedExecutableExecuteArgs>();
  args.executable = executable_;
  args.options = &options;
  args.argument_lists = &input_list;
  args.num_devices = 1;
  args.num_args = inputs.size();
  args.output_lists = &output_list;
  args.device_complete_events = done ? &complete : nullptr;
  if (device_index) args.execute_device = client_->device_handle(*device_index);
  throw_if_error(client_->api(), run(&args), "PJRT_LoadedExecutable_Execute");

  std::vector<Buffer> results;
  results.reserve(outputs.size());
  for (capi::Buffer* output : outputs) results.emplace_back(client_, output);
  if (done) *done = Event(client_, complete);
  return results;
}

std::string LoadedExecutable::serialize() const {
  auto serialize = client_->plugin().entry(&capi::Api::executable_serialize,
                                           "PJRT_Executable_Serialize");
  ExecutableView view(*client_, executable_);
  auto args = make_args<capi::ExecutableSerializeArgs>();
  args.executable = view.get();
  throw_if_error(client_->api(), serialize(&args), "PJRT_Executable_Serialize");
  std::string bytes(args.bytes, args.bytes_size);
  if (args.serialized_deleter) args.serialized_deleter(args.serialized);
  return bytes;
}

// ---- Client ----

Client::Client(std::shared_ptr<const Plugin> plugin, capi::Client* client)
    : plugin_(std::move(plugin)), client_(client) {}

Client::~Client() {
  if (Plugin::process_exiting()) return;
  auto args = make_args<capi::ClientDestroyArgs>();
  args.client = client_;
  drop_error(api(), api().client_destroy(&args));
}

std::shared_ptr<Client> Client::create(std::shared_ptr<const Plugin> plugin) {
  auto create = plugin->entry(&capi::Api::client_create, "PJRT_Client_Create");
  plugin->entry(&capi::Api::client_destroy, "PJRT_Client_Destroy");
  auto args = make_args<capi::ClientCreateArgs>();
  throw_if_error(plugin->api(), create(&args), "PJRT_Client_Create");
  auto client = std::make_shared<Client>(std::move(plugin), args.client);
  client->describe();
  return client;
}

void Client::describe() {
  auto read_string = [&](capi::Function<capi::ClientStringArgs> get, const char* call) {
    auto args = make_args<capi::ClientStringArgs>();
    args.client = client_;
    throw_if_error(api(), get(&args), call);
    return std::string(args.value, args.value_size);
  };
  platform_name_ = read_string(
      plugin_->entry(&capi::Api::client_platform_name, "PJRT_Client_PlatformName"),
      "PJRT_Client_PlatformName");
  platform_version_ = read_string(
      plugin_->entry(&capi::Api::client_platform_version, "PJRT_Client_PlatformVersion"),
      "PJRT_Client_PlatformVersion");

  auto list = plugin_->entry(&capi::Api::client_addressable_devices,
                             "PJRT_Client_AddressableDevices");
  auto describe_device = plugin_->entry(&capi::Api::device_get_description,
                                        "PJRT_Device_GetDescription");
  auto id_of = plugin_->entry(&capi::Api::device_description_id, "PJRT_DeviceDescription_Id");
  auto kind_of = plugin_->entry(&capi::Api::device_description_kind,
                                "PJRT_DeviceDescription_Kind");
  auto debug_of = plugin_->entry(&capi::Api::device_description_debug_string,
                                 "PJRT_DeviceDescription_DebugString");
  auto devices = make_args<capi::ClientAddressableDevicesArgs>();
  devices.client = client_;
  throw_if_error(api(), list(&devices), "PJRT_Client_AddressableDevices");
  for (size_t i = 0; i < devices.num_devices; ++i) {
    auto description = make_args<capi::DeviceGetDescriptionArgs>();
    description.device = devices.devices[i];
    throw_if_error(api(), describe_device(&description), "PJRT_Device_GetDescription");
    DeviceInfo info;
    auto id = make_args<capi::DeviceDescriptionIdArgs>();
    id.description = description.description;
    throw_if_error(api(), id_of(&id), "PJRT_DeviceDescription_Id");
    info.id = id.id;
    auto kind = make_args<capi::DeviceDescriptionStringArgs>();
    kind.description = description.description;
    throw_if_error(api(), kind_of(&kind), "PJRT_DeviceDescription_Kind");
    info.kind.assign(kind.value, kind.value_size);
    auto debug = make_args<capi::DeviceDescriptionStringArgs>();
    debug.description = description.description;
    throw_if_error(api(), debug_of(&debug), "PJRT_DeviceDescription_DebugString");
    info.debug_string.assign(debug.value, debug.value_size);
    devices_.push_back(std::move(info));
    device_handles_.push_back(devices.devices[i]);
  }
}

capi::Device* Client::device_handle(size_t device_index) const {
  if (device_index >= device_handles_.size()) {
    throw runtime::RuntimeError("PJRT device index " + std::to_string(device_index) +
                                " out of range: the " + platform_name_ + " client has " +
                                std::to_string(device_handles_.size()) + " devices");
  }
  return device_handles_[device_index];
}

Buffer Client::copy_to_device(const void* data, capi::BufferType type,
                              std::span<const int64_t> dims, size_t device_index) const {
  capi::Device* device = device_handle(device_index);
  auto from_host = plugin_->entry(&capi::Api::client_buffer_from_host_buffer,
                                  "PJRT_Client_BufferFromHostBuffer");
  auto args = make_args<capi::ClientBufferFromHostBufferArgs>();
  args.client = client_;
  args.data = data;
  args.type = type;
  args.dims = dims.data();
  args.num_dims = dims.size();
  args.host_buffer_semantics = capi::HostBufferSemantics::kImmutableUntilTransferCompletes;
  args.device = device;
  throw_if_error(api(), from_host(&args), "PJRT_Client_BufferFromHostBuffer");
  Buffer buffer(shared_from_this(), args.buffer);
  // The caller may reuse `data` when we return: wait until the plugin has let go of it.
  Event(shared_from_this(), args.done_with_host_buffer).await();
  return buffer;
}

LoadedExecutable Client::compile(std::string_view mlir, const std::string& options) const {
  auto compile = plugin_->entry(&capi::Api::client_compile, "PJRT_Client_Compile");
  const capi::Program program = mlir_program(mlir);
  auto args = make_args<capi::ClientCompileArgs>();
  args.client = client_;
  args.program = &program;
  args.compile_options = options.data();
  args.compile_options_size = options.size();
  throw_if_error(api(), compile(&args), "PJRT_Client_Compile");
  return LoadedExecutable(shared_from_this(), args.executable);
}

LoadedExecutable Client::load_serialized(std::string_view bytes) const {
  auto load = plugin_->entry(&capi::Api::executable_deserialize_and_load,
                             "PJRT_Executable_DeserializeAndLoad");
  auto args = make_args<capi::ExecutableDeserializeAndLoadArgs>();
  args.client = client_;
  args.serialized = bytes.data();
  args.serialized_size = bytes.size();
  throw_if_error(api(), load(&args), "PJRT_Executable_DeserializeAndLoad");
  return LoadedExecutable(shared_from_this(), args.loaded);
}

}  // namespace torch_tpu::executors::pjrt
