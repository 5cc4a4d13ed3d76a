"""Runs the Hugging Face sweep and writes conformance/reports/hf.{md,json}.

    python -m conformance.hf [--mode strict|debug|fused] [--runtime host|pjrt] [--tier full|fast]
                             [--compile tpu] [--models a,b [--merge]]

Every model type in the installed transformers' auto mappings becomes a tiny random-weight
model (conformance/hf/models.py) that runs on tpu and on CPU in child processes, so a crash or
a hang is recorded and the sweep goes on. `--check` compares with the committed report instead
of rewriting it, failing on any model that passed there and does not now (the CI tier).
`--models ... --merge` re-runs those models into the committed report (its meta lists them).
`--compile tpu` runs the tpu side under torch.compile (reports hf_compiled*; --check holds it
to the eager report of the same mode).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from collections import Counter

from tqdm import tqdm

from ..cli import (REPORTS, baseline_name, merged_into_committed, report_dir, report_name, rerun_note,
                   sweep_arguments)
from ..isolated import child_env, run_isolated

TARGET = 0.90


def main():
    args = sweep_arguments(__doc__.split("\n")[0], "--models", "model types", timeout=240,
                           compiles=True)

    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    from .fast_tier import FAST_MODELS

    if args.items:
        models = args.items
    elif args.tier == "fast":
        models = list(FAST_MODELS)
    else:
        models = sorted(CONFIG_MAPPING_NAMES)

    records: list[dict] = []
    started = time.monotonic()
    with tqdm(total=len(models), unit="model", dynamic_ncols=True) as bar:
        def on_result(model, results, failure):
            # A child that died while still on CPU says nothing about tpu.
            status = "cpu_error" if failure and "(stage cpu)" in failure else "error"
            records.extend(results if results is not None else [{
                "model": model, "class": "", "kind": "", "forward": status, "train": None,
                "status": status, "message": failure, "seconds": 0.0}])
            bar.set_postfix_str(model[:24])
            bar.update(1)
        # An 8 GiB chip and a memory ceiling: a model that tries to allocate the machine fails
        # in its own child, with an error, instead of calling the OOM killer.
        env = {**child_env(args.mode, args.runtime, compile_backend=args.compile),
               "TORCH_TPU_HBM_BYTES": "8G"}
        run_isolated("conformance.hf.worker", models, env, args.timeout, on_result,
                     memory_limit=20 << 30, items_per_child=40)

    name = report_name("hf", args.mode, args.runtime, compiled=args.compile is not None)
    if args.check:
        sys.exit(check_against(records, os.path.join(REPORTS, f"{baseline_name('hf', args.mode, args.runtime)}.json")))
    out_dir = report_dir(args, "hf")
    meta = {"mode": args.mode, "runtime": args.runtime, "compile": args.compile,
            "transformers": transformers.__version__,
            "seconds": time.monotonic() - started, "python": platform.python_version()}
    if args.merge:
        out_dir = REPORTS
        records, meta = merged_into_committed(records, models, os.path.join(REPORTS, f"{name}.json"),
                                              time.monotonic() - started, key="model")
    summary = write(records, meta, os.path.join(out_dir, f"{name}.json"),
                    os.path.join(out_dir, f"{name}.md"))
    print(f"pass rate over architectures that build and run on CPU: "
          f"{summary['rate'] * 100:.1f}% ({summary['passed']}/{summary['counted']}); "
          f"{summary['cpu_error']} do not build or run on CPU either")
    print(f"report: {os.path.join(out_dir, name)}.md")


def summarize(records: list[dict]) -> dict:
    from .known_failures import KNOWN_FAILURES

    counted = [r for r in records if r["status"] != "cpu_error"]
    passed = sum(r["status"] == "pass" for r in counted)
    for r in records:
        r["known"] = KNOWN_FAILURES.get(r["model"])
    return {"passed": passed, "counted": len(counted),
            "rate": passed / len(counted) if counted else 0.0,
            "cpu_error": len(records) - len(counted),
            "trained": sum(r["train"] == "pass" for r in records),
            # Records written before fallbacks were recorded have no "fallback_ops": not counted.
            "passed_without_fallback": sum(r["status"] == "pass" and r.get("fallback_ops") == []
                                           for r in counted),
            "fallbacks_recorded": sum("fallback_ops" in r for r in counted),
            "by_status": dict(Counter(r["status"] for r in records)),
            "by_kind": dict(Counter(r["kind"] for r in counted))}


def write(records, meta, json_path, md_path) -> dict:
    summary = summarize(records)
    with open(json_path, "w") as f:
        json.dump({"meta": meta, "totals": summary, "results": records}, f, indent=1)
    lines = [
        "# Hugging Face architectures on tpu",
        "",
        f"Mode **{meta['mode']}**, runtime **{meta.get('runtime', 'host')}**"
        + (f", compiled (backend **{meta['compile']}**)" if meta.get("compile") else "")
        + ", transformers "
        f"{meta['transformers']}, {len(records)} model types, {meta['seconds']:.0f} s. Generated by "
        "`python -m conformance.hf`; do not edit." + rerun_note(meta),
        "",
        "| measure | result | target |",
        "|---|---:|---:|",
        f"| architectures passing (forward, and training step where the head has a loss), of "
        f"those that build and run on CPU | {summary['rate'] * 100:.1f}% "
        f"({summary['passed']}/{summary['counted']}) | ≥ {TARGET * 100:.0f}% |",
        f"| of which ran a training step | {summary['trained']} | |",
        f"| of which ran no op on host kernels (CPU fallback) | "
        f"{summary['passed_without_fallback']}"
        + ("" if summary["fallbacks_recorded"] == summary["counted"] else
           f" (of the {summary['fallbacks_recorded']} whose run recorded its fallbacks)") + " | |",
        f"| do not build or run on CPU either (left out) | {summary['cpu_error']} | |",
        "",
        "Outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(summary["by_status"].items())),
        "",
        "## Failures on tpu",
        "",
        "| model type | class | forward | train | known | first failure |",
        "|---|---|---|---|---|---|",
    ]
    for r in sorted(records, key=lambda r: r["model"]):
        if r["status"] in ("wrong", "error"):
            lines.append(f"| {r['model']} | {r['class']} | {r['forward'] or ''} | "
                         f"{r['train'] or ''} | {r['known'] or ''} | "
                         f"{r['message'].replace('|', '/')} |")
    lines += ["", "## All results", "",
              "| model type | class | head | status | seconds | CPU fallbacks |",
              "|---|---|---|---|---:|---|"]
    for r in sorted(records, key=lambda r: r["model"]):
        note = f" ({r['message'][:120].replace('|', '/')})" if r["status"] == "cpu_error" else ""
        lines.append(f"| {r['model']} | {r['class']} | {r['kind']} | {r['status']}{note} | "
                     f"{r['seconds']} | {', '.join(r.get('fallback_ops', []))} |")
    with open(md_path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return summary


def check_against(records: list[dict], committed_path: str) -> int:
    with open(committed_path) as f:
        before = {r["model"]: r for r in json.load(f)["results"]}
    regressions = [r for r in records
                   if before.get(r["model"], {}).get("status") == "pass" and r["status"] != "pass"]
    for r in regressions:
        print("REGRESSION", r["model"], r["status"], r["message"])
    print(f"{len(records)} architectures checked against {os.path.basename(committed_path)}: "
          f"{len(regressions)} regressions")
    return 1 if regressions else 0


if __name__ == "__main__":
    main()
