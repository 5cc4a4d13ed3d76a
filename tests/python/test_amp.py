"""Autocast on tpu: torch.autocast("tpu") uses bfloat16 by default and CUDA's per-op policy
(matmul-like ops in low precision, softmax / norms / reductions / losses in float32)."""

import pytest
import torch
import torch.nn.functional as F

from conftest import assert_tpu_close, cpu_and_tpu


def test_autocast_defaults_to_bfloat16():
    assert torch.amp.is_autocast_available("tpu")
    assert torch.get_autocast_dtype("tpu") == torch.bfloat16
    assert not torch.is_autocast_enabled("tpu")
    with torch.autocast("tpu"):
        assert torch.is_autocast_enabled("tpu")
        assert torch.get_autocast_dtype("tpu") == torch.bfloat16
    assert not torch.is_autocast_enabled("tpu")


def test_amp_supported_dtypes():
    supported = torch.tpu.get_amp_supported_dtype()
    assert torch.bfloat16 in supported and torch.float16 in supported
    assert torch.tpu.is_bf16_supported()


LOW_PRECISION = {
    "matmul": lambda a, b: a @ b,
    "mm": lambda a, b: torch.mm(a, b),
    "linear": lambda a, b: F.linear(a, b.t()),
    "bmm": lambda a, b: torch.bmm(a[None], b[None]),
    "addmm": lambda a, b: torch.addmm(a, a, b),
    "conv2d": lambda a, b: F.conv2d(a[None, None], b[None, None, :3, :3]),
}
FLOAT32 = {
    "softmax": lambda x: torch.softmax(x, -1),
    "log_softmax": lambda x: F.log_softmax(x, -1),
    "layer_norm": lambda x: F.layer_norm(x, x.shape[-1:]),
    "sum": lambda x: x.sum(),
    "exp": torch.exp,
    "cross_entropy": lambda x: F.cross_entropy(x, torch.zeros(x.shape[0], dtype=torch.long,
                                                              device=x.device)),
}


@pytest.mark.parametrize("dtype", [None, torch.float16], ids=["default", "float16"])
@pytest.mark.parametrize("name", sorted(LOW_PRECISION))
def test_matmul_like_ops_run_in_low_precision(name, dtype):
    a_cpu, a_tpu = cpu_and_tpu(8, 8, seed=1)
    b_cpu, b_tpu = cpu_and_tpu(8, 8, seed=2)
    expected_dtype = dtype or torch.bfloat16
    with torch.autocast("tpu", **({"dtype": dtype} if dtype else {})):
        out = LOW_PRECISION[name](a_tpu, b_tpu)
    assert out.dtype == expected_dtype
    # The same op on inputs cast to the low-precision dtype, on CPU.
    expected = LOW_PRECISION[name](a_cpu.to(expected_dtype), b_cpu.to(expected_dtype))
    assert_tpu_close(out, expected, atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("name", sorted(FLOAT32))
def test_fp32_policy_ops_run_in_float32(name):
    a_cpu, a_tpu = cpu_and_tpu(8, 8, seed=1)
    with torch.autocast("tpu"):
        low = a_tpu @ a_tpu                  # bfloat16 inside autocast
        assert low.dtype == torch.bfloat16
        out = FLOAT32[name](low)
    assert out.dtype == torch.float32
    expected = FLOAT32[name]((a_cpu.bfloat16() @ a_cpu.bfloat16()).float())
    assert_tpu_close(out, expected, atol=1e-3, rtol=1e-3)


def test_autocast_leaves_other_devices_and_outside_code_alone():
    a_cpu, a_tpu = cpu_and_tpu(4, 4)
    with torch.autocast("tpu"):
        assert (a_cpu @ a_cpu).dtype == torch.float32  # CPU autocast is not enabled
        with torch.autocast("tpu", enabled=False):
            assert (a_tpu @ a_tpu).dtype == torch.float32
    assert (a_tpu @ a_tpu).dtype == torch.float32


def test_autocast_training_step_keeps_float32_master_weights():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    model_tpu = model.tpu()
    x = torch.randn(4, 8, device="tpu")
    with torch.autocast("tpu"):
        out = model_tpu(x)
        loss = F.cross_entropy(out, torch.tensor([0, 1, 1, 0], device="tpu"))
    assert out.dtype == torch.bfloat16 and loss.dtype == torch.float32
    loss.backward()
    for param in model_tpu.parameters():
        assert param.dtype == torch.float32 and param.grad.dtype == torch.float32
        assert param.grad.is_tpu and torch.isfinite(param.grad).all().item()


def test_float16_autocast_promotes_dot_and_trains_with_a_grad_scaler(mode):
    # dot is on PyTorch's promote list: fp16 inputs under float16 autocast stay fp16, a float32
    # one promotes (CUDA's behaviour); a GradScaler step trains as on CUDA.
    a_cpu, a_tpu = cpu_and_tpu(16, seed=1)
    b_cpu, b_tpu = cpu_and_tpu(16, seed=2)
    with torch.autocast("tpu", dtype=torch.float16):
        low = torch.dot(a_tpu.half(), b_tpu.half())
        mixed = torch.dot(a_tpu, b_tpu.half())
    assert low.dtype == torch.float16 and mixed.dtype == torch.float32
    assert_tpu_close(low, torch.dot(a_cpu.half(), b_cpu.half()), atol=1e-2, rtol=1e-2)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)).to("tpu")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler("tpu")
    x = a_tpu.reshape(1, 16).repeat(8, 1) * torch.linspace(0.5, 1.5, 8, device="tpu")[:, None]
    losses = []
    for _ in range(5):
        optimizer.zero_grad()
        with torch.autocast("tpu", dtype=torch.float16):
            out = model(x)
            loss = (out.float() - 1).pow(2).mean()
        assert out.dtype == torch.float16
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        losses.append(loss.item())
    assert losses[-1] < losses[0], losses
