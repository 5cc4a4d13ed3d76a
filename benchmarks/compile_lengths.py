"""torch.compile over varying sequence lengths, on the demo model (python/torch_tpu/demo):
``backend="tpu"`` with shape buckets (the default), the same without them
(``TORCH_TPU_SHAPE_BUCKETS=0``: a program per length), and Inductor on CPU with
``dynamic=True`` (one symbolic kernel set for every length), in one run.

Each contender runs in a fresh process (fresh Dynamo, empty on-disk caches) over the same
lengths: a first pass over `--lengths` distinct lengths, in which compiling dominates, then
`--warm-passes` untimed passes (hot fused kernels compile meanwhile; the run waits for them),
then `--passes` timed passes over them in another order (steady state). Reported per contender:
programs compiled (tpu), first-pass seconds, steady-state milliseconds per forward, and each
ratio against Inductor measured in the same run. Inference (forward, logits of the last position
read back) or, with ``--train``, a forward and backward (loss.item()).
Writes benchmarks/results/compile_lengths.json.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CONTENDERS = {
    "tpu_buckets": {"device": "tpu", "backend": "tpu", "env": {}},
    "tpu_per_length": {"device": "tpu", "backend": "tpu", "env": {"TORCH_TPU_SHAPE_BUCKETS": "0"}},
    "inductor": {"device": "cpu", "backend": "inductor", "env": {}},
}

CHILD = r"""
import json, random, sys, time, torch
import torch_tpu
from torch_tpu.compiler import compile_metrics
from torch_tpu.demo.llama import Llama, LlamaConfig
device, backend, train, count, passes, warm_passes = (
    sys.argv[1], sys.argv[2], sys.argv[3] == "1", int(sys.argv[4]), int(sys.argv[5]),
    int(sys.argv[6]))
torch.manual_seed(0)
model = Llama(LlamaConfig(max_seq_len=256)).to(device).train(train)
lengths = random.Random(0).sample(range(17, 257), count)
generator = torch.Generator().manual_seed(1)
batches = {n: torch.randint(0, 256, (4, n), generator=generator).to(device) for n in lengths}
compiled = torch.compile(model, backend=backend, dynamic=True)

def step(n):
    tokens = batches[n]
    if train:
        logits = compiled(tokens)
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), tokens.flatten())
        loss.backward()
        return loss.item()
    with torch.no_grad():
        return compiled(tokens)[:, -1].sum().item()

start = time.perf_counter()
for n in lengths:
    step(n)
first = time.perf_counter() - start
order = random.Random(1)
for _ in range(warm_passes):  # hot fused kernels compile in the background: done before timing
    for n in order.sample(lengths, len(lengths)):
        step(n)
if device == "tpu":
    torch_tpu.wait_for_kernel_compiles()
start = time.perf_counter()
runs = 0
for _ in range(passes):
    for n in order.sample(lengths, len(lengths)):
        step(n)
        runs += 1
steady_ms = (time.perf_counter() - start) / runs * 1e3
programs = compile_metrics()["shape_specializations"] if device == "tpu" else None
print(json.dumps({"first_pass_s": first, "steady_ms": steady_ms, "programs": programs}))
"""


def run_contender(name, args):
    spec = CONTENDERS[name]
    with tempfile.TemporaryDirectory() as caches:
        env = {**os.environ, **spec["env"],
               "TORCH_TPU_KERNEL_CACHE_DIR": os.path.join(caches, "kernels"),
               "TORCH_TPU_PJRT_CACHE_DIR": os.path.join(caches, "pjrt"),
               "TORCHINDUCTOR_CACHE_DIR": os.path.join(caches, "inductor")}
        if args.runtime == "pjrt":
            env["TORCH_TPU_RUNTIME"] = "pjrt"
        out = subprocess.run(
            [sys.executable, "-c", CHILD, spec["device"], spec["backend"],
             "1" if args.train else "0", str(args.lengths), str(args.passes),
             str(args.warm_passes)],
            env=env, capture_output=True, text=True, timeout=3000, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"  {name}: {result}", flush=True)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, default=12, help="distinct lengths (17..256)")
    parser.add_argument("--passes", type=int, default=2, help="steady-state passes (timed)")
    parser.add_argument("--warm-passes", type=int, default=3, help="passes before the timed ones")
    parser.add_argument("--train", action="store_true")
    parser.add_argument("--runtime", choices=["host", "pjrt"], default="host")
    args = parser.parse_args()
    results = {name: run_contender(name, args) for name in CONTENDERS}
    base = results["inductor"]
    print(f"\n{'training' if args.train else 'inference'}, {args.lengths} lengths, "
          f"runtime {args.runtime}")
    print(f"{'contender':16s} {'programs':>8s} {'first pass s':>13s} {'vs Inductor':>12s} "
          f"{'steady ms':>10s} {'vs Inductor':>12s}")
    for name, result in results.items():
        programs = "-" if result["programs"] is None else str(result["programs"])
        print(f"{name:16s} {programs:>8s} {result['first_pass_s']:13.2f} "
              f"{base['first_pass_s'] / result['first_pass_s']:11.2f}x "
              f"{result['steady_ms']:10.2f} {base['steady_ms'] / result['steady_ms']:11.2f}x")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "compile_lengths.json"), "w") as out:
        json.dump({"args": vars(args), "results": results}, out, indent=2)


if __name__ == "__main__":
    main()
