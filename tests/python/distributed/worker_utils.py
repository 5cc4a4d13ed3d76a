"""Shared by the rank scripts (worker_*.py): set-up in the CUDA idiom, and named checks whose
results travel to the pytest process as ``@@CHECK {json}`` lines.

A worker runs with DIST_BACKEND / DIST_DEVICE plus torchrun's environment (launcher.py or
torchrun itself). Each check is a function run on every rank; a check fails on a rank when it
raises (an AssertionError from ``expect_equal``/``expect_close``, or the backend's own error).
Checks a backend cannot do are listed per check (``unsupported={backend: reason}``): on that
backend the check still runs, but must raise (status ``xfail``), which proves the check reaches
the backend and keeps the list honest (``xpass`` fails the pytest item: the list is stale).
``unsafe`` checks (those that may hang or corrupt memory on that backend) are not run there.
"""

from __future__ import annotations

import dataclasses
import datetime
import faulthandler
import json
import os
import signal
import sys
import time
import traceback
import warnings
from typing import Callable

import torch
import torch.distributed as dist

BACKEND = os.environ.get("DIST_BACKEND", "gloo")
DEVICE_TYPE = os.environ.get("DIST_DEVICE", "cpu")

if DEVICE_TYPE == "tpu":
    # `import torch` already loads it through the torch.backends entry point; the explicit
    # import is what a user script does, and fails loudly if autoloading is switched off.
    import torch_tpu  # noqa: F401

CHECK_PREFIX = "@@CHECK "

# The launcher sends SIGUSR1 before killing a rank at the wall timeout: every thread's stack
# then lands in the rank's stderr, in the test's failure report. (Only in ranks: the pytest
# process imports the worker modules too, for their check names.)
if "RANK" in os.environ:
    faulthandler.register(signal.SIGUSR1, all_threads=True)


@dataclasses.dataclass
class Ctx:
    rank: int
    world: int
    local_rank: int
    backend: str
    device_type: str
    device: torch.device


def env_ctx() -> Ctx:
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ["LOCAL_RANK"])
    device = torch.device("cpu") if DEVICE_TYPE == "cpu" else torch.device(DEVICE_TYPE, local_rank)
    return Ctx(rank, world, local_rank, BACKEND, DEVICE_TYPE, device)


def compile_backend(ctx: Ctx) -> str:
    """torch.compile's backend for this device: ``tpu`` on tpu; on the CPU reference,
    aot_eager (the same Dynamo graphs and aot_autograd split, without Inductor's compile)."""
    return "tpu" if ctx.device_type == "tpu" else "aot_eager"


def setup(timeout_s: float = 60, bind_device: bool = False) -> Ctx:
    """The CUDA idiom: pick this rank's chip, then ``init_process_group`` over env://.
    ``timeout_s`` bounds every collective, so a broken backend fails the test, not CI.
    ``bind_device``: also pass ``device_id=`` (the newer NCCL idiom: eager connection, and
    barrier() uses that chip); only for accelerators (c10d rejects device_id=cpu)."""
    # The ranks call the deprecated-but-common spellings on purpose (all_gather_into_tensor,
    # reduce_scatter_tensor, *_coalesced, ...): users' scripts do.
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=UserWarning, module=r"torch\.distributed.*")
    ctx = env_ctx()
    if ctx.device_type != "cpu":
        getattr(torch, ctx.device_type).set_device(ctx.local_rank)
    if not dist.is_backend_available(ctx.backend):
        raise RuntimeError(f"c10d backend {ctx.backend!r} is not registered after `import torch`"
                           f"{' and `import torch_tpu`' if ctx.device_type == 'tpu' else ''} "
                           f"(known: {dist.Backend.backend_list})")
    kw = {"device_id": ctx.device} if bind_device and ctx.device_type != "cpu" else {}
    dist.init_process_group(backend=ctx.backend, timeout=datetime.timedelta(seconds=timeout_s), **kw)
    assert dist.get_rank() == ctx.rank and dist.get_world_size() == ctx.world
    return ctx


def teardown() -> None:
    # Gloo's worker threads drop their reference to a finished Work a moment after its waiter
    # wakes up; if that reference is the last one to a tensor that also had a Python object,
    # dropping it needs the GIL, and during interpreter exit that std::terminate()s the rank
    # (seen ~1 in 10 runs right after a funcol all_to_all_single). Let them drop it first.
    time.sleep(0.1)
    if dist.is_initialized():
        dist.destroy_process_group()


def sync(ctx: Ctx) -> None:
    """Waits for the chip (errors of asynchronous work surface here)."""
    if ctx.device_type != "cpu":
        getattr(torch, ctx.device_type).synchronize()


def log(msg: str) -> None:
    _write_line(f"[rank {os.environ.get('RANK', '?')}] {msg}")


def _write_line(line: str) -> None:
    """One write() per line: under torchrun all ranks share one stdout, and print() may split a
    line into several writes that interleave with other ranks' lines."""
    sys.stdout.flush()
    os.write(sys.stdout.fileno(), (line + "\n").encode())


