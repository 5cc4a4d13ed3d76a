// Our declarations of the part of the PJRT C API that torch_tpu calls, written from the ABI
// (major version 0). A plugin hands out one function table (Api) from its exported
// `GetPjrtApi`; every call takes one argument struct whose first field, struct_size, tells the
// plugin how much of the struct the caller knows. Rules the layout must keep:
// - Api's entries are in the plugin's order; entries we never call are named opaque slots so the
//   offsets of later ones stay right. Within major 0 the table only grows at its end. Every slot
//   declared here was matched to its function by mapping the 0.106 CPU plugin's table entries
//   to the plugin's symbol names (nm); redo that when adding entries.
// - Argument structs only grow at their end; a plugin refuses a struct_size smaller than the one
//   it was built with, so each struct here is declared in full up to the newest layout checked
//   (API 0.94 header, run against the 0.106 CPU plugin), and struct_size is always sizeof().
// Only what is tested (tests/cpp/test_pjrt_*.cpp) is declared; add more from the ABI as needed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace torch_tpu::executors::pjrt::capi {

// Handles the plugin owns; only pointers to them cross the ABI.
struct Error;
struct Event;
struct Client;
struct Device;
struct DeviceDescription;
struct Memory;
struct Executable;
struct LoadedExecutable;
struct Buffer;
struct SerializedExecutable;
struct TopologyDescription;

// An optional chain of extension structs; we never pass one (always nullptr).
struct ExtensionBase;

// The API version a plugin was built against.
struct ApiVersion {
  size_t struct_size;
  ExtensionBase* extensions;
  int major_version;
  int minor_version;
};

// Status codes (absl's numbering).
enum class ErrorCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

// ---- errors ----
struct ErrorDestroyArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  Error* error;
};
struct ErrorMessageArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  const Error* error;
  const char* message;  // out: lives as long as `error`
  size_t message_size;  // out
};
struct ErrorGetCodeArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  const Error* error;
  ErrorCode code;  // out
};

// ---- named values (plugin attributes) ----
enum class NamedValueType : int { kString = 0, kInt64, kInt64List, kFloat, kBool };

struct NamedValue {
  size_t struct_size;
  ExtensionBase* extensions;
  const char* name;
  size_t name_size;
  NamedValueType type;
  union {
    const char* string_value;
    int64_t int64_value;
    const int64_t* int64_list_value;
    float float_value;
    bool bool_value;
  };
  size_t value_size;  // characters of a string, elements of a list, 1 for a scalar
};

// ---- plugin ----
struct PluginInitializeArgs {
  size_t struct_size;
  ExtensionBase* extensions;
};
struct PluginAttributesArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  const NamedValue* attributes;  // out: lives as long as the process
  size_t num_attributes;         // out
};

// ---- events ----
struct EventDestroyArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  Event* event;
};
struct EventIsReadyArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  Event* event;
  bool is_ready;  // out
};
struct EventAwaitArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  Event* event;
};

// ---- client ----
// Key-value store callbacks for multi-process clients; we pass none, so they stay opaque.
using OpaqueCallback = void*;

struct ClientCreateArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  const NamedValue* create_options;
  size_t num_options;
  OpaqueCallback kv_get_callback;
  void* kv_get_user_arg;
  OpaqueCallback kv_put_callback;
  void* kv_put_user_arg;
  Client* client;  // out
  OpaqueCallback kv_try_get_callback;
  void* kv_try_get_user_arg;
};
struct ClientDestroyArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  Client* client;
};
// PlatformName and PlatformVersion share this layout: a string owned by the client.
struct ClientStringArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  Client* client;
  const char* value;  // out
  size_t value_size;  // out
};
struct ClientAddressableDevicesArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  Client* client;
  Device* const* devices;  // out: owned by the client
  size_t num_devices;      // out
};

// A program to compile: "mlir" takes MLIR text or bytecode (StableHLO).
struct Program {
  size_t struct_size;
  ExtensionBase* extensions;
  char* code;  // read only by Client_Compile
  size_t code_size;
  const char* format;
  size_t format_size;
};
struct ClientCompileArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  Client* client;
  const Program* program;
  const char* compile_options;  // a serialized xla.CompileOptionsProto
  size_t compile_options_size;
  LoadedExecutable* executable;  // out
};

// Element types, in the ABI's numbering (the enum only grows at its end).
enum class BufferType : int {
  kInvalid = 0,
  kPred,
  kS8,
  kS16,
  kS32,
  kS64,
  kU8,
  kU16,
  kU32,
  kU64,
  kF16,
  kF32,
  kF64,
  kBF16,
  kC64,
  kC128,
};

