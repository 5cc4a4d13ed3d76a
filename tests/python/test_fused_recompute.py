"""Fused mode's rematerialization: autograd keeps a recipe (a pointwise op and inputs it keeps
anyway) instead of the op's result, and backward recomputes it. Gradients are Strict's, peak
memory is lower, and in-place changes to what backward needs raise as in Strict."""

import weakref

import pytest
import torch
import torch.nn.functional as F

import torch_tpu
from torch_tpu import _saved_recipes
from conftest import cpu_and_tpu, run_python_ok


def swiglu_loss(x, w1, w3, w2):
    # silu(x @ w1) and the product are saved for backward; both are recomputable from the
    # matmul outputs, which autograd keeps anyway.
    return ((F.silu(x @ w1) * (x @ w3)) @ w2).square().mean()


def make_inputs(device_copy):
    torch.manual_seed(0)
    x = torch.randn(256, 64)
    ws = [torch.randn(64, 512) * 0.1, torch.randn(64, 512) * 0.1, torch.randn(512, 64) * 0.1]
    return [device_copy(t).requires_grad_() for t in (x, *ws)]


def grads_and_memory(mode):
    """Gradients, the bytes the forward pass leaves for backward, and backward's peak."""
    torch_tpu.set_mode(mode)
    inputs = make_inputs(lambda t: t.to("tpu"))
    torch.tpu.synchronize()
    before = torch.tpu.memory_allocated()
    loss = swiglu_loss(*inputs)
    torch.tpu.synchronize()
    kept = torch.tpu.memory_allocated() - before
    torch.tpu.reset_peak_memory_stats()
    loss.backward()
    grads = [t.grad.cpu() for t in inputs]
    peak = torch.tpu.max_memory_allocated() - before
    torch_tpu.set_mode("strict")
    return grads, kept, peak


@pytest.mark.usefixtures("no_stray_frees")
def test_saved_pointwise_results_are_recomputed_with_strict_gradients_and_less_memory(
        monkeypatch):
    before = _saved_recipes.stats()
    fused_grads, fused_kept, fused_peak = grads_and_memory("fused")
    after = _saved_recipes.stats()
    assert after["recipes"] - before["recipes"] == 2  # silu(h1) and silu(h1) * h3
    assert after["recomputed"] - before["recomputed"] == 2
    strict_grads, strict_kept, strict_peak = grads_and_memory("strict")
    # Not bit for bit: fused mode runs matmuls on the host's two threads, Strict on the worker's
    # one, and the two sum in different orders.
    for fused, strict in zip(fused_grads, strict_grads):
        torch.testing.assert_close(fused, strict, rtol=1e-5, atol=1e-8)
    cpu_inputs = make_inputs(lambda t: t.clone())
    swiglu_loss(*cpu_inputs).backward()
    for fused, cpu in zip(fused_grads, (t.grad for t in cpu_inputs)):
        torch.testing.assert_close(fused, cpu, rtol=1e-4, atol=1e-5)
    monkeypatch.setenv("TORCH_TPU_FUSED_RECOMPUTE", "0")
    _, unfused_kept, unfused_peak = grads_and_memory("fused")
    activation = 256 * 512 * 4
    # Between forward and backward neither recomputable result is held; backward holds one
    # recomputed result at a time.
    assert fused_kept <= min(strict_kept, unfused_kept) - 2 * activation, (
        fused_kept, strict_kept, unfused_kept)
    assert fused_peak <= min(strict_peak, unfused_peak) - activation, (
        fused_peak, strict_peak, unfused_peak)


@pytest.mark.usefixtures("no_stray_frees")  # the garbage collector stays off
@pytest.mark.parametrize("device", ["cpu", "tpu"])
def test_a_saved_result_without_a_recipe_dies_with_its_graph(device):
    """Fused mode's saved-tensor hooks are autograd's default hooks, so they see every saved
    tensor, CPU ones included. One kept as it was handed to the pack hook (an op's own result,
    here softmax's) held its graph in a reference cycle until the garbage collector ran: a
    conformance sweep's CPU reference runs in a fused-mode process ran out of address space.
    A saved tensor without a recipe is now kept as a detached alias, as autograd keeps it."""
    torch_tpu.set_mode("fused")
    try:
        x = torch.randn(64, 64, device=device, requires_grad=True)
        y = torch.softmax(x, dim=-1)  # softmax saves its result
        loss = (y * y).sum()
        result = weakref.ref(y)
        del y, loss
        assert result() is None, "the saved result outlived its graph"
    finally:
        torch_tpu.set_mode("strict")


@pytest.mark.usefixtures("no_stray_frees")
def test_turning_recompute_off_keeps_the_tensors(monkeypatch):
    monkeypatch.setenv("TORCH_TPU_FUSED_RECOMPUTE", "0")
    before = _saved_recipes.stats()
    grads_and_memory("fused")
    assert _saved_recipes.stats() == before


