"""What the sweeps' command lines share: their arguments and where their reports go."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

REPORTS = os.path.normpath(os.path.join(os.path.dirname(__file__), "reports"))


def sweep_arguments(description: str, items_flag: str, items_help: str,
                    timeout: float | None, compiles: bool = False) -> argparse.Namespace:
    """Parses --mode, --runtime, --tier, the item list flag (overriding --tier), --timeout and
    --check, and for a sweep that `compiles` --compile; the item list is returned as args.items
    (None when not given)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--mode", default="strict", choices=["strict", "debug", "fused"])
    parser.add_argument("--runtime", default="host", choices=["host", "pjrt"],
                        help="pjrt: TORCH_TPU_RUNTIME=pjrt on the CPU plugin")
    parser.add_argument("--tier", default="full", choices=["full", "fast"])
    parser.add_argument(items_flag, dest="items", help=f"comma-separated {items_help} "
                        "(overrides --tier)")
    parser.add_argument("--timeout", type=float, default=timeout, help="seconds per item")
    parser.add_argument("--max-samples", type=int, default=None,
                        help="at most this many sample inputs per (item, dtype) (OpInfo; the PJRT "
                        "CI tiers use it: each sample compiles programs of its own)")
    if compiles:
        parser.add_argument("--compile", metavar="BACKEND", default=None,
                            help="run the tpu side under torch.compile with this backend (tpu)")
    parser.add_argument("--check", action="store_true",
                        help="compare with the committed report; exit 1 on regressions")
    parser.add_argument("--merge", action="store_true",
                        help=f"with {items_flag}: replace those items' records in the committed "
                        "report (listed in its meta as re-run) instead of writing a partial one")
    args = parser.parse_args()
    args.items = args.items.split(",") if args.items else None
    if args.merge and (args.items is None or args.check):
        parser.error(f"--merge needs {items_flag} and excludes --check")
    return args


def report_name(sweep: str, mode: str, runtime: str = "host", compiled: bool = False) -> str:
    """"opinfo" for Strict, "opinfo_debug" for Debug, ...; "opinfo_pjrt", "opinfo_pjrt_debug"
    ... on the PJRT runtime; "hf_compiled" ... under torch.compile."""
    base = sweep if runtime == "host" else f"{sweep}_{runtime}"
    base = f"{base}_compiled" if compiled else base
    return base if mode == "strict" else f"{base}_{mode}"


def baseline_name(sweep: str, mode: str, runtime: str = "host") -> str:
    """The committed report --check compares with: the mode's own, except that fused mode must
    pass everything Strict passes (fusion may not change what works). A compiled run is held to
    the eager report (compiling may not change what works either)."""
    return report_name(sweep, "strict" if mode == "fused" else mode, runtime)


def report_dir(args: argparse.Namespace, sweep: str) -> str:
    """Only a full sweep replaces the committed report; partial runs go to a scratch folder."""
    if args.tier == "full" and args.items is None:
        return REPORTS
    return tempfile.mkdtemp(prefix=f"{sweep}-")


def merged_into_committed(records: list[dict], items: list[str], committed_path: str,
                          seconds: float, key: str) -> tuple[list[dict], dict]:
    """The committed report's records with those of `items` (matched on record[key]: "op",
    "model") replaced by this run's; its meta lists every item re-run since the full sweep
    (rerun) and their seconds."""
    with open(committed_path) as f:
        committed = json.load(f)
    rerun = set(items)
    kept = [r for r in committed["results"] if r[key] not in rerun]
    meta = dict(committed["meta"])
    meta["rerun"] = sorted(set(meta.get("rerun", meta.get("rerun_ops", []))) | rerun)
    meta.pop("rerun_ops", None)
    meta["rerun_seconds"] = meta.get("rerun_seconds", 0.0) + seconds
    meta["rerun_note"] = ("records of the re-run items come from later partial runs (--merge) "
                          "over the full sweep's")
    order = {item: i for i, item in enumerate(dict.fromkeys(r[key] for r in committed["results"]))}
    merged = sorted(kept + records, key=lambda r: order.get(r[key], len(order)))
    return merged, meta


