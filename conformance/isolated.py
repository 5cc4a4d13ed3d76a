"""Runs sweep items in child processes, so that a crash or a hang is recorded against the item
that caused it and the sweep goes on in a fresh child.

The child is `python -m <worker> --items FILE`; it prints one JSON line per event:
    {"begin": "<item>"}                     before each item
    {"stage": "<name>"}                     optionally, as the item moves through stages
    {"item": "<item>", "results": [...]}    after it
"""

from __future__ import annotations

import json
import os
import resource
import selectors
import subprocess
import sys
import tempfile
import time
from typing import Callable

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def run_isolated(worker: str, items: list[str], env: dict[str, str], timeout: float,
                 on_result: Callable[[str, list | None, str | None], None],
                 memory_limit: int | None = None, items_per_child: int | None = None) -> None:
    """Evaluates `items` in order in children running module `worker`. Calls
    on_result(item, results, None) per finished item, or on_result(item, None, failure) when
    the child died or ran past `timeout` seconds on it; `failure` starts with "crash" and names
    the last stage the child reported. `memory_limit` (bytes of address space) makes a runaway
    allocation fail inside the child instead of summoning the machine's OOM killer.
    `items_per_child` starts a fresh child after that many items, so that what one item leaves
    behind (caches, fragmentation) cannot starve the ones after it."""

    def limit_memory():
        if memory_limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))

    remaining = list(items)
    while remaining:
        batch = remaining[:items_per_child] if items_per_child else list(remaining)
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("\n".join(batch))
            items_file = f.name
        child = subprocess.Popen([sys.executable, "-m", worker, "--items", items_file],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                 env=env, cwd=REPO, preexec_fn=limit_memory)
        selector = selectors.DefaultSelector()
        selector.register(child.stdout, selectors.EVENT_READ)
        current = None
        stage = None
        failure = None
        deadline = time.monotonic() + timeout
        while True:
            if not selector.select(timeout=max(0.0, deadline - time.monotonic())):
                child.kill()
                failure = f"crash: timeout after {timeout:.0f} s"
                break
            line = child.stdout.readline()
            if not line:
                code = child.wait()
                failure = f"crash: worker exited with status {code}"
                break
            # An event may follow output an op printed without a newline on the same line.
            start = line.find('{"')
            if start < 0:
                continue
            try:
                event = json.loads(line[start:])
            except json.JSONDecodeError:
                continue
            if "begin" in event:
                current = event["begin"]
                stage = None
                deadline = time.monotonic() + timeout
            elif "stage" in event:
                stage = event["stage"]
            else:
                on_result(event["item"], event["results"], None)
                remaining.remove(event["item"])
                current = None
        child.wait()
        os.unlink(items_file)
        if current is not None:
            where = f" (stage {stage})" if stage else ""
            on_result(current, None, failure.replace("crash:", f"crash{where}:", 1))
            remaining.remove(current)
        elif any(item in remaining for item in batch):
            raise RuntimeError(f"{worker} stopped early ({failure}) with {len(remaining)} left")


def emit(event: dict) -> None:
    """Prints one event line for the parent (worker side)."""
    print(json.dumps(event), flush=True)


def child_env(mode: str, runtime: str = "host", max_samples: int | None = None,
              compile_backend: str | None = None) -> dict[str, str]:
    """The environment for children: ours without TORCH_TPU_*/TPU_* settings, plus `mode`,
    `runtime`, the sample cap (CONFORMANCE_MAX_SAMPLES) and the torch.compile backend
    (CONFORMANCE_COMPILE_BACKEND), when given. Random ops draw CPU's stream of numbers
    (TORCH_TPU_RNG=cpu): the sweeps compare them with CPU's from the same seed."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TORCH_TPU_", "TPU_")) and k not in (MAX_SAMPLES, COMPILE_BACKEND)}
    env["TORCH_TPU_MODE"] = mode
    env["TORCH_TPU_RUNTIME"] = runtime
    env["TORCH_TPU_RNG"] = "cpu"
    if max_samples is not None:
        env[MAX_SAMPLES] = str(max_samples)
    if compile_backend is not None:
        env[COMPILE_BACKEND] = compile_backend
    return env


# Children read the sample cap from this variable (None: every sample).
MAX_SAMPLES = "CONFORMANCE_MAX_SAMPLES"
# Children of a sweep that compiles read torch.compile's backend from this variable.
COMPILE_BACKEND = "CONFORMANCE_COMPILE_BACKEND"


def max_samples() -> int | None:
    value = os.environ.get(MAX_SAMPLES)
    return int(value) if value else None
