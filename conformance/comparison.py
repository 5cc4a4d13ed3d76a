"""What the sweeps that compare tpu with CPU share: outcomes, moving a sample's values to CPU,
comparing outputs, gradients and the CPU fallbacks a run used."""

from __future__ import annotations

import torch
from torch.testing._comparison import default_tolerances
from torch.utils import _pytree as pytree

import torch_tpu

PASS, WRONG, ERROR, SKIP = "pass", "wrong", "error", "skip"


def first_line(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}".strip()
    return text.splitlines()[0][:300] if text else type(error).__name__


def to_cpu(value):
    """A CPU copy of every tpu tensor in `value` (leaves keep requires_grad), tpu devices
    (factory functions' `device=` arguments) turned into cpu, other values as is. Tensors a
    sample deliberately made on the CPU stay there, as in PyTorch's own device tests. A tensor
    that appears twice (`FunctionInput(x, x)`) gets one copy, so gradients add up as on tpu."""
    copies: dict[int, torch.Tensor] = {}

    def move(tensor):
        if id(tensor) not in copies:
            copies[id(tensor)] = copy_of(tensor)
        return copies[id(tensor)]

    def copy_of(tensor):
        if tensor.device.type != "tpu":
            return tensor.detach().clone().requires_grad_(tensor.requires_grad)
        # The whole storage, then the same view of it: sizes, strides and offset stay the same,
        # so ops that reach outside the view (as_strided with a storage_offset) see the same data.
        source = tensor.detach()
        elements = source.untyped_storage().nbytes() // max(source.element_size(), 1)
        storage = source.as_strided((elements,), (1,), 0).cpu()
        moved = storage.as_strided(source.shape, source.stride(), source.storage_offset())
        if tensor.requires_grad:
            moved.requires_grad_(True)
        return moved

    def device(d):
        return torch.device("cpu") if d.type == "tpu" else d

    def string(text):
        return "cpu" if text in ("tpu", "tpu:0") else text

    value = pytree.tree_map_only(torch.Tensor, move, value)
    value = pytree.tree_map_only(torch.device, device, value)
    return pytree.tree_map_only(str, string, value)


def leaves_requiring_grad(value) -> list[torch.Tensor]:
    return [t for t in pytree.tree_leaves(value)
            if isinstance(t, torch.Tensor) and t.requires_grad and t.is_leaf]



def paired_grad_inputs(tpu_value, cpu_value) -> tuple[list, list]:
    """The tpu tensors of `tpu_value` that require grad (leaves or not: a sample may hand over
    `x.log()` of a leaf) and their copies at the same place in `cpu_value`, its to_cpu()."""
    tpu_leaves, _ = pytree.tree_flatten(tpu_value)
    cpu_leaves, _ = pytree.tree_flatten(cpu_value)
    pairs = [(t, c) for t, c in zip(tpu_leaves, cpu_leaves)
             if isinstance(t, torch.Tensor) and t.requires_grad]
    return [t for t, _ in pairs], [c for _, c in pairs]


def compare(actual, expected, metadata_only: bool = False, noise: list | None = None) -> None:
    """Raises AssertionError when tpu's `actual` differs from CPU's `expected`. `noise` (per
    tensor leaf, see spread()) widens each tensor's absolute tolerance by twice the difference
    CPU's own kernels show between thread counts: tpu may run a kernel with another team."""
    actual_leaves, actual_spec = pytree.tree_flatten(actual)
    expected_leaves, expected_spec = pytree.tree_flatten(expected)
    assert actual_spec == expected_spec, f"output structure {actual_spec} != {expected_spec}"
    for index, (got, want) in enumerate(zip(actual_leaves, expected_leaves)):
        if isinstance(want, torch.Tensor):
            assert isinstance(got, torch.Tensor), f"output {index}: {type(got).__name__}, not a tensor"
            assert got.device.type == "tpu" or got.device == want.device, (
                f"output {index} on {got.device}, expected tpu")
            got = got.cpu()
            if metadata_only:
                assert got.shape == want.shape and got.dtype == want.dtype, (
                    f"output {index}: {got.dtype}{list(got.shape)} != {want.dtype}{list(want.shape)}")
                continue
            tolerance = {}
            if noise is not None and noise[index] > 0:
                rtol, atol = default_tolerances(want)
                tolerance = {"rtol": rtol, "atol": atol + 2 * noise[index]}
            torch.testing.assert_close(got, want, equal_nan=True, check_device=False,
                                       msg=lambda m, i=index: f"output {i}: {m}", **tolerance)
        else:
            assert got == want or (got != got and want != want), f"output {index}: {got!r} != {want!r}"


def spread(first, second) -> list[float]:
    """Per leaf of `first`, the largest elementwise difference from the same leaf of `second`
    for floating tensors (0 for anything else, and for every leaf when the structures differ)."""
    def difference(a, b):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
                and a.is_floating_point() and a.shape == b.shape and a.numel()):
            return 0.0
        return float((a.detach().double() - b.detach().double()).abs().nan_to_num().max())
    first_leaves, second_leaves = pytree.tree_leaves(first), pytree.tree_leaves(second)
    if len(first_leaves) != len(second_leaves):
        return [0.0] * len(first_leaves)
    return [difference(a, b) for a, b in zip(first_leaves, second_leaves)]


def fallback_total() -> dict[str, int]:
    return dict(torch_tpu.metrics()["fallbacks"])


def note_new_fallbacks(before: dict[str, int], seen: list[str]) -> None:
    """Appends to `seen` the ops whose CPU fallback count grew since `before`."""
    for name, count in fallback_total().items():
        if count > before.get(name, 0) and name not in seen:
            seen.append(name)


def grads(outputs, inputs, grad_outputs):
    return torch.autograd.grad(outputs, inputs, grad_outputs, allow_unused=True)


def differentiable_outputs(outputs) -> list[torch.Tensor]:
    return [t for t in pytree.tree_leaves(outputs)
            if isinstance(t, torch.Tensor) and t.requires_grad and t.is_floating_point()]



# Worse outcomes win: one wrong sample makes the (op, dtype) wrong.
SEVERITY = {SKIP: 0, PASS: 1, WRONG: 2, ERROR: 3}


def mark(result, phase: str, outcome: str, message: str) -> None:
    """Records `outcome` for `phase` ("forward", "backward") on `result` (an object with
    those attributes and `message`) unless a worse one is already there."""
    current = getattr(result, phase) or SKIP
    if SEVERITY[outcome] > SEVERITY[current]:
        setattr(result, phase, outcome)
        if outcome in (WRONG, ERROR) and not result.message:
            result.message = f"{phase}: {message}"
