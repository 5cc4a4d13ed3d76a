"""Host overhead per op on the PJRT runtime (CPU plugin) beside the host runtime's Strict mode and
PyTorch CPU eager, in one run: op_overhead.py runs once per runtime, each in a fresh process
(the runtime is chosen at start-up) with its own CPU eager baseline measured beside it. Prints
one table (microseconds per op, ratios) and writes benchmarks/results/pjrt_op_overhead.json.
Ops without a StableHLO lowering take the host round trip and are marked."""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def measure(runtime: str, iterations: int) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCH_TPU_")}
    env["TORCH_TPU_RUNTIME"] = runtime
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "result.json")
        subprocess.run([sys.executable, os.path.join(HERE, "op_overhead.py"),
                        "--iterations", str(iterations), "--out", out],
                       env=env, check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=2000)
    args = parser.parse_args()
    host = measure("host", args.iterations)
    pjrt = measure("pjrt", args.iterations)
    print(f"{'op':<16}{'cpu us':>9}{'host us':>9}{'pjrt us':>9}{'pjrt/host':>11}{'pjrt/cpu':>10}")
    rows = []
    fallbacks = " ".join(pjrt["fallbacks"])
    for h, p in zip(host["rows"], pjrt["rows"]):
        # Each process measured its own CPU baseline; their mean is the CPU column.
        cpu = (h["cpu_us"] + p["cpu_us"]) / 2
        row = {"op": h["op"], "cpu_us": cpu, "host_us": h["tpu_us"], "pjrt_us": p["tpu_us"],
               "pjrt_over_host": p["tpu_us"] / h["tpu_us"], "pjrt_over_cpu": p["ratio"]}
        rows.append(row)
        print(f"{row['op']:<16}{cpu:>9.2f}{row['host_us']:>9.2f}{row['pjrt_us']:>9.2f}"
              f"{row['pjrt_over_host']:>11.2f}{row['pjrt_over_cpu']:>10.2f}")
    geomean = lambda key: math.exp(sum(math.log(r[key]) for r in rows) / len(rows))  # noqa: E731
    summary = {"pjrt_over_host": geomean("pjrt_over_host"), "pjrt_over_cpu": geomean("pjrt_over_cpu"),
               "host_over_cpu": host["geomean_ratio"]}
    print(f"geomean: pjrt/host {summary['pjrt_over_host']:.2f}, pjrt/cpu "
          f"{summary['pjrt_over_cpu']:.2f}, host/cpu {summary['host_over_cpu']:.2f}")
    print(f"ops that took the host round trip on pjrt: {fallbacks or 'none'}")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "pjrt_op_overhead.json"), "w") as f:
        json.dump({"rows": rows, "summary": summary, "pjrt_fallbacks": pjrt["fallbacks"]}, f,
                  indent=2)


if __name__ == "__main__":
    main()
