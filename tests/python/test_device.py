import pytest
import torch

from conftest import run_python


def test_accelerator_reports_tpu():
    assert torch.accelerator.current_accelerator() == torch.device("tpu")
    assert torch.accelerator.is_available()
    assert torch.accelerator.device_count() == torch.tpu.device_count() == 1
    assert torch.accelerator.current_device_index() == 0
    torch.accelerator.set_device_index(0)
    torch.accelerator.synchronize()


def test_device_module():
    assert torch.tpu.is_available()
    assert torch.tpu.current_device() == 0
    torch.tpu.set_device(0)
    with torch.tpu.device(0):
        assert torch.tpu.current_device() == 0
    props = torch.tpu.get_device_properties(0)
    assert props.total_memory == 16 * 2**30
    assert "TPU" in torch.tpu.get_device_name() == props.name or "TPU" in props.name
    torch.tpu.synchronize()


def test_tensor_and_module_methods():
    x = torch.arange(4.0).tpu()
    assert x.is_tpu and x.device == torch.device("tpu:0")
    assert torch.ones(2, device=torch.device("tpu:0")).device.type == "tpu"
    model = torch.nn.Linear(3, 2).tpu()
    assert model.weight.device.type == "tpu"


def test_storage_holds_a_device_address_not_a_host_address():
    x = torch.ones(16, device="tpu")
    assert x.data_ptr() >= 2**56  # chip addresses live in a non-canonical range


def test_invalid_device_index_raises():
    with pytest.raises(RuntimeError, match="invalid tpu device index 5"):
        torch.ones(2, device="tpu:5")
    with pytest.raises(RuntimeError, match="invalid tpu device index"):
        torch.tpu.set_device(7)


def test_import_torch_alone_registers_tpu():
    result = run_python("import torch; print(torch.randn(2, device='tpu').device)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "tpu:0"


def test_host_chips_from_environment():
    result = run_python("import torch; print(torch.tpu.device_count(), "
                        "torch.ones(2, device='tpu:1').cpu().sum().item())",
                        TORCH_TPU_HOST_CHIPS=2)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["2", "2.0"]
