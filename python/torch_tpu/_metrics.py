"""Counters that prove what the backend did: ops launched, CPU fallbacks by op, host syncs by
reason."""

from . import _C


def metrics() -> dict:
    """``{"ops_launched": int, "fallbacks": {op: count}, "syncs": {reason: count},
    "shape_cache": {"hits": int, "misses": int, "entries": int}, "programs": {...},
    "fusion": {...}}``. A training loop in steady state should show no new shape-cache misses.

    ``programs``: the ``executor`` that compiles and runs programs (``"host"``),
    ``one_node_runs`` (Strict and Debug ops, each run as a one-node program), and the
    executable cache's ``compiled`` (programs compiled: one per op structure in Strict and
    Debug), ``cache_hits``, ``cached`` and ``compile_seconds``. Fused mode's planned programs
    are counted under ``fusion``.

    ``fusion`` (fused mode): ``flushes`` by reason, ``programs_planned``, ``cache_hits``,
    ``cache_misses``, ``programs_run``, ``fused_kernels_run``, ``nodes_executed``,
    ``bytes_materialized``, ``bytes_avoided``, ``buffers_never_allocated`` and
    ``bytes_never_allocated`` (buffers whose tensors died before anything needed their bytes,
    so they never took chip memory), for kernels compiled once hot ``kernels_compiled``,
    ``kernels_loaded_from_cache``, ``kernel_compile_failures``, ``compiled_kernel_runs``, and
    ``interpreted_kernel_runs`` (fused kernels the register loop interpreted; the rest of
    ``fused_kernels_run`` ran PyTorch's kernels on chunks)."""
    return _C._metrics()


def reset_metrics() -> None:
    _C._reset_metrics()
