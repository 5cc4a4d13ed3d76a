"""Clean interpreter exit after backward passes on tpu.

PyTorch runs a tpu backward on an autograd device thread, and stashes the caller's
contextvars context in the graph task (torch/autograd/graph.py, _engine_run_backward). The
device thread may still hold that task when the caller's backward() returns; dropping it then
needs the GIL. If the interpreter is finalizing by the time the thread gets the GIL, CPython
ends the thread inside C++ code and the process aborts ("terminate called without an active
exception"; see pytorch/pytorch#180700). At exit we run one tiny backward per chip straight
through the engine (no stashed context): each device thread must drop its previous task
before it can run ours, and our wait releases the GIL, so the drop happens while Python is
still fully alive. Fused mode's saved-tensor hooks are removed first: a saved tensor packed
by a Python hook is itself a Python object the device thread would have to drop.
"""

import atexit

import torch

from . import _saved_recipes


def _release_autograd_graph_tasks():
    if not torch.tpu.is_initialized():
        return  # no tpu tensor was ever made, so no backward ran on a chip
    _saved_recipes.remove()
    engine = torch.autograd.Variable._execution_engine
    for index in range(torch.tpu.device_count()):
        device = torch.device("tpu", index)
        try:
            leaf = torch.zeros((), device=device, requires_grad=True)
            out = leaf * 1.0
            engine.run_backward((out,), (torch.ones((), device=device),), False, False, (),
                                True, True)
        except Exception:  # noqa: BLE001 (a failing chip must not turn exit into an error)
            pass


def install():
    atexit.register(_release_autograd_graph_tasks)
