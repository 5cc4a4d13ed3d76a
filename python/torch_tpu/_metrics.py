"""Counters that prove what the backend did: ops launched, CPU fallbacks by op, host syncs by
reason; and the size of the host thread's team."""

from . import _C, _runtime, compiler


def metrics() -> dict:
    """``{"ops_launched": int, "fallbacks": {op: count}, "syncs": {reason: count},
    "shape_cache": {"hits": int, "misses": int, "entries": int}, "programs": {...},
    "fusion": {...}, "host_team": {...}}``. A training loop in steady state should show no new
    shape-cache misses.

    ``fallback_reasons``: for an op among ``fallbacks`` because the executor cannot compile it
    (the PJRT runtime: no StableHLO lowering yet), why, as the executor first said.

    ``runtime``: :func:`torch_tpu.runtime_info` (``"host"`` or ``"pjrt"``, the executor, and on
    PJRT the plugin, its path and API version).

    ``programs``: the ``executor`` that compiles and runs programs (``"host"``, ``"pjrt:cpu"``),
    ``one_node_runs`` (Strict and Debug ops, each run as a one-node program), and the
    executable cache's ``compiled`` (programs compiled: one per op structure in Strict and
    Debug), ``cache_hits``, ``cached``, ``compile_seconds``, ``evicted`` (executables dropped by
    a full cache) and ``evicted_near_mapping_limit`` (of those, dropped because the process
    neared the kernel's limit on memory mappings, which compiled PJRT programs use). Fused
    mode's planned programs are counted under ``fusion``.

    ``fusion`` (fused mode): ``flushes`` by reason, ``programs_planned``, ``cache_hits``,
    ``cache_misses``, ``programs_run``, ``fused_kernels_run``, ``nodes_executed``,
    ``bytes_materialized``, ``bytes_avoided``, ``buffers_never_allocated`` and
    ``bytes_never_allocated`` (buffers whose tensors died before anything needed their bytes,
    so they never took chip memory), for kernels compiled once hot ``kernels_compiled``,
    ``kernels_loaded_from_cache``, ``kernel_compile_failures``, ``compiled_kernel_runs``, and
    ``interpreted_kernel_runs`` (fused kernels the register loop interpreted; the rest of
    ``fused_kernels_run`` ran PyTorch's kernels on chunks).

    ``compile``: torch.compile on tpu (:func:`torch_tpu.compiler.compile_metrics`): Dynamo
    graphs compiled, recompiles and the guard that failed for each, Core ATen graphs made of
    them and their runs. Their programs' cache hits and misses are counted under ``fusion``
    (their flushes as ``compiled_graph``).

    ``host_team``: the OpenMP team the main thread runs the chip's kernels with while it waits
    for them (a host wait runs the queued work itself). ``policy`` is ``"auto"`` (the default:
    waits use a smaller team while other processes crowd its cores, and the full
    ``torch.set_num_threads`` count again once they leave; that count, and CPU work outside
    waits, are left alone) or ``"fixed"`` (``TORCH_TPU_HOST_TEAM=fixed``: always the full
    count); ``threads``, the team size waits use as of the last sample; ``shrinks`` and
    ``grows``, the resizes (``reset_metrics()`` zeroes these two); ``others_load``, the cores
    other processes kept busy over the last sampling window (sampled as host waits end, at most
    every 100 ms; ``None`` before the first window)."""
    counters = _C._metrics()
    counters["runtime"] = _runtime.runtime_info()
    counters["compile"] = compiler.compile_metrics()
    return counters


def reset_metrics() -> None:
    _C._reset_metrics()
    compiler.reset_compile_metrics()
