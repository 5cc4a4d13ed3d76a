"""What the distributed benchmarks share: starting N rank processes of a script with torchrun's
environment, and knowing whether tpu_dist is registered."""

import json
import os
import socket
import subprocess
import sys
import tempfile
import time

import torch.distributed as dist

import torch_tpu  # noqa: F401  (registers tpu and tpu_dist)


DEVICE_OF = {"gloo": "cpu", "tpu_dist": "tpu"}


def tpu_dist_registered() -> bool:
    return "tpu_dist" in dist.Backend.backend_list


def chosen_backends(parser, text: str, baseline: str):
    """The backends a --backends value names, Gloo (the baseline) first; tpu_dist is dropped
    with a printed note when it is not registered. Returns (backends, note or None)."""
    requested = [b.strip() for b in text.split(",") if b.strip()]
    unknown = [b for b in requested if b not in DEVICE_OF]
    if unknown:
        parser.error(f"unknown backend(s) {unknown} (known: gloo, tpu_dist)")
    backends = ["gloo"] + [b for b in requested if b != "gloo"]
    note = None
    if "tpu_dist" in backends and not tpu_dist_registered():
        note = ("tpu_dist is not registered (import torch_tpu did not register a c10d backend of "
                f"that name): measuring {baseline} only")
        print(f"NOTE: {note}")
        backends.remove("tpu_dist")
    return backends, note


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(script, world, worker_argv, timeout, threads, label="ranks"):
    """Runs `world` processes of `script --worker --out FILE *worker_argv` with torchrun's
    environment (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_*) and `threads` intra-op
    threads each; returns the JSON rank 0 wrote to FILE. A process that fails stops the others."""
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "results.json")
        procs = []
        for rank in range(world):
            env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                       WORLD_SIZE=str(world), LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world),
                       OMP_NUM_THREADS=str(threads))
            procs.append(subprocess.Popen(
                [sys.executable, os.path.abspath(script), "--worker", "--out", out, *worker_argv],
                env=env))
        deadline = time.monotonic() + timeout
        try:
            while True:
                codes = [p.poll() for p in procs]
                if all(code is not None for code in codes):
                    break
                if any(code not in (None, 0) for code in codes):
                    raise RuntimeError(f"{label}: a process failed (exit codes {codes}; see its "
                                       "error above)")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{label}: still running after {timeout}s")
                time.sleep(0.05)
            if any(p.returncode != 0 for p in procs):
                raise RuntimeError(f"{label}: exit codes {[p.returncode for p in procs]}")
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        with open(out) as f:
            return json.load(f)
