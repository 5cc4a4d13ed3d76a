"""python -m torch_tpu.demo [--steps N] [--mode strict|debug|fused]: trains the small Llama on tpu
with a progress bar, then runs the same training on CPU and prints a summary."""

import argparse

import torch
from tqdm import tqdm

import torch_tpu

from .train import train


def run_with_bar(device: str, steps: int, label: str):
    bar = tqdm(total=steps, desc=label, unit="step", dynamic_ncols=True)

    def progress(step, loss, tokens_per_second):
        bar.set_postfix(loss=f"{loss:.3f}", tok_s=f"{tokens_per_second:,.0f}")
        bar.update(1)

    try:
        return train(device, steps, progress=progress)
    finally:
        bar.close()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--mode", default=None, help="strict (default), debug or fused")
    args = parser.parse_args(argv)
    if args.mode:
        torch_tpu.set_mode(args.mode)

    tpu = run_with_bar("tpu", args.steps, f"tpu ({torch_tpu.get_mode()})")
    cpu = run_with_bar("cpu", args.steps, "cpu (reference)")

    print()
    print(f"mode:               {torch_tpu.get_mode()}")
    print(f"device:             {torch.tpu.get_device_name()} x{torch.tpu.device_count()}")
    print(f"tokens/s:           tpu {tpu.tokens_per_second:,.0f}   cpu {cpu.tokens_per_second:,.0f}"
          f"   (ratio {tpu.tokens_per_second / max(cpu.tokens_per_second, 1e-9):.2f}x)")
    print(f"peak device memory: {tpu.peak_memory_bytes / 2**20:.1f} MiB")
    print(f"final loss:         tpu {tpu.final_loss:.4f}   cpu {cpu.final_loss:.4f}"
          f"   (first loss {tpu.losses[0]:.4f})")
    metrics = torch_tpu.metrics()
    print(f"ops launched:       {metrics['ops_launched']:,}   CPU fallbacks: "
          f"{sum(metrics['fallbacks'].values())} {dict(metrics['fallbacks']) or ''}")


if __name__ == "__main__":
    main()
