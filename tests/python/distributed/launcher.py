"""Starts the rank processes of a multi-process test and collects what each one did.

Two ways in, both used by the tests next to this file:

- ``launch(script, nprocs, backend, device)``: N ranks started directly with torchrun's
  environment (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR/PORT, ...), each in
  its own session so that every rank (and anything it spawned) is killed when the wall timeout
  runs out. Fault tests use it because torchrun would kill the surviving ranks itself.
- ``launch_torchrun(script, nprocs, backend, device)``: the real ``python -m
  torch.distributed.run --standalone --nproc-per-node N``, which is how users launch.

Workers read DIST_BACKEND / DIST_DEVICE (see worker_utils.py); every worker line starting with
``@@CHECK `` is one check's JSON record, parsed by ``Launch.checks()``.

BACKENDS below is the single place that lists the (backend, device) pairs every test runs on.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# ------------------------------------------------------------------------------------------
# THE (backend, device) PAIRS EVERY DISTRIBUTED TEST RUNS ON: tpu_dist on tpu tensors, and Gloo
# on CPU tensors as the reference that keeps the checks themselves honest. One pair only:
#     TORCH_TPU_DIST_BACKENDS=tpu_dist:tpu pytest tests/python/distributed
# ------------------------------------------------------------------------------------------
BACKENDS: list[tuple[str, str]] = [("gloo", "cpu"), ("tpu_dist", "tpu")]

if os.environ.get("TORCH_TPU_DIST_BACKENDS"):
    BACKENDS = [tuple(pair.split(":", 1)) for pair in
                os.environ["TORCH_TPU_DIST_BACKENDS"].split(",") if pair]

# Slow tier (4 ranks) only with TORCH_TPU_SLOW_TESTS=1.
SLOW_TESTS = os.environ.get("TORCH_TPU_SLOW_TESTS", "") not in ("", "0")
SLOW_REASON = "4-rank tier: set TORCH_TPU_SLOW_TESTS=1 to run it"

CHECK_PREFIX = "@@CHECK "


def backend_id(pair: tuple[str, str]) -> str:
    return f"{pair[0]}-{pair[1]}"


def free_ports(n: int = 1) -> list[int]:
    """``n`` distinct TCP ports free on 127.0.0.1 right now (all held open while picking, so
    they differ; there is still a small window before the rank binds them, which ``launch``
    covers by retrying on EADDRINUSE)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


@dataclasses.dataclass
class RankResult:
    rank: int
    returncode: int | None  # None: killed by us at the wall timeout (or after a peer failed)
    stdout: str
    stderr: str
    killed: bool = False
    pid: int = 0


class LaunchError(AssertionError):
    """A launch that timed out or whose ranks failed; the message holds every rank's output."""


@dataclasses.dataclass
class Launch:
    """What one launch did: each rank's result (one entry for a torchrun launch: the agent's
    own process, whose output holds every rank's), the wall time, and whether it timed out."""
    ranks: list[RankResult]
    wall_s: float
    timed_out: bool
    what: str

    def report(self, limit: int = 6000) -> str:
        parts = [f"{self.what}: wall {self.wall_s:.1f}s" + (" TIMED OUT" if self.timed_out else "")]
        for r in self.ranks:
            state = "killed" if r.killed else f"exit {r.returncode}"
            parts.append(f"----- rank {r.rank} ({state}) stdout -----\n{_tail(r.stdout, limit)}")
            parts.append(f"----- rank {r.rank} stderr -----\n{_tail(r.stderr, limit)}")
        return "\n".join(parts)

    @property
    def ok(self) -> bool:
        return not self.timed_out and all(r.returncode == 0 for r in self.ranks)

    def assert_ok(self) -> Launch:
        if not self.ok:
            raise LaunchError(self.report())
        return self

    def assert_clean_exit(self, nprocs: int) -> None:
        """For a checks worker (worker_utils.main): every rank ran to its end (``done, K
        failed check(s)``) and exited by itself: 0, or 1 when K > 0 (those checks fail their
        own pytest items). A crash, a signal, a hang or a missing rank fails."""
        done = re.findall(r"\[rank (\d+)\] done, (\d+) failed", "\n".join(r.stdout for r in self.ranks))
        failed_checks = sum(int(k) for _, k in done)
        codes_ok = all(r.returncode == 0 or (r.returncode == 1 and failed_checks > 0) for r in self.ranks)
        if self.timed_out or len(done) != nprocs or not codes_ok:
            raise LaunchError(f"{len(done)}/{nprocs} ranks reached the end, {failed_checks} failed "
                              f"check(s); exit codes {[r.returncode for r in self.ranks]}\n" + self.report())

    def stdout_lines(self) -> list[str]:
        return [line for r in self.ranks for line in r.stdout.splitlines()]

    def checks(self) -> dict[str, dict[int, dict]]:
        """``{check name: {rank: record}}`` from every ``@@CHECK`` line of every rank."""
        out: dict[str, dict[int, dict]] = {}
        decoder = json.JSONDecoder()
        for line in self.stdout_lines():
            at = line.find(CHECK_PREFIX)  # not only at the start: a stray partial line may precede it
            while at >= 0:
                rec, end = decoder.raw_decode(line, at + len(CHECK_PREFIX))
                out.setdefault(rec["name"], {})[rec["rank"]] = rec
                at = line.find(CHECK_PREFIX, end)
        return out

    def marker(self, rank: int, prefix: str) -> str | None:
        """The first stdout line of ``rank`` starting with ``prefix`` (None if absent)."""
        for line in self.ranks[rank].stdout.splitlines():
            if line.startswith(prefix):
                return line
        return None


