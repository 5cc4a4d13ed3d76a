"""Collective bus bandwidth on 2 ranks: tpu_dist on tpu tensors vs Gloo on CPU tensors, same run.

all_reduce, all_gather (all_gather_into_tensor) and reduce_scatter (reduce_scatter_tensor), float32,
4 KiB to 64 MiB in powers of 4. `python benchmarks/collectives.py` is the whole command: the script
starts its own rank processes (subprocesses of itself with RANK/WORLD_SIZE/LOCAL_RANK/
LOCAL_WORLD_SIZE/MASTER_* set, like torchrun). Each rank makes the default group with Gloo (the
baseline, CPU tensors) and, when the `tpu_dist` backend is registered, a second group with
`dist.new_group(backend="tpu_dist")` for tensors on torch.device("tpu", LOCAL_RANK). Measurements
are interleaved per size and op (repeat 1: gloo then tpu_dist, repeat 2: the reverse, ...); each
reported time is the median over repeats of the slowest rank's time per call, and the ratio
(tpu_dist busbw / gloo busbw) is the median over repeats of the ratio of two back-to-back loops.

Definitions are those of nccl-tests: size S = bytes of the full buffer (all_reduce: the tensor;
all_gather: the gathered output; reduce_scatter: the input), algbw = S / time, busbw = algbw * 2(n-1)/n
for all_reduce and algbw * (n-1)/n for all_gather and reduce_scatter (n = ranks). The tpu time
includes the device: after the timed loop each rank calls torch.tpu.synchronize() before stopping
the clock. Each (size, op, backend) is checked for the right result once before it is timed.

Prints a table (size, op, gloo busbw, tpu_dist busbw, ratio) and writes
benchmarks/results/collectives.json. Target: ratio tpu_dist/gloo >= 0.9 for every op from 1 MiB up.
When `tpu_dist` is not registered the script says so and measures only the Gloo baseline.
"""

import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

import torch_tpu  # noqa: F401  (registers tpu)
from rank_launcher import chosen_backends, launch

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
OPS = ("all_reduce", "all_gather", "reduce_scatter")
DEFAULT_SIZES = [4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]
TARGET_FROM_BYTES = 1 << 20
TARGET_RATIO = 0.9


def human(nbytes: int) -> str:
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift and nbytes % (1 << shift) == 0:
            return f"{nbytes >> shift}{unit}"
    return f"{nbytes}B"


def bus_factor(op: str, n: int) -> float:
    return 2 * (n - 1) / n if op == "all_reduce" else (n - 1) / n


# --- rank side -----------------------------------------------------------------------------------

def _all_gather(out, inp, group):
    # torch 2.13 renamed all_gather_into_tensor to all_gather_single (the old name is a wrapper
    # that warns on every call); both reach the backend's _allgather_base.
    fn = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    fn(out, inp, group=group)


def _reduce_scatter(out, inp, group):
    fn = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    fn(out, inp, group=group)


