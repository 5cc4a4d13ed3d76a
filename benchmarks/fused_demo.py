"""The demo model (small Llama, python/torch_tpu/demo) in fused mode vs its baselines, in one
run: tpu Strict, PyTorch CPU eager and torch.compile (Inductor, CPU).

- Training step (forward, backward, AdamW, loss.item() each step): tokens/s, and peak device
  memory for tpu modes. Targets (issue #4): fused >= 1.5x Strict tokens/s, peak memory <= 0.75x.
- Inference (forward of a batch of sequences, logits read back): sequences/s. Target: fused >=
  1.5x Strict.
- Where a training step's time goes, for Strict and fused: the host's time to issue (or record)
  the step's ops, R, and the time the host then spends running them with its two threads when it
  waits after each phase, E (measured in a loop of their own). On a 2-core host a step takes
  about (R + 2E) / 2 at best (both cores busy all the time), which says what less issue or
  execution work could buy.

Also measures each workload's compute floor (benchmarks/compute_floor.py): its matmul and
attention kernels alone, which every mode runs unchanged, so Strict's time over the floor is
the most fusion could gain here.

Also prints what a second busy thread added on this machine at the start and the end of the run
(benchmarks/two_core_capacity.py): every tpu mode's overlap depends on it.

Interleaved repeats, medians. Writes benchmarks/results/fused_demo.json.
"""

import argparse
import json
import os
import statistics
import time

import torch

import torch_tpu
from compute_floor import heavy_calls_of, seconds_per_replay
from torch_tpu.demo.llama import Llama, LlamaConfig
from torch_tpu.demo.train import make_batch
from two_core_capacity import describe, two_thread_throughput

HERE = os.path.dirname(os.path.abspath(__file__))
CONTENDERS = ["cpu_eager", "inductor", "strict", "fused"]


def setup(contender, config, seed=0):
    device = "cpu" if contender in ("cpu_eager", "inductor") else "tpu"
    torch_tpu.set_mode("fused" if contender == "fused" else "strict")
    torch.manual_seed(seed)
    model = Llama(config).to(device)
    step_model = torch.compile(model, backend="inductor") if contender == "inductor" else model
    return device, model, step_model