enum class HostBufferSemantics : int {
  // The plugin copies `data` before BufferFromHostBuffer returns.
  kImmutableOnlyDuringCall = 0,
  // `data` must stay untouched until done_with_host_buffer fires.
  kImmutableUntilTransferCompletes = 1,
  kImmutableZeroCopy = 2,
  kMutableZeroCopy = 3,
};

// A device layout (tiled or strided); we always pass nullptr (dense, major-to-minor).
struct BufferMemoryLayout;

struct ClientBufferFromHostBufferArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  Client* client;
  const void* data;
  BufferType type;
  const int64_t* dims;
  size_t num_dims;
  const int64_t* byte_strides;  // nullptr: dense, major-to-minor
  size_t num_byte_strides;
  HostBufferSemantics host_buffer_semantics;
  Device* device;
  Memory* memory;                      // nullptr: the device's default memory
  BufferMemoryLayout* device_layout;   // nullptr: dense, major-to-minor
  Event* done_with_host_buffer;        // out: caller destroys it
  Buffer* buffer;                      // out: caller destroys it
};

// ---- device descriptions and devices ----
struct DeviceDescriptionIdArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  DeviceDescription* description;
  int id;  // out
};
// Kind and DebugString share this layout: a string owned by the device.
struct DeviceDescriptionStringArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  DeviceDescription* description;
  const char* value;  // out
  size_t value_size;  // out
};
struct DeviceGetDescriptionArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  Device* device;
  DeviceDescription* description;  // out: owned by the device
};

// ---- executables ----
struct ExecutableDestroyArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  Executable* executable;
};
struct ExecutableNumOutputsArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  Executable* executable;
  size_t num_outputs;  // out
};
struct ExecutableSerializeArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  const Executable* executable;
  const char* bytes;  // out: lives as long as `serialized`
  size_t bytes_size;  // out
  SerializedExecutable* serialized;                     // out
  void (*serialized_deleter)(SerializedExecutable*);    // out: call once to free `serialized`
};
// The cost XLA's analysis gives a compiled program ("flops", "bytes accessed",
// "optimal_seconds", ...); UNIMPLEMENTED on the CPU plugins.
struct ExecutableGetCostAnalysisArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  Executable* executable;
  size_t num_properties;         // out
  const NamedValue* properties;  // out: lives as long as `executable`
};
// Device memory (HBM on a TPU) and host memory a run of the executable needs, in bytes; the
// last two fields are the newest (a plugin built before them ignores them).
struct ExecutableGetCompiledMemoryStatsArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  Executable* executable;
  int64_t generated_code_size_in_bytes;  // out
  int64_t argument_size_in_bytes;        // out
  int64_t output_size_in_bytes;          // out
  int64_t alias_size_in_bytes;           // out: argument bytes reused for outputs
  int64_t temp_size_in_bytes;            // out
  int64_t host_generated_code_size_in_bytes;  // out
  int64_t host_argument_size_in_bytes;        // out
  int64_t host_output_size_in_bytes;          // out
  int64_t host_alias_size_in_bytes;           // out
  int64_t host_temp_size_in_bytes;            // out
  int64_t peak_memory_in_bytes;               // out
  int64_t total_size_in_bytes;                // out
};
struct ExecutableDeserializeAndLoadArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  Client* client;
  const char* serialized;  // bytes from ExecutableSerialize, same plugin build
  size_t serialized_size;
  LoadedExecutable* loaded;      // out: caller destroys it
  const char* compile_options;   // nullptr: the options stored with the executable
  size_t compile_options_size;
};
struct LoadedExecutableDestroyArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  LoadedExecutable* executable;
};
struct LoadedExecutableGetExecutableArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  LoadedExecutable* loaded;
  Executable* executable;  // out: caller destroys it
};

// Per-run options; we set none beyond struct_size (no send/recv callbacks, no launch id).
struct ExecuteOptions {
  size_t struct_size;
  ExtensionBase* extensions;
  void* send_callbacks;
  void* recv_callbacks;
  size_t num_send_ops;
  size_t num_recv_ops;
  int launch_id;
  const int64_t* non_donatable_input_indices;
  size_t num_non_donatable_input_indices;
  void* context;
  const char* call_location;
  size_t num_tasks;
  int* task_ids;
  int64_t* incarnation_ids;
};
struct LoadedExecutableExecuteArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  LoadedExecutable* executable;
  ExecuteOptions* options;
  Buffer* const* const* argument_lists;  // [num_devices][num_args]
  size_t num_devices;
  size_t num_args;
  Buffer** const* output_lists;    // [num_devices][num_outputs], filled by the plugin
  Event** device_complete_events;  // [num_devices] or nullptr; caller destroys them
  Device* execute_device;          // nullptr: the devices chosen at compile time
};

