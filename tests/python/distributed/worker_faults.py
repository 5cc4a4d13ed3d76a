"""Rank script for the fault tests (test_dist_faults.py); the first argument picks the fault.
Started with the direct launcher (torchrun would kill the surviving ranks itself).

A rank that observes the fault prints ``FAULT_RAISED <seconds> <first line of the error>``
(seconds from entering the doomed collective to the exception, which is caught after a forced
host sync: on tpu, errors of asynchronous work surface at the next sync point), then
``FAULT_TYPE <exception class>``, then tries ``destroy_process_group()`` and prints
``DESTROY_OK`` or ``DESTROY_HUNG`` (10 s limit) and exits 0 with ``os._exit`` (see
``leave``). ``FAULT_NOT_RAISED`` means the collective returned normally. Process groups use a
5 s timeout (FAULT_PG_TIMEOUT_S).
"""

from __future__ import annotations

import datetime
import gc
import os
import signal
import sys
import threading
import time

import torch
import torch.distributed as dist

from worker_utils import Ctx, env_ctx, expect_equal, log, setup, sync

PG_TIMEOUT_S = float(os.environ.get("FAULT_PG_TIMEOUT_S", "5"))


def report_fault(start: float, e: BaseException) -> None:
    took = time.monotonic() - start
    first = (str(e).strip().splitlines() or [""])[0]
    print(f"FAULT_RAISED {took:.2f} {first}", flush=True)
    print(f"FAULT_TYPE {type(e).__module__}.{type(e).__qualname__}", flush=True)


def try_destroy(limit_s: float = 10) -> None:
    done = threading.Event()

    def destroy():
        try:
            dist.destroy_process_group()
        except Exception as e:  # noqa: BLE001
            print(f"DESTROY_RAISED {type(e).__name__}: {e}", flush=True)
        done.set()

    threading.Thread(target=destroy, daemon=True).start()
    print("DESTROY_OK" if done.wait(limit_s) else "DESTROY_HUNG", flush=True)


def leave() -> None:
    """Exit 0 without interpreter finalization. After a fault the backend's worker threads
    may still be dropping failed Work objects; if one holds the last reference to a tensor
    with a Python object, dropping it needs the GIL, and during finalization that is
    std::terminate() (a known c10d race, pytorch/pytorch#190489: seen with gloo ~1 run in 20
    after the SIGKILL fault). What is judged here ends at the markers above."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def doomed(ctx: Ctx, fn) -> None:
    """Runs ``fn`` (a collective plus a forced sync) expecting it to raise."""
    start = time.monotonic()
    try:
        fn()
        sync(ctx)
    except Exception as e:  # noqa: BLE001
        report_fault(start, e)
        return
    print(f"FAULT_NOT_RAISED {time.monotonic() - start:.2f}", flush=True)


# --- the faults ------------------------------------------------------------------------------

def fault_timeout(ctx: Ctx) -> None:
    """Only rank 0 calls all_reduce; the others stay alive (waiting on the store) so the
    collective can only end by the process group's timeout."""
    store = dist.distributed_c10d._get_default_store()
    dist.barrier()
    if ctx.rank == 0:
        t = torch.ones(8, device=ctx.device)
        doomed(ctx, lambda: (dist.all_reduce(t), t.cpu()))
        store.set("fault_timeout_done", "1")
        store.wait(["fault_timeout_ack"], datetime.timedelta(seconds=30))  # keep the store up
    else:
        store.wait(["fault_timeout_done"], datetime.timedelta(seconds=PG_TIMEOUT_S + 30))
        store.set("fault_timeout_ack", "1")
        print("PEER_WAITED_OK", flush=True)


def fault_sigkill(ctx: Ctx) -> None:
    """DDP training; rank 1 SIGKILLs itself at step KILL_STEP; the others must raise."""
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    from worker_ddp import MLP, batch

    kill_step = 2
    model = MLP(seed=0).to(ctx.device)
    ddp = DDP(model, device_ids=None if ctx.device_type == "cpu" else [ctx.local_rank])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    rows = slice(ctx.rank * 6, (ctx.rank + 1) * 6)
    for step in range(6):
        if ctx.rank == 1 and step == kill_step:
            sys.stdout.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        x, y = batch(step, 0, ctx.world)

        def train_step():
            opt.zero_grad()
            loss = F.mse_loss(ddp(x[rows].to(ctx.device)), y[rows].to(ctx.device))
            loss.backward()
            opt.step()
            dist.all_reduce(loss.detach())
            loss.cpu()  # forced sync

        if step < kill_step:
            train_step()
            print(f"STEP_OK {step}", flush=True)
        else:
            doomed(ctx, train_step)
            return


def fault_raise(ctx: Ctx) -> None:
    """Rank 1 raises (an uncaught Python exception: the process exits with a traceback) while
    the others are waiting in an all_reduce."""
    dist.barrier()
    if ctx.rank == 1:
        time.sleep(1.0)  # let the others enter the collective first
        raise RuntimeError("intentional failure on rank 1")
    t = torch.ones(8, device=ctx.device)
    doomed(ctx, lambda: (dist.all_reduce(t), t.cpu()))


def fault_mismatch_shape(ctx: Ctx) -> None:
    dist.barrier()
    t = torch.ones(4 + ctx.rank, device=ctx.device)
    doomed(ctx, lambda: (dist.all_reduce(t), t.cpu()))


