// Bindings of the tpu_dist c10d backend (python/torch_tpu/distributed registers it with
// torch.distributed). The class derives from c10d's Backend as torch binds it, so a
// ProcessGroup can hold it like any built-in backend.
#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>

#include "distributed/tpu_dist_backend.h"

namespace torch_tpu::python {

namespace py = pybind11;

void init_distributed(py::module_& m) {
  // c10d's Backend must be known to pybind11 before a subclass is declared.
  py::module_::import("torch.distributed");
  py::class_<distributed::TpuDistBackend, c10d::Backend,
             c10::intrusive_ptr<distributed::TpuDistBackend>>(
      m, "_TpuDistBackend", "tpu_dist: c10d backend for tpu tensors over a Gloo transport")
      .def(py::init<c10::intrusive_ptr<c10d::Backend>, c10::intrusive_ptr<c10d::Backend>,
                    c10::intrusive_ptr<c10d::Backend>, int, int, std::chrono::milliseconds>(),
           py::arg("transport"), py::arg("agreement"), py::arg("host_transport"), py::arg("rank"),
           py::arg("size"), py::arg("timeout"), py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("transport", &distributed::TpuDistBackend::transport)
      .def_property_readonly("collectives_launched",
                             &distributed::TpuDistBackend::collectives_launched)
      .def_property_readonly("signature_exchanges",
                             &distributed::TpuDistBackend::signature_exchanges);
}

}  // namespace torch_tpu::python
