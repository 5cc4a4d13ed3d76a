// Loading a PJRT plugin (torch-free): find its shared library, dlopen it, take its function
// table from GetPjrtApi, refuse an API version older than we need, and run
// PJRT_Plugin_Initialize once per process. Clients are made from a loaded Plugin (client.h).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "executors/pjrt/error.h"
#include "executors/pjrt/pjrt_c_api.h"

namespace torch_tpu::executors::pjrt {

// A PJRT C API version, "major.minor". Minor versions only add (entries, fields); a new major
// breaks the ABI.
struct ApiVersionNumber {
  int major = 0;
  int minor = 0;
  auto operator<=>(const ApiVersionNumber&) const = default;
  std::string to_string() const;
};

// The oldest API we accept: our declarations (pjrt_c_api.h) were checked field by field against
// the 0.94 header, and run against 0.106. Older plugins might work (the ABI only grows), but
// nothing here has run on one.
inline constexpr ApiVersionNumber kMinimumApiVersion{0, 94};
// The only major version our declarations describe.
inline constexpr int kSupportedMajorVersion = 0;

// Throws PluginError naming `plugin`, both versions and what to do when `found` is older than
// kMinimumApiVersion or of another major version.
void check_api_version(const std::string& plugin, ApiVersionNumber found);

// Where a named plugin lives inside an installed Python package.
struct KnownPlugin {
  const char* name;          // "cpu", "tpu", "cuda"
  const char* package_file;  // relative to site-packages
  const char* install;       // the command that installs it
};
// The packages that may hold the named plugin `name` (cpu, tpu, cuda), in search order; empty
// when `name` is not a known name.
std::vector<KnownPlugin> known_plugins(const std::string& name);

// The library for `plugin`: an explicit path (containing '/' or ending in ".so") is returned
// as it is when the file exists; a known name is looked up under each of `search_dirs` (the
// venv's site-packages) in order. Throws PluginError naming the plugin, every path tried and
// how to install it.
std::string resolve_plugin_path(const std::string& plugin,
                                const std::vector<std::string>& search_dirs);

// A loaded plugin library. Loaded once per process and never unloaded (plugins keep threads
// and static state, so dlclose is not safe); thread-safe after load().
class Plugin {
 public:
  // Resolves `plugin` (see resolve_plugin_path), loads and initializes it, or returns the one
  // already loaded from the same path. Sets TPU_SKIP_MDS_QUERY=1 (unless the environment sets
  // it) before loading libtpu, which otherwise spends minutes looking for a cloud metadata
  // server. Throws PluginError (cannot load, too old) or PjrtError (initialize failed).
  static std::shared_ptr<Plugin> load(const std::string& plugin,
                                      const std::vector<std::string>& search_dirs = {});

  // True once the process has begun to exit: the plugins' static state may be torn down before
  // ours (a plugin is loaded after this library), so handles still alive then are left to the
  // operating system instead of destroyed through the plugin.
  static bool process_exiting();
  // Says the process is exiting: called at load through std::atexit (which runs before the
  // static destructors of what the plugin creates at load), and by the Python module at
  // interpreter exit, before anything is torn down (the plugin creates statics lazily too).
  static void mark_process_exiting();

  const std::string& name() const { return name_; }
  const std::string& path() const { return path_; }
  ApiVersionNumber version() const { return version_; }
  const capi::Api& api() const { return *api_; }

  // The plugin's attributes (e.g. xla_version, stablehlo_current_version), values formatted as
  // text (integer lists joined with ".", as they are versions); empty when it has none.
  std::vector<std::pair<std::string, std::string>> attributes() const;

  // The table entry `member`, after checking that the plugin's table reaches it (struct_size)
  // and fills it. Throws PluginError naming `call` (e.g. "PJRT_Client_Compile") otherwise.
  template <typename F>
  F entry(F capi::Api::*member, const char* call) const {
    check_entry(reinterpret_cast<const char*>(&(api_->*member)), call);
    return api_->*member;
  }

  // Plugin(...) is for load(); the constructor takes an already-checked table.
  Plugin(std::string name, std::string path, const capi::Api* api);

 private:
  void check_entry(const char* slot, const char* call) const;

  std::string name_;
  std::string path_;
  const capi::Api* api_;
  ApiVersionNumber version_;
};

}  // namespace torch_tpu::executors::pjrt
