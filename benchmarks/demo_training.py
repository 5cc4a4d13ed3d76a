"""Demo-model training throughput: tpu (Strict) vs PyTorch CPU eager, same run, same model,
same data. Prints tokens/s for both and the ratio; writes benchmarks/results/demo_training.json.
Target (issue #2): ratio >= 0.9. Also prints what a second busy thread added on this machine
at the start and the end of the run (benchmarks/two_core_capacity.py), which the ratio depends on.
"""

import argparse
import json
import os

import torch_tpu  # noqa: F401  (registers tpu)
from torch_tpu.demo.train import train
from two_core_capacity import describe, two_thread_throughput


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    results = {"tpu": [], "cpu": []}
    capacity_start = two_thread_throughput()
    # Interleaved repeats, best of each: these machines are noisy.
    for _ in range(args.repeats):
        for device in ("cpu", "tpu"):
            results[device].append(train(device, args.steps).tokens_per_second)
    capacity_end = two_thread_throughput()
    tpu, cpu = max(results["tpu"]), max(results["cpu"])
    print(f"{'device':<8}{'tokens/s':>12}")
    print(f"{'cpu':<8}{cpu:>12,.0f}")
    print(f"{'tpu':<8}{tpu:>12,.0f}")
    print(f"ratio tpu/cpu: {tpu / cpu:.2f}   (target >= 0.9)")
    print(describe(capacity_start, capacity_end))
    os.makedirs(os.path.join(os.path.dirname(__file__), "results"), exist_ok=True)
    with open(os.path.join(os.path.dirname(__file__), "results", "demo_training.json"), "w") as f:
        json.dump({"tokens_per_second": {"tpu": tpu, "cpu": cpu}, "ratio": tpu / cpu,
                   "two_thread_throughput": [capacity_start, capacity_end]}, f, indent=2)


if __name__ == "__main__":
    main()
