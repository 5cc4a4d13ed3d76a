"""Rank script: MPMD. Ranks run different code between collectives (rank 0 evaluates and
logs, other ranks do different amounts of local work, ranks arrive late, use different
calling styles for the same collective, decide loop lengths from data), and every collective
still pairs up and gives the right answer, with no deadlock.

On tpu this is where a backend that orders collectives by anything but program order per
rank, or that forgets to sync pending local work before a collective, goes wrong.
"""

from __future__ import annotations

import time

import torch
import torch.distributed as dist
import torch.nn as nn

from worker_utils import Ctx, Registry, expect_close, expect_equal, main

checks = Registry()


def local_work(ctx: Ctx, n_ops: int, seed: int) -> torch.Tensor:
    """``n_ops`` chained local ops on the device; returns a value every rank can recompute."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(16, 16, generator=g).to(ctx.device) / 4
    x = torch.ones(16, device=ctx.device)
    for _ in range(n_ops):
        x = torch.tanh(a @ x) + 0.5
    return x


def local_work_cpu(n_ops: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(16, 16, generator=g) / 4
    x = torch.ones(16)
    for _ in range(n_ops):
        x = torch.tanh(a @ x) + 0.5
    return x


def n_ops_of(rank: int, it: int) -> int:
    return 3 + 40 * rank + 7 * it  # very different amounts of work per rank and iteration


@checks()
def mpmd_uneven_local_work(ctx: Ctx) -> None:
    """Per iteration: a different number of local ops on each rank; rank 0 also runs an
    eval forward under no_grad and logs a .item(); then an all_reduce of the local results."""
    torch.manual_seed(0)
    evaluator = nn.Sequential(nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 1)).to(ctx.device)
    for it in range(4):
        mine = local_work(ctx, n_ops_of(ctx.rank, it), seed=it * 10 + ctx.rank)
        if ctx.rank == 0:
            with torch.no_grad():
                score = evaluator(mine.unsqueeze(0)).item()  # a host sync mid-iteration
            print(f"[rank 0] iteration {it}: eval score {score:.4f}", flush=True)
        dist.all_reduce(mine)
        expected = sum(local_work_cpu(n_ops_of(r, it), seed=it * 10 + r) for r in range(ctx.world))
        expect_close(mine, expected, f"iteration {it} sum", ctx.device, rtol=1e-5, atol=1e-5)


@checks()
def mpmd_late_arrival_and_async_overlap(ctx: Ctx) -> None:
    """Rank 0 arrives 0.3 s late; the others start the collective asynchronously and keep
    working locally until they wait; results are right everywhere."""
    t = torch.full((1000,), float(ctx.rank + 1), device=ctx.device)
    if ctx.rank == 0:
        time.sleep(0.3)
        dist.all_reduce(t)
    else:
        work = dist.all_reduce(t, async_op=True)
        side = local_work(ctx, 50, seed=99)  # overlaps with the pending collective
        work.wait()
        expect_close(side, local_work_cpu(50, seed=99), "local work overlapped with a collective",
                     ctx.device, rtol=1e-5, atol=1e-6)
    expect_equal(t, torch.full((1000,), float(sum(range(1, ctx.world + 1)))), "late all_reduce", ctx.device)


@checks()
def mpmd_mixed_calling_styles(ctx: Ctx) -> None:
    """The same three collectives issued blocking on some ranks, async (wait / future) on
    others, from different functions."""
    w = ctx.world
    a = torch.full((8,), float(ctx.rank), device=ctx.device)
    b = torch.arange(4, device=ctx.device, dtype=torch.float32) + ctx.rank * 4
    gathered = torch.empty(4 * w, device=ctx.device)
    c = torch.tensor([ctx.rank * 10], device=ctx.device)

    def blocking():
        dist.all_reduce(a)
        dist.all_gather_into_tensor(gathered, b)
        dist.broadcast(c, src=w - 1)

    def asynchronous():
        w1 = dist.all_reduce(a, async_op=True)
        w2 = dist.all_gather_into_tensor(gathered, b, async_op=True)
        w3 = dist.broadcast(c, src=w - 1, async_op=True)
        w3.get_future().wait()
        w1.wait()
        w2.get_future().then(lambda f: None).wait()

    (blocking if ctx.rank % 2 == 0 else asynchronous)()
    expect_equal(a, torch.full((8,), float(sum(range(w)))), "all_reduce", ctx.device)
    expect_equal(gathered, torch.arange(4 * w, dtype=torch.float32), "all_gather", ctx.device)
    expect_equal(c, torch.tensor([(w - 1) * 10]), "broadcast", ctx.device)


@checks()
def mpmd_data_dependent_loop(ctx: Ctx) -> None:
    """Loop lengths decided from data: rank 0 broadcasts the iteration count (read with
    .item()); each iteration ends with an all_reduce(MAX) of a local "stop" flag that only
    one rank raises, as early-stopping code does."""
    n = torch.tensor([7 if ctx.rank == 0 else -1], device=ctx.device)
    dist.broadcast(n, src=0)
    iterations = int(n.item())
    assert iterations == 7, iterations
    acc = torch.zeros(3, device=ctx.device)
    done = 0
    stopper = ctx.world - 1
    for it in range(iterations):
        acc += local_work(ctx, 2 + it * (ctx.rank + 1), seed=it)[:3]
        flag = torch.tensor([1 if (ctx.rank == stopper and it == 4) else 0], device=ctx.device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        done = it + 1
        if flag.item():
            break
    assert done == 5, f"stopped after {done} iterations, expected 5"
    total = acc.clone()
    dist.all_reduce(total)
    expected = sum(sum(local_work_cpu(2 + it * (r + 1), seed=it)[:3] for it in range(5))
                   for r in range(ctx.world))
    expect_close(total, expected, "sum of data-dependent work", ctx.device, rtol=1e-5, atol=1e-5)


@checks()
def mpmd_rank_specific_groups_and_p2p(ctx: Ctx) -> None:
    """Rank 0 talks to the last rank point-to-point while the ranks in between do local work
    only; then everyone meets in an all_reduce."""
    last = ctx.world - 1
    payload = local_work(ctx, 11, seed=5)
    if ctx.rank == 0:
        dist.send(payload * 2, dst=last)
    elif ctx.rank == last:
        got = torch.empty(16, device=ctx.device)
        local_work(ctx, 30, seed=6)  # busy before receiving
        dist.recv(got, src=0)
        expect_close(got, local_work_cpu(11, seed=5) * 2, "p2p payload", ctx.device, rtol=1e-5, atol=1e-6)
    else:
        local_work(ctx, 60, seed=7)
    t = torch.ones(2, device=ctx.device) * (ctx.rank + 1)
    dist.all_reduce(t)
    expect_equal(t, torch.ones(2) * sum(range(1, ctx.world + 1)), "meeting all_reduce", ctx.device)


if __name__ == "__main__":
    main(checks)
