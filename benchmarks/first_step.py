"""The demo model's first inference forward: tpu (Strict, fused) vs PyTorch CPU eager.

"First" only means something in a fresh process, so every measurement is a child process of
its own, started in rounds (one child per contender per round, the order rotated each round,
as in benchmarks/paired_blocks.py, so a slow spell of the machine cannot decide a ratio). Each
child times, from its start:

- import: ``import torch; import torch_tpu`` (tpu; the ``torch.backends`` entry point loads
  torch_tpu during ``import torch``), or ``import torch`` alone with
  TORCH_DEVICE_BACKEND_AUTOLOAD=0 (the CPU baseline: stock PyTorch, the demo's llama.py loaded
  from its file without the torch_tpu package);
- build: ``Llama(LlamaConfig())`` and ``.to(device)``, plus the tokens, synchronized;
- first forward: ``model(tokens).cpu()`` under ``torch.no_grad()`` (the read-back is the sync);
  also the main thread's CPU time of it, which a busy machine disturbs less than wall time;
- second forward: the same again, and steady: the median of a few more.

tpu children also report what their first forward did: shape-cache misses (Meta kernels run),
ops launched, CPU fallbacks, and how many Python modules it imported.

Where the first forward goes: PyTorch's Python Meta kernels (torch._meta_registrations, which
override the C++ ones of structured ops) import torch.fx.experimental.symbolic_shapes (with
sympy) and torch._dynamo the first time they run, and the generic kernel runs them once per new
call signature. The "<mode>, imports first" contenders (unless --no-split) import those two
modules before the forward, timed: that time is the one-time import cost, and what remains of
their first forward is the per-op first-call cost (Meta kernels, plans, first CPU kernel calls).

The ratio is tpu's first forward over CPU's, per round, median over rounds. Prints a table and
writes benchmarks/results/first_step.json.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PHASES = ["import", "build", "first_forward", "second_forward", "steady_forward"]
# What PyTorch's Python Meta kernels import on their first call, in this order (the second
# imports the first too): torch._prims_common.elementwise_dtypes and torch._refs'
# broadcasting import the first; the torch._disable_dynamo wrapper of the elementwise refs
# imports torch._dynamo.
LAZY_IMPORTS = ["torch.fx.experimental.symbolic_shapes", "torch._dynamo"]


def _load_llama_without_torch_tpu():
    """The demo's llama.py as a module, without running torch_tpu/__init__.py (which would
    load the extension): the CPU baseline stays stock PyTorch."""
    import importlib.util

    path = os.path.join(HERE, "..", "python", "torch_tpu", "demo", "llama.py")
    if not os.path.exists(path):  # an installed copy, not this checkout
        package = importlib.util.find_spec("torch_tpu")
        path = os.path.join(os.path.dirname(package.origin), "demo", "llama.py")
    spec = importlib.util.spec_from_file_location("_first_step_llama", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def child(device, mode, batch, seq, steady_repeats, imports_first):
    """One fresh process's timings (seconds) and diagnostics, as a dict."""
    start = time.perf_counter()
    import torch
    if device == "tpu":
        import torch_tpu
    imported = time.perf_counter()
    result = {"device": device, "mode": mode, "import": imported - start, "lazy_imports": {}}
    if imports_first:
        import importlib
        for name in LAZY_IMPORTS:
            start = time.perf_counter()
            importlib.import_module(name)
            result["lazy_imports"][name] = time.perf_counter() - start

    if device == "tpu":
        torch_tpu.set_mode(mode)
        from torch_tpu.demo.llama import Llama, LlamaConfig
        sync = torch.tpu.synchronize
    else:
        llama = _load_llama_without_torch_tpu()
        Llama, LlamaConfig = llama.Llama, llama.LlamaConfig

        def sync():
            pass
    config = LlamaConfig()
    tokens_cpu = torch.randint(0, config.vocab_size, (batch, seq),
                               generator=torch.Generator().manual_seed(1))

    start = time.perf_counter()
    torch.manual_seed(0)
    model = Llama(config).to(device)
    tokens = tokens_cpu.to(device)
    sync()
    result["build"] = time.perf_counter() - start

    def forward():
        with torch.no_grad():
            return model(tokens).cpu()

    forwards = []
    diagnostics = []
    for k in range(2 + steady_repeats):
        if device == "tpu":
            torch_tpu.reset_metrics()
        modules_before = set(sys.modules)
        start, start_cpu = time.perf_counter(), time.thread_time()
        logits = forward()
        forwards.append(time.perf_counter() - start)
        if k == 0:
            result["first_forward_main_thread_cpu"] = time.thread_time() - start_cpu
        if device == "tpu" and k < 2:
            metrics = torch_tpu.metrics()
            new_modules = set(sys.modules) - modules_before
            diagnostics.append({
                "shape_cache_misses": metrics["shape_cache"]["misses"],
                "shape_cache_hits": metrics["shape_cache"]["hits"],
                "ops_launched": metrics["ops_launched"],
                "fallbacks": dict(metrics["fallbacks"]),
                "modules_imported": len(new_modules),
                "imported": sorted(name for name in LAZY_IMPORTS + ["sympy"] if name in new_modules),
                "fusion": metrics.get("fusion", {}) if mode == "fused" else {},
            })
    result["first_forward"] = forwards[0]
    result["second_forward"] = forwards[1]
    result["steady_forward"] = statistics.median(forwards[2:]) if steady_repeats else forwards[1]
    result["logits_sum"] = float(logits.double().sum())
    if diagnostics:
        result["first_forward_diagnostics"], result["second_forward_diagnostics"] = diagnostics
    return result


