"""Runs one ModuleInfo entry on tpu and on CPU and classifies each dtype's result.

Per (module, dtype), for each training flag the entry asks for (train, and eval where the
module behaves differently) and each module input: the module is built on CPU from a fixed
seed and a copy is moved to tpu with `.to("tpu")`, as users do; the forward runs on both with
the same inputs (CPU copies of the tpu tensors the entry made) and the same seed; outputs are
compared with assert_close's per-dtype tolerances, then the gradients of the inputs and
parameters (same random output gradients on both sides), then the buffers (running
statistics) the step updated. Inputs that raise on CPU are left out.
"""

from __future__ import annotations

import copy
import dataclasses
import zlib

import torch
from torch.utils import _pytree as pytree

from ..comparison import (ERROR, PASS, SKIP, WRONG, compare, differentiable_outputs,
                          fallback_total, first_line, grads, mark, note_new_fallbacks,
                          paired_grad_inputs, spread, to_cpu)
from ..random_replay import RecordDraws, ReplayDraws, Unreplayable

# The dtypes ModuleInfo entries list on CPU, in report order.
DTYPES = {"float32": torch.float32, "float64": torch.float64,
          "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclasses.dataclass
class ModuleResult:
    module: str
    dtype: str
    forward: str = SKIP
    backward: str | None = None
    fallback_ops: list[str] = dataclasses.field(default_factory=list)
    samples: int = 0
    message: str = ""  # first failure


def training_flags(module_info) -> list[bool]:
    """PyTorch's own module tests run train mode, and eval mode too where the two differ."""
    return [True, False] if module_info.train_and_eval_differ else [True]


def build_on_cpu(module_info, constructor_input, dtype):
    """The module built on CPU (its constructor's tensors on CPU) in `dtype`, from a fixed
    seed: every call builds the same module."""
    args, kwargs = to_cpu((constructor_input.args, constructor_input.kwargs))
    torch.manual_seed(0)
    return module_info.module_cls(*args, **kwargs).to(dtype)


@dataclasses.dataclass
class Step:
    """What one forward and backward of a module gave."""
    outputs: object
    buffers: dict
    grads: list | None  # of the inputs, then the parameters; None: nothing to differentiate


def step(module, inputs, grad_inputs: list, training: bool, differentiate: bool = True) -> Step:
    """The forward (from seed 1) of `module` on `inputs` (args, kwargs), then the gradients of
    `grad_inputs` and the parameters for random output gradients drawn on CPU from seed 2
    (the same values on either device: the draw depends only on the outputs' shapes)."""
    module.train(training)
    torch.manual_seed(1)
    outputs = module(*inputs[0], **inputs[1])
    buffers = dict(module.named_buffers())
    differentiable = differentiable_outputs(outputs)
    leaves = grad_inputs + [p for p in module.parameters() if p.requires_grad]
    if not differentiate or not differentiable or not leaves:
        return Step(outputs, buffers, None)
    generator = torch.Generator().manual_seed(2)
    grad_outputs = [torch.randn(t.shape, dtype=t.dtype, generator=generator).to(t.device)
                    for t in differentiable]
    return Step(outputs, buffers, list(grads(differentiable, leaves, grad_outputs)))


def widened(tensor: torch.Tensor, dtype) -> torch.Tensor:
    """A floating `tensor` in `dtype`, a leaf requiring grad where it did; others as they are."""
    if not tensor.is_floating_point():
        return tensor
    return tensor.detach().to(dtype).requires_grad_(tensor.requires_grad)


def noise_references(reference, dtype) -> list[Step]:
    """CPU's one-thread step and, below float64, its float64 step, drawing the one-thread
    step's random numbers (random_replay.py; without one where the draws cannot be replayed)."""
    recorded = RecordDraws()
    try:
        with recorded:
            steps = [reference(threads=1)]
    except Unreplayable:
        return [reference(threads=1)]
    if dtype != torch.float64:
        replay = ReplayDraws(recorded)
        try:
            with replay:
                exact = reference(in_dtype=torch.float64)
        except Exception:  # noqa: BLE001 (float32-only modules keep the thread spread alone)
            return steps
        if replay.complete():
            steps.append(exact)
    return steps


def run_input(module_info, module_input, dtype, training: bool, result: ModuleResult) -> None:
    """One ModuleInput: forward, buffers and backward on tpu against CPU; updates `result`."""
    forward = module_input.forward_input
    if forward is None:
        return
    where = "train" if training else "eval"
    tpu_inputs = (forward.args, forward.kwargs)
    tpu_grad_inputs, _ = paired_grad_inputs(tpu_inputs, tpu_inputs)

    def reference(threads: int | None = None, in_dtype=dtype) -> Step:
        inputs = to_cpu(tpu_inputs)
        if in_dtype != dtype:
            inputs = pytree.tree_map_only(torch.Tensor, lambda t: widened(t, in_dtype), inputs)
        _, grad_inputs = paired_grad_inputs(tpu_inputs, inputs)
        module = build_on_cpu(module_info, module_input.constructor_input, in_dtype)
        previous = torch.get_num_threads()
        torch.set_num_threads(threads or previous)
        try:
            try:
                return step(copy.deepcopy(module), inputs, grad_inputs, training)
            except Exception:  # noqa: BLE001 (CPU cannot differentiate this input)
                return step(module, inputs, [], training, differentiate=False)
        finally:
            torch.set_num_threads(previous)

    try:
        on_tpu = copy.deepcopy(build_on_cpu(module_info, module_input.constructor_input, dtype))
        expected = reference()
    except Exception:  # noqa: BLE001 (an input CPU rejects says nothing about tpu)
        return
    result.samples += 1
    before = fallback_total()
    try:
        actual = step(on_tpu.to("tpu"), tpu_inputs, tpu_grad_inputs, training,
                      differentiate=expected.grads is not None)
        torch.tpu.synchronize()
    except Exception as error:  # noqa: BLE001
        mark(result, "forward", ERROR, f"{where}: {first_line(error)}")
        return
    finally:
        note_new_fallbacks(before, result.fallback_ops)
    # Where a strict comparison fails, CPU's own rounding says how much difference is noise:
    # its one-thread run (reductions split across threads round differently, and tpu may run
    # one with another team) and its distance from the float64 result (another order of
    # rounding, as exact as CPU's, must pass).
    references: list[Step] = []

    def agrees(phase: str, got, want, pick) -> bool:
        try:
            compare(got, want)
            return True
        except AssertionError as error:
            if not references:
                references.extend(noise_references(reference, dtype))
            noise = [max(values) for values in zip(*(spread(want, pick(r)) for r in references))]
            try:
                compare(got, want, noise=noise)
                return True
            except AssertionError:
                mark(result, phase, WRONG, f"{where}: {first_line(error)}")
                return False

    if not (agrees("forward", actual.outputs, expected.outputs, lambda s: s.outputs)
            and agrees("forward", actual.buffers, expected.buffers, lambda s: s.buffers)):
        return
    mark(result, "forward", PASS, "")
    if expected.grads is None:
        return
    if actual.grads is None:
        mark(result, "backward", ERROR, f"{where}: nothing to differentiate on tpu")
    elif agrees("backward", actual.grads, expected.grads, lambda s: s.grads):
        mark(result, "backward", PASS, "")


def evaluate(module_info) -> list[ModuleResult]:
    """Results for every dtype of DTYPES the entry lists."""
    name = module_info.name
    results = []
    for dtype_name, dtype in DTYPES.items():
        if dtype not in module_info.dtypes:
            continue
        result = ModuleResult(name, dtype_name)
        for training in training_flags(module_info):
            # Inputs drawn from a seed of their own: every tier tests the same values.
            torch.manual_seed(zlib.crc32(f"{name}/{dtype_name}/{training}".encode()))
            try:
                inputs = module_info.module_inputs_func(
                    module_info, device="tpu", dtype=dtype, requires_grad=True,
                    training=training)
            except Exception as error:  # noqa: BLE001 (making inputs on tpu failed)
                mark(result, "forward", ERROR, f"making inputs on tpu: {first_line(error)}")
                continue
            for module_input in inputs:
                run_input(module_info, module_input, dtype, training, result)
        results.append(result)
    return results
