"""Compiled fused kernels (executors/host/pointwise_codegen.h): a pointwise cluster that keeps
running is compiled in the background and runs compiled from then on. Which one ran must never
change a result, so each check runs the same program in fresh processes, interpreted
(TORCH_TPU_FUSED_CODEGEN=0) and compiled (TORCH_TPU_CODEGEN_AFTER_MS=0, compile waited for),
and compares the bits (any NaN counting as the same NaN). Kernels go to a per-test cache
directory."""

import json

import pytest
import torch

from conftest import finishes_within, run_python_ok

# Every opcode the loop knows, on two tensors, a broadcast single-element tensor and scalars,
# with NaN, infinities, signed zeros and denormals among the inputs; 1000 x 37 elements is not
# a multiple of the kernels' vector step, so the element-by-element tail runs too.
PROGRAM = r"""
import json, sys, torch, torch_tpu
dtype = getattr(torch, sys.argv[1])
g = torch.Generator().manual_seed(0)
a = torch.randn(1000, 37, generator=g) * 3
b = torch.rand(1000, 37, generator=g) + 0.5
specials = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e-39, -1e-39, 3.0])
a.view(-1)[:8] = specials
b.view(-1)[8:16] = specials
scale = torch.tensor(1.5)
torch_tpu.set_mode("fused")
x, y, s = a.to(dtype).to("tpu"), b.to(dtype).to("tpu"), scale.to(dtype).to("tpu")

def chain(x, y, s):
    t = torch.add(x, y, alpha=2.0) - y * s
    t = torch.maximum(t, y) / (y + 1) + torch.minimum(x, -y)
    t = torch.clamp(t, -4.0, 4.0).neg().abs() + torch.relu(x).reciprocal()
    # float32 sqrt and exp are MKL calls, kept interpreted (see test below)
    t = (y * torch.rsqrt(y) if dtype == torch.float32 else torch.sqrt(y) * torch.rsqrt(y) + torch.exp(-t.abs())) - torch.tanh(x)
    t = torch.sigmoid(t) + torch.nn.functional.silu(x) - torch.sub(t, y, alpha=0.5)
    t = torch.addcmul(t, x, y, value=0.3) + torch.addcdiv(x, t, y, value=-1.7) + torch.addcmul(y, t, x)
    t = torch.lerp(t, x, 0.25) + torch.lerp(x, t, 0.75) + torch.lerp(t, y, y * 0.4)
    # pow as ATen computes small integer powers (a bf16 cube is not a register op)
    t = t + x.pow(2) * 0.01 - (y.pow(3) if dtype == torch.float32 else y.pow(1))
    return t * 0.25

for _ in range(3):  # hot: compiled after the first run when codegen is on
    out = chain(x, y, s).cpu()
    torch_tpu.wait_for_kernel_compiles()
fusion = torch_tpu.metrics()["fusion"]
# NaN sign and payload are not part of a value (x86 picks either operand's NaN, compilers may
# swap the operands of a commutative op, and ATen's own scalar and vector paths differ there).
out = torch.where(out.isnan(), torch.full_like(out, float("nan")), out)
print(json.dumps({"bits": out.view(torch.int16 if dtype == torch.bfloat16 else torch.int32).view(-1).tolist(),
                  "compiled_runs": fusion["compiled_kernel_runs"],
                  "compiled": fusion["kernels_compiled"], "loaded": fusion["kernels_loaded_from_cache"],
                  "failures": fusion["kernel_compile_failures"]}))
"""


def run_program(dtype: str, env: dict) -> dict:
    return json.loads(run_python_ok(PROGRAM.replace("sys.argv[1]", repr(dtype)), env=env, timeout=300)
                      .strip().splitlines()[-1])


@pytest.fixture
def kernel_cache(tmp_path):
    return {"TORCH_TPU_KERNEL_CACHE_DIR": str(tmp_path / "kernels"), "TORCH_TPU_CODEGEN_AFTER_MS": "0"}


@pytest.mark.parametrize("dtype, excess_precision", [
    ("float32", "0"), ("bfloat16", "0"), ("bfloat16", "1")])
def test_compiled_kernels_give_the_interpreters_bits(kernel_cache, dtype, excess_precision):
    # bf16 chains compile both ways: rounding every intermediate as eager does (the default),
    # or keeping float32 intermediates.
    kernel_cache = dict(kernel_cache, TORCH_TPU_FUSED_EXCESS_PRECISION=excess_precision)
    interpreted = run_program(dtype, dict(kernel_cache, TORCH_TPU_FUSED_CODEGEN="0"))
    compiled = run_program(dtype, kernel_cache)
    assert interpreted["compiled_runs"] == 0
    assert compiled["failures"] == 0 and compiled["compiled"] >= 1
    assert compiled["compiled_runs"] >= 1, "the hot cluster never ran compiled"
    assert compiled["bits"] == interpreted["bits"]


