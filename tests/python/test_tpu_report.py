"""python -m torch_tpu.tpu_report: a script's programs, run on the PJRT CPU plugin, compiled ahead
of time for a TPU topology through libtpu (installed by make setup; no TPU needed), with XLA's
cost and memory figures."""

import json
import os
import subprocess
import sys

import pytest

from conftest import run_python


def report(tmp_path, script: str, *args: str) -> tuple[dict, str]:
    path = tmp_path / "script.py"
    path.write_text(script)
    out = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCH_TPU_", "TPU_"))}
    result = subprocess.run([sys.executable, "-m", "torch_tpu.tpu_report", "--topology", "v5e:2x2",
                             "--json", str(out), str(path), *args],
                            capture_output=True, text=True, env=env, timeout=900)
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    return json.loads(out.read_text()), result.stdout


def test_a_matmul_reports_xla_flops_and_memory_for_v5e(tmp_path):
    summary, printed = report(tmp_path, """
import torch
a = torch.randn(128, 256, device="tpu")
b = torch.randn(256, 64, device="tpu")
for _ in range(3):
    c = a @ b
print(float(c.sum()))
""")
    rows = {r["program"]: r for r in summary["rows"]}
    mm = rows["aten::mm"]
    # Exactly the product's 2*M*K*N: typed storage buffers add no conversion at the edges.
    assert mm["flops"] == 2 * 128 * 256 * 64
    assert mm["runs"] == 3
    assert mm["estimated_seconds"] > 0 and mm["bytes_accessed"] >= 4 * (128 * 256 + 256 * 64)
    assert summary["totals"]["estimated_seconds"] >= 3 * mm["estimated_seconds"]
    assert mm["hbm_bytes"] >= 4 * (128 * 256 + 256 * 64 + 128 * 64)
    assert summary["failures"] == []
    assert summary["totals"]["flops"] >= 3 * 2 * 128 * 256 * 64
    assert "aten::mm" in printed and "v5e:2x2" in printed


@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_every_program_of_the_demo_training_step_compiles_for_v5e(tmp_path, mode):
    summary, _ = report(tmp_path, f"""
import torch_tpu
from torch_tpu.demo.train import train
torch_tpu.set_mode("{mode}")
train("tpu", steps=2, batch=2, seq=16)
""")
    assert summary["failures"] == [], summary["failures"]
    assert len(summary["rows"]) >= 5
    assert summary["totals"]["flops"] > 0


def test_an_unknown_topology_is_a_clear_error(tmp_path):
    path = tmp_path / "script.py"
    path.write_text("import torch\nprint((torch.ones(2, device='tpu') + 1).cpu())\n")
    result = run_python(f"""
import sys
from torch_tpu import tpu_report
sys.exit(tpu_report.main(["--topology", "v99:9x9", {str(path)!r}]))
""", timeout=600)
    assert result.returncode != 0
    assert "v99:9x9" in result.stderr and "Traceback" in result.stderr
    assert "Segmentation fault" not in result.stderr
