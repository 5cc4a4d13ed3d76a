"""The PJRT runtime's programs, on the CPU plugin: fused mode against Strict on Google's
elementwise loop and on the demo's training step, with the host runtime's fused mode beside
them; the compile time of a new op signature, cold and from the on-disk cache; the executable
cache's hit rate in a steady training loop (target 100%). Each (runtime, mode) measures in a
fresh process (the runtime is chosen at start-up), the same work in each. With the CUDA plugin,
PyTorch's own CUDA eager runs the same loop and step as the baseline. Prints each run's figures
as it ends (a run cut short keeps the earlier ones), then the table, and writes
benchmarks/results/pjrt_programs[_PLUGIN].json.

    python benchmarks/pjrt_programs.py [--plugin cpu|cuda|tpu|PATH] [--size 5000] [--iterations 50] [--steps 6]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


# ---- measured in a child process ----

def elementwise_loop_seconds(device, size, iterations, repeats):
    import torch

    x_cpu = torch.randn(size, size)
    x = x_cpu.to(device)
    seconds = []
    for _ in range(repeats + 1):  # the first run compiles
        getattr(torch, device).synchronize()
        start = time.perf_counter()
        t = x
        for _ in range(iterations):
            t = t + 1
            t = t * 2
            t = t - 1
        t.cpu()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds[1:])


def training_step_seconds(device, steps):
    """Median step time after two warm-up steps, and (on tpu) the executable cache's counts over
    the timed steps (a steady loop compiles nothing new: every lookup is a hit)."""
    import torch_tpu
    from torch_tpu.demo.train import TrainingStep

    trainer = TrainingStep(device)
    for k in range(2):
        trainer.step(k)
    if device != "tpu":
        seconds = []
        for k in range(2, 2 + steps):
            start = time.perf_counter()
            trainer.step(k)
            seconds.append(time.perf_counter() - start)
        return statistics.median(seconds), {"compiled": 0, "hits": 0, "hit_rate": None}
    before = torch_tpu.metrics()["programs"]
    seconds = []
    for k in range(2, 2 + steps):
        start = time.perf_counter()
        trainer.step(k)
        seconds.append(time.perf_counter() - start)
    after = torch_tpu.metrics()["programs"]
    compiled = after["compiled"] - before["compiled"]
    hits = after["cache_hits"] - before["cache_hits"]
    return statistics.median(seconds), {"compiled": compiled, "hits": hits,
                                        "hit_rate": hits / (hits + compiled) if hits + compiled else None}


def new_signature_compile_seconds(count):
    """Mean wall time of the first call of `count` new op signatures (add of a new shape, each
    a new program), and the executor's own compile seconds per program."""
    import torch
    import torch_tpu

    torch.ones(1, device="tpu").cpu()
    before = torch_tpu.metrics()["programs"]
    start = time.perf_counter()
    for n in range(1, count + 1):
        x = torch.ones(n, 3, device="tpu")
        (x + x).cpu()
    wall = time.perf_counter() - start
    after = torch_tpu.metrics()["programs"]
    compiled = after["compiled"] - before["compiled"]
    return {"first_call_ms": 1e3 * wall / count, "programs": compiled,
            "compile_ms": 1e3 * (after["compile_seconds"] - before["compile_seconds"]) / max(compiled, 1),
            "disk_cache": torch_tpu.runtime_info().get("disk_cache")}


def child(args):
    import torch_tpu

    torch_tpu.set_mode(args.mode)
    result = {"loop_seconds": elementwise_loop_seconds(args.device, args.size, args.iterations, args.repeats)}
    result["step_seconds"], result["steady_cache"] = training_step_seconds(args.device, args.steps)
    if args.signatures:
        result["signatures"] = new_signature_compile_seconds(args.signatures)
    print(json.dumps(result))


# ---- the parent ----

def measure(runtime, mode, args, signatures=0, cache_dir=None, device="tpu"):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCH_TPU_")}
    env["TORCH_TPU_RUNTIME"] = runtime
    if runtime == "pjrt":
        env["TORCH_TPU_PJRT_PLUGIN"] = args.plugin
    if cache_dir is not None:
        env["TORCH_TPU_PJRT_CACHE_DIR"] = cache_dir
    command = [sys.executable, __file__, "--child", "--device", device, "--mode", mode, "--size", str(args.size),
               "--iterations", str(args.iterations), "--repeats", str(args.repeats),
               "--steps", str(args.steps), "--signatures", str(signatures)]
    start = time.perf_counter()
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"{device} {runtime} {mode} ({time.perf_counter() - start:.0f} s):", json.dumps(result), flush=True)
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--plugin", default="cpu", help="the PJRT runs' plugin (cpu, cuda, tpu or a path)")
    parser.add_argument("--size", type=int, default=5000)
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--signatures", type=int, default=20)
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--mode", default="strict")
    parser.add_argument("--device", default="tpu", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    with tempfile.TemporaryDirectory() as cache:
        runs = {
            "pjrt strict": measure("pjrt", "strict", args, args.signatures, cache),
            # The same signatures again, from the on-disk cache the first process filled.
            "pjrt strict, disk cache": measure("pjrt", "strict", args, args.signatures, cache),
            "pjrt fused": measure("pjrt", "fused", args, 0, cache),
            "host fused": measure("host", "fused", args),
        }
        if args.plugin == "cuda":
            runs["torch cuda eager"] = measure("host", "strict", args, device="cuda")
    strict = runs["pjrt strict"]
    print(f"PJRT plugin {args.plugin!r}; elementwise loop ({args.size}x{args.size} float32, {args.iterations} x (+1, *2, -1), "
          f"median of {args.repeats}) and demo training step (median of {args.steps})")
    print(f"{'':<26}{'loop s':>9}{'vs strict':>11}{'step ms':>10}{'vs strict':>11}{'steady hit rate':>17}")
    for name, run in runs.items():
        cache = run["steady_cache"]
        rate = "-" if cache["hit_rate"] is None else f"{100 * cache['hit_rate']:.0f}%"
        print(f"{name:<26}{run['loop_seconds']:>9.3f}{strict['loop_seconds'] / run['loop_seconds']:>10.2f}x"
              f"{1e3 * run['step_seconds']:>10.1f}{strict['step_seconds'] / run['step_seconds']:>10.2f}x"
              f"{rate:>17}")
    for name in ("pjrt strict", "pjrt strict, disk cache"):
        s = runs[name]["signatures"]
        print(f"new op signature ({name}): first call {s['first_call_ms']:.1f} ms, "
              f"compile {s['compile_ms']:.1f} ms per program ({s['programs']} programs)")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    suffix = "" if args.plugin == "cpu" else f"_{os.path.basename(args.plugin).split('.')[0]}"
    with open(os.path.join(HERE, "results", f"pjrt_programs{suffix}.json"), "w") as f:
        json.dump({"args": vars(args), "runs": runs}, f, indent=1)


if __name__ == "__main__":
    main()
