"""torch.compile on tpu, on the demo model (python/torch_tpu/demo), against its baselines in one
run: ``backend="tpu"`` (in Strict mode: the compiled graphs are programs, the optimizer step
eager), fused eager, Strict eager, and Inductor on CPU.

- Training step (forward, backward, AdamW, loss.item() each step): tokens/s. Target (issue
  #23): tpu-compiled >= 1.0x Inductor on CPU.
- Inference (forward of a batch of sequences, logits read back): sequences/s.
- Compile time of the demo's graphs: the first training step's seconds with a fresh Dynamo
  (cold: Dynamo traces, aot_autograd partitions, the executor plans), against an eager step;
  and in fresh processes, once with empty on-disk caches and once reading what that run wrote.

Contenders run in rounds of short blocks (benchmarks/paired_blocks.py): each ratio is the median
over rounds of two contenders' block times in the same round. ``--runtime pjrt`` runs the tpu
contenders on the PJRT CPU plugin. Writes benchmarks/results/compile_demo.json.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import torch
import torch._dynamo

import torch_tpu
from demo_contenders import inference_block, trainer_for, training_block
from torch_tpu.demo.llama import LlamaConfig
from torch_tpu.demo.train import TrainingStep, make_batch
from paired_blocks import median_rate, median_speedup, time_rounds

HERE = os.path.dirname(os.path.abspath(__file__))
CONTENDERS = ["inductor", "tpu_compiled", "fused", "strict"]


def first_step_seconds(contender):
    """Seconds of the first training step from a fresh Dynamo: for a compiled contender its
    trace and compile, for an eager one the eager step it is compared with."""
    torch._dynamo.reset()
    trainer = trainer_for(contender)
    start = time.perf_counter()
    trainer.step(0)
    seconds = time.perf_counter() - start
    torch_tpu.set_mode("strict")
    return seconds


def first_step_in_fresh_processes(contender, runtime):
    """(cold, warm) seconds of `contender`'s first training step, each in a fresh process: the
    first with empty on-disk caches (torch_tpu's kernels and PJRT executables, Inductor's), the
    second reading what the first wrote."""
    with tempfile.TemporaryDirectory() as caches:
        env = {**os.environ,
               "TORCH_TPU_KERNEL_CACHE_DIR": os.path.join(caches, "kernels"),
               "TORCH_TPU_PJRT_CACHE_DIR": os.path.join(caches, "pjrt"),
               "TORCHINDUCTOR_CACHE_DIR": os.path.join(caches, "inductor")}
        seconds = []
        for _ in range(2):
            out = subprocess.run(
                [sys.executable, __file__, "--first-step-of", contender, "--runtime", runtime],
                env=env, check=True, capture_output=True, text=True).stdout
            seconds.append(float(out.strip().splitlines()[-1]))
        return tuple(seconds)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=4, help="training steps per block")
    parser.add_argument("--iterations", type=int, default=4, help="forwards per inference block")
    parser.add_argument("--runtime", choices=["host", "pjrt"], default="host")
    parser.add_argument("--first-step-of", choices=CONTENDERS,
                        help="only print the first training step's seconds of this contender")
    args = parser.parse_args()
    if args.runtime == "pjrt":
        torch_tpu.set_runtime("pjrt")
    if args.first_step_of:
        print(first_step_seconds(args.first_step_of))
        return

    compile_seconds = {name: first_step_seconds(name) for name in CONTENDERS}
    fresh_process_seconds = {name: first_step_in_fresh_processes(name, args.runtime)
                             for name in ("tpu_compiled", "inductor")}

    training = {}
    for name in CONTENDERS:
        block = training_block(name, args.steps)
        block()  # warm-up: Dynamo traces, programs compile, the optimizer makes its state
        training[name] = block
    torch_tpu.wait_for_kernel_compiles()
    train_seconds = time_rounds(training, args.rounds)
    tokens_per_block = args.steps * TrainingStep("cpu").tokens_per_step

    config = LlamaConfig()
    tokens, _ = make_batch(torch.Generator().manual_seed(0), config, 8, 64)
    inference = {}
    for name in CONTENDERS:
        block = inference_block(name, config, tokens, args.iterations)
        block()
        inference[name] = block
    torch_tpu.wait_for_kernel_compiles()
    infer_seconds = time_rounds(inference, args.rounds)

    results = {"runtime": args.runtime, "rounds": args.rounds, "training": {}, "inference": {},
               "first_step_seconds": compile_seconds,
               "fresh_process_first_step_seconds": fresh_process_seconds}
    print(f"torch.compile on tpu, demo model, runtime {args.runtime} "
          f"({args.rounds} rounds, medians of paired blocks)")
    print(f"{'contender':<14}{'train tok/s':>13}{'x inductor':>12}{'x strict':>10}"
          f"{'infer seq/s':>13}{'x inductor':>12}{'first step s':>14}")
    for name in CONTENDERS:
        train_rate = median_rate(train_seconds, name, tokens_per_block)
        infer_rate = median_rate(infer_seconds, name, 8 * args.iterations)
        row = {
            "tokens_per_second": train_rate,
            "vs_inductor": median_speedup(train_seconds, name, "inductor"),
            "vs_strict": median_speedup(train_seconds, name, "strict"),
        }
        results["training"][name] = row
        results["inference"][name] = {
            "sequences_per_second": infer_rate,
            "vs_inductor": median_speedup(infer_seconds, name, "inductor"),
        }
        print(f"{name:<14}{train_rate:>13.0f}{row['vs_inductor']:>12.2f}{row['vs_strict']:>10.2f}"
              f"{infer_rate:>13.1f}{results['inference'][name]['vs_inductor']:>12.2f}"
              f"{compile_seconds[name]:>14.2f}")
    for name, (cold, warm) in fresh_process_seconds.items():
        print(f"first training step of {name} in a fresh process: {cold:.2f} s with empty "
              f"on-disk caches, {warm:.2f} s from them")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    suffix = "" if args.runtime == "host" else f"_{args.runtime}"
    with open(os.path.join(HERE, "results", f"compile_demo{suffix}.json"), "w") as out:
        json.dump(results, out, indent=2)


if __name__ == "__main__":
    main()