// ---- buffers ----
struct BufferDestroyArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  Buffer* buffer;
};
struct BufferElementTypeArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  Buffer* buffer;
  BufferType type;  // out
};
struct BufferDimensionsArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  Buffer* buffer;
  const int64_t* dims;  // out: lives as long as the buffer
  size_t num_dims;      // out
};
struct BufferToHostBufferArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  Buffer* src;
  BufferMemoryLayout* host_layout;  // nullptr: the buffer's own layout
  void* dst;                        // nullptr: only query the size into dst_size
  size_t dst_size;
  Event* event;  // out: fires when the copy is done; caller destroys it
};
struct BufferReadyEventArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  Buffer* buffer;
  Event* event;  // out: caller destroys it
};

// ---- topologies and ahead-of-time compiles (no device needed: libtpu compiles for a TPU
// slice it is not running on) ----
struct TopologyDescriptionCreateArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  const char* topology_name;  // e.g. "v5e:2x2"
  size_t topology_name_size;
  const NamedValue* create_options;
  size_t num_options;
  TopologyDescription* topology;  // out: caller destroys it
};
struct TopologyDescriptionDestroyArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  TopologyDescription* topology;
};
struct TopologyDescriptionStringArgs {  // PlatformName and PlatformVersion
  size_t struct_size;
  ExtensionBase* extensions;
  TopologyDescription* topology;
  const char* value;  // out: lives as long as `topology`
  size_t value_size;  // out
};
struct CompileArgs {
  size_t struct_size;
  ExtensionBase* extensions;
  const TopologyDescription* topology;
  const Program* program;
  const char* compile_options;  // a serialized xla.CompileOptionsProto
  size_t compile_options_size;
  Client* client;  // optional (nullptr: compile without one)
  Executable* executable;  // out: caller destroys it
};

// ---- the function table ----
template <typename Args>
using Function = Error* (*)(Args*);
using Slot = void*;  // an entry we do not call

struct Api {
  size_t struct_size;  // how much of this table the plugin fills
  ExtensionBase* extensions;
  ApiVersion version;

  void (*error_destroy)(ErrorDestroyArgs*);
  void (*error_message)(ErrorMessageArgs*);
  Function<ErrorGetCodeArgs> error_get_code;

  Function<PluginInitializeArgs> plugin_initialize;
  Function<PluginAttributesArgs> plugin_attributes;

  Function<EventDestroyArgs> event_destroy;
  Function<EventIsReadyArgs> event_is_ready;
  Slot event_error;
  Function<EventAwaitArgs> event_await;
  Slot event_on_ready;

  Function<ClientCreateArgs> client_create;
  Function<ClientDestroyArgs> client_destroy;
  Function<ClientStringArgs> client_platform_name;
  Slot client_process_index;
  Function<ClientStringArgs> client_platform_version;
  Slot client_devices;
  Function<ClientAddressableDevicesArgs> client_addressable_devices;
  Slot client_lookup_device;
  Slot client_lookup_addressable_device;
  Slot client_addressable_memories;
  Function<ClientCompileArgs> client_compile;
  Slot client_default_device_assignment;
  Function<ClientBufferFromHostBufferArgs> client_buffer_from_host_buffer;

  Function<DeviceDescriptionIdArgs> device_description_id;
  Slot device_description_process_index;
  Slot device_description_attributes;
  Function<DeviceDescriptionStringArgs> device_description_kind;
  Function<DeviceDescriptionStringArgs> device_description_debug_string;
  Slot device_description_to_string;

  Function<DeviceGetDescriptionArgs> device_get_description;
  Slot device_is_addressable;
  Slot device_local_hardware_id;
  Slot device_addressable_memories;
  Slot device_default_memory;
  Slot device_memory_stats;

  Slot memory_id;
  Slot memory_kind;
  Slot memory_debug_string;
  Slot memory_to_string;
  Slot memory_addressable_by_devices;

  Function<ExecutableDestroyArgs> executable_destroy;
  Slot executable_name;
  Slot executable_num_replicas;
  Slot executable_num_partitions;
  Function<ExecutableNumOutputsArgs> executable_num_outputs;
  Slot executable_size_of_generated_code;
  Function<ExecutableGetCostAnalysisArgs> executable_get_cost_analysis;
  Slot executable_output_memory_kinds;
  Slot executable_optimized_program;
  Function<ExecutableSerializeArgs> executable_serialize;

  Function<LoadedExecutableDestroyArgs> loaded_executable_destroy;
  Function<LoadedExecutableGetExecutableArgs> loaded_executable_get_executable;
  Slot loaded_executable_addressable_devices;
  Slot loaded_executable_delete;
  Slot loaded_executable_is_deleted;
  Function<LoadedExecutableExecuteArgs> loaded_executable_execute;
  Function<ExecutableDeserializeAndLoadArgs> executable_deserialize_and_load;
  Slot loaded_executable_fingerprint;

