"""Runs one architecture on tpu and on CPU: forward in eval mode, then (for heads with a loss)
forward + backward + one AdamW step from the same initial weights; compares logits, loss,
gradients and updated weights.

Some tiny models are chaotic: CPU's own results change with its thread count (training-mode
batch norm over a handful of values, deep stacks), and a float32 result is only as close to
the exact one as float32 rounding lets it be. The reference is therefore computed with one and
with two threads, and in float64 where the model runs in float64 and draws no random numbers;
each compared tensor's tolerance is at least twice the larger of what CPU's two float32 runs
differ by and what CPU float32 differs from float64 by. A device as accurate as CPU then
passes, though its rounding errors fall in other directions than CPU's; otherwise a tpu run
(whose kernels sum in other orders) could not be told apart from CPU's own noise."""

from __future__ import annotations

import copy
import time
import traceback

import torch
from torch.utils import _pytree as pytree

from .models import LEVELS, make_inputs, tiny_model

PASS, WRONG, ERROR, CPU_ERROR = "pass", "wrong", "error", "cpu_error"
FORWARD_TOLERANCE = {"rtol": 1e-3, "atol": 1e-4}
GRAD_TOLERANCE = {"rtol": 1e-3, "atol": 1e-5}
# One AdamW step moves each weight by about lr * sign(grad); where a true gradient is zero,
# rounding noise can pick either sign on either device, so weights compare to ~2 lr.
LR = 1e-3
WEIGHT_TOLERANCE = {"rtol": 0.0, "atol": 2.5 * LR}


def first_line(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}".strip()
    return text.splitlines()[0][:300] if text else type(error).__name__


def to_device(value, device):
    return pytree.tree_map_only(torch.Tensor, lambda t: t.to(device), value)


def output_tensors(output) -> list[torch.Tensor]:
    values = output.to_tuple() if hasattr(output, "to_tuple") else output
    return [t for t in pytree.tree_leaves(values) if isinstance(t, torch.Tensor)]


def compare_tensors(actual: list, expected: list, noise: list, what: str,
                    tolerance: dict) -> None:
    """Compares tpu's tensors with CPU's; `noise` holds the largest difference between CPU's
    own one- and two-thread results for each tensor."""
    assert len(actual) == len(expected), f"{what}: {len(actual)} tensors, CPU {len(expected)}"
    for index, (got, want, spread) in enumerate(zip(actual, expected, noise)):
        atol = max(tolerance["atol"], 2 * spread)
        torch.testing.assert_close(got.detach().cpu(), want.detach(), equal_nan=True,
                                   rtol=tolerance["rtol"], atol=atol,
                                   msg=lambda m, i=index: f"{what} {i}: {m}")


def spread(first: list, second: list) -> list[float]:
    """Per tensor, the largest elementwise difference between two CPU runs."""
    return [float((a.float() - b.float()).abs().max()) if a.numel() and a.shape == b.shape
            else 0.0 for a, b in zip(first, second)]


def widest(first: list, second: list | None) -> list[float]:
    """Per tensor, the larger of two spreads (`second` may be missing)."""
    return first if second is None else [max(a, b) for a, b in zip(first, second)]


def in_float64(fn, model, inputs):
    """fn(model, inputs) with the model and the floating inputs in float64, on CPU; None when
    the model does not run in float64 or draws random numbers (its float64 draws differ from
    its float32 ones, so the two results would differ by more than rounding)."""
    inputs64 = pytree.tree_map_only(torch.Tensor, lambda t: t.double() if t.is_floating_point() else t, inputs)
    torch.manual_seed(0)  # fn seeds the same way: a changed state after it means draws
    seeded = torch.get_rng_state()
    try:
        result = fn(copy.deepcopy(model).double(), inputs64)
    except Exception:  # noqa: BLE001 (float32-only models keep the thread spread alone)
        return None
    return result if torch.equal(seeded, torch.get_rng_state()) else None


def on_threads(threads: int, fn, *args):
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return fn(*args)
    finally:
        torch.set_num_threads(previous)


def forward(model, inputs):
    model.eval()
    torch.manual_seed(0)  # models that draw random numbers (masking, noise) draw the same
    with torch.no_grad():
        return output_tensors(model(**inputs))


def training_step(model, inputs):
    """(loss, grads, updated weights) after one AdamW step."""
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR)
    torch.manual_seed(0)
    loss = model(**inputs).loss
    loss.backward()
    grads = [p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p)
             for p in model.parameters()]
    optimizer.step()
    return loss.detach(), grads, [p.detach() for p in model.parameters()]


