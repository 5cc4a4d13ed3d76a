"""Fused mode's recipes beyond pointwise ops: a LayerNorm's or a training BatchNorm's output
is recomputed from the input its backward keeps anyway, a ReLU over a batch norm's output
(in place or not) is recomputed as the chain, and a bias nobody keeps is copied into the
recipe. A recomputed value is the original's bits; gradients and running statistics match
Strict's to float tolerance (a convolution's kernel may sum in an order that depends on the
thread count the mode ran it with), and running statistics move once per forward."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import torch_tpu
from torch_tpu import _saved_recipes


@pytest.fixture(autouse=True)
def strict_after():
    yield
    torch_tpu.set_mode("strict")


def run(mode, build, inputs, steps=1):
    """(recipes made, recomputations, the module's gradients and state) of `steps` forward and
    backward passes of `build()` in `mode`."""
    torch_tpu.set_mode(mode)
    torch.manual_seed(0)
    module = build().to("tpu")
    x = inputs().to("tpu").requires_grad_()
    before = _saved_recipes.stats()
    for _ in range(steps):
        module(x).square().mean().backward()
    after = _saved_recipes.stats()
    grads = [x.grad.cpu()] + [p.grad.cpu() for p in module.parameters()]
    buffers = [b.cpu() for b in module.buffers()]
    torch_tpu.set_mode("strict")
    return (after["recipes"] - before["recipes"], after["recomputed"] - before["recomputed"],
            (grads, buffers))


def assert_as_strict(fused, strict):
    """Gradients and buffers (running statistics: moving them twice would be off by far more
    than rounding) to float tolerance; the batch count exactly."""
    (fused_grads, fused_buffers), (strict_grads, strict_buffers) = fused, strict
    assert len(fused_grads) == len(strict_grads) and len(fused_buffers) == len(strict_buffers)
    for f, s in zip(fused_grads + fused_buffers, strict_grads + strict_buffers):
        torch.testing.assert_close(f, s)


def layer_norm_mlp():
    return nn.Sequential(nn.LayerNorm(64), nn.Linear(64, 32))


def conv_bn_relu(inplace=True):
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=inplace),
                         nn.Conv2d(8, 4, 3, padding=1))


def images():
    return torch.randn(4, 3, 16, 16)


def test_a_layer_norm_output_is_recomputed_from_its_input():
    recipes, recomputed, fused = run("fused", layer_norm_mlp, lambda: torch.randn(8, 16, 64))
    assert (recipes, recomputed) == (1, 1)  # the Linear's input
    assert_as_strict(fused, run("strict", layer_norm_mlp, lambda: torch.randn(8, 16, 64))[2])


@pytest.mark.parametrize("inplace", [True, False])
def test_a_batch_norm_and_relu_are_recomputed_and_running_stats_move_once(inplace):
    build = lambda: conv_bn_relu(inplace)
    recipes, recomputed, fused = run("fused", build, images, steps=2)
    # Per step: ReLU's saved result and the second convolution's input, each a recipe of the
    # same value, recomputed once for both.
    assert recipes == 4 and recomputed == 2
    strict = run("strict", build, images, steps=2)[2]
    assert_as_strict(fused, strict)  # running mean, var and the batch count included


def test_what_is_recomputed_is_no_longer_on_the_chip_after_forward():
    def kept_bytes(mode):
        torch_tpu.set_mode(mode)
        torch.manual_seed(0)
        module = conv_bn_relu().to("tpu")
        x = images().to("tpu")
        torch.tpu.synchronize()
        before = torch.tpu.memory_allocated()
        loss = module(x).square().mean()
        torch.tpu.synchronize()
        kept = torch.tpu.memory_allocated() - before
        loss.backward()
        return kept

    activation = 4 * 8 * 16 * 16 * 4  # one [4, 8, 16, 16] float32 tensor
    strict, fused = kept_bytes("strict"), kept_bytes("fused")
    # The ReLU output (batch norm's, in place) died; each of its two recipes keeps a copy of
    # the batch norm's bias (one 512-byte allocator block).
    assert strict - fused >= activation - 2 * 512


def test_a_recomputed_batch_norm_and_relu_is_the_original_bit_for_bit():
    torch_tpu.set_mode("fused")
    torch.manual_seed(0)
    bn = nn.BatchNorm2d(8).to("tpu")
    x = torch.randn(4, 8, 16, 16).to("tpu").requires_grad_()
    y = F.relu(bn(x), inplace=True)
    original = y.detach().cpu()
    before = _saved_recipes.stats()["recomputed"]
    recomputed = y.grad_fn._saved_result.cpu()  # ReluBackward0 keeps its result
    assert _saved_recipes.stats()["recomputed"] == before + 1
    torch.testing.assert_close(recomputed, original, rtol=0, atol=0)


def test_a_channels_last_or_evaluating_batch_norm_keeps_its_output():
    """A channels-last input's statistics are summed per thread (other bits on another team)
    and an evaluating batch norm reads running statistics nobody keeps: no recipe."""
    def bn_first():
        return nn.Sequential(nn.BatchNorm2d(3), nn.ReLU(inplace=True), nn.Conv2d(3, 4, 1))
    channels_last = lambda: images().contiguous(memory_format=torch.channels_last)
    recipes, _, fused = run("fused", bn_first, channels_last)
    assert recipes == 0
    assert_as_strict(fused, run("strict", bn_first, channels_last)[2])

    def evaluating():
        return conv_bn_relu().eval()
    recipes, _, fused = run("fused", evaluating, images)
    assert recipes == 0
    assert_as_strict(fused, run("strict", evaluating, images)[2])


def test_changing_the_bias_after_forward_is_fine_as_in_strict():
    """Batch norm's backward does not keep its bias, so the recipe keeps a copy: changing the
    bias in place before backward changes nothing, as in Strict."""
    def grads(mode):
        torch_tpu.set_mode(mode)
        torch.manual_seed(0)
        module = conv_bn_relu().to("tpu")
        loss = module(images().to("tpu")).square().mean()
        with torch.no_grad():
            module[1].bias.add_(1.0)
        loss.backward()
        return [p.grad.cpu() for p in module.parameters()], []
    assert_as_strict(grads("fused"), grads("strict"))


def test_changing_a_recomputed_relu_output_in_place_raises_as_in_strict():
    for mode in ("strict", "fused"):
        torch_tpu.set_mode(mode)
        bn = nn.BatchNorm1d(8).to("tpu")
        x = torch.randn(16, 8, device="tpu", requires_grad=True)
        y = F.relu(bn(x), inplace=True)
        loss = (y * 2).sum() + y.square().sum()
        y.mul_(3)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.backward()


def test_an_in_place_op_on_part_of_a_noted_result_is_not_chained():
    """relu_ on a slice writes part of the batch norm's output: the value is no longer what
    any recipe describes, so autograd keeps the tensor."""
    def slice_relu(mode):
        torch_tpu.set_mode(mode)
        torch.manual_seed(0)
        bn = nn.BatchNorm1d(8).to("tpu")
        x = torch.randn(16, 8).to("tpu").requires_grad_()
        before = _saved_recipes.stats()["recipes"]
        y = bn(x)
        y[:8].relu_()
        (y * y).sum().backward()
        return _saved_recipes.stats()["recipes"] - before, ([x.grad.cpu(), bn.weight.grad.cpu()], [])
    recipes, fused = slice_relu("fused")
    assert recipes == 0
    assert_as_strict(fused, slice_relu("strict")[1])
