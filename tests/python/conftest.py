"""Fixtures and helpers shared by the tpu pytest suite.

Every test compares the tpu backend with PyTorch's own CPU results on the same inputs.
"""

import torch_tpu  # noqa: I001  (first: registers the tpu device before any test touches torch)

import copy
import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import hang_watchdog

MODES = ["strict", "debug", "fused"]

HERE = Path(__file__).resolve().parent

# A hung test (e.g. a deadlock between the host and a chip's queue) ends the run with a report
# naming it and every thread's Python stack, instead of stalling CI forever (hang_watchdog.py).
# The default is far above any ordinary test's duration.
HANG_BUDGET_S = 180
# Tests that are long by design, in child processes whose own timeouts exceed the default.
# Each budget is well above those timeouts, so that a slow child fails its one test with its
# output, and the watchdog stays the last resort for a real hang. A budget covers the item's
# fixtures too: a distributed module's rank launch is a module fixture, run in its first test.
LONG_HANG_BUDGETS_S = {
    HERE / "test_conformance.py": 1400,   # a fast tier: ~6 min on 2 idle cores, timeout 1100 s
    HERE / "test_fused_codegen.py": 900,  # ~30 s on 2 idle cores, two children of up to 300 s
    HERE / "distributed": 600,            # rank launches: wall timeouts of up to 240 s
}


def pytest_configure(config):
    hang_watchdog.install(config, HANG_BUDGET_S, LONG_HANG_BUDGETS_S)


@pytest.fixture(autouse=True)
def _strict_mode_and_fresh_metrics():
    """Each test starts in Strict mode, on chip 0's default stream, NaN checks and Python line
    recording off, metrics zeroed. Teardown drains the chips, so an async error a test left behind fails that test
    (not the next one)."""
    torch_tpu.set_mode("strict")
    torch_tpu.set_check_nans(False)
    torch_tpu.set_record_python_lines(False)
    torch.tpu.set_device(0)
    torch.tpu.set_stream(torch.tpu.default_stream(0))
    torch_tpu.reset_metrics()
    yield
    torch.tpu.set_stream(torch.tpu.default_stream(0))
    torch_tpu.set_check_nans(False)
    torch_tpu.set_record_python_lines(False)
    torch_tpu.set_mode("strict")  # synchronizes every chip first


@pytest.fixture
def no_stray_frees():
    """For tests that compare the allocator's state across calls (block reuse, statistics, peaks):
    garbage earlier tests left in reference cycles is collected first, and the collector stays
    off during the test, so a collection cannot free tpu memory between two readings (CI saw a
    block freed between memory_stats() and memory_allocated()). The blocks earlier tests left
    cached are given back too, so which block an allocation reuses depends on this test alone."""
    gc.collect()
    torch.tpu.synchronize()
    torch.tpu.empty_cache()
    gc.disable()
    yield
    gc.enable()


@pytest.fixture
def fused_mode():
    """Runs the test in fused mode with fresh counters (module-wide: pytestmark usefixtures)."""
    torch_tpu.set_mode("fused")
    torch_tpu.reset_metrics()


def fusion():
    """Fused mode's counters (torch_tpu.metrics()["fusion"])."""
    return torch_tpu.metrics()["fusion"]


@pytest.fixture
def fresh_dynamo():
    """Dynamo's caches and the compile counters reset before and after the test (the
    torch.compile test modules use it module-wide: pytestmark usefixtures)."""
    import torch._dynamo

    from torch_tpu.compiler import reset_compile_metrics
    torch._dynamo.reset()
    reset_compile_metrics()
    yield
    torch._dynamo.reset()


@pytest.fixture(params=MODES)
def mode(request):
    """Runs the test once per execution mode; the autouse fixture restores Strict after."""
    torch_tpu.set_mode(request.param)
    assert torch_tpu.get_mode() == request.param
    return request.param


# --- comparing with CPU ----------------------------------------------------------------------

def cpu_and_tpu(*shape, dtype=torch.float32, seed=0, low=None, high=None):
    """The same random tensor on CPU and on tpu (drawn on CPU, so both hold identical values).
    Integer dtypes need ``low``/``high``."""
    generator = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point or dtype.is_complex:
        cpu = torch.randn(shape, generator=generator).to(dtype)
    elif dtype == torch.bool:
        cpu = torch.randn(shape, generator=generator) > 0
    else:
        cpu = torch.randint(low, high, shape, generator=generator, dtype=dtype)
    return cpu, cpu.to("tpu")


def assert_tpu_close(actual, expected, **tolerances):
    """``actual`` (a tpu tensor, or a tuple/list of them) matches the CPU ``expected``."""
    if isinstance(actual, (tuple, list)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_tpu_close(a, e, **tolerances)
        return
    assert isinstance(actual, torch.Tensor), type(actual)
    assert actual.device.type == "tpu", f"expected a tpu tensor, got one on {actual.device}"
    torch.testing.assert_close(actual.cpu(), expected, **tolerances)


def to_tpu_copy(module: torch.nn.Module) -> torch.nn.Module:
    """A copy of a CPU module on tpu with identical parameters and buffers."""
    return copy.deepcopy(module).tpu()


# --- fresh interpreters ----------------------------------------------------------------------

def run_python(code: str, env: dict | None = None, timeout: float = 120):
    """Runs ``code`` in a fresh interpreter of this venv (the one running pytest), for
    behaviour chosen at start-up from the environment. Inherited TORCH_TPU_* / TPU_* variables
    are dropped so only ``env`` selects behaviour. Returns the CompletedProcess; raises
    subprocess.TimeoutExpired (after killing the child) if it runs past ``timeout``."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCH_TPU_", "TPU_"))}
    full_env.update({k: str(v) for k, v in (env or {}).items()})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=full_env, timeout=timeout)


def run_python_ok(code: str, env: dict | None = None, timeout: float = 120) -> str:
    """``run_python`` that asserts a clean exit and returns stdout."""
    result = run_python(code, env=env, timeout=timeout)
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    return result.stdout


def finishes_within(code: str, timeout: float, env: dict | None = None) -> bool:
    """Whether ``code`` runs to a clean exit in a fresh interpreter within ``timeout`` seconds
    (False on a hang, e.g. a deadlock)."""
    try:
        result = run_python(code, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    return True
