"""Execution modes: ``strict`` (asynchronous eager, the default), ``debug`` (each op finishes
before it returns; optional NaN/Inf checks name the op) and ``fused`` (DeferAndFuse: ops are
recorded and run as fused, cached programs at sync points)."""

import contextlib

from . import _C, _saved_recipes


def get_mode() -> str:
    """The current execution mode: ``"strict"``, ``"debug"`` or ``"fused"``."""
    return _C._get_mode()


def set_mode(mode: str) -> None:
    """Selects the execution mode for the whole process (``"defer_and_fuse"`` is another name
    for ``"fused"``). Pending work (recorded ops too) is finished first, so errors of earlier
    asynchronous ops surface here rather than in the new mode."""
    import torch

    for index in range(torch.tpu.device_count()):
        torch.tpu.synchronize(index)
    _C._set_mode(mode)
    _saved_recipes.follow_mode(get_mode())


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


def wait_for_kernel_compiles() -> None:
    """Fused mode compiles a pointwise kernel that keeps running (in the background, while an
    interpreter runs it meanwhile); this blocks until the compiles started so far are done.
    Benchmarks call it after warm-up so they time the steady state."""
    _C._wait_for_kernel_compiles()
