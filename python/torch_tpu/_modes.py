"""Execution modes: ``strict`` (asynchronous eager, the default), ``debug`` (each op finishes
before it returns; optional NaN/Inf checks name the op) and ``fused`` (DeferAndFuse: ops are
recorded and run as fused, cached programs at sync points)."""

import contextlib
import os

import torch

from . import _C, _saved_recipes

# Frames in these files are not the user's code: an op's recorded Python line is the innermost
# frame outside them (torch_tpu's demo counts as user code: it is an example program).
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_C._set_library_paths(
    [os.path.dirname(os.path.abspath(torch.__file__)) + os.sep, _PACKAGE_DIR + os.sep],
    [os.path.join(_PACKAGE_DIR, "demo") + os.sep])


def get_mode() -> str:
    """The current execution mode: ``"strict"``, ``"debug"`` or ``"fused"``."""
    return _C._get_mode()


def mode_names() -> list:
    """The execution modes :func:`set_mode` accepts: ``["strict", "debug", "fused"]``."""
    return _C._mode_names()


def set_mode(mode: str) -> None:
    """Selects the execution mode for the whole process: one of :func:`mode_names`
    (``"defer_and_fuse"`` is another name for ``"fused"``). Pending work (recorded ops too) is finished first, so errors of earlier
    asynchronous ops surface here rather than in the new mode."""
    for index in range(torch.tpu.device_count()):
        torch.tpu.synchronize(index)
    _C._set_mode(mode)
    _saved_recipes.follow_mode()


@contextlib.contextmanager
def mode(new_mode: str):
    """``with torch_tpu.mode("debug"): ...`` runs the block in ``new_mode``."""
    previous = get_mode()
    set_mode(new_mode)
    try:
        yield
    finally:
        set_mode(previous)


def set_check_nans(enabled: bool) -> None:
    """In Debug mode, check every op's floating outputs for NaN/Inf and raise naming the op."""
    _C._set_check_nans(bool(enabled))


def set_record_python_lines(enabled: bool) -> None:
    """Record, for every op, the Python line that issued it (the innermost frame of your code,
    not of torch or torch_tpu), so that an error raised later at a sync point names that line
    as well as the op: in Strict mode, where ops run asynchronously, and in fused mode, where
    they run as programs (a failing fused kernel names each of its ops' lines). Program dumps
    (``TORCH_TPU_DUMP_PROGRAMS``) list them too. Debug mode always records them. Costs about a
    microsecond per op, so it is off by default; ``TORCH_TPU_RECORD_PYTHON_LINES=1`` turns it
    on from the start."""
    _C._set_record_python_lines(bool(enabled))


def wait_for_kernel_compiles() -> None:
    """Fused mode compiles a pointwise kernel that keeps running (in the background, while an
    interpreter runs it meanwhile); this blocks until the compiles started so far are done.
    Benchmarks call it after warm-up so they time the steady state."""
    _C._wait_for_kernel_compiles()
