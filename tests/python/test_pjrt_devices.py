"""Several devices on the PJRT runtime: one tpu device per plugin device (the CPU plugin has 4),
each running its programs on its own PJRT device, with copies between them and memory counted
per device. Each test runs a fresh interpreter (the runtime is chosen at start-up)."""

import json

from conftest import run_python
from test_pjrt_runtime import PJRT, run_json


def test_every_plugin_device_is_a_tpu_device_in_every_mode():
    result = run_json("""
torch.manual_seed(0)
a, b = torch.randn(5, 6), torch.randn(6, 3)
errors = {}
for mode in ["strict", "debug", "fused"]:
    torch_tpu.set_mode(mode)
    for index in range(torch.tpu.device_count()):
        x, y = a.to(f"tpu:{index}"), b.to(f"tpu:{index}")
        out = torch.relu(x @ y).sum(dim=0) * 2 + 1
        assert out.device == torch.device("tpu", index), out.device
        errors[f"{mode}:{index}"] = float((out.cpu() - (torch.relu(a @ b).sum(dim=0) * 2 + 1)).abs().max())
torch_tpu.set_mode("strict")
print(json.dumps({"devices": torch.tpu.device_count(),
                  "plugin_devices": torch_tpu.runtime_info()["devices"],
                  "accelerator_devices": torch.accelerator.device_count(),
                  "errors": errors, "fallbacks": torch_tpu.metrics()["fallbacks"]}))
""")
    assert result["devices"] == result["plugin_devices"] == result["accelerator_devices"] >= 2
    assert len(result["errors"]) == 3 * result["devices"]
    for key, error in result["errors"].items():
        assert error < 1e-5, (key, error)
    assert result["fallbacks"] == {}


def test_copies_between_devices_and_memory_per_device():
    result = run_json("""
src = torch.arange(24, dtype=torch.float32).reshape(4, 6)
x = src.to("tpu:1")
whole = x.to("tpu:2")                          # a whole buffer
cast = x.to("tpu:3", dtype=torch.float64)     # and a conversion
target = torch.zeros(6, 4, device="tpu:0")
target[1:5, 2] = x[:, 3].to("tpu:0")          # a strided part into part of a buffer
y = torch.zeros(4, 6, device="tpu:2")
y.copy_(x.t().contiguous().t())               # copy_ across devices
torch.tpu.synchronize()
expected_target = torch.zeros(6, 4); expected_target[1:5, 2] = src[:, 3]
mixed_error = ""
try:
    x + whole
except RuntimeError as error:
    mixed_error = str(error)
print(json.dumps({
    "whole": torch.equal(whole.cpu(), src), "cast": torch.equal(cast.cpu(), src.double()),
    "target": torch.equal(target.cpu(), expected_target), "copy_": torch.equal(y.cpu(), src),
    "devices": [str(t.device) for t in (whole, cast, target, y)],
    "allocated": [torch.tpu.memory_allocated(i) for i in range(4)],
    "mixed_error": mixed_error}))
""")
    assert result["whole"] and result["cast"] and result["target"] and result["copy_"]
    assert result["devices"] == ["tpu:2", "tpu:3", "tpu:0", "tpu:2"]
    # tpu:1 holds x (96 bytes); tpu:2 whole and y; tpu:3 the float64 copy; tpu:0 target.
    assert result["allocated"] == [96, 96, 192, 192]
    assert "tpu:1 and tpu:2" in result["mixed_error"]


def test_a_training_step_on_a_second_device_matches_cpu():
    result = run_json("""
torch.manual_seed(0)
cpu_model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
model.load_state_dict(cpu_model.state_dict())
model.to("tpu:3")
data, target = torch.randn(32, 8), torch.randn(32, 4)
losses = []
for net, device in ((cpu_model, "cpu"), (model, "tpu:3")):
    opt = torch.optim.AdamW(net.parameters(), lr=1e-2)
    for _ in range(3):
        loss = torch.nn.functional.mse_loss(net(data.to(device)), target.to(device))
        opt.zero_grad(); loss.backward(); opt.step()
    losses.append(loss.item())
weight_error = float((model[0].weight.cpu() - cpu_model[0].weight).abs().max())
print(json.dumps({"losses": losses, "weight_error": weight_error,
                  "on_device": str(model[0].weight.grad.device),
                  "unused_device_bytes": torch.tpu.memory_allocated(0)}))
""")
    cpu_loss, tpu_loss = result["losses"]
    assert abs(cpu_loss - tpu_loss) <= 1e-5 * max(1.0, abs(cpu_loss))
    assert result["weight_error"] < 1e-5
    assert result["on_device"] == "tpu:3"
    assert result["unused_device_bytes"] == 0


def test_the_environment_may_ask_for_fewer_devices_but_not_more():
    fewer = run_json("print(json.dumps(torch.tpu.device_count()))", env={"TORCH_TPU_HOST_CHIPS": "2"})
    assert fewer == 2
    more = run_python("import torch, torch_tpu; torch.zeros(1, device='tpu')",
                      env={**PJRT, "TORCH_TPU_HOST_CHIPS": "9"})
    assert more.returncode != 0
    assert "has 4 devices" in more.stderr and "asks for 9 tpu devices" in more.stderr, more.stderr


def test_selecting_pjrt_after_the_device_count_was_asked_keeps_those_chips_with_a_warning():
    result = run_python("""
import json, warnings, torch, torch_tpu
before = torch.tpu.device_count()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    torch_tpu.set_runtime("pjrt")
y = (torch.ones(3, device="tpu") * 2).cpu().tolist()
print(json.dumps({"before": before, "after": torch.tpu.device_count(), "y": y,
                  "warnings": [str(w.message) for w in caught]}))
""", env={"TORCH_TPU_PJRT_PLUGIN": "cpu"})
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["before"] == out["after"] == 1 and out["y"] == [2.0, 2.0, 2.0]
    assert any("drives 1 of the plugin's 4 devices" in w for w in out["warnings"]), out
