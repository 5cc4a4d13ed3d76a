// Runtime selection behind torch_tpu.set_runtime / TORCH_TPU_RUNTIME (python/torch_tpu/_runtime.py):
// the host runtime's executor is installed at import; selecting PJRT, before the first tpu
// tensor, installs a PJRT executor on the named plugin in its place.
#include <optional>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <c10/util/Exception.h>

#include "engine/active_executor.h"
#include "engine/compiled_programs.h"
#include "engine/deferral.h"
#include "engine/launch.h"
#include "engine/metrics.h"
#include "engine/mode.h"
#include "executors/pjrt/aot_compile.h"
#include "executors/pjrt/pjrt_executor.h"
#include "runtime/chip.h"

namespace torch_tpu::python {

namespace py = pybind11;

namespace {

// The PJRT executor once selected. Never destroyed: plugins keep threads and static state
// that must outlive the interpreter's teardown (executors/pjrt/plugin.h).
executors::pjrt::PjrtExecutor* g_pjrt = nullptr;

py::dict describe(const executors::pjrt::PjrtExecutor& executor) {
  const executors::pjrt::Client& client = executor.client();
  const executors::pjrt::Plugin& plugin = client.plugin();
  py::dict attributes;
  for (const auto& [name, value] : plugin.attributes()) attributes[py::str(name)] = value;
  py::dict info;
  info["executor"] = executor.name();
  info["plugin"] = plugin.name();
  info["plugin_path"] = plugin.path();
  info["api_version"] = plugin.version().to_string();
  info["platform"] = client.platform_name();
  info["platform_version"] = client.platform_version();
  info["devices"] = client.devices().size();
  info["plugin_attributes"] = attributes;
  if (const executors::pjrt::ExecutableDiskCache* cache = executor.disk_cache()) {
    py::dict disk;
    disk["dir"] = cache->dir().string();
    disk["hits"] = cache->hits();
    disk["misses"] = cache->misses();
    disk["stores"] = cache->stores();
    info["disk_cache"] = disk;
  } else {
    info["disk_cache"] = py::none();
  }
  return info;
}

// The chips of the PJRT runtime: one per plugin device (as a process on a TPU or GPU host sees
// all of them), or the count the environment asks for (TORCH_TPU_HOST_CHIPS, torchrun's
// LOCAL_WORLD_SIZE), which the plugin must have.
int pjrt_chip_count(const executors::pjrt::PjrtExecutor& executor) {
  const auto devices = static_cast<int>(executor.client().devices().size());
  const std::optional<int> requested = runtime::Runtime::requested_chip_count();
  TORCH_CHECK(!requested || *requested <= devices, "the PJRT plugin '",
              executor.client().plugin().name(), "' has ", devices,
              " devices; the environment (TORCH_TPU_HOST_CHIPS or LOCAL_WORLD_SIZE) asks for ",
              *requested, " tpu devices");
  return requested.value_or(devices);
}

void select_pjrt(const std::string& plugin, const std::vector<std::string>& search_dirs,
                 const std::string& cache_dir) {
  TORCH_CHECK(g_pjrt == nullptr, "the PJRT runtime is already selected");
  // Tensors made so far live in the host runtime's chip memory, which PJRT programs cannot
  // read: the runtime is chosen before the first tpu tensor.
  const bool started = runtime::Runtime::started_chip_count() != 0;
  TORCH_CHECK(!started || (engine::metrics_snapshot().ops_launched == 0 &&
                           runtime::Runtime::instance().chip(0).allocator().stats()
                                   .allocation[runtime::kAllPools].allocated == 0),
              "torch_tpu.set_runtime must be called before the first tpu tensor is made (or set "
              "TORCH_TPU_RUNTIME before starting Python)");
  const size_t capacity = engine::translate_errors([] { return runtime::Runtime::requested_capacity(); });
  auto executor = engine::translate_errors(
      [&] { return executors::pjrt::PjrtExecutor::create(plugin, search_dirs, capacity); });
  const int chips = pjrt_chip_count(*executor);
  if (!runtime::Runtime::start_with_chip_count(chips)) {
    // Started earlier (a device count was asked for): its chips are fixed, and each must be
    // a plugin device (torch_tpu.set_runtime warns when that leaves devices out).
    const int have = runtime::Runtime::instance().chip_count();
    const auto devices = static_cast<int>(executor->client().devices().size());
    TORCH_CHECK(have <= devices, "the runtime already started with ", have, " tpu devices; the ",
                "PJRT plugin '", plugin, "' has ", devices);
  }
  if (!cache_dir.empty()) executor->use_disk_cache(cache_dir);
  g_pjrt = executor.release();
  engine::set_active_executor(g_pjrt);
  // Fused mode's flushes compile their programs whole (one StableHLO module each).
  engine::set_program_runner(&engine::compiled_program_runner());
}

}  // namespace

void init_runtime(py::module_& m) {
  // `cache_dir`: where compiled executables are kept between processes ("" for nowhere).
  m.def("_select_pjrt_runtime", [](const std::string& plugin, const std::vector<std::string>& search_dirs,
                                   const std::string& cache_dir) {
    select_pjrt(plugin, search_dirs, cache_dir);
    return describe(*g_pjrt);
  });
  // The selected PJRT runtime's description, or None on the host runtime.
  m.def("_pjrt_runtime_info", []() -> py::object {
    if (g_pjrt == nullptr) return py::none();
    return describe(*g_pjrt);
  });
  m.def("_executor_name", [] { return engine::active_executor().name(); });
  // Every program the PJRT runtime compiled: [{"name", "mlir", "runs", "compile_seconds"}].
  m.def("_pjrt_programs", [] {
    TORCH_CHECK(g_pjrt != nullptr, "the PJRT runtime is not selected");
    py::list programs;
    for (const auto& program : g_pjrt->compiled_programs()) {
      py::dict entry;
      entry["name"] = program.name;
      entry["mlir"] = program.mlir;
      entry["runs"] = program.runs;
      entry["compile_seconds"] = program.compile_seconds;
      programs.append(entry);
    }
    return programs;
  });
  // Ahead-of-time compiles of StableHLO modules for `topology` on `plugin` (libtpu: no TPU
  // needed), one report or {"error": message} per module; independent of the active runtime.
  m.def("_aot_compile", [](const std::string& plugin, const std::vector<std::string>& search_dirs,
                           const std::string& topology_name, const std::vector<std::string>& modules) {
    auto topology = engine::translate_errors([&] {
      return std::make_unique<executors::pjrt::Topology>(
          executors::pjrt::Plugin::load(plugin, search_dirs), topology_name);
    });
    py::dict result;
    result["platform"] = topology->platform_name();
    result["platform_version"] = topology->platform_version();
    py::list reports;
    for (const std::string& module : modules) {
      py::dict entry;
      try {
        const executors::pjrt::AotReport report = topology->compile(module);
        py::dict cost;
        for (const auto& [name, value] : report.cost) cost[py::str(name)] = value;
        entry["cost"] = cost;
        entry["argument_bytes"] = report.argument_bytes;
        entry["output_bytes"] = report.output_bytes;
        entry["alias_bytes"] = report.alias_bytes;
        entry["temp_bytes"] = report.temp_bytes;
        entry["generated_code_bytes"] = report.generated_code_bytes;
        entry["compile_seconds"] = report.compile_seconds;
        entry["serialized_bytes"] = report.serialized_bytes;
      } catch (const std::exception& error) {
        entry["error"] = std::string(error.what());
      }
      reports.append(entry);
    }
    result["reports"] = reports;
    return result;
  });
  // At interpreter exit: PJRT handles still alive from then on are left to the OS.
  m.def("_pjrt_process_exiting", &executors::pjrt::Plugin::mark_process_exiting);
}

}  // namespace torch_tpu::python
