// Device-level bindings behind torch.tpu: count, current device, sync, properties, lazy init.
#include <pybind11/pybind11.h>

#include <ATen/Context.h>
#include <torch/csrc/Generator.h>
#include <torch/csrc/utils/device_lazy_init.h>

#include "engine/active_executor.h"
#include "engine/launch.h"
#include "privateuse1/generator.h"
#include "runtime/chip.h"

namespace torch_tpu::python {

namespace py = pybind11;

namespace {

// Waits for the chip with the GIL released when the calling thread holds it (see
// engine::set_blocking_wait_wrapper for why).
void wait_without_gil(const std::function<void()>& wait) {
  if (PyGILState_Check()) {
    py::gil_scoped_release no_gil;
    wait();
  } else {
    wait();
  }
}

}  // namespace

void init_device(py::module_& m) {
  engine::set_blocking_wait_wrapper(&wait_without_gil);
  m.def("_init", [] {
    torch::utils::register_fork_handler_for_device_init(at::kPrivateUse1);
    at::globalContext().lazyInitDevice(c10::DeviceType::PrivateUse1);
  });
  m.def("_is_in_bad_fork", [] {
    return runtime::Runtime::in_forked_child() ||
           torch::utils::is_device_in_bad_fork(at::kPrivateUse1);
  });
  m.def("_device_count", [] {
    return runtime::Runtime::in_forked_child() ? runtime::Runtime::started_chip_count()
                                               : runtime::Runtime::instance().chip_count();
  });
  m.def("_get_device", [] { return engine::current_device(); });
  m.def("_set_device", [](int index) { engine::set_current_device(index); });
  m.def("_device_name", [](int index) { return engine::chip(index).name(); });
  m.def("_device_capacity", [](int index) {
    engine::chip(index);  // checks the index
    return engine::active_executor().memory_capacity(index);
  });
  m.def("_default_generator", [](int index) {
    return py::reinterpret_steal<py::object>(THPGenerator_initDefaultGenerator(
        privateuse1::default_generator(static_cast<c10::DeviceIndex>(index))));
  });
  m.def(
      "_synchronize", [](int index) { engine::sync_device(index, "device_synchronize"); },
      py::call_guard<py::gil_scoped_release>());
}

}  // namespace torch_tpu::python
