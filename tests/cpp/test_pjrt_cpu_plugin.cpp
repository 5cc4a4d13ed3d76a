// The PJRT layer on the real CPU plugin (fastatomstruct-xla-cpu, installed into the venv by
// scripts/setup.sh): load, list devices, compile a StableHLO module, copy in, run, copy out.
// Skipped, saying why, when the plugin is not installed. Each test runs in its own process
// (ctest), so a plugin abort would fail one test, not the suite.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include "executors/pjrt/client.h"
#include "executors/pjrt/plugin.h"
#include "pjrt_cpu_plugin.h"

using namespace torch_tpu::executors::pjrt;
using torch_tpu::executors::pjrt::testing::cpu_plugin_missing;
using torch_tpu::executors::pjrt::testing::search_dirs;

namespace {

// f32[4] + f32[4] in MLIR's generic op form (the form that changes least across versions).
constexpr char kAddModule[] = R"mlir(
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
    %sum = "stablehlo.add"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "func.return"(%sum) : (tensor<4xf32>) -> ()
  }) {function_type = (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>, sym_name = "main"} : () -> ()
}) : () -> ()
)mlir";

class PjrtCpuPlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = cpu_plugin_missing(); !why.empty()) {
      GTEST_SKIP() << "CPU PJRT plugin not installed (run `make setup`): " << why;
    }
    plugin_ = Plugin::load("cpu", search_dirs());
  }
  std::shared_ptr<Plugin> plugin_;
};

}  // namespace

TEST_F(PjrtCpuPlugin, LoadsWithASupportedVersionAndAttributes) {
  EXPECT_GE(plugin_->version(), kMinimumApiVersion);
  bool has_stablehlo_version = false;
  for (const auto& [name, value] : plugin_->attributes()) {
    if (name == "stablehlo_current_version") has_stablehlo_version = !value.empty();
  }
  EXPECT_TRUE(has_stablehlo_version);
}

TEST_F(PjrtCpuPlugin, ClientReportsPlatformAndDevices) {
  auto client = Client::create(plugin_);
  EXPECT_EQ(client->platform_name(), "cpu");
  EXPECT_FALSE(client->platform_version().empty());
  ASSERT_FALSE(client->devices().empty());
  std::set<int> ids;
  for (const DeviceInfo& device : client->devices()) {
    EXPECT_FALSE(device.kind.empty());
    EXPECT_FALSE(device.debug_string.empty());
    ids.insert(device.id);
  }
  EXPECT_EQ(ids.size(), client->devices().size()) << "device ids are distinct";
}

TEST_F(PjrtCpuPlugin, BufferRoundTripKeepsValuesTypeAndShape) {
  auto client = Client::create(plugin_);
  const float values[6] = {1, 2, 3, 4, 5, 6};
  const int64_t dims[2] = {2, 3};
  Buffer buffer = client->copy_to_device(values, capi::BufferType::kF32, dims);
  buffer.ready_event().await();
  EXPECT_EQ(buffer.element_type(), capi::BufferType::kF32);
  EXPECT_EQ(buffer.dimensions(), (std::vector<int64_t>{2, 3}));
  ASSERT_EQ(buffer.host_size(), sizeof(values));
  float back[6] = {};
  buffer.copy_to_host(back, sizeof(back));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(back[i], values[i]);
}

TEST_F(PjrtCpuPlugin, CompilesAndRunsAnAdd) {
  auto client = Client::create(plugin_);
  LoadedExecutable add = client->compile(kAddModule);
  ASSERT_EQ(add.num_outputs(), 1u);

  const float a[4] = {1, 2, 3, 4};
  const float b[4] = {10, 20, 30, 40};
  const int64_t dims[1] = {4};
  Buffer x = client->copy_to_device(a, capi::BufferType::kF32, dims);
  Buffer y = client->copy_to_device(b, capi::BufferType::kF32, dims);
  const Buffer* arguments[2] = {&x, &y};
  Event done;
  std::vector<Buffer> outputs = add.execute(arguments, &done);
  done.await();
  EXPECT_TRUE(done.ready());
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].dimensions(), (std::vector<int64_t>{4}));
  float sum[4] = {};
  outputs[0].copy_to_host(sum, sizeof(sum));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(sum[i], a[i] + b[i]);

  // Runs again on the same executable (the Strict path runs one executable many times).
  outputs = add.execute(arguments);
  outputs[0].copy_to_host(sum, sizeof(sum));
  EXPECT_EQ(sum[3], 44.0f);
}