def run_child(contender, args):
    """A fresh process measuring `contender`: "cpu", a tpu mode, or "<mode>, imports first"."""
    mode, _, variant = contender.partition(", ")
    device = "cpu" if mode == "cpu" else "tpu"
    env = dict(os.environ)
    if device == "cpu":
        env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    command = [sys.executable, os.path.abspath(__file__), "--child", device, "--child-mode", mode,
               "--batch", str(args.batch), "--seq", str(args.seq),
               "--steady-repeats", str(args.steady_repeats)]
    if variant:
        command.append("--imports-first")
    out = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"{contender} child failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def summary(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="both", choices=["strict", "fused", "both"])
    parser.add_argument("--repeats", type=int, default=3, help="rounds of fresh processes")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--steady-repeats", type=int, default=5)
    parser.add_argument("--no-split", action="store_true",
                        help="skip the contenders that import PyTorch's lazy imports first")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child-mode", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--imports-first", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.child_mode, args.batch, args.seq,
                               args.steady_repeats, args.imports_first)))
        return

    modes = ["strict", "fused"] if args.mode == "both" else [args.mode]
    contenders = ["cpu"] + modes + ([] if args.no_split else [f"{m}, imports first" for m in modes])
    runs = {c: [] for c in contenders}
    for r in range(args.repeats):
        for c in contenders[r % len(contenders):] + contenders[:r % len(contenders)]:
            runs[c].append(run_child(c, args))

    ms = {c: {p: summary([run[p] * 1e3 for run in runs[c]]) for p in PHASES} for c in contenders}
    for c in contenders:
        ms[c]["first_forward_main_thread_cpu"] = summary(
            [run["first_forward_main_thread_cpu"] * 1e3 for run in runs[c]])
        if "imports first" in c:
            for name in LAZY_IMPORTS:
                ms[c][name] = summary([run["lazy_imports"][name] * 1e3 for run in runs[c]])
    ratios = {c: summary([t["first_forward"] / b["first_forward"]
                          for t, b in zip(runs[c], runs["cpu"])]) for c in contenders if c != "cpu"}
    # Best against best: CPU eager's two intra-op threads suffer most when something else runs.
    best_ratios = {c: ms[c]["first_forward"]["min"] / ms["cpu"]["first_forward"]["min"]
                   for c in contenders if c != "cpu"}

    print(f"demo model (batch {args.batch} x seq {args.seq}), inference forward incl. .cpu(); "
          f"a fresh process per measurement, median of {args.repeats} (min-max), ms")
    columns = PHASES[:3] + ["first_forward_main_thread_cpu"] + PHASES[3:]
    titles = ["import", "build", "1st fwd", "1st fwd (cpu time)", "2nd fwd", "steady fwd"]
    print(f"{'contender':<22}" + "".join(f"{t:>21}" for t in titles)
          + f"{'1st fwd / cpu 1st':>19}{'best / best':>13}")
    for c in contenders:
        cells = "".join(f"{ms[c][p]['median']:.1f} ({ms[c][p]['min']:.0f}-{ms[c][p]['max']:.0f})"
                        .rjust(21) for p in columns)
        ratio = (f"{ratios[c]['median']:.1f}x ({ratios[c]['min']:.1f}-{ratios[c]['max']:.1f})"
                 if c in ratios else "1.0x")
        best = f"{best_ratios[c]:.1f}x" if c in best_ratios else "1.0x"
        print(f"{c:<22}{cells}{ratio:>19}{best:>13}")
    for c in contenders:
        if c == "cpu":
            continue
        first = runs[c][0]["first_forward_diagnostics"]
        second = runs[c][0]["second_forward_diagnostics"]
        print(f"{c}: first forward ran {first['shape_cache_misses']} Meta kernels (shape-cache "
              f"misses; second forward {second['shape_cache_misses']}), launched "
              f"{first['ops_launched']} ops, {sum(first['fallbacks'].values())} CPU fallbacks, "
              f"imported {first['modules_imported']} Python modules"
              + (f" ({', '.join(first['imported'])})" if first["imported"] else ""))
        if "imports first" in c:
            lazy = ", ".join(f"{name} {ms[c][name]['median']:.0f} ms" for name in LAZY_IMPORTS)
            print(f"  imported before its forward: {lazy} (the second includes only what the "
                  f"first left)")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "first_step.json"), "w") as f:
        json.dump({"cpus": os.cpu_count(), "batch": args.batch, "seq": args.seq,
                   "ms": ms, "first_forward_vs_cpu": ratios,
                   "best_first_forward_vs_best_cpu": best_ratios,
                   "env": {k: v for k, v in os.environ.items() if k.startswith("TORCH_TPU_")},
                   "runs": runs}, f, indent=2)


if __name__ == "__main__":
    main()
