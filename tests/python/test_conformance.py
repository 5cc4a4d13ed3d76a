"""The CI tier of the conformance sweeps: fixed samples of OpInfo entries and Hugging Face
architectures, in Strict, Debug (OpInfo) and Fused mode, and the whole ModuleInfo sweep, each
failing on any regression from the committed full reports in conformance/reports/ (fused mode
is held to Strict's report; conformance/*/fast_tier.py lists the samples); all three also on
the PJRT runtime (the CPU plugin), held to that runtime's reports."""

import os
import subprocess
import sys

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# A fast tier takes ~6 min on two idle cores; a loaded or slower machine gets room to finish
# (tests/python/conftest.py gives this file a hang budget above it).
CHILD_TIMEOUT_S = 1100


def run_check(module: str, mode: str, runtime: str = "host",
              extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCH_TPU_", "TPU_"))}
    return subprocess.run([sys.executable, "-m", module, "--tier", "fast", "--mode", mode,
                           "--runtime", runtime, "--check", *extra], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)


@pytest.mark.parametrize("mode", ["strict", "debug", "fused"])
def test_opinfo_fast_tier_has_no_regressions(mode):
    result = run_check("conformance.opinfo", mode)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "0 regressions" in result.stdout


@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_opinfo_fast_tier_on_the_pjrt_runtime_has_no_regressions(mode):
    # Held to the PJRT runtime's own committed report (conformance/reports/opinfo_pjrt.json);
    # fused mode (each flush one StableHLO program) must pass everything Strict passes. Every
    # sample compiles programs of its own (cold: 9 min for the whole tier): the first 8 samples
    # of each (op, dtype) run, under 3 min.
    result = run_check("conformance.opinfo", mode, runtime="pjrt", extra=("--max-samples", "8"))
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "0 regressions" in result.stdout


@pytest.mark.parametrize("runtime", ["host", "pjrt"])
@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_hugging_face_fast_tier_has_no_regressions(mode, runtime):
    result = run_check("conformance.hf", mode, runtime)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "0 regressions" in result.stdout


@pytest.mark.parametrize("runtime,mode", [("host", "strict"), ("host", "fused"), ("pjrt", "strict"),
                                          ("pjrt", "fused")])
def test_module_sweep_has_no_regressions(runtime, mode):
    result = run_check("conformance.modules", mode, runtime)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "0 regressions" in result.stdout
