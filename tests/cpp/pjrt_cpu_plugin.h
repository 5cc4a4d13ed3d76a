// Where the PJRT GoogleTests find the CPU plugin (fastatomstruct-xla-cpu, which
// scripts/setup.sh installs into the venv): $TORCH_TPU_PJRT_SITE_PACKAGES, else the venv's
// site-packages found at configure time (tests/cpp/CMakeLists.txt).
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

#include "executors/pjrt/plugin.h"

namespace torch_tpu::executors::pjrt::testing {

inline std::vector<std::string> search_dirs() {
  if (const char* dir = std::getenv("TORCH_TPU_PJRT_SITE_PACKAGES")) return {dir};
  const std::string configured = TORCH_TPU_PJRT_SITE_PACKAGES;
  if (configured.empty()) return {};
  return {configured};
}

// Why the CPU plugin cannot be found (the resolver's message), or empty when it can. Fixtures
// skip with it: `make setup` installs the plugin.
inline std::string cpu_plugin_missing() {
  try {
    resolve_plugin_path("cpu", search_dirs());
    return {};
  } catch (const PluginError& error) {
    return error.what();
  }
}

}  // namespace torch_tpu::executors::pjrt::testing
