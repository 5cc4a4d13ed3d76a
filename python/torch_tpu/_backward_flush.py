"""Fused mode flushes at the end of ``backward()`` (DESIGN §4): the backward graph becomes one
program, planned once and then found in the cache every step, and the optimizer step another.

PyTorch gives a backend no hook at the end of a backward pass, so the engine entry point that
``Tensor.backward``, ``torch.autograd.backward`` and ``torch.autograd.grad`` all call is wrapped
here; in other modes the wrapper only asks the mode's policy.
"""

import functools

import torch.autograd

from . import _C


def install() -> None:
    original = torch.autograd._engine_run_backward
    if getattr(original, "_torch_tpu_flushes", False):
        return

    @functools.wraps(original)
    def run_backward_then_flush(*args, **kwargs):
        result = original(*args, **kwargs)
        if _C._mode_flushes_after_backward():
            _C._flush_all("backward")
        return result

    run_backward_then_flush._torch_tpu_flushes = True
    torch.autograd._engine_run_backward = run_backward_then_flush
