"""Host overhead per op on small tensors: tpu (Strict) vs PyTorch CPU eager, same run.

For each op, runs it N times on tiny inputs and reports microseconds per op (tpu time includes
the final synchronize). Prints a table and writes benchmarks/results/op_overhead.json. Runs on
the runtime TORCH_TPU_RUNTIME selects (benchmarks/pjrt_op_overhead.py runs it on both).
Target (issue #2): geometric-mean ratio tpu/cpu <= 1.5.
"""

import argparse
import json
import math
import os
import time

import torch

import torch_tpu

OPS = {
    "add": lambda a, b: a + b,
    "mul_scalar": lambda a, b: a * 2.0,
    "add_inplace": lambda a, b: a.add_(b),
    "relu": lambda a, b: torch.relu(a),
    "exp": lambda a, b: torch.exp(a),
    "sum": lambda a, b: a.sum(),
    "mean_dim": lambda a, b: a.mean(-1),
    "mm": lambda a, b: a @ b,
    "softmax": lambda a, b: torch.softmax(a, -1),
    "view_transpose": lambda a, b: a.view(-1).view(8, 8).t(),
    "where": lambda a, b: torch.where(a > 0, a, b),
    "cat": lambda a, b: torch.cat([a, b]),
}


def time_op(fn, a, b, iterations, sync):
    for _ in range(20):
        fn(a, b)
    sync()
    start = time.perf_counter()
    for _ in range(iterations):
        fn(a, b)
    sync()
    return (time.perf_counter() - start) / iterations * 1e6


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results",
                                                      "op_overhead.json"))
    args = parser.parse_args()
    torch.manual_seed(0)
    a_cpu, b_cpu = torch.randn(8, 8), torch.randn(8, 8)
    a_tpu, b_tpu = a_cpu.to("tpu"), b_cpu.to("tpu")
    rows = []
    print(f"{'op':<16}{'cpu us/op':>12}{'tpu us/op':>12}{'ratio':>9}")
    for name, fn in OPS.items():
        cpu = time_op(fn, a_cpu.clone(), b_cpu, args.iterations, lambda: None)
        tpu = time_op(fn, a_tpu.clone(), b_tpu, args.iterations, torch.tpu.synchronize)
        rows.append({"op": name, "cpu_us": cpu, "tpu_us": tpu, "ratio": tpu / cpu})
        print(f"{name:<16}{cpu:>12.2f}{tpu:>12.2f}{tpu / cpu:>9.2f}")
    geomean = math.exp(sum(math.log(r["ratio"]) for r in rows) / len(rows))
    print(f"{'geomean ratio':<40}{geomean:>9.2f}   (target <= 1.5)")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"rows": rows, "geomean_ratio": geomean, "runtime": torch_tpu.get_runtime(),
                   "fallbacks": torch_tpu.metrics()["fallbacks"]}, f, indent=2)


if __name__ == "__main__":
    main()