def _tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"[... {len(text) - limit} chars cut ...]\n" + text[-limit:]


def _base_env(backend: str, device: str, extra_env: dict | None) -> dict:
    # Inherited TORCH_TPU_* / TPU_* variables (mode, launch blocking) would silently change
    # what the ranks do; only the test's extra_env selects behaviour, as in conftest.run_python.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCH_TPU_", "TPU_"))}
    env.update({
        "DIST_BACKEND": backend,
        "DIST_DEVICE": device,
        "PYTHONUNBUFFERED": "1",
        "OMP_NUM_THREADS": "1",  # as torchrun does; N ranks share 2 cores here
        "PYTHONPATH": os.pathsep.join([str(HERE)] + [p for p in [os.environ.get("PYTHONPATH")] if p]),
    })
    env.update({k: str(v) for k, v in (extra_env or {}).items()})
    return env


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the session we started the rank in (the rank and anything it spawned)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        proc.wait(timeout=10)


def _run_procs(cmds_envs: list[tuple[list[str], dict]], timeout: float,
               grace_after_failure: float | None, what: str, dump_stacks: bool = True) -> Launch:
    """Runs the commands concurrently (output to temp files, so a chatty rank never blocks on
    a full pipe); kills all at ``timeout`` (after asking them for their Python stacks if
    ``dump_stacks``), or ``grace_after_failure`` seconds after the first non-zero exit.
    Nothing is left running when this returns, even if it raises."""
    with tempfile.TemporaryDirectory(prefix="dist_launch_") as tmp:
        procs, files = [], []
        start = time.monotonic()
        try:
            for i, (cmd, env) in enumerate(cmds_envs):
                out = open(os.path.join(tmp, f"{i}.out"), "w+")
                err = open(os.path.join(tmp, f"{i}.err"), "w+")
                files.append((out, err))
                procs.append(subprocess.Popen(cmd, env=env, stdout=out, stderr=err,
                                              stdin=subprocess.DEVNULL, cwd=str(HERE),
                                              start_new_session=True))
            deadline = start + timeout
            first_failure = None
            timed_out = False
            killed = set()
            while True:
                codes = [p.poll() for p in procs]
                if all(c is not None for c in codes):
                    break
                now = time.monotonic()
                if first_failure is None and any(c not in (None, 0) for c in codes):
                    first_failure = now
                if now >= deadline:
                    timed_out = True
                elif (grace_after_failure is not None and first_failure is not None
                      and now - first_failure >= grace_after_failure):
                    pass  # a peer failed and the others had their grace period: stop them
                else:
                    time.sleep(0.05)
                    continue
                alive = [(i, p) for i, p in enumerate(procs) if p.poll() is None]
                if timed_out and dump_stacks:
                    # worker_utils registers faulthandler on SIGUSR1: every thread's Python
                    # stack goes to the rank's stderr, so a hang's report shows where it hangs.
                    for _, p in alive:
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(p.pid, signal.SIGUSR1)
                    time.sleep(1.0)
                for i, p in alive:
                    killed.add(i)
                    _kill_group(p)
                break
        finally:
            for p in procs:  # on any exception above, too
                if p.poll() is None:
                    _kill_group(p)
                else:  # a rank may have left children behind in its session
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(p.pid, signal.SIGKILL)
        wall = time.monotonic() - start
        results = []
        for i, (p, (out, err)) in enumerate(zip(procs, files)):
            out.seek(0)
            err.seek(0)
            results.append(RankResult(rank=i, returncode=None if i in killed else p.returncode,
                                      stdout=out.read(), stderr=err.read(), killed=i in killed,
                                      pid=p.pid))
            out.close()
            err.close()
        return Launch(ranks=results, wall_s=wall, timed_out=timed_out, what=what)


def _address_in_use(result: Launch) -> bool:
    text = "\n".join(r.stderr for r in result.ranks)
    return "EADDRINUSE" in text or "Address already in use" in text