TEST_F(PjrtCpuPlugin, SerializedExecutableLoadsAndRuns) {
  auto client = Client::create(plugin_);
  const std::string bytes = client->compile(kAddModule).serialize();
  ASSERT_FALSE(bytes.empty());
  LoadedExecutable add = client->load_serialized(bytes);
  ASSERT_EQ(add.num_outputs(), 1u);
  const float a[4] = {1, 2, 3, 4};
  const int64_t dims[1] = {4};
  Buffer x = client->copy_to_device(a, capi::BufferType::kF32, dims);
  const Buffer* arguments[2] = {&x, &x};
  float twice[4] = {};
  add.execute(arguments)[0].copy_to_host(twice, sizeof(twice));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(twice[i], 2 * a[i]);
  EXPECT_THROW(client->load_serialized("not an executable"), PjrtError);
}

// Our table (pjrt_c_api.h) against the plugin's own: each entry we call must point at the
// function of that name in the plugin's symbol table (the CPU plugin keeps its symbols). A
// wrong slot count anywhere before an entry shows up here as a wrong name. Needs `nm`.
TEST_F(PjrtCpuPlugin, EveryDeclaredEntryIsTheFunctionOfItsName) {
  const std::string command = "nm -C '" + plugin_->path() + "' 2>/dev/null";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) GTEST_SKIP() << "cannot run nm";
  std::multimap<uintptr_t, std::string> symbols;
  char line[4096];
  while (std::fgets(line, sizeof(line), pipe)) {
    char* end = nullptr;
    const uintptr_t address = std::strtoull(line, &end, 16);
    if (end != line) symbols.emplace(address, line);
  }
  ::pclose(pipe);
  if (symbols.empty()) GTEST_SKIP() << "nm listed no symbols for " << plugin_->path();

  const capi::Api& api = plugin_->api();
  Dl_info info{};
  ASSERT_NE(::dladdr(reinterpret_cast<void*>(api.error_destroy), &info), 0);
  auto check = [&](const void* function, const std::string& name) {
    const auto address = reinterpret_cast<uintptr_t>(function) -
                         reinterpret_cast<uintptr_t>(info.dli_fbase);
    auto [first, last] = symbols.equal_range(address);
    bool found = false;
    // A plugin may suffix a variant (PJRT_Plugin_Initialize_NoOp): name( or name_ matches.
    for (auto it = first; it != last; ++it) {
      found |= it->second.find(name + "(") != std::string::npos ||
               it->second.find(name + "_") != std::string::npos;
    }
    EXPECT_TRUE(found) << name << " slot points at "
                       << (first == last ? std::string("no symbol") : first->second);
  };
