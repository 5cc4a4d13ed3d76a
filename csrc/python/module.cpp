// The torch_tpu._C extension module: one init_<area>() per binding file.
#include <pybind11/pybind11.h>

namespace torch_tpu::python {
void init_device(pybind11::module_& m);
void init_modes(pybind11::module_& m);
void init_runtime(pybind11::module_& m);
void init_metrics(pybind11::module_& m);
void init_distributed(pybind11::module_& m);
void init_saved_recipes(pybind11::module_& m);
void init_python_lines(pybind11::module_& m);
}  // namespace torch_tpu::python

PYBIND11_MODULE(_C, m) {
  m.doc() = "torch_tpu native core: the tpu device on the host runtime or a PJRT plugin";
  torch_tpu::python::init_device(m);
  torch_tpu::python::init_modes(m);
  torch_tpu::python::init_runtime(m);
  torch_tpu::python::init_metrics(m);
  torch_tpu::python::init_distributed(m);
  torch_tpu::python::init_saved_recipes(m);
  torch_tpu::python::init_python_lines(m);
}