def fault_mismatch_dtype(ctx: Ctx) -> None:
    dist.barrier()
    t = torch.ones(4, dtype=torch.float32 if ctx.rank == 0 else torch.int32, device=ctx.device)
    doomed(ctx, lambda: (dist.all_reduce(t), t.cpu()))


def fault_mismatch_after_a_burst(ctx: Ctx) -> None:
    """Twenty matching all_reduces issued back to back (tpu_dist exchanges their signatures in
    batches), then one whose shape differs by rank: the burst's results are right and the
    mismatched call still raises on every rank."""
    dist.barrier()
    burst = [torch.full((8,), float(i + ctx.rank), device=ctx.device) for i in range(20)]
    for t in burst:
        dist.all_reduce(t)
    bad = torch.ones(4 + ctx.rank, device=ctx.device)
    doomed(ctx, lambda: (dist.all_reduce(bad), bad.cpu()))
    for i, t in enumerate(burst):
        expected = sum(float(i + r) for r in range(ctx.world))
        expect_equal(t, torch.full((8,), expected), f"all_reduce #{i} of the burst", ctx.device)
    print("BURST_OK", flush=True)
    if ctx.backend == "tpu_dist":
        backend = dist.group.WORLD._get_backend(ctx.device)
        print(f"COLLECTIVES {backend.collectives_launched} EXCHANGES {backend.signature_exchanges}",
              flush=True)


# --- destroy and re-init ---------------------------------------------------------------------

def resources(ctx: Ctx) -> dict:
    res = {"threads": len(os.listdir("/proc/self/task")), "fds": len(os.listdir("/proc/self/fd"))}
    if ctx.device_type != "cpu":
        res["allocated"] = getattr(torch, ctx.device_type).memory_allocated(ctx.device)
    return res


def one_cycle(ctx: Ctx, port: str, cycle: int) -> None:
    os.environ["MASTER_PORT"] = port
    dist.init_process_group(backend=ctx.backend, timeout=datetime.timedelta(seconds=30))
    t = torch.full((16,), float(ctx.rank + cycle), device=ctx.device)
    dist.all_reduce(t)
    expect_equal(t, torch.full((16,), float(sum(r + cycle for r in range(ctx.world)))),
                 f"all_reduce in cycle {cycle}", ctx.device)
    sub = dist.new_group()
    out = torch.empty(ctx.world, device=ctx.device)
    dist.all_gather_into_tensor(out, torch.tensor([float(ctx.rank)], device=ctx.device), group=sub)
    expect_equal(out, torch.arange(ctx.world, dtype=torch.float32), f"new_group in cycle {cycle}", ctx.device)
    del t, out, sub
    dist.destroy_process_group()
    gc.collect()
    assert not dist.is_initialized(), "still initialized after destroy_process_group"
    assert dist.group.WORLD is None, dist.group.WORLD


def fault_reinit(ctx: Ctx) -> None:
    """destroy_process_group releases the group (threads, sockets, the store's port, chip
    memory), and a new group, on a new store, works in the same process - three times."""
    first_port, spare_port = os.environ["MASTER_PORT"], os.environ["DIST_SPARE_PORT"]
    before = resources(ctx)
    one_cycle(ctx, first_port, 0)
    time.sleep(0.2)  # backend threads finishing their exit
    after_first = resources(ctx)
    try:
        dist.all_reduce(torch.ones(1, device=ctx.device))
        raise AssertionError("all_reduce after destroy_process_group did not raise")
    except (ValueError, RuntimeError) as e:
        print(f"USE_AFTER_DESTROY_RAISED {type(e).__name__}: {str(e).splitlines()[0]}", flush=True)
    one_cycle(ctx, spare_port, 1)  # a new store on a new port
    one_cycle(ctx, spare_port, 2)  # the same port again: the previous store released it
    time.sleep(0.2)
    after_third = resources(ctx)
    print(f"RESOURCES before={before} after_first={after_first} after_third={after_third}", flush=True)
    problems = []
    # A tpu chip's stream workers (its default stream, and the communication stream the group
    # used) start on first use and live as long as the process, as a GPU driver's threads do.
    device_threads = 0 if ctx.device_type == "cpu" else 2
    if after_first["threads"] > before["threads"] + device_threads:
        problems.append(f"threads left after destroy: {before['threads']} -> {after_first['threads']}")
    if after_third["threads"] > after_first["threads"] or after_third["fds"] > after_first["fds"]:
        problems.append(f"resources grow per init/destroy cycle: {after_first} -> {after_third}")
    if after_first["fds"] > before["fds"] + 4:
        problems.append(f"file descriptors left after destroy: {before['fds']} -> {after_first['fds']}")
    if "allocated" in before and after_third["allocated"] > before["allocated"]:
        problems.append(f"chip memory left allocated: {before['allocated']} -> {after_third['allocated']}")
    if problems:
        raise AssertionError("; ".join(problems))
    print("REINIT_OK", flush=True)


FAULTS = {"timeout": fault_timeout, "sigkill": fault_sigkill, "raise": fault_raise,
          "mismatch_shape": fault_mismatch_shape, "mismatch_dtype": fault_mismatch_dtype,
          "mismatch_after_a_burst": fault_mismatch_after_a_burst}

if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "reinit":
        ctx = env_ctx()
        if ctx.device_type != "cpu":
            getattr(torch, ctx.device_type).set_device(ctx.local_rank)
        fault_reinit(ctx)
        sys.exit(0)
    ctx = setup(timeout_s=PG_TIMEOUT_S)
    log(f"fault {mode}")
    FAULTS[mode](ctx)
    try_destroy()
    leave()
