"""Runs the OpInfo sweep and writes conformance/reports/opinfo.{md,json}.

    python -m conformance.opinfo [--mode strict|debug|fused] [--tier full|fast] [--ops a,b]

Ops run in a child process (conformance/opinfo/worker.py) so that a crash or a hang is
recorded against the op that caused it and the sweep goes on in a fresh child. `--check`
compares against the committed report instead of rewriting it, failing on any (op, dtype)
that passed there and does not now (the CI tier).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import selectors
import subprocess
import sys
import tempfile
import time

from tqdm import tqdm

REPORTS = os.path.join(os.path.dirname(__file__), "..", "reports")


def run_ops(op_ids: list[str], mode: str, timeout: float, on_result) -> None:
    """Evaluates `op_ids` in child processes; calls on_result(op_id, records) for each op,
    with crash/timeout records when a child dies or hangs on that op."""
    remaining = list(op_ids)
    while remaining:
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("\n".join(remaining))
            ops_file = f.name
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCH_TPU_", "TPU_"))}
        env["TORCH_TPU_MODE"] = mode
        child = subprocess.Popen(
            [sys.executable, "-m", "conformance.opinfo.worker", "--ops", ops_file],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
            cwd=os.path.join(os.path.dirname(__file__), "..", ".."))
        selector = selectors.DefaultSelector()
        selector.register(child.stdout, selectors.EVENT_READ)
        current = None
        deadline = time.monotonic() + timeout
        failure = None
        while True:
            if not selector.select(timeout=max(0.0, deadline - time.monotonic())):
                child.kill()
                failure = f"crash: timeout after {timeout:.0f} s"
                break
            line = child.stdout.readline()
            if not line:
                code = child.wait()
                failure = f"crash: worker exited with status {code}" if current else None
                break
            if not line.startswith("{"):
                continue
            event = json.loads(line)
            if "begin" in event:
                current = event["begin"]
                deadline = time.monotonic() + timeout
            else:
                on_result(event["op"], event["results"])
                remaining.remove(event["op"])
                current = None
        child.wait()
        os.unlink(ops_file)
        if current is not None:
            on_result(current, [crash_record(current, failure)])
            remaining.remove(current)
        elif failure is None and remaining:
            raise RuntimeError(f"worker stopped early with {len(remaining)} ops left")


def crash_record(op: str, message: str) -> dict:
    return {"op": op, "dtype": "float32", "forward": "error", "backward": None,
            "fallback_ops": [], "samples": 0, "message": message}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mode", default="strict", choices=["strict", "debug", "fused"])
    parser.add_argument("--tier", default="full", choices=["full", "fast"])
    parser.add_argument("--ops", help="comma-separated op ids (overrides --tier)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per op")
    parser.add_argument("--check", action="store_true",
                        help="compare with the committed report; exit 1 on regressions")
    args = parser.parse_args()

    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    from .fast_tier import FAST_OPS
    from .harness import op_id
    from .report import percent, write

    all_ids = [op_id(op) for op in op_db]
    if args.ops:
        op_ids = args.ops.split(",")
    elif args.tier == "fast":
        op_ids = [i for i in all_ids if i in FAST_OPS]
    else:
        op_ids = all_ids
    unknown = sorted(set(op_ids) - set(all_ids))
    if unknown:
        parser.error(f"unknown op ids: {unknown}")

    records: list[dict] = []
    started = time.monotonic()
    with tqdm(total=len(op_ids), unit="op", dynamic_ncols=True) as bar:
        def on_result(op, results):
            records.extend(results)
            bar.set_postfix_str(op[:30])
            bar.update(1)
        run_ops(op_ids, args.mode, args.timeout, on_result)

    suffix = "" if args.mode == "strict" else f"_{args.mode}"
    name = f"opinfo{suffix}" + ("_fast" if args.tier == "fast" and not args.ops else "")
    committed = os.path.join(REPORTS, f"opinfo{suffix}.json")
    if args.check:
        sys.exit(check_against(records, committed))
    meta = {"mode": args.mode, "torch": torch.__version__, "ops": len(op_ids),
            "seconds": time.monotonic() - started, "python": platform.python_version()}
    summary = write(records, meta, os.path.join(REPORTS, f"{name}.json"),
                    os.path.join(REPORTS, f"{name}.md"))
    for key in ("float32_forward", "float32_backward", "bfloat16_forward", "core_aten_native"):
        print(f"{key}: {percent(summary[key])}")
    print(f"pairs using a CPU fallback: {summary['pairs_using_fallback']}, "
          f"crashes: {summary['crashes']}")


def check_against(records: list[dict], committed_path: str) -> int:
    """Regressions: (op, dtype, phase) that passed in the committed report and not now."""
    with open(committed_path) as f:
        before = {(r["op"], r["dtype"]): r for r in json.load(f)["results"]}
    regressions = []
    for r in records:
        old = before.get((r["op"], r["dtype"]))
        for phase in ("forward", "backward"):
            if old is not None and old.get(phase) == "pass" and r.get(phase) != "pass":
                regressions.append(f"{r['op']} {r['dtype']} {phase}: {r.get(phase)} "
                                   f"({r['message']})")
    for line in regressions:
        print("REGRESSION", line)
    print(f"{len(records)} (op, dtype) pairs checked against {os.path.basename(committed_path)}: "
          f"{len(regressions)} regressions")
    return 1 if regressions else 0


if __name__ == "__main__":
    main()
