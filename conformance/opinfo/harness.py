"""Runs one OpInfo entry on tpu and on CPU and classifies each dtype's result.

Per (op, dtype): every sample input runs on CPU (the reference) and on tpu (copies of the
same tensors); outputs are compared with torch.testing.assert_close's per-dtype tolerances.
For float32 the gradients of the inputs are compared too (same random output gradients on
both sides). Samples that raise on CPU are left out (bad samples for this dtype on CPU).
"""

from __future__ import annotations

import dataclasses
import traceback
import zlib

import torch
from torch.utils import _pytree as pytree

import torch_tpu

from .known_failures import METADATA_ONLY

# The dtypes the issue tracks, in report order.
DTYPES = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "int64": torch.int64,
    "int32": torch.int32,
    "bool": torch.bool,
}

PASS, WRONG, ERROR, SKIP = "pass", "wrong", "error", "skip"


@dataclasses.dataclass
class DtypeResult:
    op: str
    dtype: str
    forward: str = SKIP
    backward: str | None = None  # float32 ops with autograd only
    fallback_ops: list[str] = dataclasses.field(default_factory=list)
    samples: int = 0
    message: str = ""  # first failure


def op_id(op) -> str:
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


def first_line(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}".strip()
    return text.splitlines()[0][:300] if text else type(error).__name__


def to_cpu(value):
    """A CPU copy of every tpu tensor in `value` (leaves keep requires_grad), tpu devices
    (factory functions' `device=` arguments) turned into cpu, other values as is. Tensors a
    sample deliberately made on the CPU stay there, as in PyTorch's own device tests."""

    def move(tensor):
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


def compare(actual, expected, metadata_only: bool) -> None:
    """Raises AssertionError when tpu's `actual` differs from CPU's `expected`."""
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
            else:
                torch.testing.assert_close(got, want, equal_nan=True, check_device=False,
                                           msg=lambda m, i=index: f"output {i}: {m}")
        else:
            assert got == want or (got != got and want != want), f"output {index}: {got!r} != {want!r}"


def fallback_total() -> dict[str, int]:
    return dict(torch_tpu.metrics()["fallbacks"])


def grads(outputs, inputs, grad_outputs):
    return torch.autograd.grad(outputs, inputs, grad_outputs, allow_unused=True)


def differentiable_outputs(outputs) -> list[torch.Tensor]:
    return [t for t in pytree.tree_leaves(outputs)
            if isinstance(t, torch.Tensor) and t.requires_grad and t.is_floating_point()]


def run_sample(op, sample, with_grad: bool, metadata_only: bool, result: DtypeResult) -> None:
    """Runs one sample (made on tpu) on tpu and on a CPU copy made first (ops may update
    their inputs, e.g. running statistics) and updates `result`."""
    tpu_args, tpu_kwargs = (sample.input, *sample.args), sample.kwargs
    args, kwargs = to_cpu((tpu_args, tpu_kwargs))
    torch.manual_seed(0)
    try:
        expected = op(*args, **kwargs)
    except Exception:  # noqa: BLE001 (a sample CPU rejects says nothing about tpu)
        return
    result.samples += 1
    before = fallback_total()
    torch.manual_seed(0)
    try:
        actual = op(*tpu_args, **tpu_kwargs)
        torch.tpu.synchronize()
    except Exception as error:  # noqa: BLE001
        mark(result, "forward", ERROR, first_line(error))
        return
    finally:
        after = fallback_total()
        for name, count in after.items():
            if count > before.get(name, 0) and name not in result.fallback_ops:
                result.fallback_ops.append(name)
    try:
        compare(actual, expected, metadata_only)
        mark(result, "forward", PASS, "")
    except AssertionError as error:
        mark(result, "forward", WRONG, first_line(error))
        return
    if not with_grad:
        return
    cpu_inputs = leaves_requiring_grad((args, kwargs))
    cpu_outputs = differentiable_outputs(expected)
    if not cpu_inputs or not cpu_outputs:
        return
    generator = torch.Generator().manual_seed(1)
    grad_outputs = [torch.randn(t.shape, dtype=t.dtype, generator=generator) for t in cpu_outputs]
    try:
        expected_grads = grads(cpu_outputs, cpu_inputs, grad_outputs)
    except Exception:  # noqa: BLE001 (CPU cannot differentiate this sample)
        return
    try:
        tpu_outputs = differentiable_outputs(actual)
        actual_grads = grads(tpu_outputs, leaves_requiring_grad((tpu_args, tpu_kwargs)),
                             [g.to("tpu") for g in grad_outputs])
        torch.tpu.synchronize()
    except Exception as error:  # noqa: BLE001
        mark(result, "backward", ERROR, first_line(error))
        return
    try:
        compare(list(actual_grads), list(expected_grads), metadata_only)
        mark(result, "backward", PASS, "")
    except AssertionError as error:
        mark(result, "backward", WRONG, first_line(error))


# Worse outcomes win: one wrong sample makes the (op, dtype) wrong.
SEVERITY = {SKIP: 0, PASS: 1, WRONG: 2, ERROR: 3}


def mark(result: DtypeResult, phase: str, outcome: str, message: str) -> None:
    current = getattr(result, phase) or SKIP
    if SEVERITY[outcome] > SEVERITY[current]:
        setattr(result, phase, outcome)
        if outcome in (WRONG, ERROR) and not result.message:
            result.message = f"{phase}: {message}"


def evaluate(op) -> list[DtypeResult]:
    """Results for every tracked dtype the op supports on CPU."""
    name = op_id(op)
    supported = op.supported_dtypes("cpu")
    results = []
    for dtype_name, dtype in DTYPES.items():
        if dtype not in supported:
            continue
        result = DtypeResult(name, dtype_name)
        with_grad = dtype == torch.float32 and op.supports_autograd
        # Samples drawn from a seed of their own (op, dtype): the full sweep and the CI tier,
        # which run different sequences of ops in a worker, test the same values.
        torch.manual_seed(zlib.crc32(f"{name}/{dtype_name}".encode()))
        try:
            samples = op.sample_inputs("tpu", dtype, requires_grad=with_grad)
            for sample in samples:
                run_sample(op, sample, with_grad, name in METADATA_ONLY, result)
        except Exception as error:  # noqa: BLE001 (making samples on tpu failed)
            mark(result, "forward", ERROR, f"making samples on tpu: {first_line(error)}")
        except BaseException:
            traceback.print_exc()
            raise
        results.append(result)
    return results
