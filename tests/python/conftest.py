import os
import subprocess
import sys

import pytest
import torch

import torch_tpu


@pytest.fixture(autouse=True)
def _strict_and_fresh_metrics():
    torch_tpu.set_mode("strict")
    torch_tpu.set_check_nans(False)
    torch_tpu.reset_metrics()
    yield
    torch_tpu.set_mode("strict")


@pytest.fixture(params=["strict", "debug"])
def mode(request):
    torch_tpu.set_mode(request.param)
    return request.param


def run_python(code: str, **env) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh interpreter (for env-driven behaviour)."""
    full_env = dict(os.environ, **{k: str(v) for k, v in env.items()})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=full_env, timeout=120)


def assert_same(tpu_result, cpu_result, **kwargs):
    torch.testing.assert_close(tpu_result.cpu(), cpu_result, **kwargs)
