#include "executors/pjrt/plugin.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>

namespace torch_tpu::executors::pjrt {

namespace {

// Package layouts of the plugins' wheels. cpu: an unmodified build of XLA's CPU plugin (no
// official one is published); cuda: JAX's plugins, CUDA 13 first.
constexpr KnownPlugin kKnownPlugins[] = {
    {"cpu", "fastatomstruct_xla_cpu/libpjrt_cpu.so",
     "pip install --no-deps fastatomstruct-xla-cpu==2026.6.23"},
    {"tpu", "libtpu/libtpu.so", "pip install libtpu"},
    {"cuda", "jax_plugins/xla_cuda13/xla_cuda_plugin.so", "pip install jax-cuda13-pjrt"},
    {"cuda", "jax_plugins/xla_cuda12/xla_cuda_plugin.so", "pip install jax-cuda12-pjrt"},
};

bool is_explicit_path(const std::string& plugin) {
  return plugin.find('/') != std::string::npos ||
         (plugin.size() > 3 && plugin.compare(plugin.size() - 3, 3, ".so") == 0);
}

bool is_libtpu(const std::string& plugin, const std::string& path) {
  return plugin == "tpu" ||
         std::filesystem::path(path).filename().string().rfind("libtpu", 0) == 0;
}

std::string install_hint(const std::string& plugin) {
  std::string hint;
  for (const KnownPlugin& known : known_plugins(plugin)) {
    hint += hint.empty() ? "; install it with `" : "` or `";
    hint += known.install;
  }
  return hint.empty() ? "" : hint + "`";
}

// Every load goes through here; guards the per-path registry.
std::mutex& registry_mutex() {
  static std::mutex mutex;
  return mutex;
}
std::map<std::string, std::shared_ptr<Plugin>>& registry() {
  static auto* plugins = new std::map<std::string, std::shared_ptr<Plugin>>();  // never freed:
  return *plugins;  // plugins outlive static destruction (their threads may still run)
}

std::atomic<bool> g_process_exiting{false};

// "PJRT plugin 'cpu' (/path/libpjrt_cpu.so)", or "PJRT plugin /path/x.so" when named by path.
std::string describe(const std::string& plugin, const std::string& path) {
  if (plugin == path) return "PJRT plugin " + path;
  return "PJRT plugin '" + plugin + "' (" + path + ")";
}

}  // namespace

bool Plugin::process_exiting() { return g_process_exiting.load(); }
void Plugin::mark_process_exiting() { g_process_exiting.store(true); }

std::string ApiVersionNumber::to_string() const {
  return std::to_string(major) + "." + std::to_string(minor);
}

void check_api_version(const std::string& plugin, ApiVersionNumber found) {
  if (found.major != kSupportedMajorVersion) {
    throw PluginError("PJRT plugin '" + plugin + "' implements PJRT C API " + found.to_string() +
                      ", but torch_tpu supports major version " +
                      std::to_string(kSupportedMajorVersion) + " only (at least " +
                      kMinimumApiVersion.to_string() + ")");
  }
  if (found < kMinimumApiVersion) {
    throw PluginError("PJRT plugin '" + plugin + "' implements PJRT C API " + found.to_string() +
                      ", older than the " + kMinimumApiVersion.to_string() +
                      " torch_tpu needs; install a newer plugin" + install_hint(plugin));
  }
}

std::vector<KnownPlugin> known_plugins(const std::string& name) {
  std::vector<KnownPlugin> found;
  for (const KnownPlugin& known : kKnownPlugins) {
    if (name == known.name) found.push_back(known);
  }
  return found;
}

std::string resolve_plugin_path(const std::string& plugin,
                                const std::vector<std::string>& search_dirs) {
  if (is_explicit_path(plugin)) {
    if (std::filesystem::is_regular_file(plugin)) return plugin;
    throw PluginError("PJRT plugin '" + plugin + "' not found: no file at " + plugin);
  }
  const std::vector<KnownPlugin> candidates = known_plugins(plugin);
  if (candidates.empty()) {
    throw PluginError("unknown PJRT plugin '" + plugin +
                      "': name one of cpu, tpu, cuda, or give the path of a plugin's .so");
  }
  std::string tried;
  for (const KnownPlugin& known : candidates) {
    for (const std::string& dir : search_dirs) {
      const std::string path = (std::filesystem::path(dir) / known.package_file).string();
      if (std::filesystem::is_regular_file(path)) return path;
      if (!tried.empty()) tried += ", ";
      tried += path;
    }
  }
  if (tried.empty()) tried = "nowhere: no search directory was given";
  throw PluginError("PJRT plugin '" + plugin + "' not found (tried " + tried + ")" +
                    install_hint(plugin));
}

Plugin::Plugin(std::string name, std::string path, const capi::Api* api)
    : name_(std::move(name)),
      path_(std::move(path)),
      api_(api),
      version_{api->version.major_version, api->version.minor_version} {}

void Plugin::check_entry(const char* slot, const char* call) const {
  const char* base = reinterpret_cast<const char*>(api_);
  const size_t end = static_cast<size_t>(slot - base) + sizeof(void*);
  if (end > api_->struct_size || *reinterpret_cast<void* const*>(slot) == nullptr) {
    throw PluginError(describe(name_, path_) + " (PJRT C API " + version_.to_string() +
                      ") does not provide " + call + "; a newer plugin is needed");
  }
}

std::shared_ptr<Plugin> Plugin::load(const std::string& plugin,
                                     const std::vector<std::string>& search_dirs) {
  const std::string path = resolve_plugin_path(plugin, search_dirs);
  std::lock_guard<std::mutex> lock(registry_mutex());
  std::error_code ignored;
  const std::string key = std::filesystem::weakly_canonical(path, ignored).string();
  if (auto found = registry().find(key); found != registry().end()) return found->second;

  if (is_libtpu(plugin, path)) setenv("TPU_SKIP_MDS_QUERY", "1", /*overwrite=*/0);
  // RTLD_LOCAL: a plugin's bundled LLVM/absl must not resolve against another plugin's.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* reason = dlerror();
    throw PluginError("PJRT plugin '" + plugin + "' could not be loaded from " + path + ": " +
                      (reason ? reason : "unknown dlopen error") + install_hint(plugin));
  }
  auto get_api = reinterpret_cast<capi::GetApiFunction>(dlsym(handle, capi::kGetApiSymbol));
  if (get_api == nullptr) {
    throw PluginError(describe(plugin, path) + " is not a PJRT plugin: it exports no " +
                      capi::kGetApiSymbol + install_hint(plugin));
  }
  const capi::Api* api = get_api();
  // The header (struct_size, extensions, version) must be there before anything is read.
  if (api == nullptr || api->struct_size < offsetof(capi::Api, error_destroy)) {
    throw PluginError(describe(plugin, path) + " returned no usable function table from " +
                      capi::kGetApiSymbol);
  }
  check_api_version(plugin, {api->version.major_version, api->version.minor_version});

