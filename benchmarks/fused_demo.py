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

All contenders live in one process and run in rounds of short blocks (benchmarks/paired_blocks.py):
each ratio is the median over rounds of the two contenders' block times in the same round, so a
slow spell of the machine during one contender's run cannot decide it. Rates are of the median
block. Writes benchmarks/results/fused_demo.json.
"""

import argparse
import json
import os

import torch

import torch_tpu
from compute_floor import heavy_calls_of, seconds_per_replay
from demo_contenders import inference_block, training_block, use_mode
from torch_tpu.demo.llama import Llama, LlamaConfig
from torch_tpu.demo.train import make_batch
from paired_blocks import median_rate, median_speedup, time_rounds
import step_phases
from two_core_capacity import describe, two_thread_throughput

HERE = os.path.dirname(os.path.abspath(__file__))
CONTENDERS = ["cpu_eager", "inductor", "strict", "fused"]


def peak_training_memory(contender, steps):
    """Peak device memory over `steps` training steps after warm-up, in bytes."""
    block = training_block(contender, steps)
    block()
    torch.tpu.synchronize()
    torch.tpu.reset_peak_memory_stats()
    block()
    return torch.tpu.max_memory_allocated()


def issue_and_execution_ms(contender, config, batches, steps, warmup):
    """(R, E) of a training step in ms (benchmarks/step_phases.py)."""
    use_mode(contender)
    torch.manual_seed(0)
    model = Llama(config).to("tpu")
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)

    def forward(step):
        inputs, targets = (t.to("tpu") for t in batches[step % len(batches)])
        return model(inputs, targets)[1]

    def backward(loss):
        optimizer.zero_grad(set_to_none=True)
        loss.backward()

    phases = step_phases.issue_and_execution_ms(forward, backward, optimizer.step, steps, warmup)
    torch_tpu.set_mode("strict")
    return phases


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
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--block-steps", type=int, default=10)
    parser.add_argument("--warmup-blocks", type=int, default=2)
    parser.add_argument("--inference-batch", type=int, default=32)
    args = parser.parse_args()
    config = LlamaConfig()
    data = torch.Generator().manual_seed(1)
    batches = [make_batch(data, config, 8, 64) for _ in range(16)]
    inference_inputs = make_batch(data, config, args.inference_batch, 64)[0]

    capacity_start = two_thread_throughput()
    peak = {c: peak_training_memory(c, args.block_steps) for c in ("strict", "fused")}
    training = {c: training_block(c, args.block_steps) for c in CONTENDERS}
    inference = {c: inference_block(c, config, inference_inputs, args.block_steps) for c in CONTENDERS}
    for blocks in (training, inference):
        time_rounds(blocks, args.warmup_blocks)  # compiles, caches, fused kernels
    torch_tpu.wait_for_kernel_compiles()
    train_seconds = time_rounds(training, args.rounds)
    infer_seconds = time_rounds(inference, args.rounds)
    train_floor, infer_floor = compute_floors(config, batches[0], inference_inputs)
    phases = {c: issue_and_execution_ms(c, config, batches, 30, 5) for c in ("strict", "fused")}
    capacity_end = two_thread_throughput()
    tokens = args.block_steps * batches[0][0].numel()
    sequences = args.block_steps * args.inference_batch
    train = {c: median_rate(train_seconds, c, tokens) for c in CONTENDERS}
    infer = {c: median_rate(infer_seconds, c, sequences) for c in CONTENDERS}
    train_vs_strict = {c: median_speedup(train_seconds, c, "strict") for c in CONTENDERS}
    infer_vs_strict = {c: median_speedup(infer_seconds, c, "strict") for c in CONTENDERS}
    train_vs_cpu = median_speedup(train_seconds, "fused", "cpu_eager")
    infer_vs_cpu = median_speedup(infer_seconds, "fused", "cpu_eager")

    print(f"training step (batch 8 x seq 64, AdamW); median of {args.rounds} rounds of "
          f"{args.block_steps}-step blocks:")
    for c in CONTENDERS:
        print(f"  {c:<10}{train[c]:>10,.0f} tokens/s   {train_vs_strict[c]:>5.2f}x Strict")
    print(f"  peak device memory: strict {peak['strict'] / 2**20:.1f} MiB, fused "
          f"{peak['fused'] / 2**20:.1f} MiB ({peak['fused'] / peak['strict']:.2f}x; target <= 0.75)")
    print(f"  fused vs Strict {train_vs_strict['fused']:.2f}x (target >= 1.5), "
          f"vs CPU eager {train_vs_cpu:.2f}x")
    print(f"  compute floor (matmul + attention kernels only): {train_floor:,.0f} tokens/s = "
          f"{train_floor / train['strict']:.2f}x Strict, the most any mode could reach")
    step_tokens = batches[0][0].numel()
    strict_ms = step_tokens / train["strict"] * 1e3
    floor_ms = step_tokens / train_floor * 1e3
    for c, (r, e) in phases.items():
        bound_ms = (r + 2 * e) / 2
        print(f"  {c}: issue R {r:.2f} ms, execution E {e:.2f} ms a step; both cores always busy: (R + 2E)/2 "
              f"= {bound_ms:.2f} ms = {strict_ms / bound_ms:.2f}x Strict's measured step")
    r_fused = phases["fused"][0]
    print(f"  1.5x Strict ({strict_ms / 1.5:.2f} ms a step) needs E <= {strict_ms / 1.5 - r_fused / 2:.2f} ms "
          f"with fused's R; the matmul + attention kernels alone take {floor_ms:.2f} ms")
    print(f"inference (forward, batch {args.inference_batch} x seq 64):")
    for c in CONTENDERS:
        print(f"  {c:<10}{infer[c]:>10,.1f} sequences/s {infer_vs_strict[c]:>5.2f}x Strict")
    print(f"  fused vs Strict {infer_vs_strict['fused']:.2f}x (target >= 1.5), "
          f"vs CPU eager {infer_vs_cpu:.2f}x")
    print(f"  compute floor (matmul + attention kernels only): {infer_floor:,.1f} sequences/s = "
          f"{infer_floor / infer['strict']:.2f}x Strict, the most any mode could reach")
    print(describe(capacity_start, capacity_end))
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "fused_demo.json"), "w") as f:
        json.dump({"cpus": os.cpu_count(), "training_tokens_per_second": train,
                   "peak_memory_bytes": peak, "inference_sequences_per_second": infer,
                   "training_vs_strict": train_vs_strict, "inference_vs_strict": infer_vs_strict,
                   "training_fused_vs_strict": train_vs_strict["fused"],
                   "peak_memory_fused_vs_strict": peak["fused"] / peak["strict"],
                   "inference_fused_vs_strict": infer_vs_strict["fused"],
                   "training_compute_floor_tokens_per_second": train_floor,
                   "inference_compute_floor_sequences_per_second": infer_floor,
                   "training_issue_and_execution_ms": phases,
                   "block_seconds": {"training": train_seconds, "inference": infer_seconds},
                   "two_thread_throughput": [capacity_start, capacity_end]}, f, indent=2)


if __name__ == "__main__":
    main()
