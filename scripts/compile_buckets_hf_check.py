"""Shape bucketing on Hugging Face models: each model type (a tiny config, random weights) is
compiled with ``backend="tpu", dynamic=True`` and run over five sequence lengths, forward and a
training step, with and without a left-padding attention mask; its logits, loss and gradients
are compared with CPU eager, and the programs compiled are counted.

    python scripts/compile_buckets_hf_check.py llama qwen2 gemma phi gpt2 bert

Prints one line per (model, forward/training, mask): the largest difference from CPU, whether
the graphs were bucketed, the programs compiled and why a graph was not padded, if one was not.
"""

import argparse
import copy

import torch
import torch._dynamo

import torch_tpu  # noqa: F401  (registers the tpu device)
from torch_tpu.compiler import compile_metrics, reset_compile_metrics

LENGTHS = (3, 5, 7, 9, 12)
DECODER = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
               max_position_embeddings=64)
SIZES = {
    "llama": {**DECODER, "num_key_value_heads": 2},
    "qwen2": {**DECODER, "num_key_value_heads": 2},
    "mistral": {**DECODER, "num_key_value_heads": 2},
    "gemma": {**DECODER, "num_key_value_heads": 2, "head_dim": 8},
    "phi": DECODER,
    "bert": DECODER,
    "gpt2": dict(n_embd=32, n_layer=2, n_head=4, n_positions=64),
}
DROPOUTS = ("hidden_dropout_prob", "attention_probs_dropout_prob", "resid_pdrop", "embd_pdrop",
            "attn_pdrop", "attention_dropout")


def check(model_type: str, train: bool, with_mask: bool) -> str:
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForMaskedLM
    torch._dynamo.reset()
    reset_compile_metrics()
    config = AutoConfig.for_model(model_type, vocab_size=128, **SIZES[model_type])
    for name in DROPOUTS:  # CPU and tpu would draw the same masks, but padding changes them
        if hasattr(config, name):
            setattr(config, name, 0.0)
    torch.manual_seed(0)
    model_class = AutoModelForMaskedLM if model_type == "bert" else AutoModelForCausalLM
    cpu = model_class.from_config(config).train(train)
    tpu = copy.deepcopy(cpu).to("tpu")

    def run(model, ids, mask):
        out = model(input_ids=ids, attention_mask=mask, labels=ids if train else None)
        return out.loss if train else out.logits

    compiled = torch.compile(lambda ids, mask: run(tpu, ids, mask), backend="tpu", dynamic=True)
    generator = torch.Generator().manual_seed(1)
    worst = 0.0
    for length in LENGTHS:
        ids = torch.randint(0, 128, (2, length), generator=generator)
        mask = None
        if with_mask:
            mask = torch.ones_like(ids)
            mask[0, :2] = 0
        for model in (cpu, tpu):
            model.zero_grad(set_to_none=True)
        with torch.set_grad_enabled(train):
            expected = run(cpu, ids, mask)
            actual = compiled(ids.to("tpu"), None if mask is None else mask.to("tpu"))
        worst = max(worst, (actual.detach().cpu() - expected.detach()).abs().max().item())
        if train:
            expected.backward()
            actual.backward()
            for p_cpu, p_tpu in zip(cpu.parameters(), tpu.parameters()):
                if p_cpu.grad is not None:
                    worst = max(worst, (p_tpu.grad.cpu() - p_cpu.grad).abs().max().item())
    counts = compile_metrics()
    return (f"{model_type:8s} {'training' if train else 'forward ':8s} "
            f"mask={'yes' if with_mask else 'no '} largest difference {worst:.1e}  "
            f"bucketed {counts['bucketed_graphs']}, unpadded {counts['unbucketable_graphs']}, "
            f"programs {counts['shape_specializations']} for {len(LENGTHS)} lengths  "
            f"{'; '.join(counts['unbucketable_reasons'])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", choices=sorted(SIZES))
    for model_type in parser.parse_args().models:
        for train in (False, True):
            for with_mask in (False, True):
                print(check(model_type, train, with_mask), flush=True)


if __name__ == "__main__":
    main()
