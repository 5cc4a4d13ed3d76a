"""The compute floor of a step: how long the step's matmul, attention and convolution kernels alone take
on this machine's CPU (the kernels every tpu mode calls too, which fusion does not change).
No executor that runs those kernels can take a step faster than this, so Strict's step time
divided by it bounds what fusion can gain."""

import time

import torch
from torch.utils._python_dispatch import TorchDispatchMode

aten = torch.ops.aten

# Kernels fusion leaves as they are: matmuls, the fused attention kernel and convolutions
# (forward, backward).
HEAVY_OPS = {
    aten.convolution.default,
    aten.convolution_backward.default,
    aten.mm.default,
    aten.addmm.default,
    aten.bmm.default,
    aten._scaled_dot_product_flash_attention_for_cpu.default,
    aten._scaled_dot_product_flash_attention_for_cpu_backward.default,
}


class _RecordHeavyCalls(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in HEAVY_OPS:
            clone = lambda a: a.detach().clone() if isinstance(a, torch.Tensor) else a  # noqa: E731
            self.calls.append((func, [clone(a) for a in args], {k: clone(v) for k, v in kwargs.items()}))
        return func(*args, **kwargs)


def heavy_calls_of(step):
    """The heavy kernel calls `step()` makes on CPU, with copies of their arguments."""
    recorder = _RecordHeavyCalls()
    with recorder:
        step()
    return recorder.calls


def seconds_per_replay(calls, repeats=20, warmup=3):
    """Median seconds to run `calls` once, back to back, on CPU."""
    times = []
    with torch.no_grad():
        for i in range(warmup + repeats):
            start = time.perf_counter()
            for func, args, kwargs in calls:
                func(*args, **kwargs)
            if i >= warmup:
                times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2]
