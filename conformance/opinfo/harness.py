"""Runs one OpInfo entry on tpu and on CPU and classifies each dtype's result.

Per (op, dtype): every sample input runs on CPU (the reference) and on tpu (copies of the
same tensors); outputs are compared with torch.testing.assert_close's per-dtype tolerances.
For float32 the gradients of the inputs are compared too (same random output gradients on
both sides); where they differ by more than assert_close allows, the tolerance widens by twice
CPU's own distance from the sample's float64 gradients (a device summing in another order is as
accurate as CPU). Samples that raise on CPU are left out (bad samples for this dtype on CPU).
"""

from __future__ import annotations

import dataclasses
import itertools
import traceback
import zlib

import torch

from ..comparison import (ERROR, PASS, SKIP, WRONG, compare, differentiable_outputs,
                          fallback_total, first_line, grads, leaves_requiring_grad, mark,
                          note_new_fallbacks, to_cpu)
from ..isolated import max_samples
from ..random_replay import RecordDraws, ReplayDraws
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
        note_new_fallbacks(before, result.fallback_ops)
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
        try:
            compare(list(actual_grads), list(expected_grads), metadata_only)
        except AssertionError:
            noise = _distance_from_double(op, args, kwargs, grad_outputs, expected_grads)
            if noise is None:
                raise
            compare(list(actual_grads), list(expected_grads), metadata_only, noise=noise)
        mark(result, "backward", PASS, "")
    except AssertionError as error:
        mark(result, "backward", WRONG, first_line(error))


def _distance_from_double(op, args, kwargs, grad_outputs, expected_grads) -> list[float] | None:
    """How far CPU's float32 gradients are from the same sample's float64 ones, per gradient:
    a device summing in another order is as accurate as CPU when it is no farther than twice
    that (the sweeps' tolerance principle). None when the sample cannot run in float64."""
    def widened(value):
        if isinstance(value, torch.Tensor) and value.dtype == torch.float32:
            return value.detach().double().requires_grad_(value.requires_grad)
        return value

    def copied(value):  # for a rerun: the op may update its inputs
        if isinstance(value, torch.Tensor):
            return value.detach().clone().requires_grad_(value.requires_grad)
        return value
    try:
        # The float64 run draws the float32 run's random numbers (random_replay.py).
        copied_args, copied_kwargs = torch.utils._pytree.tree_map(copied, (args, kwargs))
        recorded = RecordDraws()
        torch.manual_seed(0)
        with recorded:
            op(*copied_args, **copied_kwargs)
        double_args, double_kwargs = torch.utils._pytree.tree_map(widened, (args, kwargs))
        replay = ReplayDraws(recorded)
        with replay:
            outputs = differentiable_outputs(op(*double_args, **double_kwargs))
        if not replay.complete():
            return None
        exact = grads(outputs, leaves_requiring_grad((double_args, double_kwargs)),
                      [g.double() for g in grad_outputs])
    except Exception:  # noqa: BLE001 (no float64 reference: the default tolerance stands)
        return None
    return [0.0 if e is None or x is None else float((e.double() - x).abs().nan_to_num().max())
            for e, x in zip(expected_grads, exact)]


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
            for sample in itertools.islice(samples, max_samples()):
                run_sample(op, sample, with_grad, name in METADATA_ONLY, result)
        except Exception as error:  # noqa: BLE001 (making samples on tpu failed)
            mark(result, "forward", ERROR, f"making samples on tpu: {first_line(error)}")
        except BaseException:
            traceback.print_exc()
            raise
        results.append(result)
    return results