def launch(script: str, nprocs: int, backend: str, device: str, *, timeout: float = 120,
           args: list[str] | None = None, extra_env: dict | None = None,
           grace_after_failure: float | None = 15.0, retries: int = 2) -> Launch:
    """Starts ``nprocs`` ranks of ``script`` (a file next to this one) with torchrun's
    environment on one node and waits for all of them. ``grace_after_failure``: once one rank
    exits non-zero, the others get this long before they are killed (None: wait for the wall
    timeout, for fault tests where survivors must notice by themselves). Retries with a fresh
    port if the store's port was taken meanwhile. Does not raise on failure: see
    ``Launch.assert_ok``."""
    for attempt in range(retries + 1):
        (port,) = free_ports(1)
        cmds_envs = []
        for rank in range(nprocs):
            env = _base_env(backend, device, extra_env)
            env.update({
                "RANK": str(rank), "LOCAL_RANK": str(rank),
                "WORLD_SIZE": str(nprocs), "LOCAL_WORLD_SIZE": str(nprocs),
                "GROUP_RANK": "0", "GROUP_WORLD_SIZE": "1", "ROLE_NAME": "default",
                "ROLE_RANK": str(rank), "ROLE_WORLD_SIZE": str(nprocs),
                "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
                "TORCHELASTIC_RESTART_COUNT": "0", "TORCHELASTIC_MAX_RESTARTS": "0",
                "TORCHELASTIC_RUN_ID": "none",
            })
            cmds_envs.append(([sys.executable, "-u", str(HERE / script), *(args or [])], env))
        what = f"{script} {' '.join(args or [])} x{nprocs} on {backend}/{device}"
        result = _run_procs(cmds_envs, timeout, grace_after_failure, what)
        if result.ok or attempt == retries or not _address_in_use(result):
            return result
    raise AssertionError("unreachable")


def launch_torchrun(script: str, nprocs: int, backend: str, device: str, *,
                    timeout: float = 180, args: list[str] | None = None,
                    extra_env: dict | None = None) -> Launch:
    """``python -m torch.distributed.run --standalone --nproc-per-node nprocs script`` (the
    rendezvous picks its own free port). One RankResult: torchrun's, holding all ranks'
    output; on timeout torchrun and its workers (one session) are killed."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           f"--nproc-per-node={nprocs}", "--max-restarts=0", "--monitor-interval=0.1",
           str(HERE / script), *(args or [])]
    what = f"torchrun {script} {' '.join(args or [])} x{nprocs} on {backend}/{device}"
    # No stack dump on timeout: SIGUSR1 would simply end the agent, not reach the workers.
    return _run_procs([(cmd, _base_env(backend, device, extra_env))], timeout, None, what,
                      dump_stacks=False)


# --- pytest side --------------------------------------------------------------------------------

def configs(slow_nprocs: int | None = 4, fast_nprocs: int = 2) -> list:
    """``pytest.param((backend, device, nprocs))`` for every pair in BACKENDS: the fast tier
    (``fast_nprocs`` ranks) and, if ``slow_nprocs``, the slow tier, skipped unless
    TORCH_TPU_SLOW_TESTS=1."""
    import pytest

    params = []
    for backend, device in BACKENDS:
        params.append(pytest.param((backend, device, fast_nprocs),
                                   id=f"{backend}-{device}-{fast_nprocs}ranks"))
        if slow_nprocs:
            params.append(pytest.param(
                (backend, device, slow_nprocs), id=f"{backend}-{device}-{slow_nprocs}ranks",
                marks=pytest.mark.skipif(not SLOW_TESTS, reason=SLOW_REASON)))
    return params


def assert_check(run: Launch, check, nprocs: int) -> None:
    """The pytest verdict on one named check of a checks worker (worker_utils.Registry):
    every rank must report it; ``fail`` on any rank fails, with every rank's detail; an
    expected failure (``unsupported`` on this backend) turns into a visible skip naming the
    reason and the error the backend raised; ``xpass`` fails (the unsupported list is stale);
    a check not run on this backend (``unsafe``, too few ranks) is a skip with its reason."""
    import pytest

    records = run.checks().get(check.name, {})
    if len(records) != nprocs:
        missing = sorted(set(range(nprocs)) - set(records))
        raise LaunchError(f"check {check.name!r}: no record from rank(s) {missing} "
                          f"(crashed or hung before reaching it)\n{run.report()}")
    by_status: dict[str, list[int]] = {}
    for rank, rec in sorted(records.items()):
        by_status.setdefault(rec["status"], []).append(rank)
    if "fail" in by_status or "xpass" in by_status:
        lines = [f"check {check.name!r} on {run.what}:"]
        for rank, rec in sorted(records.items()):
            lines.append(f"--- rank {rank}: {rec['status']} ({rec['seconds']}s)\n{rec['detail']}")
        if "xpass" in by_status:
            lines.append("This backend now passes a check listed as unsupported on it: remove it "
                         "from the check's `unsupported` list.")
        raise AssertionError("\n".join(lines))
    if set(by_status) == {"pass"}:
        return
    if set(by_status) == {"xfail"}:
        backend = records[0]["backend"]
        pytest.skip(f"tpu_dist-only: {check.unsupported[backend]} "
                    f"(on {backend} it raised as expected: {records[0]['detail']})")
    if set(by_status) == {"skip"}:
        pytest.skip(records[0]["detail"])
    raise AssertionError(f"check {check.name!r}: ranks disagree: {by_status}\n"
                         + "\n".join(f"rank {k}: {v}" for k, v in sorted(records.items())))
