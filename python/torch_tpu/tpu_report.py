"""What a script would cost on a TPU, before renting one.

    python -m torch_tpu.tpu_report [--topology v5e:2x2] [--json out.json] script.py [args ...]

Runs ``script.py`` on tpu through the PJRT runtime (the CPU plugin), collects every distinct
program it ran (Strict mode's one-node executables and fused mode's programs, each a StableHLO
module), compiles each ahead of time for the TPU topology through libtpu (no TPU needed), and
prints per program and in total: flops, bytes accessed, XLA's estimated time, arithmetic
intensity, the device memory (HBM) a run needs, compile time and how often it ran, and which
programs failed to compile for TPU and why. Totals weigh each program by its runs; a program
XLA has no time model of shows "—" and adds nothing to the estimated total (it is counted).

The compiles run in a child process: libtpu is a second PJRT plugin, kept out of the process
that ran the script on the CPU plugin.
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import subprocess
import sys
import tempfile

import torch_tpu
from . import _C, _runtime

_CHILD = """
import json, sys
from torch_tpu import _C
with open(sys.argv[1]) as f:
    job = json.load(f)
result = _C._aot_compile(job["plugin"], job["search_dirs"], job["topology"], job["modules"])
with open(sys.argv[2], "w") as f:
    json.dump(result, f)
"""


def compile_for_topology(modules: list, topology: str, plugin: str = "tpu") -> dict:
    """Compiles StableHLO ``modules`` for ``topology`` on ``plugin`` in a child process; returns
    ``{"platform", "platform_version", "reports": [...]}`` (a report per module, or
    ``{"error": ...}``). Raises RuntimeError with the child's output if it fails as a whole
    (libtpu missing: its error names how to install it)."""
    with tempfile.TemporaryDirectory(prefix="tpu-report-") as scratch:
        job, out = os.path.join(scratch, "job.json"), os.path.join(scratch, "out.json")
        with open(job, "w") as f:
            json.dump({"plugin": plugin, "search_dirs": _runtime._search_dirs(),
                       "topology": topology, "modules": modules}, f)
        env = {k: v for k, v in os.environ.items() if not k.startswith("TORCH_TPU_")}
        env.setdefault("TPU_SKIP_MDS_QUERY", "1")  # libtpu: no cloud metadata server lookups
        child = subprocess.run([sys.executable, "-c", _CHILD, job, out], env=env,
                               capture_output=True, text=True)
        if child.returncode != 0:
            raise RuntimeError(f"compiling for {topology} on the '{plugin}' PJRT plugin failed:\n"
                               f"{child.stderr.strip()[-4000:]}")
        with open(out) as f:
            return json.load(f)


def summarize(programs: list, compiled: dict) -> dict:
    """Per-program rows and run-weighted totals from the runtime's programs and their reports."""
    rows, failures = [], []
    totals = {"flops": 0.0, "bytes_accessed": 0.0, "estimated_seconds": 0.0, "runs": 0,
              "programs_without_estimate": 0}
    for program, report in zip(programs, compiled["reports"]):
        if "error" in report:
            failures.append({"program": program["name"], "runs": program["runs"],
                             "error": report["error"]})
            continue
        cost = report["cost"]
        flops = cost.get("flops", 0.0)
        accessed = cost.get("bytes accessed", 0.0)
        # XLA answers a negative optimal_seconds for a program it has no time model of.
        seconds = cost.get("optimal_seconds", -1.0)
        if seconds < 0:
            seconds = None
            totals["programs_without_estimate"] += 1
        hbm = (report["argument_bytes"] + report["output_bytes"] - report["alias_bytes"]
               + report["temp_bytes"] + report["generated_code_bytes"])
        rows.append({"program": program["name"], "runs": program["runs"], "flops": flops,
                     "bytes_accessed": accessed, "estimated_seconds": seconds,
                     "intensity": flops / accessed if accessed else 0.0, "hbm_bytes": hbm,
                     "tpu_compile_seconds": report["compile_seconds"],
                     "cpu_compile_seconds": program["compile_seconds"]})
        totals["flops"] += flops * program["runs"]
        totals["bytes_accessed"] += accessed * program["runs"]
        totals["estimated_seconds"] += (seconds or 0.0) * program["runs"]
        totals["runs"] += program["runs"]
    totals["intensity"] = totals["flops"] / totals["bytes_accessed"] if totals["bytes_accessed"] else 0.0
    totals["peak_program_hbm_bytes"] = max((r["hbm_bytes"] for r in rows), default=0)
    return {"rows": rows, "failures": failures, "totals": totals}


def _print(summary: dict, topology: str, platform: str) -> None:
    print(f"\nTPU report: {len(summary['rows']) + len(summary['failures'])} distinct programs, "
          f"compiled for {topology} ({platform})")
    header = (f"{'program':<44}{'runs':>6}{'MFLOP':>10}{'MB accessed':>13}{'est. us':>10}"
              f"{'flop/B':>8}{'HBM MB':>9}{'compile s':>11}")
    print(header)
    print("-" * len(header))
    for r in sorted(summary["rows"], key=lambda r: -(r["estimated_seconds"] or 0.0) * r["runs"]):
        estimate = "—" if r["estimated_seconds"] is None else f"{r['estimated_seconds'] * 1e6:.2f}"
        print(f"{r['program'][:43]:<44}{r['runs']:>6}{r['flops'] / 1e6:>10.3f}"
              f"{r['bytes_accessed'] / 1e6:>13.3f}{estimate:>10}"
              f"{r['intensity']:>8.2f}{r['hbm_bytes'] / 1e6:>9.2f}{r['tpu_compile_seconds']:>11.2f}")
    t = summary["totals"]
    print("-" * len(header))
    print(f"{'total (each program times its runs)':<44}{t['runs']:>6}{t['flops'] / 1e6:>10.3f}"
          f"{t['bytes_accessed'] / 1e6:>13.3f}{t['estimated_seconds'] * 1e6:>10.2f}"
          f"{t['intensity']:>8.2f}{t['peak_program_hbm_bytes'] / 1e6:>9.2f}")
    if t["programs_without_estimate"]:
        print(f"({t['programs_without_estimate']} programs have no time estimate from XLA: "
              "counted as 0 in the total)")
    if summary["failures"]:
        print(f"\n{len(summary['failures'])} programs did not compile for {topology}:")
        for failure in summary["failures"]:
            print(f"  {failure['program']} (ran {failure['runs']}x): {failure['error'][:300]}")


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m torch_tpu.tpu_report",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--topology", default="v5e:2x2", help="a libtpu topology name")
    parser.add_argument("--plugin", default="tpu", help="the PJRT plugin that compiles")
    parser.add_argument("--json", help="also write the report as JSON here")
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if torch_tpu.get_runtime() != "pjrt":
        torch_tpu.set_runtime("pjrt")
    saved_argv = sys.argv
    sys.argv = [args.script, *args.args]
    try:
        runpy.run_path(args.script, run_name="__main__")
    finally:
        sys.argv = saved_argv
    import torch
    torch.tpu.synchronize()
    programs = _C._pjrt_programs()
    compiled = compile_for_topology([p["mlir"] for p in programs], args.topology, args.plugin)
    summary = summarize(programs, compiled)
    summary.update({"topology": args.topology, "platform": compiled["platform"],
                    "platform_version": compiled["platform_version"]})
    _print(summary, args.topology, compiled["platform_version"] or compiled["platform"])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
