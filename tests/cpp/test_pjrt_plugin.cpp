// Plugin loading without a real plugin: version checks, path resolution and the errors a
// user sees, on fake plugins built beside this test (fake_pjrt_plugin.cpp). Each test runs in
// its own process (ctest), so the process-wide plugin registry starts empty in each.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "executors/pjrt/client.h"
#include "executors/pjrt/compile_options.h"
#include "executors/pjrt/plugin.h"

namespace fs = std::filesystem;
using namespace torch_tpu::executors::pjrt;

namespace {

std::string fake(const char* name) { return std::string(TORCH_TPU_PJRT_FAKE_DIR "/") + name; }

// The message of the PluginError `body` throws.
template <typename Body>
std::string plugin_error(Body body) {
  try {
    body();
  } catch (const PluginError& error) {
    return error.what();
  }
  ADD_FAILURE() << "no PluginError thrown";
  return "";
}

fs::path temp_dir(const char* name) {
  fs::path dir = fs::temp_directory_path() / (std::string("torch_tpu_pjrt_") + name + "_" +
                                              std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

}  // namespace

TEST(PjrtCompileOptions, ReplicasPartitionsAndDebugOverridesAreTheBytesThePluginsAccept) {
  // env_option_overrides (field 7) entries { key (1): "xla_allow_excess_precision",
  // value (2): OptionOverrideProto { bool_field (2): false } }, then the same for
  // "xla_cpu_enable_fast_min_max".
  const std::string overrides =
      std::string("\x3a\x20\x0a\x1a", 4) + "xla_allow_excess_precision" + std::string("\x12\x02\x10\x00", 4) +
      std::string("\x3a\x21\x0a\x1b", 4) + "xla_cpu_enable_fast_min_max" + std::string("\x12\x02\x10\x00", 4);
  EXPECT_EQ(compile_options_bytes(), std::string("\x1a\x04\x20\x01\x28\x01", 6) + overrides);
  // 300 needs a two-byte varint: 0xac 0x02.
  EXPECT_EQ(compile_options_bytes(300, 2), std::string("\x1a\x05\x20\xac\x02\x28\x02", 7) + overrides);
  EXPECT_THROW(compile_options_bytes(0, 1), std::invalid_argument);
  // compile_portable_executable (field 4 of CompileOptionsProto) = true.
  EXPECT_EQ(compile_options_bytes(1, 1, /*portable=*/true),
            std::string("\x1a\x04\x20\x01\x28\x01\x20\x01", 8) + overrides);
  EXPECT_THROW(compile_options_bytes(2, 1, /*portable=*/true), std::invalid_argument);
}

TEST(PjrtApiVersion, OlderMinorIsRefusedNamingBothVersions) {
  const std::string message = plugin_error([] { check_api_version("cpu", {0, 50}); });
  EXPECT_NE(message.find("'cpu'"), std::string::npos) << message;
  EXPECT_NE(message.find("0.50"), std::string::npos) << message;
  EXPECT_NE(message.find(kMinimumApiVersion.to_string()), std::string::npos) << message;
  EXPECT_NE(message.find("pip install"), std::string::npos) << message;
}

TEST(PjrtApiVersion, OtherMajorIsRefused) {
  const std::string message = plugin_error([] { check_api_version("x.so", {1, 2}); });
  EXPECT_NE(message.find("1.2"), std::string::npos) << message;
  EXPECT_NE(message.find("major version 0"), std::string::npos) << message;
}

TEST(PjrtApiVersion, MinimumAndNewerAreAccepted) {
  EXPECT_NO_THROW(check_api_version("cpu", kMinimumApiVersion));
  EXPECT_NO_THROW(check_api_version("cpu", {0, 117}));
  EXPECT_LT((ApiVersionNumber{0, 99}), (ApiVersionNumber{0, 106}));
}

TEST(PjrtResolve, MissingNamedPluginNamesEveryPathTriedAndTheInstallCommand) {
  const std::string message =
      plugin_error([] { resolve_plugin_path("cpu", {"/nonexistent/a", "/nonexistent/b"}); });
  EXPECT_NE(message.find("PJRT plugin 'cpu' not found"), std::string::npos) << message;
  EXPECT_NE(message.find("/nonexistent/a/fastatomstruct_xla_cpu/libpjrt_cpu.so"),
            std::string::npos) << message;
  EXPECT_NE(message.find("/nonexistent/b/fastatomstruct_xla_cpu/libpjrt_cpu.so"),
            std::string::npos) << message;
  EXPECT_NE(message.find("pip install --no-deps fastatomstruct-xla-cpu"), std::string::npos)
      << message;
}

TEST(PjrtResolve, CudaTriesBothJaxPluginPackages) {
  const std::string message = plugin_error([] { resolve_plugin_path("cuda", {"/nowhere"}); });
  EXPECT_NE(message.find("xla_cuda13"), std::string::npos) << message;
  EXPECT_NE(message.find("xla_cuda12"), std::string::npos) << message;
  EXPECT_NE(message.find("pip install jax-cuda13-pjrt"), std::string::npos) << message;
}

TEST(PjrtResolve, UnknownNameAndMissingPathAreRefused) {
  EXPECT_NE(plugin_error([] { resolve_plugin_path("rocm", {}); }).find("cpu, tpu, cuda"),
            std::string::npos);
  EXPECT_NE(plugin_error([] { resolve_plugin_path("/no/such/plugin.so", {}); })
                .find("no file at /no/such/plugin.so"),
            std::string::npos);
}

TEST(PjrtResolve, NamedPluginIsFoundInTheFirstDirectoryHoldingIt) {
  const fs::path root = temp_dir("resolve");
  fs::create_directories(root / "second" / "libtpu");
  std::ofstream(root / "second" / "libtpu" / "libtpu.so") << "x";
  EXPECT_EQ(resolve_plugin_path("tpu", {(root / "first").string(), (root / "second").string()}),
            (root / "second" / "libtpu" / "libtpu.so").string());
  EXPECT_EQ(resolve_plugin_path(fake("libfake_pjrt_ok.so"), {}), fake("libfake_pjrt_ok.so"));
  fs::remove_all(root);
}

TEST(PjrtPlugin, OldPluginIsRefusedNamingBothVersions) {
  const std::string message = plugin_error([] { Plugin::load(fake("libfake_pjrt_old.so")); });
  EXPECT_NE(message.find("0.50"), std::string::npos) << message;
  EXPECT_NE(message.find(kMinimumApiVersion.to_string()), std::string::npos) << message;
}

TEST(PjrtPlugin, OtherMajorPluginIsRefused) {
  const std::string message = plugin_error([] { Plugin::load(fake("libfake_pjrt_major1.so")); });
  EXPECT_NE(message.find("1.0"), std::string::npos) << message;
}

TEST(PjrtPlugin, LibraryWithoutGetPjrtApiIsNotAPlugin) {
  const std::string message = plugin_error([] { Plugin::load(fake("libnot_a_pjrt_plugin.so")); });
  EXPECT_NE(message.find("exports no GetPjrtApi"), std::string::npos) << message;
  EXPECT_NE(message.find("libnot_a_pjrt_plugin.so"), std::string::npos) << message;
}

TEST(PjrtPlugin, BrokenLibraryNamesThePathAndDlopensReason) {
  const fs::path dir = temp_dir("broken");
  const fs::path path = dir / "broken_plugin.so";
  std::ofstream(path) << "not an ELF file";
  const std::string message = plugin_error([&] { Plugin::load(path.string()); });
  EXPECT_NE(message.find("could not be loaded from " + path.string()), std::string::npos)
      << message;
  fs::remove_all(dir);
}

TEST(PjrtPlugin, FailedInitializeIsAPjrtErrorWithThePluginsCodeAndMessage) {
  try {
    Plugin::load(fake("libfake_pjrt_init_fails.so"));
    FAIL() << "no PjrtError thrown";
  } catch (const PjrtError& error) {
    EXPECT_EQ(error.code(), capi::ErrorCode::kFailedPrecondition);
    EXPECT_EQ(error.plugin_message(), "fake plugin refuses to start");
    EXPECT_STREQ(error.what(), "PJRT_Plugin_Initialize failed: FAILED_PRECONDITION: "
                               "fake plugin refuses to start");
  }
}

TEST(PjrtPlugin, LoadsOncePerPath) {
  auto first = Plugin::load(fake("libfake_pjrt_ok.so"));
  auto second = Plugin::load(fake("libfake_pjrt_ok.so"));
  EXPECT_EQ(first.get(), second.get());
  EXPECT_EQ(first->version(), (ApiVersionNumber{0, 200}));
  EXPECT_EQ(first->path(), fake("libfake_pjrt_ok.so"));
}

TEST(PjrtPlugin, ClientCreationErrorCarriesThePluginsCode) {
  auto plugin = Plugin::load(fake("libfake_pjrt_ok.so"));
  try {
    Client::create(plugin);
    FAIL() << "no PjrtError thrown";
  } catch (const PjrtError& error) {
    EXPECT_EQ(error.code(), capi::ErrorCode::kNotFound);
    EXPECT_NE(std::string(error.what()).find("PJRT_Client_Create failed: NOT_FOUND"),
              std::string::npos);
  }
}

TEST(PjrtPlugin, EntryBeyondThePluginsTableIsRefusedNotCalled) {
  // The short fake fills PJRT_Client_Create but its struct_size ends before it.
  auto plugin = Plugin::load(fake("libfake_pjrt_short.so"));
  const std::string message = plugin_error([&] { Client::create(plugin); });
  EXPECT_NE(message.find("does not provide PJRT_Client_Create"), std::string::npos) << message;
  EXPECT_NE(message.find("0.200"), std::string::npos) << message;
}

TEST(PjrtPlugin, LoadingLibtpuSetsSkipMdsQueryFirst) {
  ::unsetenv("TPU_SKIP_MDS_QUERY");
  const fs::path dir = temp_dir("libtpu");
  fs::copy_file(fake("libfake_pjrt_ok.so"), dir / "libtpu.so");
  Plugin::load((dir / "libtpu.so").string());
  ASSERT_NE(std::getenv("TPU_SKIP_MDS_QUERY"), nullptr);
  EXPECT_STREQ(std::getenv("TPU_SKIP_MDS_QUERY"), "1");
  fs::remove_all(dir);
}
