"""Optimizers on tpu parameters against CPU: SGD (momentum), Adam and AdamW, each as the
for-loop implementation (foreach=False), the multi-tensor one (foreach=True) and the fused
kernels (fused=True); five steps from identical weights give the same parameters.

About fused=True: torch 2.13 lists the PrivateUse1 backend's name in
torch.utils._foreach_utils._get_fused_kernels_supported_devices(), so the optimizers accept
fused=True for tpu parameters (no error to assert) and call aten::_fused_sgd_ /
_fused_adam_ / _fused_adamw_ on tpu tensors; test_fused_kernels_run_on_tpu checks that.
"""

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from conftest import assert_tpu_close, to_tpu_copy

OPTIMIZERS = {
    "SGD": (torch.optim.SGD, {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01}),
    "Adam": (torch.optim.Adam, {"lr": 0.01, "weight_decay": 0.01}),
    "AdamW": (torch.optim.AdamW, {"lr": 0.01, "weight_decay": 0.1}),
}
IMPLEMENTATIONS = {
    "for_loop": {"foreach": False},
    "foreach": {"foreach": True},
    "fused": {"fused": True},
}
FUSED_OPS = {"SGD": "_fused_sgd_", "Adam": "_fused_adam_", "AdamW": "_fused_adamw_"}


class RecordOps(TorchDispatchMode):
    """Records the names of the ATen ops called inside the block (aten::_fused_adam_ etc.)."""

    def __init__(self):
        super().__init__()
        self.names = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.add(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


def model_and_data():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    data = torch.randn(10, 8, generator=torch.Generator().manual_seed(1))
    return model, data


def train(model, optimizer, data, steps):
    for _ in range(steps):
        optimizer.zero_grad()
        model(data).square().mean().backward()
        optimizer.step()


@pytest.mark.parametrize("implementation", sorted(IMPLEMENTATIONS))
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_five_steps_match_cpu(name, implementation, mode):
    optimizer_class, options = OPTIMIZERS[name]
    model_cpu, data = model_and_data()
    model_tpu = to_tpu_copy(model_cpu)
    # The CPU reference is the plain for-loop implementation.
    opt_cpu = optimizer_class(model_cpu.parameters(), **options, foreach=False)
    opt_tpu = optimizer_class(model_tpu.parameters(), **options, **IMPLEMENTATIONS[implementation])
    train(model_cpu, opt_cpu, data, steps=5)
    train(model_tpu, opt_tpu, data.tpu(), steps=5)
    initial, _ = model_and_data()
    for p_initial, p_cpu, p_tpu in zip(initial.parameters(), model_cpu.parameters(),
                                       model_tpu.parameters()):
        assert p_tpu.is_tpu
        assert not torch.equal(p_cpu, p_initial)  # the optimizer did move the weights
        assert_tpu_close(p_tpu.detach(), p_cpu.detach(), atol=1e-6, rtol=1e-5)
    for state in opt_tpu.state.values():  # optimizer state lives on the chip too
        for key, value in state.items():
            if isinstance(value, torch.Tensor) and key != "step":
                assert value.is_tpu, key


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_fused_kernels_run_on_tpu(name):
    optimizer_class, options = OPTIMIZERS[name]
    model, data = model_and_data()
    model = model.tpu()
    optimizer = optimizer_class(model.parameters(), **options, fused=True)
    model(data.tpu()).sum().backward()
    with RecordOps() as recorded:
        optimizer.step()
    assert FUSED_OPS[name] in recorded.names, sorted(recorded.names)


def test_foreach_runs_multi_tensor_kernels_on_tpu():
    model, data = model_and_data()
    model = model.tpu()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, foreach=True)
    model(data.tpu()).sum().backward()
    with RecordOps() as recorded:
        optimizer.step()
    assert any(op.startswith("_foreach_") for op in recorded.names), sorted(recorded.names)
