"""Fused mode on the model zoo (python/torch_tpu/demo/zoo.py: the demo's decoder, GPT-2-, BERT-
and ViT-style transformers, a CNN with batch norm, an LSTM language model) against tpu Strict,
with PyTorch CPU eager and torch.compile (Inductor, CPU) as baselines, in one run.

For each model:
- Training step (forward, backward, AdamW, loss.item() each step): throughput, and peak device
  memory in Strict and fused mode over steady-state steps. Targets (issue #25): fused peak
  memory <= 0.75x Strict, fused step >= 1.1x Strict.
- Inference (forward, output read back): throughput.
- Where a training step's time goes in Strict and fused mode: the host's time to issue (or
  record) the step's ops, R, and the time it then waits for them to run, E, with a
  synchronize after forward, backward and the optimizer step (medians of steps of their own).

All contenders of a model live in one process and run in rounds of short blocks
(benchmarks/paired_blocks.py): each ratio is the median over rounds of two contenders' block
times in the same round. Rates are of the median block. Writes benchmarks/results/fused_models.json.
"""

import argparse
import json
import os
import torch

import torch_tpu
from compute_floor import heavy_calls_of, seconds_per_replay
from demo_contenders import compiled, device_of, use_mode
from paired_blocks import median_rate, median_speedup, time_rounds
import step_phases
from torch_tpu.demo.zoo import ZOO

HERE = os.path.dirname(os.path.abspath(__file__))
TPU_MODES = ["strict", "fused"]


class Run:
    """One model and its optimizer on one contender, over a fixed set of 4 batches."""

    def __init__(self, model_name, contender):
        self.contender = contender
        entry = ZOO[model_name]
        use_mode(contender)
        torch.manual_seed(0)
        device = device_of(contender)
        self.model = entry.build().to(device)
        self.forward = compiled(contender, self.model)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-3, weight_decay=0.01)
        data = torch.Generator().manual_seed(1)
        self.batches = [tuple(t.to(device) for t in (*inputs, targets))
                        for inputs, targets in (entry.batch(data) for _ in range(4))]
        self.steps = 0
        torch_tpu.set_mode("strict")

    def train(self, steps):
        use_mode(self.contender)
        self.model.train()
        for _ in range(steps):
            *inputs, targets = self.batches[self.steps % len(self.batches)]
            loss = self.forward(*inputs, targets=targets)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            loss.item()
            self.steps += 1
        torch_tpu.set_mode("strict")

    def infer(self, iterations):
        use_mode(self.contender)
        self.model.eval()
        *inputs, _ = self.batches[0]
        with torch.no_grad():
            for _ in range(iterations):
                self.forward(*inputs).cpu()
        torch_tpu.set_mode("strict")


def peak_training_memory(model_name, contender, steps):
    """Peak device memory over `steps` training steps after warm-up, in bytes."""
    run = Run(model_name, contender)
    run.train(steps)
    torch.tpu.synchronize()
    torch.tpu.reset_peak_memory_stats()
    run.train(steps)
    return torch.tpu.max_memory_allocated()


def issue_and_execution_ms(model_name, contender, steps=12, warmup=3):
    """(R, E) of a training step in ms (benchmarks/step_phases.py)."""
    run = Run(model_name, contender)
    use_mode(contender)

    def forward(step):
        *inputs, targets = run.batches[step % len(run.batches)]
        return run.model(*inputs, targets=targets)

    def backward(loss):
        run.optimizer.zero_grad(set_to_none=True)
        loss.backward()

    phases = step_phases.issue_and_execution_ms(forward, backward, run.optimizer.step, steps, warmup)
    torch_tpu.set_mode("strict")
    return phases


def compute_floor_ms(model_name):
    """A training step's matmul, attention and convolution kernels alone on CPU, in ms: no mode
    runs a step faster (benchmarks/compute_floor.py). None for the LSTM, whose CPU kernel
    (oneDNN's whole-layer LSTM) is not what tpu runs."""
    if model_name == "lstm":
        return None
    run = Run(model_name, "cpu_eager")
    *inputs, targets = run.batches[0]
    step = lambda: run.model(*inputs, targets=targets).backward()  # noqa: E731
    return seconds_per_replay(heavy_calls_of(step)) * 1e3