#define TORCH_TPU_CHECK_ENTRY(member, name) check(reinterpret_cast<const void*>(api.member), name)
  TORCH_TPU_CHECK_ENTRY(error_destroy, "PJRT_Error_Destroy");
  TORCH_TPU_CHECK_ENTRY(error_message, "PJRT_Error_Message");
  TORCH_TPU_CHECK_ENTRY(error_get_code, "PJRT_Error_GetCode");
  TORCH_TPU_CHECK_ENTRY(plugin_initialize, "PJRT_Plugin_Initialize");
  TORCH_TPU_CHECK_ENTRY(plugin_attributes, "PJRT_Plugin_Attributes");
  TORCH_TPU_CHECK_ENTRY(event_destroy, "PJRT_Event_Destroy");
  TORCH_TPU_CHECK_ENTRY(event_is_ready, "PJRT_Event_IsReady");
  TORCH_TPU_CHECK_ENTRY(event_await, "PJRT_Event_Await");
  TORCH_TPU_CHECK_ENTRY(client_create, "PJRT_Client_Create");
  TORCH_TPU_CHECK_ENTRY(client_destroy, "PJRT_Client_Destroy");
  TORCH_TPU_CHECK_ENTRY(client_platform_name, "PJRT_Client_PlatformName");
  TORCH_TPU_CHECK_ENTRY(client_platform_version, "PJRT_Client_PlatformVersion");
  TORCH_TPU_CHECK_ENTRY(client_addressable_devices, "PJRT_Client_AddressableDevices");
  TORCH_TPU_CHECK_ENTRY(client_compile, "PJRT_Client_Compile");
  TORCH_TPU_CHECK_ENTRY(client_buffer_from_host_buffer, "PJRT_Client_BufferFromHostBuffer");
  TORCH_TPU_CHECK_ENTRY(device_description_id, "PJRT_DeviceDescription_Id");
  TORCH_TPU_CHECK_ENTRY(device_description_kind, "PJRT_DeviceDescription_Kind");
  TORCH_TPU_CHECK_ENTRY(device_description_debug_string, "PJRT_DeviceDescription_DebugString");
  TORCH_TPU_CHECK_ENTRY(device_get_description, "PJRT_Device_GetDescription");
  TORCH_TPU_CHECK_ENTRY(executable_destroy, "PJRT_Executable_Destroy");
  TORCH_TPU_CHECK_ENTRY(executable_num_outputs, "PJRT_Executable_NumOutputs");
  TORCH_TPU_CHECK_ENTRY(executable_serialize, "PJRT_Executable_Serialize");
  TORCH_TPU_CHECK_ENTRY(loaded_executable_destroy, "PJRT_LoadedExecutable_Destroy");
  TORCH_TPU_CHECK_ENTRY(loaded_executable_get_executable, "PJRT_LoadedExecutable_GetExecutable");
  TORCH_TPU_CHECK_ENTRY(loaded_executable_execute, "PJRT_LoadedExecutable_Execute");
  TORCH_TPU_CHECK_ENTRY(executable_deserialize_and_load, "PJRT_Executable_DeserializeAndLoad");
  TORCH_TPU_CHECK_ENTRY(buffer_destroy, "PJRT_Buffer_Destroy");
  TORCH_TPU_CHECK_ENTRY(buffer_element_type, "PJRT_Buffer_ElementType");
  TORCH_TPU_CHECK_ENTRY(buffer_dimensions, "PJRT_Buffer_Dimensions");
  TORCH_TPU_CHECK_ENTRY(buffer_to_host_buffer, "PJRT_Buffer_ToHostBuffer");
  TORCH_TPU_CHECK_ENTRY(buffer_ready_event, "PJRT_Buffer_ReadyEvent");
#undef TORCH_TPU_CHECK_ENTRY
}

TEST_F(PjrtCpuPlugin, BadModuleIsAPjrtErrorWithTheCompilersMessage) {
  auto client = Client::create(plugin_);
  try {
    client->compile("\"builtin.module\"() ({ this is not MLIR");
    FAIL() << "no PjrtError thrown";
  } catch (const PjrtError& error) {
    EXPECT_NE(error.code(), capi::ErrorCode::kOk);
    EXPECT_FALSE(error.plugin_message().empty());
    EXPECT_EQ(std::string(error.what()).rfind("PJRT_Client_Compile failed: ", 0), 0u)
        << error.what();
  }
}

TEST_F(PjrtCpuPlugin, DeviceIndexOutOfRangeIsRefused) {
  auto client = Client::create(plugin_);
  const float value = 1;
  EXPECT_THROW(client->copy_to_device(&value, capi::BufferType::kF32, {},
                                      client->devices().size()),
               torch_tpu::runtime::RuntimeError);
}
