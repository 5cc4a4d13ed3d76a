"""Demo-model training throughput: tpu (Strict) vs PyTorch CPU eager, same run, same model,
same data. Target (issue #2): ratio >= 0.9.

Both models train in one process, in rounds of short blocks (benchmarks/paired_blocks.py):
the ratio is the median over rounds of CPU's block time / tpu's, each round's two blocks run
back to back in the same machine state. Prints tokens/s of each (median block), the ratio,
and what a second busy thread added on this machine at the start and the end
(benchmarks/two_core_capacity.py); writes benchmarks/results/demo_training.json.
"""

import argparse
import json
import os

import torch_tpu  # noqa: F401  (registers tpu)
from torch_tpu.demo.train import TrainingStep
from paired_blocks import median_rate, median_speedup, time_rounds
from two_core_capacity import describe, two_thread_throughput


def block_of(trainer, steps):
    counter = [0]

    def run():
        for _ in range(steps):
            trainer.step(counter[0])
            counter[0] += 1
    return run


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--block-steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()
    trainers = {device: TrainingStep(device) for device in ("cpu", "tpu")}
    blocks = {device: block_of(trainer, args.block_steps) for device, trainer in trainers.items()}
    for trainer in trainers.values():
        for k in range(args.warmup):
            trainer.step(k)
    capacity_start = two_thread_throughput()
    seconds = time_rounds(blocks, args.rounds)
    capacity_end = two_thread_throughput()
    tokens = args.block_steps * trainers["cpu"].tokens_per_step
    rates = {device: median_rate(seconds, device, tokens) for device in blocks}
    ratio = median_speedup(seconds, "tpu", "cpu")
    per_round = [c / t for c, t in zip(seconds["cpu"], seconds["tpu"])]
    print(f"{'device':<8}{'tokens/s':>12}   (median of {args.rounds} blocks of {args.block_steps} steps)")
    print(f"{'cpu':<8}{rates['cpu']:>12,.0f}")
    print(f"{'tpu':<8}{rates['tpu']:>12,.0f}")
    print(f"ratio tpu/cpu: {ratio:.2f}   (target >= 0.9; median over rounds, "
          f"range {min(per_round):.2f}-{max(per_round):.2f})")
    print(describe(capacity_start, capacity_end))
    os.makedirs(os.path.join(os.path.dirname(__file__), "results"), exist_ok=True)
    with open(os.path.join(os.path.dirname(__file__), "results", "demo_training.json"), "w") as f:
        json.dump({"tokens_per_second": rates, "ratio": ratio, "ratio_per_round": per_round,
                   "two_thread_throughput": [capacity_start, capacity_end]}, f, indent=2)


if __name__ == "__main__":
    main()
