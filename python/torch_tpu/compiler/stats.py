"""What torch.compile did on tpu: graphs compiled by Dynamo (each a frame's trace), how many of
them were recompiles of a frame already compiled, and why Dynamo recompiled (the guard or shape
that changed). ``TORCH_TPU_EXPLAIN_RECOMPILES=1`` also prints each reason as it happens."""

import os
import sys
import threading
import warnings

_lock = threading.Lock()
_counters = {"graphs_compiled": 0, "recompiles": 0, "aten_graphs": 0, "graph_runs": 0,
             "shape_specializations": 0, "bucketed_graphs": 0, "unbucketable_graphs": 0}
# A dynamic-shape graph warns once it has run with more distinct shapes than this.
SHAPE_SPECIALIZATIONS_WARNED_AFTER = 4
_recompile_reasons = []
_unbucketable_reasons = []
# Only the newest reasons are kept: a loop that recompiles every step must not grow memory.
_MAX_REASONS = 64


def compile_metrics() -> dict:
    """``{"graphs_compiled": int, "recompiles": int, "recompile_reasons": [str], "aten_graphs":
    int, "graph_runs": int, "shape_specializations": int, "bucketed_graphs": int,
    "unbucketable_graphs": int, "unbucketable_reasons": [str]}``: Dynamo graphs handed to the
    ``tpu`` backend, those that recompiled a frame compiled before and why (newest last), the
    Core ATen graphs (forward and backward) made of them, how many times those ran, the distinct
    concrete shapes graphs with symbolic shapes ran with (each a program of its own: a bucketed
    graph's are its buckets), and the graphs with symbolic shapes that run padded to buckets or
    could not, with why not."""
    with _lock:
        return {**_counters, "recompile_reasons": list(_recompile_reasons),
                "unbucketable_reasons": list(_unbucketable_reasons)}


def reset_compile_metrics() -> None:
    with _lock:
        for key in _counters:
            _counters[key] = 0
        _recompile_reasons.clear()
        _unbucketable_reasons.clear()


def count_graph_run() -> None:
    # A plain increment under the GIL: a lock per graph run would cost more than it guards.
    _counters["graph_runs"] += 1


def count_aten_graph() -> int:
    """Counts a new Core ATen graph; returns its number (for messages)."""
    with _lock:
        _counters["aten_graphs"] += 1
        return _counters["aten_graphs"]


def count_shape_specialization(graph_number: int, sizes: tuple, distinct: int,
                               bucketed: bool, unpadded_reason) -> None:
    """A graph with symbolic shapes ran with new concrete ones (`sizes`: its symbolic inputs'
    sizes or values), the `distinct`-th set so far: its program compiles for them. A bucketed
    graph meets only bucket sizes; an unbucketed one warns past a few, with the reason."""
    with _lock:
        _counters["shape_specializations"] += 1
    if os.environ.get("TORCH_TPU_EXPLAIN_RECOMPILES") == "1":
        padded = "bucket " if bucketed else ""
        print(f"torch_tpu: dynamic-shape graph {graph_number} compiles a program for new "
              f"{padded}shapes {sizes}", file=sys.stderr, flush=True)
    if not bucketed:
        warn_past_a_few_sizes(graph_number, unpadded_reason, distinct, stacklevel=4)


def warn_past_a_few_sizes(graph_number: int, reason: str, distinct: int, stacklevel=3) -> None:
    """Sizes a graph could not pad have taken their `distinct`-th set of values: past a few,
    a warning says that each compiles a program, and why they are not padded."""
    if distinct == SHAPE_SPECIALIZATIONS_WARNED_AFTER + 1:
        warnings.warn(
            f"torch_tpu: a graph with dynamic shapes (graph {graph_number}) has run with "
            f"{distinct} distinct shapes, and each compiles a program of its own: it cannot run "
            f"padded to bucket sizes ({reason}). Pad inputs to a few fixed sizes to bound the "
            "compiles (compile_metrics()['shape_specializations'] counts them).",
            stacklevel=stacklevel)


def count_bucketed_graph() -> None:
    """A Dynamo graph with symbolic sizes that runs padded to bucket sizes."""
    with _lock:
        _counters["bucketed_graphs"] += 1


def count_unbucketable_graph(reason: str) -> None:
    """A Dynamo graph with symbolic sizes that runs unpadded, one program per size: `reason`."""
    with _lock:
        _counters["unbucketable_graphs"] += 1
        _unbucketable_reasons.append(reason)
        del _unbucketable_reasons[:-_MAX_REASONS]
    if os.environ.get("TORCH_TPU_EXPLAIN_RECOMPILES") == "1":
        print(f"torch_tpu: a dynamic-shape graph runs at every size, not bucketed: {reason}",
              file=sys.stderr, flush=True)


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
