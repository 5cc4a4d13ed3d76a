"""Runs the OpInfo sweep and writes conformance/reports/opinfo.{md,json}.

    python -m conformance.opinfo [--mode strict|debug|fused] [--runtime host|pjrt] [--tier full|fast]
                                [--ops a,b [--merge]]

Ops run in child processes (conformance/isolated.py) so that a crash or a hang is recorded
against the op that caused it and the sweep goes on in a fresh child. `--check`
compares against the committed report instead of rewriting it, failing on any (op, dtype)
that passed there and does not now (the CI tier). `--ops ... --merge` re-runs those ops and
replaces their records in the committed report (its meta lists them as re-run).
"""

from __future__ import annotations

import os
import platform
import sys
import time

from ..cli import (REPORTS, baseline_name, check_phases_against, merged_into_committed,
                   report_dir, report_name, run_with_progress, selected_items, sweep_arguments)

def crash_record(op: str, message: str) -> dict:
    return {"op": op, "dtype": "float32", "forward": "error", "backward": None,
            "fallback_ops": [], "samples": 0, "message": message}


def main():
    args = sweep_arguments(__doc__.split("\n")[0], "--ops", "op ids", timeout=None)
    if args.timeout is None:
        # PJRT compiles a program per new structure: fused mode's programs differ per sample,
        # and the CPU plugin needs ~20-50 ms each (max_pool2d's 1,440 samples: minutes).
        args.timeout = 300 if args.runtime == "host" else 900

    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    from .fast_tier import FAST_OPS
    from .harness import op_id
    from .report import percent, write

    op_ids = selected_items(args, [op_id(op) for op in op_db], lambda op: op in FAST_OPS)
    started = time.monotonic()
    records = run_with_progress("conformance.opinfo.worker", op_ids, args, "op", crash_record)

    name = report_name("opinfo", args.mode, args.runtime)
    if args.check:
        committed = os.path.join(REPORTS, f"{baseline_name('opinfo', args.mode, args.runtime)}.json")
        sys.exit(check_phases_against(records, committed, ("op", "dtype"), "(op, dtype) pairs"))
    out_dir = report_dir(args, "opinfo")
    meta = {"mode": args.mode, "runtime": args.runtime, "torch": torch.__version__, "ops": len(op_ids),
            "seconds": time.monotonic() - started, "python": platform.python_version(),
            "max_samples": args.max_samples}
    if args.merge:
        out_dir = REPORTS
        records, meta = merged_into_committed(records, op_ids, os.path.join(REPORTS, f"{name}.json"),
                                              time.monotonic() - started, key="op")
    summary = write(records, meta, os.path.join(out_dir, f"{name}.json"),
                    os.path.join(out_dir, f"{name}.md"))
    print(f"report: {os.path.join(out_dir, name)}.md")
    for key in ("float32_forward", "float32_backward", "bfloat16_forward", "core_aten_native"):
        print(f"{key}: {percent(summary[key])}")
    print(f"pairs using a CPU fallback: {summary['pairs_using_fallback']}, "
          f"crashes: {summary['crashes']}")


if __name__ == "__main__":
    main()
