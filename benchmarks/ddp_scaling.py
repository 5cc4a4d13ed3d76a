"""DDP weak scaling of the demo model: 2 ranks vs 1 process, tpu with tpu_dist and CPU with Gloo,
same run.

Model: the demo's Llama-style decoder (python/torch_tpu/demo/llama.py, default LlamaConfig: dim 128,
2 layers, 4 heads, ~0.46M parameters), batch 8 x seq 64 per rank (the demo's), AdamW, a
`loss.item()` every step as in the demo's loop; each rank trains on its own data. One training
step = forward, backward (DDP all-reduces the gradient buckets during it), optimizer step.

`python benchmarks/ddp_scaling.py` is the whole command: the script starts its own processes
(subprocesses of itself, torchrun's environment: RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE/
MASTER_*). Per repeat it runs three launches, in an order that rotates between repeats:
  ddp         2 rank processes, each with cores/2 threads (torchrun sets OMP_NUM_THREADS=1, too);
              default group Gloo: DDP on CPU; when `tpu_dist` is registered, a second group from
              dist.new_group(backend="tpu_dist"): DDP(model on tpu:LOCAL_RANK, device_ids=[LOCAL_RANK],
              process_group=that group). The two alternate within the launch.
  single      1 process with all cores, no DDP: the same model on CPU (and on tpu).
  single_half 1 process with cores/2 threads: what one rank's share of the machine does alone.
The step time is the median over repeats of the slowest rank's mean step time; tpu times end with
torch.tpu.synchronize().

  scaling efficiency = (samples/s with 2 ranks) / (2 x samples/s of 1 process)   (weak scaling)
                     = step time of `single` / step time of `ddp`.
On this machine the 2 ranks share the cores the single process uses, so compute alone caps the
efficiency near 1/(speed-up of 1 process from cores/2 to all cores threads), roughly 0.5 on 2 cores.
The script therefore also prints the share-normalised efficiency, step time of `single_half` / step
time of `ddp` (1.0 = DDP and its all-reduces cost nothing beyond the core sharing).

Target (proposed): tpu_dist's efficiency >= 0.9 x Gloo's (both measured here, same machine, same run).
When `tpu_dist` is not registered the script says so and measures only the CPU/Gloo reference.
Writes benchmarks/results/ddp_scaling.json.
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
from rank_launcher import DEVICE_OF, chosen_backends, launch
from torch_tpu.demo.llama import Llama, LlamaConfig
from torch_tpu.demo.train import make_batch

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
TARGET_RELATIVE = 0.9
LAUNCHES = ("ddp", "single", "single_half")


# --- process side --------------------------------------------------------------------------------

def sync_of(device):
    if device.type == "tpu":
        return lambda: torch.tpu.synchronize(device)
    return lambda: None


def train_steps(model, device, rank, args, barrier=None):
    """Warm-up steps, then `args.steps` timed steps; returns (seconds per step, last loss)."""
    config = LlamaConfig()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    data = torch.Generator().manual_seed(1 + 1000 * rank)  # each rank its own data
    batches = [make_batch(data, config, args.batch, args.seq) for _ in range(16)]
    sync = sync_of(device)
    loss_value = float("nan")
    for step in range(args.warmup + args.steps):
        if step == args.warmup:
            sync()
            if barrier is not None:
                barrier()
            start = time.perf_counter()
        inputs, targets = (t.to(device) for t in batches[step % len(batches)])
        _, loss = model(inputs, targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        loss_value = loss.item()  # a host sync every step, as the demo's loop logs
    sync()
    return (time.perf_counter() - start) / args.steps, loss_value


def new_model(device):
    torch.manual_seed(0)
    return Llama(LlamaConfig()).to(device)


def check_device(local_rank):
    if torch.tpu.device_count() <= local_rank:
        raise RuntimeError(
            f"tpu:{local_rank} does not exist ({torch.tpu.device_count()} chip(s) with "
            f"LOCAL_WORLD_SIZE={os.environ.get('LOCAL_WORLD_SIZE')}); the host runtime must expose "
            "LOCAL_WORLD_SIZE chips (or set TORCH_TPU_HOST_CHIPS)")
    return torch.device("tpu", local_rank)


def worker_single(args, backends):
    results = {}
    for backend in backends:
        device = torch.device("cpu") if backend == "gloo" else check_device(0)
        seconds, loss = train_steps(new_model(device), device, 0, args)
        results[backend] = {"step_s": seconds, "loss": loss}
    return results


def worker_ddp(args, backends):
    from torch.nn.parallel import DistributedDataParallel as DDP

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group("gloo", rank=rank, world_size=world)
    host = dist.group.WORLD  # barriers and timing reductions go through Gloo on CPU
    groups, devices = {}, {}
    for backend in backends:
        if backend == "gloo":
            groups[backend], devices[backend] = host, torch.device("cpu")
        else:
            devices[backend] = check_device(local_rank)
            torch.tpu.set_device(devices[backend])
            groups[backend] = dist.new_group(backend="tpu_dist")
    results = {}
    for backend in backends:
        device = devices[backend]
        model = DDP(new_model(device), device_ids=[local_rank] if device.type == "tpu" else None,
                    process_group=groups[backend])
        seconds, loss = train_steps(model, device, rank, args, barrier=lambda: dist.barrier(group=host))
        # Replicas must stay identical under DDP: compare a checksum of the parameters.
        checksum = sum(p.detach().double().sum().cpu() for p in model.parameters())
        stats = torch.tensor([seconds, checksum.item(), -checksum.item()], dtype=torch.float64)
        dist.all_reduce(stats, op=dist.ReduceOp.MAX, group=host)
        losses = [None] * world
        dist.all_gather_object(losses, loss, group=host)
        results[backend] = {"step_s": stats[0].item(), "loss": losses,
                            "replicas_identical": stats[1].item() == -stats[2].item()}
        del model
    dist.barrier(group=host)
    dist.destroy_process_group()
    return results if rank == 0 else None


def worker(args):
    torch.set_num_threads(args.threads)
    backends = args.backends.split(",")
    results = worker_single(args, backends) if args.mode.startswith("single") else worker_ddp(args, backends)
    if results is not None:
        results["threads"] = torch.get_num_threads()
        with open(args.out, "w") as f:
            json.dump(results, f)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backends", default="gloo,tpu_dist",
                        help="comma-separated; gloo (DDP on CPU, the reference) is always measured, "
                             "tpu_dist (DDP on tpu) is skipped with a note when it is not registered")
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--steps", type=int, default=30, help="timed steps per measurement")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3, help="interleaved repeats (median taken)")
    parser.add_argument("--batch", type=int, default=8, help="per-rank batch (sequences)")
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--timeout", type=float, default=300, help="seconds per launch")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=LAUNCHES, help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return

    backends, note = chosen_backends(parser, args.backends, "the CPU/Gloo reference")

    cores = os.cpu_count() or 1
    world = args.world_size
    threads = {"ddp": max(1, cores // world), "single": cores, "single_half": max(1, cores // world)}
    print(f"{cores} cores on this machine: the {world} DDP ranks share the cores that the single "
          f"process uses alone ({threads['ddp']} thread(s) per rank vs {cores}).")
    print(f"demo Llama (default LlamaConfig), per-rank batch {args.batch} x seq {args.seq}, AdamW; "
          f"{args.steps} timed steps after {args.warmup}, {args.repeats} interleaved repeats")
    worker_argv = ["--backends", ",".join(backends), "--steps", str(args.steps),
                   "--warmup", str(args.warmup), "--batch", str(args.batch), "--seq", str(args.seq)]
    runs = {launch_mode: [] for launch_mode in LAUNCHES}
    started = time.perf_counter()
    for repeat in range(args.repeats):
        order = LAUNCHES[repeat % len(LAUNCHES):] + LAUNCHES[:repeat % len(LAUNCHES)]
        took = []
        for launch_mode in order:
            procs = world if launch_mode == "ddp" else 1
            launched = time.perf_counter()
            try:
                runs[launch_mode].append(
                    launch(__file__, procs, ["--mode", launch_mode, "--threads",
                           str(threads[launch_mode]), *worker_argv], args.timeout,
                           threads=threads[launch_mode], label=launch_mode))
            except RuntimeError as error:
                hint = (" (rerun with --backends gloo to measure the CPU/Gloo reference alone)"
                        if len(backends) > 1 else "")
                sys.exit(f"ddp_scaling: {error}{hint}")
            took.append(f"{launch_mode} {time.perf_counter() - launched:.1f}s")
        print(f"repeat {repeat + 1}/{args.repeats}: " + ", ".join(took), flush=True)
    wall = time.perf_counter() - started

    def median_step(launch_mode, backend):
        return statistics.median(r[backend]["step_s"] for r in runs[launch_mode])

    rows = {}
    print(f"{'device/backend':<16}{'config':<26}{'step ms':>9}{'samples/s':>11}{'efficiency':>12}"
          f"{'vs shared':>11}")
    for backend in backends:
        device = DEVICE_OF[backend]
        single, half, ddp = (median_step(m, backend) for m in ("single", "single_half", "ddp"))
        row = {
            "device": device,
            "single": {"step_ms": single * 1e3, "samples_per_s": args.batch / single,
                       "threads": threads["single"]},
            "single_half": {"step_ms": half * 1e3, "samples_per_s": args.batch / half,
                            "threads": threads["single_half"]},
            "ddp": {"step_ms": ddp * 1e3, "samples_per_s": world * args.batch / ddp,
                    "threads_per_rank": threads["ddp"],
                    "replicas_identical": all(r[backend]["replicas_identical"] for r in runs["ddp"]),
                    "final_losses": runs["ddp"][-1][backend]["loss"]},
            "efficiency": single / ddp,
            "efficiency_vs_shared_cores": half / ddp,
            "step_ms_repeats": {m: [r[backend]["step_s"] * 1e3 for r in runs[m]] for m in LAUNCHES},
            "step_ms_best": {m: min(r[backend]["step_s"] for r in runs[m]) * 1e3 for m in LAUNCHES},
        }
        rows[backend] = row
        label = f"{device}/{backend}"
        configs = (f"1 process, {threads['single']} threads",
                   f"1 process, {threads['single_half']} thread(s)",
                   f"DDP {world} ranks x {threads['ddp']} thr")
        print(f"{label:<16}{configs[0]:<26}{single * 1e3:>9.2f}{args.batch / single:>11.1f}")
        print(f"{'':<16}{configs[1]:<26}{half * 1e3:>9.2f}{args.batch / half:>11.1f}")
        print(f"{'':<16}{configs[2]:<26}{ddp * 1e3:>9.2f}{world * args.batch / ddp:>11.1f}"
              f"{single / ddp:>12.2f}{half / ddp:>11.2f}")
        if not row["ddp"]["replicas_identical"]:
            print(f"WARNING: {backend}: DDP replicas ended with different parameters")
    print(f"efficiency = samples/s({world} ranks) / ({world} x samples/s(1 process, all cores)); "
          f"vs shared = the same against 1 process with {threads['single_half']} thread(s)")
    print(f"NOTE: {cores} cores: the {world} ranks share the cores the single process uses, so "
          "efficiency is capped by compute near 1/(thread speed-up of 1 process), not 1.0.")
    if "tpu_dist" in rows:
        relative = rows["tpu_dist"]["efficiency"] / rows["gloo"]["efficiency"]
        met = relative >= TARGET_RELATIVE
        print(f"tpu_dist efficiency / gloo efficiency: {relative:.2f}   "
              f"(target >= {TARGET_RELATIVE}: {'met' if met else 'NOT met'})")
    else:
        relative = met = None
        print(f"target: tpu_dist efficiency >= {TARGET_RELATIVE} x gloo's (not measured: no tpu_dist)")
    load = os.getloadavg()
    print(f"wall time {wall:.1f}s; load average after the run {load[0]:.2f} (1 min) on {cores} cores"
          " (other processes on the machine skew the numbers)")

    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "ddp_scaling.json"), "w") as f:
        json.dump({"model": "demo Llama, default LlamaConfig", "world_size": world, "cores": cores,
                   "batch_per_rank": args.batch, "seq": args.seq, "steps": args.steps,
                   "repeats": args.repeats, "backends": backends, "note": note,
                   "cores_note": f"{cores} cores: the {world} ranks share the cores the single "
                                 "process uses alone",
                   "target": f"tpu_dist efficiency >= {TARGET_RELATIVE} x gloo efficiency",
                   "tpu_dist_vs_gloo_efficiency": relative, "target_met": met, "rows": rows,
                   "wall_seconds": wall,
                   "loadavg_1_5_15_after": load}, f, indent=2)


if __name__ == "__main__":
    main()
