"""Where a training step's time goes on tpu: the host's time to issue (or, in fused mode,
record) the step's ops, R, and the time it then waits for them to run, E, with a synchronize
after forward, backward and the optimizer step. On a 2-core host a step takes about
(R + 2E) / 2 at best (both cores busy all the time)."""

import statistics
import time

import torch


def issue_and_execution_ms(forward, backward, optimizer_step, steps, warmup):
    """(R, E) of a training step in ms, medians over `steps` steps after `warmup`:
    `forward(step)` returns the loss, `backward(loss)` and `optimizer_step()` finish the step."""
    issue, execution = [], []
    for step in range(steps):
        torch.tpu.synchronize()
        loss = None
        phases = [lambda: forward(step), lambda: backward(loss), optimizer_step]
        r = e = 0.0
        for k, phase in enumerate(phases):
            start = time.perf_counter()
            result = phase()
            issued = time.perf_counter()
            torch.tpu.synchronize()
            r, e = r + issued - start, e + time.perf_counter() - issued
            if k == 0:
                loss = result
        if step >= warmup:
            issue.append(r * 1e3)
            execution.append(e * 1e3)
    return statistics.median(issue), statistics.median(execution)