# --- comparisons ----------------------------------------------------------------------------

def expect_equal(actual: torch.Tensor, expected: torch.Tensor, what: str = "",
                 device: torch.device | None = None) -> None:
    """``actual`` (any device) equals ``expected`` (CPU) exactly, in dtype and shape too; when
    ``device`` is given, ``actual`` must live there (collectives must not move tensors)."""
    expect_close(actual, expected, what, device=device, rtol=0, atol=0)


def expect_close(actual: torch.Tensor, expected: torch.Tensor, what: str = "",
                 device: torch.device | None = None, **tol) -> None:
    if device is not None and actual.device != device:
        raise AssertionError(f"{what}: result on {actual.device}, expected on {device}")
    got = actual.detach().cpu()  # the sync point: asynchronous errors surface here
    try:
        torch.testing.assert_close(got, expected.detach().cpu(), **tol)
    except AssertionError as e:
        raise AssertionError(f"{what}: {e}\n got={_short(got)}\n expected={_short(expected)}") from None


def _short(t: torch.Tensor) -> str:
    flat = t.detach().reshape(-1)
    return f"{tuple(t.shape)} {t.dtype} {flat[:8].tolist()}{' ...' if flat.numel() > 8 else ''}"


# --- named checks ---------------------------------------------------------------------------

@dataclasses.dataclass
class Check:
    name: str
    fn: Callable[[Ctx], None]
    # backend -> why that backend cannot do it; the check must raise there (xfail)
    unsupported: dict[str, str] = dataclasses.field(default_factory=dict)
    # backend -> why the check is not even run there (it could hang or corrupt)
    unsafe: dict[str, str] = dataclasses.field(default_factory=dict)
    min_world: int = 2


class Registry:
    """An ordered list of checks; worker modules fill one at import (so the pytest process
    can import it to name its items) and run it in ``main``."""

    def __init__(self) -> None:
        self.checks: list[Check] = []

    def add(self, name: str, fn: Callable[[Ctx], None], **kw) -> Check:
        assert all(c.name != name for c in self.checks), name
        check = Check(name, fn, **kw)
        self.checks.append(check)
        return check

    def __call__(self, name: str | None = None, **kw):
        """Decorator form of ``add``."""
        def deco(fn):
            self.add(name or fn.__name__, fn, **kw)
            return fn
        return deco

    def names(self) -> list[str]:
        return [c.name for c in self.checks]

    def get(self, name: str) -> Check:
        return next(c for c in self.checks if c.name == name)

    def run_all(self, ctx: Ctx, only: list[str] | None = None) -> int:
        """Runs the checks (every rank the same list, in order, so collectives pair up) and
        prints one record per check. Returns the number of failures on this rank."""
        failures = 0
        for check in self.checks:
            if only and check.name not in only:
                continue
            failures += run_check(ctx, check) == "fail"
        return failures


def emit(ctx: Ctx, name: str, status: str, detail: str = "", seconds: float = 0.0) -> None:
    rec = {"name": name, "rank": ctx.rank, "status": status, "detail": detail[-2500:],
           "seconds": round(seconds, 3), "backend": ctx.backend, "world": ctx.world}
    _write_line(CHECK_PREFIX + json.dumps(rec))


def run_check(ctx: Ctx, check: Check) -> str:
    if ctx.world < check.min_world:
        emit(ctx, check.name, "skip", f"needs world size >= {check.min_world}")
        return "skip"
    if ctx.backend in check.unsafe:
        emit(ctx, check.name, "skip", f"not run on {ctx.backend}: {check.unsafe[ctx.backend]}")
        return "skip"
    expected_to_fail = check.unsupported.get(ctx.backend)
    start = time.monotonic()
    try:
        check.fn(ctx)
        sync(ctx)
    except Exception as e:  # noqa: BLE001 - a check's failure is data, not a crash
        took = time.monotonic() - start
        if expected_to_fail:
            emit(ctx, check.name, "xfail", f"{type(e).__name__}: {_first_line(e)}", took)
            return "xfail"
        emit(ctx, check.name, "fail", traceback.format_exc(limit=6), took)
        log(f"CHECK FAILED {check.name}:\n{traceback.format_exc()}")
        return "fail"
    took = time.monotonic() - start
    if expected_to_fail:
        emit(ctx, check.name, "xpass", f"expected to fail on {ctx.backend}: {expected_to_fail}", took)
        return "xpass"
    emit(ctx, check.name, "pass", "", took)
    return "pass"


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return (text.splitlines() or [""])[0][:300]


def main(registry: Registry, timeout_s: float = 60, bind_device: bool = False) -> None:
    """Entry point of a checks worker: set up, run every check (or those named in
    DIST_CHECKS, comma-separated), tear down; exit 1 if any check failed on this rank (so
    torchrun reports it too)."""
    ctx = setup(timeout_s, bind_device=bind_device)
    only = [n for n in os.environ.get("DIST_CHECKS", "").split(",") if n]
    failures = registry.run_all(ctx, only)
    teardown()
    log(f"done, {failures} failed check(s)")
    sys.exit(1 if failures else 0)
