"""A program's first step: output shapes come from PyTorch's C++ shape functions for the ops a
model issues most (csrc/ops/structured_meta.cpp), not from the Python meta kernels whose first
call imports torch._dynamo and sympy (seconds: benchmarks/first_step.py). Each check runs in a
fresh process, since only a fresh process has not imported them yet."""

import pytest

from conftest import run_python_ok

FIRST_FORWARD = """
import sys, torch, torch_tpu
from torch_tpu.demo.llama import Llama, LlamaConfig
torch_tpu.set_mode("{mode}")
torch.manual_seed(0)
model = Llama(LlamaConfig()).eval()
tokens = torch.randint(0, 256, (4, 32))
with torch.no_grad():
    expected = model(tokens)
    got = model.to("tpu")(tokens.to("tpu")).cpu()
lazy = [name for name in ("torch._dynamo", "sympy") if name in sys.modules]
print("imported:", lazy)  # before assert_close, which imports sympy itself
torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)
"""


@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_the_demo_models_first_forward_imports_no_python_meta_machinery(mode):
    out = run_python_ok(FIRST_FORWARD.format(mode=mode))
    assert "imported: []" in out


def test_attention_backward_shapes_match_the_cpu_kernels_layouts():
    code = """
import torch, torch_tpu
import torch.nn.functional as F
torch.manual_seed(0)
q, k, v = (torch.randn(2, 4, 16, 8, requires_grad=True) for _ in range(3))
out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
out.sum().backward()
qt, kt, vt = (t.detach().to("tpu").requires_grad_() for t in (q, k, v))
out_t = F.scaled_dot_product_attention(qt, kt, vt, is_causal=True)
out_t.sum().backward()
torch.testing.assert_close(out_t.cpu(), out, rtol=1e-5, atol=1e-5)
for cpu, tpu in ((q, qt), (k, kt), (v, vt)):
    torch.testing.assert_close(tpu.grad.cpu(), cpu.grad, rtol=1e-5, atol=1e-5)
    assert tpu.grad.stride() == cpu.grad.stride(), (tpu.grad.stride(), cpu.grad.stride())
print("ok")
"""
    assert "ok" in run_python_ok(code)
