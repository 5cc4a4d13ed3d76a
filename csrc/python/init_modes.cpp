// Execution-mode bindings behind torch_tpu.set_mode / get_mode / mode(...).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "engine/active_executor.h"
#include "engine/deferral.h"
#include "engine/host_team.h"
#include "engine/mode.h"
#include "executors/host/host_executor.h"
#include "executors/host/kernel_compiler.h"
#include "executors/host/program_run.h"
#include "runtime/chip.h"

namespace torch_tpu::python {

namespace py = pybind11;

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
  m.def("_flush_all", [](const std::string& reason) {
    const int chips = runtime::Runtime::instance().chip_count();
    for (int chip = 0; chip < chips; ++chip) engine::flush_chip(chip, reason.c_str());
  });
  // Blocks until the fused kernels being compiled in the background are ready.
  m.def("_wait_for_kernel_compiles", &executors::host::wait_for_kernel_compiles,
        py::call_guard<py::gil_scoped_release>());
}

}  // namespace torch_tpu::python