  Function<BufferDestroyArgs> buffer_destroy;
  Function<BufferElementTypeArgs> buffer_element_type;
  Function<BufferDimensionsArgs> buffer_dimensions;
  Slot buffer_unpadded_dimensions;
  Slot buffer_dynamic_dimension_indices;
  Slot buffer_get_memory_layout;
  Slot buffer_on_device_size_in_bytes;
  Slot buffer_device;
  Slot buffer_memory;
  Slot buffer_delete;
  Slot buffer_is_deleted;
  Slot buffer_copy_to_device;
  Function<BufferToHostBufferArgs> buffer_to_host_buffer;
  Slot buffer_is_on_cpu;
  Function<BufferReadyEventArgs> buffer_ready_event;
  Slot buffer_unsafe_pointer;
  Slot buffer_increase_external_reference_count;
  Slot buffer_decrease_external_reference_count;
  Slot buffer_opaque_device_memory_data_pointer;

  Slot copy_to_device_stream_destroy;
  Slot copy_to_device_stream_add_chunk;
  Slot copy_to_device_stream_total_bytes;
  Slot copy_to_device_stream_granule_size;
  Slot copy_to_device_stream_current_bytes;

  Function<TopologyDescriptionCreateArgs> topology_description_create;
  Function<TopologyDescriptionDestroyArgs> topology_description_destroy;
  Function<TopologyDescriptionStringArgs> topology_description_platform_name;
  Function<TopologyDescriptionStringArgs> topology_description_platform_version;
  Slot topology_description_get_device_descriptions;
  Slot topology_description_serialize;
  Slot topology_description_attributes;

  Function<CompileArgs> compile;

  Slot executable_output_element_types;
  Slot executable_output_dimensions;
  Slot buffer_copy_to_memory;
  Slot client_create_view_of_device_buffer;
  Slot executable_fingerprint;
  Slot client_topology_description;
  Function<ExecutableGetCompiledMemoryStatsArgs> executable_get_compiled_memory_stats;
  // Later entries are not declared: nothing here calls them yet.
};

// The symbol every plugin exports.
using GetApiFunction = const Api* (*)();
inline constexpr const char kGetApiSymbol[] = "GetPjrtApi";

// Layout facts (LP64), checked against the ABI: a mistake here corrupts every call after it.
static_assert(sizeof(void*) == 8 && sizeof(size_t) == 8, "the PJRT ABI is declared for LP64");
static_assert(sizeof(ApiVersion) == 24);
static_assert(sizeof(ErrorCode) == 4 && sizeof(BufferType) == 4);
static_assert(sizeof(NamedValue) == 56 && offsetof(NamedValue, value_size) == 48);
static_assert(sizeof(ClientCreateArgs) == 88 && offsetof(ClientCreateArgs, client) == 64);
static_assert(sizeof(Program) == 48);
static_assert(sizeof(ClientCompileArgs) == 56);
static_assert(offsetof(ClientBufferFromHostBufferArgs, type) == 32);
static_assert(offsetof(ClientBufferFromHostBufferArgs, host_buffer_semantics) == 72);
static_assert(sizeof(ClientBufferFromHostBufferArgs) == 120);
static_assert(sizeof(ExecuteOptions) == 112 && offsetof(ExecuteOptions, launch_id) == 48);
static_assert(sizeof(LoadedExecutableExecuteArgs) == 80);
static_assert(sizeof(ExecutableSerializeArgs) == 56);
static_assert(sizeof(BufferToHostBufferArgs) == 56);
static_assert(sizeof(ExecutableDeserializeAndLoadArgs) == 64);
// Table offsets: the 3-word header plus the 24-byte version, then one pointer per entry.
static_assert(offsetof(Api, error_destroy) == 40);
static_assert(offsetof(Api, client_create) == 40 + 10 * 8);
static_assert(offsetof(Api, client_compile) == 40 + 20 * 8);
static_assert(offsetof(Api, device_get_description) == 40 + 29 * 8);
static_assert(offsetof(Api, executable_serialize) == 40 + 49 * 8);
static_assert(offsetof(Api, loaded_executable_execute) == 40 + 55 * 8);
static_assert(offsetof(Api, executable_deserialize_and_load) == 40 + 56 * 8);
static_assert(offsetof(Api, buffer_ready_event) == 40 + 72 * 8);
static_assert(offsetof(Api, topology_description_create) == 40 + 82 * 8);
static_assert(offsetof(Api, compile) == 40 + 89 * 8);
static_assert(offsetof(Api, executable_get_compiled_memory_stats) == 40 + 96 * 8);
static_assert(sizeof(TopologyDescriptionCreateArgs) == 56);
static_assert(sizeof(CompileArgs) == 64);
static_assert(sizeof(ExecutableGetCostAnalysisArgs) == 40);
static_assert(sizeof(ExecutableGetCompiledMemoryStatsArgs) == 120);

}  // namespace torch_tpu::executors::pjrt::capi
