import copy

import pytest
import torch

from conftest import assert_same


def models():
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    cnn = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4),
                              torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
                              torch.nn.Linear(4 * 4 * 4, 4))
    transformer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    return {
        "mlp": (mlp, torch.randn(5, 8)),
        "cnn": (cnn, torch.randn(2, 3, 8, 8)),
        "transformer": (transformer, torch.randn(2, 5, 8)),
    }


@pytest.mark.parametrize("name", ["mlp", "cnn", "transformer"])
def test_forward_backward_matches_cpu(name, mode):
    model_cpu, x = models()[name]
    model_tpu = copy.deepcopy(model_cpu).tpu()
    model_cpu(x).square().mean().backward()
    model_tpu(x.tpu()).square().mean().backward()
    for (param_name, p_cpu), p_tpu in zip(model_cpu.named_parameters(), model_tpu.parameters()):
        assert_same(p_tpu.grad, p_cpu.grad, atol=1e-5, rtol=1e-4, msg=param_name)


@pytest.mark.parametrize("optimizer,options", [
    (torch.optim.SGD, {"lr": 0.1, "momentum": 0.9, "foreach": False}),
    (torch.optim.SGD, {"lr": 0.1, "momentum": 0.9, "foreach": True}),
    (torch.optim.Adam, {"lr": 0.01, "foreach": False}),
    (torch.optim.Adam, {"lr": 0.01, "foreach": True}),
    (torch.optim.AdamW, {"lr": 0.01, "foreach": False}),
    (torch.optim.AdamW, {"lr": 0.01, "foreach": True}),
])
def test_optimizer_steps_match_cpu(optimizer, options):
    model_cpu, x = models()["mlp"]
    model_tpu = copy.deepcopy(model_cpu).tpu()
    opt_cpu = optimizer(model_cpu.parameters(), **options)
    opt_tpu = optimizer(model_tpu.parameters(), **options)
    for _ in range(5):
        for model, opt, data in ((model_cpu, opt_cpu, x), (model_tpu, opt_tpu, x.tpu())):
            opt.zero_grad()
            model(data).square().mean().backward()
            opt.step()
    for p_cpu, p_tpu in zip(model_cpu.parameters(), model_tpu.parameters()):
        assert_same(p_tpu, p_cpu, atol=1e-5, rtol=1e-4)


def test_autocast_uses_bfloat16():
    layer = torch.nn.Linear(4, 4).tpu()
    with torch.autocast("tpu"):
        out = layer(torch.randn(2, 4, device="tpu"))
        soft = torch.softmax(out, -1)
    assert out.dtype == torch.bfloat16
    assert soft.dtype == torch.float32
    assert torch.bfloat16 in torch.tpu.get_amp_supported_dtype()
