// torch_tpu.metrics(): ops launched, CPU fallbacks by op, syncs by reason.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "engine/metrics.h"

namespace torch_tpu::python {

namespace py = pybind11;

void init_metrics(py::module_& m) {
  m.def("_metrics", [] {
    const engine::MetricsSnapshot snapshot = engine::metrics_snapshot();
    py::dict result;
    result["ops_launched"] = snapshot.ops_launched;
    result["fallbacks"] = snapshot.fallbacks;
    result["syncs"] = snapshot.syncs;
    return result;
  });
  m.def("_reset_metrics", &engine::reset_metrics);
}

}  // namespace torch_tpu::python
