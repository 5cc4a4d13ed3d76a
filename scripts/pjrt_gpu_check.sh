#!/usr/bin/env bash
# The PJRT runtime on a GPU host, through JAX's CUDA PJRT plugin: one prepared run whose stages
# each have a time limit and a log under $LOGS (default /tmp/pjrt-gpu-check).
#
#   bash scripts/pjrt_gpu_check.sh
#
# Downloads nothing. The host must already have: a CUDA build of PyTorch (2.13, or 2.11 as the
# GPU hosts have) with its CMake config, a C++20 compiler, CMake, Ninja, scikit-build-core,
# pybind11, and jax-cuda13-pjrt or jax-cuda12-pjrt. It builds and installs torch_tpu against
# that PyTorch (--no-build-isolation --no-deps), then runs on TORCH_TPU_PJRT_PLUGIN=cuda:
#   smoke  the runtime and plugin reported, and ops against CPU (f32 matrix products in full f32)
#   bench  benchmarks/pjrt_programs.py --plugin cuda: the elementwise loop and the demo's
#          training step, PJRT Strict and fused, the host runtime's fused mode and PyTorch's
#          CUDA eager beside them
#   demo   the demo's training losses against CPU's, Strict and fused
#   tests  tests/python/test_pjrt_runtime.py (tests that check the CPU plugin's own name fail)
# DEADLINE (seconds from the start) cuts every stage short to end by then; PLUGIN (default cuda)
# and SKIP_BUILD=1 dry-run the stages elsewhere (PLUGIN=cpu on a machine with torch_tpu built).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
LOGS=${LOGS:-/tmp/pjrt-gpu-check}
mkdir -p "$LOGS"
export PYTHONUNBUFFERED=1 TPU_SKIP_MDS_QUERY=1

PLUGIN=${PLUGIN:-cuda}
DEADLINE=${DEADLINE:-3600}

# stage NAME SECONDS COMMAND...: runs COMMAND (stdin passed on) with a time limit (and no later
# than DEADLINE) into $LOGS/NAME.log, then prints its exit status, its time and the log's last
# lines.
stage() {
  local name=$1 limit=$2
  shift 2
  ((limit > DEADLINE - SECONDS)) && limit=$((DEADLINE - SECONDS))
  ((limit < 5)) && { echo "== $name: skipped, no time left"; return 124; }
  local start=$SECONDS
  timeout "$limit" "$@" >"$LOGS/$name.log" 2>&1
  local status=$?
  echo "== $name: exit $status in $((SECONDS - start)) s"
  tail -n "${TAIL:-20}" "$LOGS/$name.log"
  return $status
}

# PyTorch's CMake config finds the CUDA toolkit through nvcc.
[[ -d /usr/local/cuda/bin ]] && export PATH="/usr/local/cuda/bin:$PATH"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
$PY -c 'import torch; print("torch", torch.__version__)'

if [[ -z ${SKIP_BUILD:-} ]]; then
  stage build 480 env TORCH_DEVICE_BACKEND_AUTOLOAD=0 CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
    $PY -m pip install --no-build-isolation --no-deps --no-index -v . || exit 1
fi

export TORCH_TPU_RUNTIME=pjrt TORCH_TPU_PJRT_PLUGIN=$PLUGIN

stage smoke 60 $PY - <<'EOF'
import torch
import torch_tpu

print("runtime", torch_tpu.runtime_info(), "device", torch.tpu.get_device_name())
torch.manual_seed(0)
a, b = torch.randn(512, 256), torch.randn(256, 384)
exact = a.double() @ b.double()
cpu_error = ((a @ b).double() - exact).abs().max().item()
tpu_error = ((a.to("tpu") @ b.to("tpu")).cpu().double() - exact).abs().max().item()
# TF32 would be ~1e-2 off here; full f32 is as close as CPU's float32.
print(f"f32 mm, max error against f64: CPU {cpu_error:.2e}, tpu {tpu_error:.2e}")
assert tpu_error < 4 * cpu_error + 1e-5, "f32 matrix product not in full f32"
x = torch.randn(4, 8, 16, 16)
w, dw = torch.randn(6, 8, 3, 3), torch.randn(8, 1, 3, 3)
checks = {
    "add": lambda x: x + 1,
    "softmax": lambda x: torch.softmax(x, -1),
    "sum": lambda x: x.sum((0, 2)),
    "layer_norm": lambda x: torch.nn.functional.layer_norm(x, (16,)),
    "conv2d": lambda x: torch.nn.functional.conv2d(x, w.to(x.device), padding=1),
    "depthwise": lambda x: torch.nn.functional.conv2d(x, dw.to(x.device), padding=1, groups=8),
    "bf16 gelu": lambda x: torch.nn.functional.gelu(x.bfloat16()).float(),
}
for name, fn in checks.items():
    expected, got = fn(x), fn(x.to("tpu")).cpu()
    error = (expected - got).abs().max().item()
    print(f"{name:>10}: max |tpu - cpu| {error:.2e}")
    assert error < 1e-3 * (1 + expected.abs().max().item()), name
print("programs", torch_tpu.metrics()["programs"])
print("fallbacks", torch_tpu.metrics()["fallbacks"])
EOF

# BENCH_ARGS shortens the benchmark (e.g. "--repeats 2 --steps 4 --signatures 10").
TAIL=30 stage bench 300 $PY benchmarks/pjrt_programs.py --plugin "$PLUGIN" ${BENCH_ARGS:-}
cp -f benchmarks/results/pjrt_programs*.json "$LOGS/" 2>/dev/null

stage demo 120 $PY - <<'EOF'
import torch
import torch_tpu
from torch_tpu.demo.train import train

cpu = train("cpu", steps=3, batch=4, seq=32).losses
print("cpu   ", [round(v, 4) for v in cpu])
for mode in ("strict", "fused"):
    torch_tpu.set_mode(mode)
    got = train("tpu", steps=3, batch=4, seq=32).losses
    worst = max(abs(a - b) for a, b in zip(got, cpu))
    print(f"{mode:<6}", [round(v, 4) for v in got], f"max |tpu - cpu| {worst:.2e}")
    assert worst < 1e-3, mode
torch_tpu.set_mode("strict")
print("fallbacks", torch_tpu.metrics()["fallbacks"])
EOF

per_test_limit=$($PY -c 'import pytest_timeout' 2>/dev/null && echo --timeout=120)
TAIL=45 stage tests 600 env TORCH_TPU_TEST_PJRT_PLUGIN="$PLUGIN" \
  $PY -m pytest tests/python/test_pjrt_runtime.py -v -p no:cacheprovider $per_test_limit -rf
echo "logs in $LOGS"
