"""What torch.compile did on tpu: graphs compiled by Dynamo (each a frame's trace), how many of
them were recompiles of a frame already compiled, and why Dynamo recompiled (the guard or shape
that changed). ``TORCH_TPU_EXPLAIN_RECOMPILES=1`` also prints each reason as it happens."""

import os
import sys
import threading
import warnings

_lock = threading.Lock()
_counters = {"graphs_compiled": 0, "recompiles": 0, "aten_graphs": 0, "graph_runs": 0,
             "shape_specializations": 0}
# A dynamic-shape graph warns once it has run with more distinct shapes than this.
SHAPE_SPECIALIZATIONS_WARNED_AFTER = 4
_recompile_reasons = []
# Only the newest reasons are kept: a loop that recompiles every step must not grow memory.
_MAX_REASONS = 64


def compile_metrics() -> dict:
    """``{"graphs_compiled": int, "recompiles": int, "recompile_reasons": [str], "aten_graphs":
    int, "graph_runs": int, "shape_specializations": int}``: Dynamo graphs handed to the ``tpu``
    backend, those that recompiled a frame compiled before and why (newest last), the Core ATen
    graphs (forward and backward) made of them, how many times those ran, and the distinct
    concrete shapes graphs with symbolic shapes ran with (each a program of its own: shape
    bucketing is not supported yet)."""
    with _lock:
        return {**_counters, "recompile_reasons": list(_recompile_reasons)}


def reset_compile_metrics() -> None:
    with _lock:
        for key in _counters:
            _counters[key] = 0
        _recompile_reasons.clear()


def count_graph_run() -> None:
    # A plain increment under the GIL: a lock per graph run would cost more than it guards.
    _counters["graph_runs"] += 1


def count_aten_graph() -> int:
    """Counts a new Core ATen graph; returns its number (for messages)."""
    with _lock:
        _counters["aten_graphs"] += 1
        return _counters["aten_graphs"]


def count_shape_specialization(graph_number: int, sizes: tuple, distinct: int) -> None:
    """A graph with symbolic shapes ran with new concrete ones (`sizes`: its symbolic inputs'
    sizes or values), the `distinct`-th set so far: its program compiles for them."""
    with _lock:
        _counters["shape_specializations"] += 1
    if os.environ.get("TORCH_TPU_EXPLAIN_RECOMPILES") == "1":
        print(f"torch_tpu: dynamic-shape graph {graph_number} compiles a program for new shapes "
              f"{sizes}", file=sys.stderr, flush=True)
    if distinct == SHAPE_SPECIALIZATIONS_WARNED_AFTER + 1:
        warnings.warn(
            f"torch_tpu: a graph with dynamic shapes (graph {graph_number}) has run with "
            f"{distinct} distinct shapes, and each compiles a program of its own: shape "
            "bucketing is not supported on tpu yet. Pad inputs to a few fixed sizes to bound "
            "the compiles (compile_metrics()['shape_specializations'] counts them).",
            stacklevel=3)


def count_dynamo_graph() -> None:
    """Called by the backend for each graph Dynamo hands it, inside Dynamo's compile of a frame:
    a frame compiled before (its compile id's frame_compile_id > 0) is a recompile, and Dynamo
    has by then recorded which guard failed."""
    compile_id = _current_compile_id()
    recompiled = compile_id is not None and compile_id.frame_compile_id > 0 \
        and getattr(compile_id, "compiled_autograd_id", None) is None
    reason = _recompile_reason() if recompiled else None
    with _lock:
        _counters["graphs_compiled"] += 1
        if recompiled:
            _counters["recompiles"] += 1
            _recompile_reasons.append(reason)
            del _recompile_reasons[:-_MAX_REASONS]
    if recompiled and os.environ.get("TORCH_TPU_EXPLAIN_RECOMPILES") == "1":
        print(f"torch_tpu: recompiling frame {compile_id}: {reason}", file=sys.stderr, flush=True)


def _current_compile_id():
    from torch._guards import CompileContext
    return CompileContext.current_compile_id()


def _recompile_reason() -> str:
    # Dynamo records the first failed guard of the frame's cached entries in its metrics context
    # before it traces again (torch/_dynamo/convert_frame.py); it has no public accessor.
    from torch._dynamo.utils import get_metrics_context
    recorded = getattr(get_metrics_context(), "_metrics", {}).get("recompile_reason")
    return recorded or "unknown (Dynamo recorded no failed guard)"