def measure(model_name, contenders, args):
    peak = {c: peak_training_memory(model_name, c, args.block_steps) for c in TPU_MODES}
    runs = {c: Run(model_name, c) for c in contenders}
    training = {c: (lambda r=run: r.train(args.block_steps)) for c, run in runs.items()}
    inference = {c: (lambda r=run: r.infer(args.block_steps)) for c, run in runs.items()}
    for blocks in (training, inference):
        time_rounds(blocks, args.warmup_blocks)  # compiles, caches, fused kernels
    torch_tpu.wait_for_kernel_compiles()
    train_seconds = time_rounds(training, args.rounds)
    infer_seconds = time_rounds(inference, args.rounds)
    phases = {c: issue_and_execution_ms(model_name, c) for c in TPU_MODES}
    entry = ZOO[model_name]
    work = args.block_steps * entry.units_per_batch
    return {
        "training_issue_and_execution_ms": phases,
        "training_compute_floor_ms": compute_floor_ms(model_name),
        "unit": entry.unit,
        "peak_memory_bytes": peak,
        "peak_memory_fused_vs_strict": peak["fused"] / peak["strict"],
        "training_per_second": {c: median_rate(train_seconds, c, work) for c in contenders},
        "inference_per_second": {c: median_rate(infer_seconds, c, work) for c in contenders},
        "training_vs_strict": {c: median_speedup(train_seconds, c, "strict") for c in contenders},
        "inference_vs_strict": {c: median_speedup(infer_seconds, c, "strict") for c in contenders},
        "block_seconds": {"training": train_seconds, "inference": infer_seconds},
    }


def print_table(results, contenders):
    print("| model | peak memory strict / fused (MiB) | fused / Strict memory | "
          + " | ".join(f"training {c}" for c in contenders)
          + " | fused / Strict step | " + " | ".join(f"inference {c}" for c in contenders)
          + " | fused / Strict inference |")
    print("|---" * (5 + 2 * len(contenders)) + "|")
    for name, r in results.items():
        peak = r["peak_memory_bytes"]
        row = [name, f"{peak['strict'] / 2**20:.1f} / {peak['fused'] / 2**20:.1f}",
               f"**{r['peak_memory_fused_vs_strict']:.2f}**"]
        row += [f"{r['training_per_second'][c]:,.0f}" for c in contenders]
        row.append(f"**{r['training_vs_strict']['fused']:.2f}**")
        row += [f"{r['inference_per_second'][c]:,.0f}" for c in contenders]
        row.append(f"{r['inference_vs_strict']['fused']:.2f}")
        print("| " + " | ".join(row) + " |")
    print("(throughput in each model's unit per second: "
          + ", ".join(f"{name} {r['unit']}" for name, r in results.items()) + ")")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default=",".join(ZOO), help="comma-separated, of: " + ", ".join(ZOO))
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--block-steps", type=int, default=4)
    parser.add_argument("--warmup-blocks", type=int, default=2)
    parser.add_argument("--no-inductor", action="store_true", help="skip the Inductor baseline")
    args = parser.parse_args()
    contenders = ["cpu_eager"] + ([] if args.no_inductor else ["inductor"]) + TPU_MODES
    results = {}
    for name in args.models.split(","):
        results[name] = measure(name, contenders, args)
        r = results[name]
        print(f"{name}: peak memory fused/Strict {r['peak_memory_fused_vs_strict']:.2f} (target <= 0.75), "
              f"training step fused/Strict {r['training_vs_strict']['fused']:.2f} (target >= 1.1), "
              f"inference {r['inference_vs_strict']['fused']:.2f}", flush=True)
        floor = r["training_compute_floor_ms"]
        print("  a training step's host issue R and execution E (ms): " + ", ".join(
            f"{c} R {rr:.2f} E {e:.2f}" for c, (rr, e) in r["training_issue_and_execution_ms"].items())
            + ("" if floor is None else f"; its matmul, attention and convolution kernels alone {floor:.2f}"),
            flush=True)
    print_table(results, contenders)
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "fused_models.json"), "w") as f:
        json.dump({"cpus": os.cpu_count(), "rounds": args.rounds, "block_steps": args.block_steps,
                   "models": results}, f, indent=2)


if __name__ == "__main__":
    main()