def test_a_later_process_loads_the_kernel_instead_of_compiling(kernel_cache):
    first = run_program("float32", kernel_cache)
    second = run_program("float32", kernel_cache)
    assert first["compiled"] >= 1 and first["loaded"] == 0
    assert second["compiled"] == 0 and second["loaded"] == first["compiled"]
    assert second["bits"] == first["bits"]


def test_a_failing_compiler_leaves_the_kernel_interpreted(kernel_cache):
    broken = run_program("float32", dict(kernel_cache, TORCH_TPU_KERNEL_COMPILER="false"))
    interpreted = run_program("float32", dict(kernel_cache, TORCH_TPU_FUSED_CODEGEN="0"))
    assert broken["failures"] >= 1 and broken["compiled_runs"] == 0
    assert broken["bits"] == interpreted["bits"]


def test_fused_bf16_reproduces_strict_and_excess_precision_is_closer_to_float64():
    """By default a bf16 chain equals Strict bit for bit. TORCH_TPU_FUSED_EXCESS_PRECISION=1
    keeps intermediates in float32 (rounded once, when stored): within bf16 tolerance of
    Strict, closer to the float64 result, and compiled."""
    code = r"""
import json, torch, torch_tpu
x = torch.linspace(-3, 3, 4099).to(torch.bfloat16)
def chain(t):
    for _ in range(20):
        t = (t + 1) * 1.1 - 1
    return t
strict = chain(x.to("tpu")).cpu()
torch_tpu.set_mode("fused")
for _ in range(2):
    fused = chain(x.to("tpu")).cpu()
    torch_tpu.wait_for_kernel_compiles()
exact = chain(x.double())
print(json.dumps({"equal": torch.equal(fused, strict),
                  "max_diff": (fused.float() - strict.float()).abs().max().item(),
                  "fused_error": (fused.double() - exact).abs().max().item(),
                  "strict_error": (strict.double() - exact).abs().max().item(),
                  "scale": exact.abs().max().item(),
                  "compiled_runs": torch_tpu.metrics()["fusion"]["compiled_kernel_runs"]}))
"""
    default = json.loads(run_python_ok(code).strip().splitlines()[-1])
    assert default["equal"], default
    assert default["compiled_runs"] == 0  # eager rounding stays interpreted (faster there)
    excess = json.loads(run_python_ok(code, env={"TORCH_TPU_FUSED_EXCESS_PRECISION": "1",
                                                 "TORCH_TPU_CODEGEN_AFTER_MS": "0"})
                        .strip().splitlines()[-1])
    assert excess["fused_error"] < excess["strict_error"], excess
    assert excess["compiled_runs"] >= 1, excess
    # 20 links of three ops: Strict's rounding error grows along the chain; the fused result
    # is the float32 computation rounded once.
    assert excess["max_diff"] <= 0.05 * excess["scale"], excess


def test_a_forked_child_does_not_wait_for_compiles_of_its_parent(kernel_cache):
    """A child forked while a compile runs has no compile thread: waiting for compiles there
    returns at once instead of hanging."""
    code = r"""
import os, torch, torch_tpu
torch_tpu.set_mode("fused")
x = torch.randn(1000, 37).to("tpu")
(x * 2 + 1).cpu()  # hot at once (TORCH_TPU_CODEGEN_AFTER_MS=0): its compile starts
pid = os.fork()
if pid == 0:
    torch_tpu.wait_for_kernel_compiles()
    os._exit(7)
_, status = os.waitpid(pid, 0)
torch_tpu.wait_for_kernel_compiles()
print("child exit", os.waitstatus_to_exitcode(status))
"""
    assert finishes_within(code, timeout=120, env=kernel_cache)
    assert "child exit 7" in run_python_ok(code, env=kernel_cache)


def test_float32_sqrt_and_exp_stay_interpreted(kernel_cache):
    """They are MKL's vector functions (ATen's bits), which the interpreter calls per 2048-element
    block; a generated loop would call them per vector, slower than interpreting."""
    code = r"""
import torch, torch_tpu
torch_tpu.set_mode("fused")
x = torch.rand(1000, 37).to("tpu")
for _ in range(3):
    (torch.sqrt(x) * 2 + 1).cpu(); (torch.exp(x) * 2 + 1).cpu()
    torch_tpu.wait_for_kernel_compiles()
f = torch_tpu.metrics()["fusion"]
print("compiled", f["kernels_compiled"] + f["kernels_loaded_from_cache"], "interpreted", f["interpreted_kernel_runs"])
"""
    assert "compiled 0 interpreted 6" in run_python_ok(code, env=kernel_cache)


