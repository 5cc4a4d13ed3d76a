// torch_tpu.metrics(): ops launched, CPU fallbacks by op, syncs by reason, programs, fused
// mode's counters, the host thread team's size.
#include <chrono>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "engine/active_executor.h"
#include "engine/executable_cache.h"
#include "engine/host_team.h"
#include "engine/metrics.h"
#include "executors/host/kernel_metrics.h"
#include "ops/shape_cache.h"
#include "runtime/chip.h"

namespace torch_tpu::python {

namespace py = pybind11;

namespace {

// Lazily allocated buffers that never got chip memory, over all chips, since the last reset
// (the runtime's counts only grow; a reset keeps them as the baseline).
struct NeverAllocated {
  int64_t buffers = 0;
  int64_t bytes = 0;
};

NeverAllocated never_allocated_totals() {
  NeverAllocated total;
  runtime::Runtime& chips = runtime::Runtime::instance();
  for (int i = 0; i < chips.chip_count(); ++i) {
    const runtime::LazyBufferStats stats = chips.chip(i).lazy_buffers().stats();
    total.buffers += stats.never_materialized;
    total.bytes += stats.bytes_never_materialized;
  }
  return total;
}

NeverAllocated g_never_allocated_baseline;

}  // namespace

void init_metrics(py::module_& m) {
  // An unknown TORCH_TPU_HOST_TEAM is reported at import, not at the first sync that reads it.
  if (const std::string& problem = engine::host_team_setting_problem(); !problem.empty()) {
    if (PyErr_WarnEx(PyExc_UserWarning, problem.c_str(), 1) != 0) throw py::error_already_set();
  }
  m.def("_metrics", [] {
    const engine::MetricsSnapshot snapshot = engine::metrics_snapshot();
    py::dict result;
    result["ops_launched"] = snapshot.ops_launched;
    result["fallbacks"] = snapshot.fallbacks;
    result["fallback_reasons"] = snapshot.fallback_reasons;
    result["syncs"] = snapshot.syncs;
    const ops::ShapeCacheStats cache = ops::shape_cache_stats();
    py::dict shape_cache;
    shape_cache["hits"] = cache.hits;
    shape_cache["misses"] = cache.misses;
    shape_cache["entries"] = cache.entries;
    result["shape_cache"] = shape_cache;
    const engine::FusionMetrics& fusion = snapshot.fusion;
    py::dict fused;
    fused["flushes"] = fusion.flushes;
    fused["programs_planned"] = fusion.programs_planned;
    fused["cache_hits"] = fusion.cache_hits;
    fused["cache_misses"] = fusion.cache_misses;
    fused["programs_run"] = fusion.programs_run;
    fused["fused_kernels_run"] = fusion.fused_kernels_run;
    fused["nodes_executed"] = fusion.nodes_executed;
    fused["bytes_materialized"] = fusion.bytes_materialized;
    fused["bytes_avoided"] = fusion.bytes_avoided;
    const NeverAllocated never = never_allocated_totals();
    fused["buffers_never_allocated"] = never.buffers - g_never_allocated_baseline.buffers;
    fused["bytes_never_allocated"] = never.bytes - g_never_allocated_baseline.bytes;
    const executors::host::KernelMetrics kernels = executors::host::kernel_metrics();
    fused["kernels_compiled"] = kernels.kernels_compiled;
    fused["kernels_loaded_from_cache"] = kernels.kernels_loaded_from_cache;
    fused["kernel_compile_failures"] = kernels.kernel_compile_failures;
    fused["compiled_kernel_runs"] = kernels.compiled_kernel_runs;
    fused["interpreted_kernel_runs"] = kernels.interpreted_kernel_runs;
    result["fusion"] = fused;
    const engine::ExecutableCacheStats executables = engine::executable_cache().stats();
    py::dict programs;
    programs["executor"] = engine::active_executor().name();
    programs["one_node_runs"] = snapshot.one_node_runs;
    programs["compiled"] = executables.misses;
    programs["cache_hits"] = executables.hits;
    programs["cached"] = engine::executable_cache().size();
    programs["evicted"] = executables.evictions;
    programs["evicted_near_mapping_limit"] = executables.evictions_for_mappings;
    programs["compile_seconds"] = std::chrono::duration<double>(executables.compile_time).count();
    result["programs"] = programs;
    const engine::HostTeamMetrics team = engine::host_team_metrics();
    py::dict host_team;
    host_team["policy"] = team.policy == engine::HostTeamPolicy::kFixed ? "fixed" : "auto";
    host_team["threads"] = team.threads;
    host_team["shrinks"] = team.shrinks;
    host_team["grows"] = team.grows;
    host_team["others_load"] = team.others_load;  // None before the first window
    result["host_team"] = host_team;
    return result;
  });
  m.def("_reset_metrics", [] {
    engine::reset_metrics();
    executors::host::reset_kernel_metrics();
    engine::reset_host_team_metrics();
    g_never_allocated_baseline = never_allocated_totals();
    ops::reset_shape_cache_stats();
    engine::executable_cache().reset_stats();
  });
}

}  // namespace torch_tpu::python
