"""Runs the ModuleInfo sweep and writes conformance/reports/modules.{md,json}.

    python -m conformance.modules [--mode strict|debug|fused] [--runtime host|pjrt]
                                  [--tier full|fast] [--modules a,b [--merge]] [--check]

Modules run in child processes (conformance/isolated.py), so that a crash or a hang is
recorded against the module that caused it. `--check` compares with the committed report
(fused mode with Strict's) and fails on any (module, dtype, phase) that passed there and does
not now (the CI tier).
"""

from __future__ import annotations

import os
import platform
import sys
import time

from ..cli import (REPORTS, baseline_name, check_phases_against, merged_into_committed,
                   report_dir, report_name, run_with_progress, selected_items, sweep_arguments)


def crash_record(module: str, message: str) -> dict:
    return {"module": module, "dtype": "float32", "forward": "error", "backward": None,
            "fallback_ops": [], "samples": 0, "message": message}


def main():
    args = sweep_arguments(__doc__.split("\n")[0], "--modules", "module names (nn.LSTM, ...)",
                           timeout=600)
    import torch
    from torch.testing._internal.common_modules import module_db

    from .fast_tier import in_fast_tier
    from .report import percent, write

    names = selected_items(args, [info.name for info in module_db],
                           lambda name: in_fast_tier(name, args.runtime))
    started = time.monotonic()
    records = run_with_progress("conformance.modules.worker", names, args, "module", crash_record)

    name = report_name("modules", args.mode, args.runtime)
    if args.check:
        committed = os.path.join(REPORTS, f"{baseline_name('modules', args.mode, args.runtime)}.json")
        sys.exit(check_phases_against(records, committed, ("module", "dtype"),
                                      "(module, dtype) pairs"))
    out_dir = report_dir(args, "modules")
    meta = {"mode": args.mode, "runtime": args.runtime, "torch": torch.__version__,
            "modules": len(names), "seconds": time.monotonic() - started,
            "python": platform.python_version()}
    if args.merge:
        out_dir = REPORTS
        records, meta = merged_into_committed(records, names, os.path.join(REPORTS, f"{name}.json"),
                                              time.monotonic() - started, key="module")
    summary = write(records, meta, os.path.join(out_dir, f"{name}.json"),
                    os.path.join(out_dir, f"{name}.md"))
    print(f"report: {os.path.join(out_dir, name)}.md")
    print(f"(module, dtype) pairs passing: {percent(summary['pairs'])}; "
          f"pairs using a CPU fallback: {summary['pairs_using_fallback']}, "
          f"crashes: {summary['crashes']}")


if __name__ == "__main__":
    main()
