"""Recorded Python lines (`torch_tpu.set_record_python_lines`): an error raised at a later sync
point names the line of the user's code that issued the failing op (not a line inside torch),
in Strict and fused mode; Debug mode records lines without being asked; program dumps list
each op's line. Ops issued where no Python code runs (autograd's device thread) have none."""

import inspect
import os

import pytest
import torch
import torch.nn.functional as F

import torch_tpu
from conftest import assert_tpu_close, run_python_ok


def bad_embedding():
    """Issues an embedding lookup with an index out of range (it fails when it runs), from
    inside torch.nn.functional; returns the result and the line of this file that issued it."""
    weight = torch.randn(3, 2, device="tpu")
    indices = torch.tensor([7], device="tpu")
    line = inspect.currentframe().f_lineno + 1
    return F.embedding(indices, weight), line


def raised_at_sync(fn):
    with pytest.raises(RuntimeError) as error:
        fn()
        torch.tpu.synchronize()
    return str(error.value)


@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_an_async_error_names_the_user_line_that_issued_the_op(mode):
    torch_tpu.set_mode(mode)
    torch_tpu.set_record_python_lines(True)
    lines = []
    message = raised_at_sync(lambda: lines.append(bad_embedding()[1]))
    assert "index_select" in message and "index out of range" in message
    assert f"(issued at {__file__}:{lines[0]} in bad_embedding)" in message, message
    assert torch_tpu.metrics()["ops_launched"] > 0
    # Later work runs as before.
    x = torch.ones(4, device="tpu")
    assert_tpu_close(x * 2, torch.full((4,), 2.0))


def test_a_failing_fused_kernel_names_the_line_of_each_of_its_ops():
    """An integer remainder by zero fails when ATen's kernel runs (a value, not a dtype or
    shape, is wrong: nothing to check at the call), here inside a fused kernel of two ops."""
    torch_tpu.set_mode("fused")
    torch_tpu.set_record_python_lines(True)
    counts = torch.ones(4, dtype=torch.long, device="tpu")
    zeros = torch.zeros(4, dtype=torch.long, device="tpu")
    with pytest.raises(RuntimeError) as error:
        first = inspect.currentframe().f_lineno + 1
        counts.remainder_(zeros)
        counts.add_(1)
        torch.tpu.synchronize()
    message = str(error.value)
    assert "ZeroDivisionError" in message
    name = "test_a_failing_fused_kernel_names_the_line_of_each_of_its_ops"
    assert (f"fused kernel of aten::remainder_.Tensor (issued at {__file__}:{first} in {name}) "
            f"aten::add_.Tensor (issued at {__file__}:{first + 1} in {name})") in message, message


def test_debug_mode_names_the_line_without_being_asked():
    torch_tpu.set_mode("debug")
    with pytest.raises(RuntimeError) as error:
        _, line = bad_embedding()
    assert f"{__file__}:" in str(error.value) and "in bad_embedding" in str(error.value)


def test_lines_are_not_recorded_unless_asked():
    message = raised_at_sync(bad_embedding)
    assert "index_select" in message and "issued at" not in message


def test_ops_issued_by_backward_have_no_line_and_results_are_unchanged():
    """Backward's ops are issued on autograd's device thread, which runs no Python code, so
    they get no line; what this checks is that recording there neither fails nor changes a
    result."""
    torch_tpu.set_mode("fused")
    torch.manual_seed(0)
    x_cpu = torch.randn(8, 16)
    w_cpu = torch.randn(16, 4, requires_grad=True)
    expected = None
    for record in (False, True):
        torch_tpu.set_record_python_lines(record)
        w = w_cpu.detach().tpu().requires_grad_()
        loss = (torch.tanh(x_cpu.tpu() @ w) * 2).sum()
        loss.backward()
        grad = w.grad.cpu()
        if expected is None:
            expected = grad
    torch.testing.assert_close(grad, expected, rtol=0, atol=0)
    w_cpu_loss = (torch.tanh(x_cpu @ w_cpu) * 2).sum()
    w_cpu_loss.backward()
    torch.testing.assert_close(grad, w_cpu.grad, rtol=1e-5, atol=1e-5)


def test_program_dumps_list_the_line_of_each_op(tmp_path):
    code = """
import torch, torch_tpu
x = torch.ones(8, device="tpu")
y = x + 1
z = (y * 2).relu()
print(z.sum().item())
"""
    out = run_python_ok(code, env={"TORCH_TPU_MODE": "fused", "TORCH_TPU_DUMP_PROGRAMS": tmp_path,
                                   "TORCH_TPU_RECORD_PYTHON_LINES": "1"})
    assert out.strip() == "32.0"
    text = "".join((tmp_path / name).read_text() for name in sorted(os.listdir(tmp_path)))
    assert "aten::add.Tensor (issued at <string>:4 in <module>)" in text, text
    assert "aten::mul.Tensor (issued at <string>:5 in <module>)" in text, text
    assert "aten::relu (issued at <string>:5 in <module>)" in text, text
