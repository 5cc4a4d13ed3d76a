"""torch.save / torch.load of tpu tensors and state_dicts, with and without map_location."""

import io

import pytest
import torch

from conftest import assert_tpu_close, finishes_within, to_tpu_copy

# None: where the tensors were saved (tpu); otherwise the map_location's device.
LOCATIONS = {
    "saved_device": (None, "tpu"),
    "cpu": ("cpu", "cpu"),
    "tpu": ("tpu", "tpu"),
    "tpu:0": (torch.device("tpu:0"), "tpu"),
}


def save(obj) -> io.BytesIO:
    # Drain the chip first: test_save_does_not_deadlock_with_queued_work shows why.
    torch.tpu.synchronize()
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return buffer


def check_loaded(loaded: torch.Tensor, expected_cpu: torch.Tensor, device_type: str):
    assert loaded.device.type == device_type
    assert loaded.dtype == expected_cpu.dtype and loaded.shape == expected_cpu.shape
    torch.testing.assert_close(loaded.cpu(), expected_cpu, rtol=0, atol=0)


@pytest.mark.parametrize("location", sorted(LOCATIONS))
def test_tensor_round_trip(location):
    map_location, device_type = LOCATIONS[location]
    originals = [torch.randn(3, 4), torch.arange(10), torch.rand(5) > 0.5,
                 torch.randn(2, 3).to(torch.bfloat16)]
    buffer = save([t.tpu() for t in originals])
    loaded = torch.load(buffer, map_location=map_location)
    for tensor, original in zip(loaded, originals):
        check_loaded(tensor, original, device_type)
        if device_type == "tpu":
            assert tensor.device == torch.device("tpu:0")


def test_cpu_tensor_loaded_onto_tpu():
    original = torch.randn(4, 4)
    buffer = io.BytesIO()
    torch.save(original, buffer)
    buffer.seek(0)
    check_loaded(torch.load(buffer, map_location="tpu"), original, "tpu")


def test_views_keep_sharing_storage_after_load():
    base = torch.arange(12.0, device="tpu").view(3, 4)
    loaded_base, loaded_view = torch.load(save([base, base[1:, ::2]]))
    assert loaded_view.untyped_storage().data_ptr() == loaded_base.untyped_storage().data_ptr()
    loaded_view.fill_(-1)
    expected = torch.arange(12.0).view(3, 4)
    expected[1:, ::2] = -1
    assert_tpu_close(loaded_base, expected, rtol=0, atol=0)


@pytest.mark.parametrize("location", sorted(LOCATIONS))
def test_state_dict_round_trip(location):
    map_location, device_type = LOCATIONS[location]
    torch.manual_seed(0)
    reference = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8),
                                    torch.nn.Linear(8, 2))
    reference(torch.randn(6, 4))  # non-trivial BatchNorm running stats
    model = to_tpu_copy(reference)
    state = torch.load(save(model.state_dict()), map_location=map_location)
    assert list(state) == list(reference.state_dict())
    for key, value in reference.state_dict().items():
        check_loaded(state[key], value, device_type)

    restored = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8),
                                   torch.nn.Linear(8, 2)).tpu().eval()
    restored.load_state_dict(state)
    x = torch.randn(3, 4)
    assert_tpu_close(restored(x.tpu()), reference.eval()(x))


def test_optimizer_state_round_trip():
    model = torch.nn.Linear(3, 2).tpu()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    model(torch.randn(4, 3, device="tpu")).sum().backward()
    optimizer.step()
    state = torch.load(save(optimizer.state_dict()))
    exp_avg = optimizer.state_dict()["state"][0]["exp_avg"]
    assert state["state"][0]["exp_avg"].is_tpu
    assert_tpu_close(state["state"][0]["exp_avg"], exp_avg.cpu(), rtol=0, atol=0)


DEADLOCK_SCRIPT = """
import io, torch, torch_tpu
x = torch.randn(1 << 20, device="tpu")
for _ in range(4):                 # keep the chip busy so the next op is still queued below
    x = torch.tanh(x.view(1024, 1024) @ x.view(1024, 1024)).view(-1)
storage = x.untyped_storage()      # a Python object for x's storage
y = x * 2                          # a queued op holding a reference to that storage
del x                              # now only the Python storage object and that op hold it
torch.save(y, io.BytesIO())        # copies y's storage to the host, waiting with the GIL held
print("saved")
"""


def test_save_does_not_deadlock_with_queued_work():
    assert finishes_within(DEADLOCK_SCRIPT, timeout=10), "torch.save hung (deadlock)"


def test_a_tpu_state_dict_loads_into_a_model_built_on_cpu(mode):
    # The most common way to load a checkpoint: load_state_dict copies each tpu tensor into a
    # CPU parameter under no_grad. The copy runs on the chip's queue, where the caller's grad
    # mode is not in force: it must run below autograd, as the op's kernel does.
    torch.manual_seed(0)
    source = torch.nn.Linear(4, 3).to("tpu")
    model = torch.nn.Linear(4, 3)
    model.load_state_dict(source.state_dict())
    assert torch.equal(model.weight.detach(), source.weight.detach().cpu())
    assert model.weight.requires_grad and model.weight.grad_fn is None
    parameter = torch.nn.Parameter(torch.zeros(3))
    with torch.no_grad():
        parameter.copy_(torch.ones(3, device="tpu"))
    assert torch.equal(parameter.detach(), torch.ones(3)) and parameter.grad_fn is None
