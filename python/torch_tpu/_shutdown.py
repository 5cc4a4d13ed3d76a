"""Clean interpreter exit after backward passes on tpu, and with work still queued.

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

Before that, every chip finishes its queued work, as a CUDA program's kernels finish before it exits:
left to the runtime's own teardown, kernels would run during C++ static destruction, after
libraries they call have destroyed their state (a GELU queued at exit crashed in oneDNN's
destroyed primitive list). A failure of that work is printed, not raised: the program is done.
"""

import atexit
import sys

import torch

from . import _saved_recipes


def _release_autograd_graph_tasks():
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


def _finish_queued_work():
    for index in range(torch.tpu.device_count()):
        try:
            torch.tpu.synchronize(index)
        except Exception as error:  # noqa: BLE001 (reported: exit goes on)
            print(f"torch_tpu: work queued on tpu:{index} failed at exit: {error}", file=sys.stderr)


def _at_exit():
    if not torch.tpu.is_initialized() or torch.tpu._is_in_bad_fork():
        return  # nothing ran on a chip here (a forked child's chips are its parent's)
    _finish_queued_work()  # first: the release's own tiny backward is no work of the program's
    _release_autograd_graph_tasks()


def install():
    atexit.register(_at_exit)
