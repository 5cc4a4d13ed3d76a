// Execution-mode bindings behind torch_tpu.set_mode / get_mode / mode(...).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>

#include "engine/active_executor.h"
#include "engine/deferral.h"
#include "engine/host_team.h"
#include "engine/launch.h"
#include "engine/mode.h"
#include "executors/host/host_executor.h"
#include "executors/host/kernel_compiler.h"
#include "executors/host/program_run.h"
#include "runtime/chip.h"

namespace torch_tpu::python {

namespace py = pybind11;

namespace {

void flush_every_chip(const char* reason) {
  const int chips = runtime::Runtime::instance().chip_count();
  for (int chip = 0; chip < chips; ++chip) engine::flush_chip(chip, reason);
}

// `with _C._CompiledGraphRegion(): graph(*args)` (torch_tpu.compiler): the graph's ops are
// recorded on this thread, and leaving hands them to the executor as one program per stream
// ("compiled_graph" flushes), without waiting for it. In Debug mode leaving waits for the
// chips, so a graph's error is raised by the call that ran it, naming the op.
class CompiledGraphRegion {
 public:
  void enter() {
    // Ops the process's fused mode recorded before the graph run first: a graph's program
    // holds its own ops only, so its structure (and cache entry) is the same every call.
    if (engine::process_policy().defers_ops()) flush_every_chip("compiled_graph_start");
    scope_.emplace();
  }
  void exit() {
    scope_.reset();
    if (engine::compiled_graph_depth() > 0) return;  // an enclosing graph flushes
    flush_every_chip("compiled_graph");
    if (engine::current_policy().waits_for_each_op()) {
      const int chips = runtime::Runtime::instance().chip_count();
      for (int chip = 0; chip < chips; ++chip) engine::sync_device(chip, "debug_mode");
    }
  }

 private:
  std::optional<engine::CompiledGraphScope> scope_;
};

}  // namespace

void init_modes(py::module_& m) {
  // The layers meet here: the engine compiles and runs one-node programs with the host
  // executor, its flushes plan programs with the host executor's runner, and the runtime's
  // allocator marks wait behind the engine's deferred ops.
  engine::set_active_executor(&executors::host::host_executor());
  engine::set_program_runner(&executors::host::program_runner());
  runtime::set_mark_recorder(&engine::record_mark);
  engine::install_host_team_hooks();

  m.def("_get_mode", [] { return std::string(engine::current_policy().name()); });
  m.def("_set_mode", [](const std::string& name) { engine::set_mode(name); });
  m.def("_mode_names", &engine::mode_names);
  m.def("_mode_flushes_after_backward", [] { return engine::current_policy().flushes_after_backward(); });
  m.def("_mode_recomputes_saved_results", [] { return engine::current_policy().recomputes_saved_results(); });
  m.def("_check_nans_enabled", &engine::check_nans_enabled);
  m.def("_set_check_nans", &engine::set_check_nans);
  // Fused mode: runs every stream's recorded ops now (without waiting for them), saying why.
  m.def("_flush_all", [](const std::string& reason) { flush_every_chip(reason.c_str()); });
  py::class_<CompiledGraphRegion>(m, "_CompiledGraphRegion")
      .def(py::init<>())
      .def("__enter__", [](CompiledGraphRegion& region) { region.enter(); })
      .def("__exit__", [](CompiledGraphRegion& region, const py::args&) {
        region.exit();
        return false;
      });
  // Blocks until the fused kernels being compiled in the background are ready.
  m.def("_wait_for_kernel_compiles", &executors::host::wait_for_kernel_compiles,
        py::call_guard<py::gil_scoped_release>());
}

}  // namespace torch_tpu::python