def evaluate(model_type: str, on_stage=lambda stage: None, compile_backend: str | None = None) -> dict:
    """The record of `model_type`; on_stage("cpu"/"tpu") is told as the run moves on, so a
    parent can tell a CPU-side crash from a tpu one. `compile_backend`: the tpu model runs
    under torch.compile with this backend (CPU's reference stays eager)."""
    record = {"model": model_type, "class": "", "kind": "", "forward": None, "train": None,
              "status": CPU_ERROR, "message": "", "seconds": 0.0, "fallback_ops": []}
    started = time.monotonic()
    try:
        record.update(run(model_type, record, on_stage, compile_backend))
    except Exception as error:  # noqa: BLE001 (the harness must record, not crash)
        traceback.print_exc()  # the whole story on stderr; the record keeps the first line
        record.update(status=ERROR, message="harness: " + first_line(error))
    record["seconds"] = round(time.monotonic() - started, 2)
    return record


def build_on_cpu(model_type: str):
    """(model, kind, inputs, CPU forward outputs) at the first shrink level whose model builds
    and runs on CPU; raises the first level's error if none does."""
    first_error = None
    for level in LEVELS:
        try:
            model, kind = tiny_model(model_type, level)
            if hasattr(model.config, "use_cache"):
                model.config.use_cache = False
            inputs = make_inputs(model, kind)
            return model, kind, inputs, forward(copy.deepcopy(model), inputs)
        except LookupError:
            raise  # no model class or no known input: no level helps
        except Exception as error:  # noqa: BLE001
            first_error = first_error or error
    raise first_error


def run(model_type: str, record: dict, on_stage, compile_backend: str | None = None) -> dict:
    # CPU first: anything failing here says nothing about tpu.
    on_stage("cpu")
    try:
        model, kind, inputs, expected = build_on_cpu(model_type)
        record.update({"class": type(model).__name__, "kind": kind})
        initial = copy.deepcopy(model)
        exact = in_float64(forward, initial, inputs)
        noise = widest(spread(expected, on_threads(1, forward, copy.deepcopy(initial), inputs)),
                       None if exact is None else spread(expected, exact))
        trains = "labels" in inputs and getattr(model(**inputs), "loss", None) is not None
        expected_step = step_noise = None
        if trains:
            expected_step = training_step(copy.deepcopy(initial), inputs)
            single = on_threads(1, training_step, copy.deepcopy(initial), inputs)
            exact = in_float64(training_step, initial, inputs)
            loss, grads, weights = ([expected_step[0]], expected_step[1], expected_step[2])
            step_noise = [widest(spread(loss, [single[0]]), None if exact is None else spread(loss, [exact[0]])),
                          widest(spread(grads, single[1]), None if exact is None else spread(grads, exact[1])),
                          widest(spread(weights, single[2]), None if exact is None else spread(weights, exact[2]))]
    except Exception as error:  # noqa: BLE001
        return {"status": CPU_ERROR, "message": "cpu: " + first_line(error)}

    on_stage("tpu")
    fallbacks_before = fallback_counts()
    try:
        return run_on_tpu(initial, inputs, expected, noise, expected_step, step_noise,
                          compile_backend)
    finally:
        after = fallback_counts()
        record["fallback_ops"] = sorted(op for op, count in after.items()
                                        if count > fallbacks_before.get(op, 0))


def fallback_counts() -> dict[str, int]:
    """Ops run on host kernels so far (through host copies where the device's memory is
    opaque), by op."""
    import torch_tpu

    return dict(torch_tpu.metrics()["fallbacks"])


def on_tpu(initial, compile_backend: str | None):
    model = copy.deepcopy(initial).to("tpu")
    return model if compile_backend is None else torch.compile(model, backend=compile_backend)


def run_on_tpu(initial, inputs, expected, noise, expected_step, step_noise,
               compile_backend: str | None = None) -> dict:
    tpu_inputs = to_device(inputs, "tpu")
    outcome = {"status": PASS, "forward": PASS}
    try:
        actual = forward(on_tpu(initial, compile_backend), tpu_inputs)
        torch.tpu.synchronize()
    except Exception as error:  # noqa: BLE001
        return {"status": ERROR, "forward": ERROR, "message": "forward: " + first_line(error)}
    try:
        compare_tensors(actual, expected, noise, "output", FORWARD_TOLERANCE)
    except AssertionError as error:
        return {"status": WRONG, "forward": WRONG, "message": "forward: " + first_line(error)}
    if expected_step is None:
        return outcome
    try:
        loss, grads, weights = training_step(on_tpu(initial, compile_backend), tpu_inputs)
        torch.tpu.synchronize()
    except Exception as error:  # noqa: BLE001
        return {**outcome, "status": ERROR, "train": ERROR, "message": "train: " + first_line(error)}
    try:
        compare_tensors([loss], [expected_step[0]], step_noise[0], "loss", FORWARD_TOLERANCE)
        compare_tensors(grads, expected_step[1], step_noise[1], "gradient", GRAD_TOLERANCE)
        compare_tensors(weights, expected_step[2], step_noise[2], "updated weight",
                        WEIGHT_TOLERANCE)
    except AssertionError as error:
        return {**outcome, "status": WRONG, "train": WRONG, "message": "train: " + first_line(error)}
    return {**outcome, "train": PASS}