def make_buffers(op, nbytes, world, device):
    numel = nbytes // 4
    if op == "all_reduce":
        return torch.empty(numel, device=device), None
    if op == "all_gather":
        return torch.empty(numel // world, device=device), torch.empty(numel, device=device)
    return torch.empty(numel, device=device), torch.empty(numel // world, device=device)


def run_op(op, inp, out, group):
    if op == "all_reduce":
        dist.all_reduce(inp, group=group)
    elif op == "all_gather":
        _all_gather(out, inp, group)
    else:
        _reduce_scatter(out, inp, group)


def check_op(op, inp, out, group, rank, world, sync):
    """Runs the op once on known values and checks the result (a wrong collective would make the
    bandwidth meaningless); leaves the buffers zeroed for timing."""
    inp.fill_(float(rank + 1))
    run_op(op, inp, out, group)
    sync()
    total = world * (world + 1) / 2
    if op == "all_reduce":
        expected = torch.full_like(inp, total)
        got = inp
    elif op == "all_gather":
        expected = torch.arange(1, world + 1, dtype=torch.float32, device=out.device)
        expected = expected.repeat_interleave(out.numel() // world)
        got = out
    else:
        expected = torch.full_like(out, total)
        got = out
    if not torch.equal(got.cpu(), expected.cpu()):
        raise RuntimeError(f"{op} on {inp.device} gave a wrong result on rank {rank}")
    inp.zero_()
    if out is not None:
        out.zero_()


def iterations_for(nbytes, target_bytes, min_iters, max_iters):
    return max(min_iters, min(max_iters, target_bytes // nbytes))


def worker(args):
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // world))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    host = dist.group.WORLD  # barriers and timing reductions always go through Gloo on CPU
    backends = args.backends.split(",")
    groups, devices, syncs = {}, {}, {}
    for backend in backends:
        if backend == "gloo":
            groups[backend], devices[backend], syncs[backend] = host, torch.device("cpu"), lambda: None
        elif backend == "tpu_dist":
            if torch.tpu.device_count() <= local_rank:
                raise RuntimeError(
                    f"rank {rank}: tpu:{local_rank} does not exist ({torch.tpu.device_count()} chip(s) "
                    f"with LOCAL_WORLD_SIZE={os.environ.get('LOCAL_WORLD_SIZE')}); the host runtime "
                    "must expose LOCAL_WORLD_SIZE chips (or set TORCH_TPU_HOST_CHIPS)")
            device = torch.device("tpu", local_rank)
            torch.tpu.set_device(device)
            groups[backend] = dist.new_group(backend="tpu_dist")
            devices[backend] = device
            syncs[backend] = lambda d=device: torch.tpu.synchronize(d)
        else:
            raise ValueError(f"unknown backend {backend!r} (known: gloo, tpu_dist)")

    def timed(backend, op, inp, out, iters):
        sync = syncs[backend]
        sync()
        dist.barrier(group=host)
        start = time.perf_counter()
        for _ in range(iters):
            run_op(op, inp, out, groups[backend])
        sync()
        elapsed = torch.tensor([(time.perf_counter() - start) / iters], dtype=torch.float64)
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX, group=host)  # the slowest rank's time
        return elapsed.item()

    rows = []
    for nbytes in args.sizes:
        iters = iterations_for(nbytes, args.target_bytes, args.min_iters, args.max_iters)
        for op in OPS:
            buffers = {}
            for backend in backends:
                inp, out = make_buffers(op, nbytes, world, devices[backend])
                check_op(op, inp, out, groups[backend], rank, world, syncs[backend])
                for _ in range(args.warmup):
                    run_op(op, inp, out, groups[backend])
                syncs[backend]()
                buffers[backend] = (inp, out)
            times = {backend: [] for backend in backends}
            for repeat in range(args.repeats):
                order = backends if repeat % 2 == 0 else backends[::-1]
                for backend in order:
                    times[backend].append(timed(backend, op, *buffers[backend], iters))
            row = {"bytes": nbytes, "op": op, "iterations": iters}
            for backend in backends:
                seconds = statistics.median(times[backend])
                algbw = nbytes / seconds / 1e9
                row[backend] = {"us": seconds * 1e6, "algbw_gbps": algbw,
                                "busbw_gbps": algbw * bus_factor(op, world),
                                "us_repeats": [t * 1e6 for t in times[backend]]}
            if "tpu_dist" in backends:
                # Paired: each repeat's tpu_dist and gloo loops ran back to back, so their ratio
                # is less exposed to the machine's drift than a ratio of two medians.
                row["ratio"] = statistics.median(
                    g / t for g, t in zip(times["gloo"], times["tpu_dist"]))
            rows.append(row)
            del buffers
    if rank == 0:
        with open(args.out, "w") as f:
            json.dump(rows, f)
    dist.barrier(group=host)
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backends", default="gloo,tpu_dist",
                        help="comma-separated; gloo (CPU tensors, the baseline) is always measured, "
                             "tpu_dist is skipped with a note when it is not registered")
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--sizes", default=",".join(str(s) for s in DEFAULT_SIZES),
                        help="bytes of the full buffer, comma-separated")
    parser.add_argument("--repeats", type=int, default=7, help="interleaved repeats (median taken)")
    parser.add_argument("--target-bytes", type=int, default=64 << 20,
                        help="bytes moved per timed loop: iterations = target / size, clamped")
    parser.add_argument("--min-iters", type=int, default=3)
    parser.add_argument("--max-iters", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600, help="seconds for the whole launch")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",")]
    if args.worker:
        worker(args)
        return

    backends, note = chosen_backends(parser, args.backends, "the Gloo baseline")
    for nbytes in args.sizes:
        if nbytes % (4 * args.world_size):
            parser.error(f"size {nbytes} is not a multiple of 4 * world size")

    cores = os.cpu_count()
    print(f"{args.world_size} ranks on {cores} cores, float32, {args.repeats} interleaved repeats "
          f"(median of the slowest rank); backends: {', '.join(backends)}")
    worker_argv = ["--backends", ",".join(backends), "--sizes", ",".join(map(str, args.sizes)),
                   "--repeats", str(args.repeats), "--target-bytes", str(args.target_bytes),
                   "--min-iters", str(args.min_iters), "--max-iters", str(args.max_iters),
                   "--warmup", str(args.warmup)]
    started = time.perf_counter()
    try:
        rows = launch(__file__, args.world_size, worker_argv, args.timeout,
                      threads=max(1, (os.cpu_count() or 1) // args.world_size))
    except RuntimeError as error:
        hint = " (rerun with --backends gloo to measure the baseline alone)" if len(backends) > 1 else ""
        sys.exit(f"collectives: {error}{hint}")
    wall = time.perf_counter() - started

    has_tpu = "tpu_dist" in backends
    print(f"{'size':>8}  {'op':<15}{'iters':>6}{'gloo us':>11}{'gloo busbw':>12}"
          f"{'tpu_dist us':>13}{'tpu_dist busbw':>16}{'ratio':>8}")
    for row in rows:
        gloo = row["gloo"]
        line = (f"{human(row['bytes']):>8}  {row['op']:<15}{row['iterations']:>6}{gloo['us']:>11.1f}"
                f"{gloo['busbw_gbps']:>12.3f}")
        if has_tpu:
            tpu = row["tpu_dist"]
            line += f"{tpu['us']:>13.1f}{tpu['busbw_gbps']:>16.3f}{row['ratio']:>8.2f}"
        else:
            row["ratio"] = None
            line += f"{'-':>13}{'-':>16}{'n/a':>8}"
        print(line)
    print("us = median time per call; busbw in GB/s (1e9 B/s), nccl-tests definitions; ratio = "
          "tpu_dist busbw / gloo busbw,\nthe median over repeats of the ratio of the two back-to-back "
          "loops (so it can differ slightly from the quotient of the two median columns)")

    summary = {}
    for op in OPS:
        ratios = [r["ratio"] for r in rows
                  if r["op"] == op and r["bytes"] >= TARGET_FROM_BYTES and r["ratio"] is not None]
        summary[op] = min(ratios) if ratios else None
    if has_tpu:
        met = all(v is not None and v >= TARGET_RATIO for v in summary.values())
        worst = ", ".join(f"{op} {v:.2f}" for op, v in summary.items() if v is not None)
        print(f"min ratio from {human(TARGET_FROM_BYTES)} up: {worst}   "
              f"(target >= {TARGET_RATIO}: {'met' if met else 'NOT met'})")
    else:
        met = None
        print(f"target: ratio tpu_dist/gloo >= {TARGET_RATIO} from {human(TARGET_FROM_BYTES)} up "
              "(not measured: no tpu_dist)")
    load = os.getloadavg()
    print(f"wall time {wall:.1f}s; load average after the run {load[0]:.2f} (1 min) on {cores} cores"
          " (other processes on the machine skew the numbers)")

    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "collectives.json"), "w") as f:
        json.dump({"world_size": args.world_size, "cores": cores, "dtype": "float32",
                   "backends": backends, "note": note, "repeats": args.repeats,
                   "target": f"busbw ratio tpu_dist/gloo >= {TARGET_RATIO} from "
                             f"{human(TARGET_FROM_BYTES)} up",
                   "min_ratio_from_1MiB": summary, "target_met": met, "rows": rows,
                   "wall_seconds": wall,
                   "loadavg_1_5_15_after": load}, f, indent=2)


if __name__ == "__main__":
    main()
