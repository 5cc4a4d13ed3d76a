"""Fused mode's memory saving on each family of the model zoo (python/torch_tpu/demo/zoo.py),
counted rather than timed: the bytes a forward pass leaves on the chip for backward in Strict
and in fused mode, and the recipes fused mode keeps instead of tensors (each recomputed once
in backward). A change that makes fused mode keep an activation again fails here.
benchmarks/fused_models.py measures the same models' peak memory and speed."""

import pytest
import torch

import torch_tpu
from torch_tpu import _saved_recipes
from torch_tpu.demo.zoo import ZOO

# Per model: recipes a training step keeps, recomputations its backward runs (saved tensors
# of one value share one), and the most the forward pass may leave for backward in fused
# mode, as a fraction of Strict's.
EXPECTED = {
    "demo": (18, 16, 0.60),  # 0.57 measured
    "gpt2": (7, 7, 0.67),    # 0.64: its LayerNorms' and GELUs' outputs
    "bert": (9, 9, 0.65),    # 0.62
    "vit": (7, 7, 0.64),     # 0.61
    "cnn": (8, 4, 0.60),     # 0.57: batch norm + ReLU outputs, each kept by ReLU and the next layer
    "lstm": (128, 128, 0.76),  # 0.75: each cell's workspace (activated gates)
}


@pytest.fixture(autouse=True)
def strict_after():
    yield
    torch_tpu.set_mode("strict")


def one_step(name, mode):
    """(bytes the forward pass left for backward, recipes made, recomputations, loss,
    gradients) of one training step of `name` in `mode`."""
    torch_tpu.set_mode(mode)
    entry = ZOO[name]
    torch.manual_seed(0)
    model = entry.build().to("tpu")
    inputs, targets = entry.batch(torch.Generator().manual_seed(1))
    inputs, targets = [t.to("tpu") for t in inputs], targets.to("tpu")
    torch.tpu.synchronize()
    before_bytes, before = torch.tpu.memory_allocated(), _saved_recipes.stats()
    loss = model(*inputs, targets=targets)
    torch.tpu.synchronize()
    kept = torch.tpu.memory_allocated() - before_bytes
    loss.backward()
    after = _saved_recipes.stats()
    grads = [p.grad.cpu() for p in model.parameters() if p.grad is not None]
    torch_tpu.set_mode("strict")
    return (kept, after["recipes"] - before["recipes"], after["recomputed"] - before["recomputed"],
            loss.item(), grads)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_fused_mode_keeps_less_for_backward_and_trains_as_strict(name):
    strict_kept, _, _, strict_loss, strict_grads = one_step(name, "strict")
    fused_kept, recipes, recomputed, fused_loss, fused_grads = one_step(name, "fused")
    expected_recipes, expected_recomputed, most_kept = EXPECTED[name]
    assert (recipes, recomputed) == (expected_recipes, expected_recomputed)
    assert fused_kept <= most_kept * strict_kept, (
        f"fused mode keeps {fused_kept / 2**20:.2f} MiB for backward, Strict "
        f"{strict_kept / 2**20:.2f} MiB ({fused_kept / strict_kept:.2f}x; at most {most_kept})")
    # To rounding: a convolution's or matmul's kernel may sum in an order that depends on the
    # thread count each mode ran it with.
    assert fused_loss == pytest.approx(strict_loss, rel=1e-5)
    for f, s in zip(fused_grads, strict_grads, strict=True):
        torch.testing.assert_close(f, s)