def rerun_note(meta: dict) -> str:
    """A report's sentence on items re-run with --merge after its full sweep ("" when none)."""
    rerun = meta.get("rerun", meta.get("rerun_ops", []))
    if not rerun:
        return ""
    return (f" Re-run later with `--merge` ({meta.get('rerun_seconds', 0.0):.0f} s): "
            + ", ".join(f"`{item}`" for item in rerun) + ".")


def check_phases_against(records: list[dict], committed_path: str, key: tuple[str, ...],
                         what: str) -> int:
    """Prints each (record[key...], phase) that passed in the committed report and does not
    now; returns the exit status (1 on any such regression)."""
    with open(committed_path) as f:
        before = {tuple(r[k] for k in key): r for r in json.load(f)["results"]}
    regressions = []
    for r in records:
        old = before.get(tuple(r[k] for k in key))
        for phase in ("forward", "backward"):
            if old is not None and old.get(phase) == "pass" and r.get(phase) != "pass":
                regressions.append(f"{' '.join(r[k] for k in key)} {phase}: {r.get(phase)} "
                                   f"({r['message']})")
    for line in regressions:
        print("REGRESSION", line)
    print(f"{len(records)} {what} checked against {os.path.basename(committed_path)}: "
          f"{len(regressions)} regressions")
    return 1 if regressions else 0


def selected_items(args: argparse.Namespace, all_items: list[str], in_fast_tier) -> list[str]:
    """The items a run covers: --items as given, the fast tier's, or all; exits naming any
    unknown item."""
    if args.items:
        items = args.items
    elif args.tier == "fast":
        items = [item for item in all_items if in_fast_tier(item)]
    else:
        items = all_items
    unknown = sorted(set(items) - set(all_items))
    if unknown:
        sys.exit(f"unknown items: {unknown}")
    return items


def run_with_progress(worker: str, items: list[str], args: argparse.Namespace, unit: str,
                      crash_record) -> list[dict]:
    """Every item's records from isolated children (conformance/isolated.py), with a progress
    bar; an item whose child died is recorded by crash_record(item, failure)."""
    from tqdm import tqdm

    from .isolated import child_env, run_isolated

    records: list[dict] = []
    with tqdm(total=len(items), unit=unit, dynamic_ncols=True) as bar:
        def on_result(item, results, failure):
            records.extend(results if results is not None else [crash_record(item, failure)])
            bar.set_postfix_str(item[:30])
            bar.update(1)
        run_isolated(worker, items, child_env(args.mode, args.runtime, args.max_samples),
                     args.timeout, on_result)
    return records


def outcome_lines(outcomes_by_dtype: dict, outcomes: tuple[str, ...],
                  fallback_ops: list[str]) -> list[str]:
    """A report's table of forward outcomes per dtype, then its line of ops that fell back."""
    lines = ["Forward outcomes by dtype:", "",
             "| dtype | " + " | ".join(outcomes) + " |", "|---|" + "---:|" * len(outcomes)]
    for dtype, counts in outcomes_by_dtype.items():
        lines.append(f"| {dtype} | " + " | ".join(str(counts.get(k, 0)) for k in outcomes) + " |")
    return lines + ["", "Ops that fell back to the synchronous CPU path: "
                    + (", ".join(f"`{op}`" for op in fallback_ops) or "none"), ""]


def save_report(json_path: str, md_path: str, meta: dict, summary: dict, records: list[dict],
                markdown: str) -> None:
    """Writes a sweep's JSON report (meta, totals, results) and its Markdown rendering."""
    with open(json_path, "w") as f:
        json.dump({"meta": meta, "totals": summary, "results": records}, f, indent=1)
    with open(md_path, "w") as f:
        f.write(markdown)