@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_modifying_a_recomputed_tensor_in_place_raises_as_in_strict(mode):
    torch_tpu.set_mode(mode)
    _, a = cpu_and_tpu(32, 32)
    a.requires_grad_()
    w = torch.ones(32, device="tpu", requires_grad=True)
    s = F.silu(a * 1.0)
    loss = (s * w).sum()
    s.mul_(2.0)  # the value MulBackward needs is gone
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_modifying_an_input_of_a_recipe_in_place_raises_as_in_strict(mode):
    torch_tpu.set_mode(mode)
    _, a = cpu_and_tpu(32, 32)
    h = (a * 1.0).requires_grad_()
    w = torch.ones(32, device="tpu", requires_grad=True)
    loss = (F.silu(h) * w).sum()  # SiluBackward keeps h; the recipe of silu(h) needs it too
    with torch.no_grad():
        h.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_double_backward_differentiates_through_the_recomputation():
    def gradient_penalty(device):
        torch.manual_seed(0)
        x = torch.randn(16, 8).to(device).requires_grad_()
        w = (torch.randn(8) * 0.5).to(device).requires_grad_()
        y = (F.silu(x * 2.0) * w).sum()
        (gx,) = torch.autograd.grad(y, x, create_graph=True)
        gx.square().sum().backward()
        return x.grad.cpu(), w.grad.cpu()

    torch_tpu.set_mode("strict")
    strict = gradient_penalty("tpu")
    torch_tpu.set_mode("fused")
    fused = gradient_penalty("tpu")
    torch_tpu.set_mode("strict")
    cpu = gradient_penalty("cpu")
    for f, s, c in zip(fused, strict, cpu):
        torch.testing.assert_close(f, s)
        torch.testing.assert_close(f, c)


def test_torch_func_and_checkpointing_work_in_fused_mode():
    """torch.func refuses any default saved-tensor hooks; fused mode's step aside for it."""
    torch_tpu.set_mode("fused")
    x_cpu, x = cpu_and_tpu(8)
    grad = torch.func.grad(lambda t: torch.sin(t * 2.0).sum())(x)
    torch.testing.assert_close(grad.cpu(), 2.0 * torch.cos(2.0 * x_cpu))
    batched = torch.func.vmap(lambda t: (t * t).sum())(x.view(2, 4))
    torch.testing.assert_close(batched.cpu(), (x_cpu.view(2, 4) ** 2).sum(1))
    # Fused mode's hooks are back afterwards.
    assert torch._C._autograd._top_saved_tensors_default_hooks(False)[0] is torch_tpu._C._pack_saved

    w_cpu = torch.randn(8, 8)
    w = w_cpu.to("tpu").requires_grad_()
    w_cpu.requires_grad_()

    def block(weight, a):
        return F.silu(a @ weight) * 2.0

    from torch.utils.checkpoint import checkpoint
    checkpoint(block, w, x.unsqueeze(0), use_reentrant=False).sum().backward()
    block(w_cpu, x_cpu.unsqueeze(0)).sum().backward()
    torch.testing.assert_close(w.grad.cpu(), w_cpu.grad)


def test_a_process_ending_in_fused_mode_exits_cleanly():
    """Saved tensors packed by Python hooks are Python objects; exit must not leave one for an
    autograd device thread to drop after the interpreter is gone (that aborts the process)."""
    code = """
import torch, torch_tpu
torch_tpu.set_mode("fused")
x = torch.randn(64, device="tpu", requires_grad=True)
(torch.nn.functional.silu(x * 2.0) * x).sum().backward()
y = torch.nn.functional.silu(x * 3.0) * x  # a graph never run backward
print(torch_tpu._saved_recipes.stats()["recipes"])
"""
    assert int(run_python_ok(code).strip()) == 2


def test_a_reshape_copy_of_a_kept_tensor_is_recomputed_from_it():
    """reshape copies a transposed tensor (a clone); the copy is rebuilt in backward from the
    tensor it was taken from, which autograd keeps (a view of it, which has died, is rebuilt
    too)."""
    def loss_and_grads(device):
        torch.manual_seed(0)
        p = torch.randn(2, 3, 4, 5).to(device).requires_grad_()
        w = torch.randn(15, 7).to(device).requires_grad_()
        o = torch.sigmoid(p)  # SigmoidBackward keeps o
        (o.transpose(1, 2).reshape(2, 4, 15) @ w).square().sum().backward()
        return p.grad.cpu(), w.grad.cpu()

    torch_tpu.set_mode("fused")
    before = _saved_recipes.stats()
    fused = loss_and_grads("tpu")
    after = _saved_recipes.stats()
    assert after["recipes"] - before["recipes"] == 1
    assert after["recomputed"] - before["recomputed"] == 1
    torch_tpu.set_mode("strict")
    for f, c in zip(fused, loss_and_grads("cpu")):
        torch.testing.assert_close(f, c)


@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_changing_a_parameter_nobody_saved_after_forward_is_fine_as_in_strict(mode):
    """No recipe is built on an input autograd does not keep: changing it in place before
    backward is allowed in Strict, and so must it be in fused mode."""
    torch_tpu.set_mode(mode)
    p_cpu, p = cpu_and_tpu(16, 16)
    p.requires_grad_()
    w = torch.full((16,), 3.0, device="tpu", requires_grad=True)
    y = p * 2.0  # mul by a number keeps nothing of p
    loss = (y * w).sum()  # keeps y and w
    with torch.no_grad():
        p.add_(1.0)
    loss.backward()
    torch.testing.assert_close(w.grad.cpu(), (p_cpu * 2.0).sum(0))
    torch.testing.assert_close(p.grad.cpu(), torch.full((16, 16), 6.0))
