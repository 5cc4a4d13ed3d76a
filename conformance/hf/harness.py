"""Runs one architecture on tpu and on CPU: forward in eval mode, then (for heads with a loss)
forward + backward + one AdamW step from the same initial weights; compares logits, loss,
gradients and updated weights."""

from __future__ import annotations

import copy
import time
import traceback

import torch
from torch.utils import _pytree as pytree

from .models import tiny_model, make_inputs

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


def compare_tensors(actual: list, expected: list, what: str, tolerance: dict) -> None:
    assert len(actual) == len(expected), f"{what}: {len(actual)} tensors, CPU {len(expected)}"
    for index, (got, want) in enumerate(zip(actual, expected)):
        torch.testing.assert_close(got.detach().cpu(), want.detach(), equal_nan=True,
                                   msg=lambda m, i=index: f"{what} {i}: {m}", **tolerance)


def forward(model, inputs):
    model.eval()
    with torch.no_grad():
        return output_tensors(model(**inputs))


def training_step(model, inputs):
    """(loss, grads, updated weights) after one AdamW step."""
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR)
    loss = model(**inputs).loss
    loss.backward()
    grads = [p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p)
             for p in model.parameters()]
    optimizer.step()
    return loss.detach(), grads, [p.detach() for p in model.parameters()]


def evaluate(model_type: str) -> dict:
    record = {"model": model_type, "class": "", "kind": "", "forward": None, "train": None,
              "status": CPU_ERROR, "message": "", "seconds": 0.0}
    started = time.monotonic()
    try:
        record.update(run(model_type, record))
    except Exception:  # noqa: BLE001 (the harness must record, not crash)
        record.update(status=ERROR, message="harness: " + traceback.format_exc().splitlines()[-1])
    record["seconds"] = round(time.monotonic() - started, 2)
    return record


def run(model_type: str, record: dict) -> dict:
    # CPU first: anything failing here says nothing about tpu.
    try:
        model, kind = tiny_model(model_type)
        record.update({"class": type(model).__name__, "kind": kind})
        if hasattr(model.config, "use_cache"):
            model.config.use_cache = False
        inputs = make_inputs(model, kind)
        initial = copy.deepcopy(model)
        expected = forward(model, inputs)
        trains = "labels" in inputs and getattr(model(**inputs), "loss", None) is not None
        expected_step = training_step(copy.deepcopy(initial), inputs) if trains else None
    except Exception as error:  # noqa: BLE001
        return {"status": CPU_ERROR, "message": "cpu: " + first_line(error)}

    tpu_inputs = to_device(inputs, "tpu")
    outcome = {"status": PASS, "forward": PASS}
    try:
        actual = forward(copy.deepcopy(initial).to("tpu"), tpu_inputs)
        torch.tpu.synchronize()
    except Exception as error:  # noqa: BLE001
        return {"status": ERROR, "forward": ERROR, "message": "forward: " + first_line(error)}
    try:
        compare_tensors(actual, expected, "output", FORWARD_TOLERANCE)
    except AssertionError as error:
        return {"status": WRONG, "forward": WRONG, "message": "forward: " + first_line(error)}
    if expected_step is None:
        return outcome
    try:
        loss, grads, weights = training_step(copy.deepcopy(initial).to("tpu"), tpu_inputs)
        torch.tpu.synchronize()
    except Exception as error:  # noqa: BLE001
        return {**outcome, "status": ERROR, "train": ERROR, "message": "train: " + first_line(error)}
    try:
        compare_tensors([loss], [expected_step[0]], "loss", FORWARD_TOLERANCE)
        compare_tensors(grads, expected_step[1], "gradient", GRAD_TOLERANCE)
        compare_tensors(weights, expected_step[2], "updated weight", WEIGHT_TOLERANCE)
    except AssertionError as error:
        return {**outcome, "status": WRONG, "train": WRONG, "message": "train: " + first_line(error)}
    return {**outcome, "train": PASS}