def train_tokens_per_second(contender, config, batches, steps, warmup):
    device, model, step_model = setup(contender, config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    if device == "tpu":
        torch.tpu.synchronize()
        torch.tpu.reset_peak_memory_stats()
    start = None
    for step in range(steps):
        if step == warmup:
            start = time.perf_counter()
        inputs, targets = (t.to(device) for t in batches[step % len(batches)])
        _, loss = step_model(inputs, targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        loss.item()
    elapsed = time.perf_counter() - start
    tokens = (steps - warmup) * batches[0][0].numel()
    peak = torch.tpu.max_memory_allocated() if device == "tpu" else 0
    torch_tpu.set_mode("strict")
    return tokens / elapsed, peak


def inference_sequences_per_second(contender, config, inputs, iterations, warmup):
    device, _, step_model = setup(contender, config)
    tokens = inputs.to(device)
    with torch.no_grad():
        for i in range(warmup + iterations):
            if i == warmup:
                start = time.perf_counter()
            step_model(tokens).cpu()
    elapsed = time.perf_counter() - start
    torch_tpu.set_mode("strict")
    return iterations * inputs.shape[0] / elapsed


def issue_and_execution_ms(contender, config, batches, steps, warmup):
    """(R, E) of a training step in ms, medians: host time issuing forward, backward and the
    optimizer step (R), and time spent in a synchronize after each of them (E: the queued work,
    run by the waiting host with its thread team)."""
    _, model, _ = setup(contender, config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    issue, execution = [], []
    for step in range(steps):
        inputs, targets = (t.to("tpu") for t in batches[step % len(batches)])
        torch.tpu.synchronize()
        phases = [lambda: model(inputs, targets)[1],
                  lambda: (optimizer.zero_grad(set_to_none=True), loss.backward()),
                  lambda: optimizer.step()]
        r = e = 0.0
        for k, phase in enumerate(phases):
            start = time.perf_counter()
            result = phase()
            issued = time.perf_counter()
            torch.tpu.synchronize()
            r, e = r + issued - start, e + time.perf_counter() - issued
            if k == 0:
                loss = result
        if step >= warmup:
            issue.append(r * 1e3)
            execution.append(e * 1e3)
    torch_tpu.set_mode("strict")
    return statistics.median(issue), statistics.median(execution)


def compute_floors(config, batch, inference_inputs):
    """(training tokens/s, inference sequences/s) if a step took only its heavy kernels."""
    torch.manual_seed(0)
    model = Llama(config)
    inputs, targets = batch

    def training_step():
        model(inputs, targets)[1].backward()

    def inference_step():
        with torch.no_grad():
            model(inference_inputs)

    training = inputs.numel() / seconds_per_replay(heavy_calls_of(training_step))
    inference = inference_inputs.shape[0] / seconds_per_replay(heavy_calls_of(inference_step))
    return training, inference


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--inference-batch", type=int, default=32)
    args = parser.parse_args()
    config = LlamaConfig()
    data = torch.Generator().manual_seed(1)
    batches = [make_batch(data, config, args.batch, args.seq) for _ in range(16)]
    inference_inputs = make_batch(data, config, args.inference_batch, args.seq)[0]

    capacity_start = two_thread_throughput()
    train_rates = {c: [] for c in CONTENDERS}
    peaks = {"strict": [], "fused": []}
    infer_rates = {c: [] for c in CONTENDERS}
    for _ in range(args.repeats):
        for contender in CONTENDERS:
            rate, peak = train_tokens_per_second(contender, config, batches, args.steps, args.warmup)
            train_rates[contender].append(rate)
            if contender in peaks:
                peaks[contender].append(peak)
            infer_rates[contender].append(inference_sequences_per_second(
                contender, config, inference_inputs, args.steps, args.warmup))
    train_floor, infer_floor = compute_floors(config, batches[0], inference_inputs)
    phases = {c: issue_and_execution_ms(c, config, batches, args.steps, args.warmup)
              for c in ("strict", "fused")}
    capacity_end = two_thread_throughput()
    train = {c: statistics.median(v) for c, v in train_rates.items()}
    infer = {c: statistics.median(v) for c, v in infer_rates.items()}
    peak = {c: max(v) for c, v in peaks.items()}

    print(f"training step (batch {args.batch} x seq {args.seq}, AdamW), median of {args.repeats}:")
    for c in CONTENDERS:
        print(f"  {c:<10}{train[c]:>10,.0f} tokens/s   {train[c] / train['strict']:>5.2f}x Strict")
    print(f"  peak device memory: strict {peak['strict'] / 2**20:.1f} MiB, fused "
          f"{peak['fused'] / 2**20:.1f} MiB ({peak['fused'] / peak['strict']:.2f}x; target <= 0.75)")
    print(f"  fused vs Strict {train['fused'] / train['strict']:.2f}x (target >= 1.5)")
    print(f"  compute floor (matmul + attention kernels only): {train_floor:,.0f} tokens/s = "
          f"{train_floor / train['strict']:.2f}x Strict, the most any mode could reach")
    tokens = args.batch * args.seq
    strict_ms = tokens / train["strict"] * 1e3
    floor_ms = tokens / train_floor * 1e3
    for c, (r, e) in phases.items():
        bound_ms = (r + 2 * e) / 2
        print(f"  {c}: issue R {r:.2f} ms, execution E {e:.2f} ms a step; both cores always busy: (R + 2E)/2 "
              f"= {bound_ms:.2f} ms = {strict_ms / bound_ms:.2f}x Strict's measured step")
    r_fused = phases["fused"][0]
    print(f"  1.5x Strict ({strict_ms / 1.5:.2f} ms a step) needs E <= {strict_ms / 1.5 - r_fused / 2:.2f} ms "
          f"with fused's R; the matmul + attention kernels alone take {floor_ms:.2f} ms")
    print(f"inference (forward, batch {args.inference_batch} x seq {args.seq}):")
    for c in CONTENDERS:
        print(f"  {c:<10}{infer[c]:>10,.1f} sequences/s {infer[c] / infer['strict']:>5.2f}x Strict")
    print(f"  fused vs Strict {infer['fused'] / infer['strict']:.2f}x (target >= 1.5)")
    print(f"  compute floor (matmul + attention kernels only): {infer_floor:,.1f} sequences/s = "
          f"{infer_floor / infer['strict']:.2f}x Strict, the most any mode could reach")
    print(describe(capacity_start, capacity_end))
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "fused_demo.json"), "w") as f:
        json.dump({"cpus": os.cpu_count(), "training_tokens_per_second": train,
                   "peak_memory_bytes": peak, "inference_sequences_per_second": infer,
                   "training_fused_vs_strict": train["fused"] / train["strict"],
                   "peak_memory_fused_vs_strict": peak["fused"] / peak["strict"],
                   "inference_fused_vs_strict": infer["fused"] / infer["strict"],
                   "training_compute_floor_tokens_per_second": train_floor,
                   "inference_compute_floor_sequences_per_second": infer_floor,
                   "training_issue_and_execution_ms": phases,
                   "two_thread_throughput": [capacity_start, capacity_end]}, f, indent=2)


if __name__ == "__main__":
    main()