# Strided programs (a broadcast row and column, x[..., 0::2] read and written in place, a
# transposed read) run row by row over the last dim when compiled. Row lengths 37 and 18 leave
# both the one-vector and the element-by-element tails to run; the odd elements' vector loads
# end at the row's last element.
STRIDED_PROGRAM = r"""
import json, sys, torch, torch_tpu
dtype = getattr(torch, sys.argv[1])
g = torch.Generator().manual_seed(0)
x = torch.randn(6, 40, 37, generator=g).to(dtype)
row = torch.randn(6, 40, 1, generator=g).to(dtype)
column = torch.randn(37, generator=g).to(dtype)
q = torch.randn(6, 40, 3, 36, generator=g).to(dtype).transpose(1, 2)
cos = torch.randn(40, 18, generator=g).to(dtype)
sin = torch.randn(40, 18, generator=g).to(dtype)
y = torch.randn(37, 40, 6, generator=g).to(dtype)
torch_tpu.set_mode("fused")

def program(x, row, column, q, cos, sin, y):
    normed = x * row * column
    even, odd = q[..., 0::2], q[..., 1::2]
    rotated_even, rotated_odd = even * cos - odd * sin, even * sin + odd * cos
    transposed = (x.transpose(0, 2) * 0.5).abs() + y
    target = q.contiguous()
    target[..., 0::2].mul_(cos).add_(sin)  # stored every other element
    return normed, rotated_even, rotated_odd, transposed, target

cpu = program(x, row, column, q, cos, sin, y)
inputs = [t.to("tpu") for t in (x, row, column, q, cos, sin, y)]
# The first run's program also holds the uploads: the loop's own program is planned in the
# second run, and runs compiled from the third on when codegen is on.
for _ in range(4):
    out = [t.cpu() for t in program(*inputs)]
    torch_tpu.wait_for_kernel_compiles()
fusion = torch_tpu.metrics()["fusion"]
bits = [t.view(torch.int16 if dtype == torch.bfloat16 else torch.int32).reshape(-1).tolist() for t in out]
print(json.dumps({"bits": bits, "compiled_runs": fusion["compiled_kernel_runs"],
                  "close_to_cpu": all(torch.allclose(o.float(), c.float(), rtol=2e-2, atol=2e-2) for o, c in zip(out, cpu)),
                  "failures": fusion["kernel_compile_failures"]}))
"""


@pytest.mark.parametrize("dtype, excess_precision", [
    ("float32", "0"), ("bfloat16", "0"), ("bfloat16", "1")])
def test_strided_programs_compile_row_by_row_with_the_interpreters_bits(kernel_cache, dtype,
                                                                         excess_precision):
    kernel_cache = dict(kernel_cache, TORCH_TPU_FUSED_EXCESS_PRECISION=excess_precision)
    code = STRIDED_PROGRAM.replace("sys.argv[1]", repr(dtype))
    interpreted = json.loads(run_python_ok(code, env=dict(kernel_cache, TORCH_TPU_FUSED_CODEGEN="0"),
                                           timeout=300).strip().splitlines()[-1])
    compiled = json.loads(run_python_ok(code, env=kernel_cache, timeout=300).strip().splitlines()[-1])
    assert interpreted["compiled_runs"] == 0 and interpreted["close_to_cpu"]
    assert compiled["failures"] == 0
    # the four clusters ran compiled in the last two runs
    assert compiled["compiled_runs"] >= 8, compiled["compiled_runs"]
    assert compiled["bits"] == interpreted["bits"]


def test_a_cluster_run_in_a_loop_compiles_before_its_time_threshold(tmp_path):
    """16 runs of one cached plan taking 1 ms in all make a cluster hot, however far from the
    50 ms time threshold; a cluster too cheap to repay a compile stays interpreted."""
    code = r"""
import json, torch, torch_tpu
torch_tpu.set_mode("fused")
big, small = torch.rand(1 << 19).to("tpu"), torch.rand(64).to("tpu")
for _ in range(18):  # ~0.3 ms a run: ~5 ms in all, a tenth of the time threshold
    ((big * 2 + 1) * big).cpu()
    ((small * 3 - 1) * small).cpu()
torch_tpu.wait_for_kernel_compiles()
fusion = torch_tpu.metrics()["fusion"]
print(json.dumps({"compiled": fusion["kernels_compiled"], "failures": fusion["kernel_compile_failures"]}))
"""
    result = json.loads(run_python_ok(code, env={"TORCH_TPU_KERNEL_CACHE_DIR": str(tmp_path / "kernels")})
                        .strip().splitlines()[-1])
    assert result == {"compiled": 1, "failures": 0}, result