  auto loaded = std::make_shared<Plugin>(plugin, path, api);
  // Errors are reported through these three; without them no failure could be read.
  loaded->entry(&capi::Api::error_destroy, "PJRT_Error_Destroy");
  loaded->entry(&capi::Api::error_message, "PJRT_Error_Message");
  loaded->entry(&capi::Api::error_get_code, "PJRT_Error_GetCode");
  auto initialize = loaded->entry(&capi::Api::plugin_initialize, "PJRT_Plugin_Initialize");
  capi::PluginInitializeArgs args{};
  args.struct_size = sizeof(args);
  throw_if_error(*api, initialize(&args), "PJRT_Plugin_Initialize");
  std::atexit(&Plugin::mark_process_exiting);

  registry().emplace(key, loaded);
  return loaded;
}

std::vector<std::pair<std::string, std::string>> Plugin::attributes() const {
  auto get = entry(&capi::Api::plugin_attributes, "PJRT_Plugin_Attributes");
  capi::PluginAttributesArgs args{};
  args.struct_size = sizeof(args);
  throw_if_error(*api_, get(&args), "PJRT_Plugin_Attributes");
  std::vector<std::pair<std::string, std::string>> result;
  for (size_t i = 0; i < args.num_attributes; ++i) {
    const capi::NamedValue& value = args.attributes[i];
    std::string text;
    switch (value.type) {
      case capi::NamedValueType::kString:
        text.assign(value.string_value, value.value_size);
        break;
      case capi::NamedValueType::kInt64:
        text = std::to_string(value.int64_value);
        break;
      case capi::NamedValueType::kInt64List:
        for (size_t j = 0; j < value.value_size; ++j) {
          if (j > 0) text += '.';
          text += std::to_string(value.int64_list_value[j]);
        }
        break;
      case capi::NamedValueType::kFloat:
        text = std::to_string(value.float_value);
        break;
      case capi::NamedValueType::kBool:
        text = value.bool_value ? "true" : "false";
        break;
    }
    result.emplace_back(std::string(value.name, value.name_size), std::move(text));
  }
  return result;
}

}  // namespace torch_tpu::executors::pjrt
