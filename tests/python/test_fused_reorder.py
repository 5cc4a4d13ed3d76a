"""Fused clusters that move past independent opaque ops (engine/program_plan.cpp): in
`w2(silu(x @ w1) * (x @ w3))` the matmul x @ w3 sits between silu and the product; the plan
runs it first, then silu and the product as one fused kernel, silu's result never written.
An opaque op that touches what the earlier cluster ops read or write keeps its place, and the
host's buffer releases wait for every op issued before them."""

import pytest
import torch
import torch.nn.functional as F

import torch_tpu
from conftest import cpu_and_tpu, fusion


pytestmark = pytest.mark.usefixtures("fused_mode")


def fresh_counters():
    torch.tpu.synchronize()
    torch_tpu.reset_metrics()


def swiglu(x, w1, w3):
    return F.silu(x @ w1) * (x @ w3)


def in_strict(fn, *args):
    with torch_tpu.mode("strict"):
        return fn(*args).cpu()


def test_silu_and_its_product_fuse_across_the_matmul_between_them():
    x_cpu, x = cpu_and_tpu(64, 32, seed=1)
    w1_cpu, w1 = cpu_and_tpu(32, 48, seed=2)
    w3_cpu, w3 = cpu_and_tpu(32, 48, seed=3)
    fresh_counters()
    result = swiglu(x, w1, w3).cpu()
    assert fusion()["fused_kernels_run"] == 1
    assert fusion()["bytes_avoided"] == 64 * 48 * 4  # silu's result stayed in scratch
    torch.testing.assert_close(result, in_strict(swiglu, x, w1, w3), atol=0, rtol=0)
    torch.testing.assert_close(result, swiglu(x_cpu, w1_cpu, w3_cpu), atol=1e-5, rtol=1e-5)


def test_an_op_reading_an_earlier_cluster_result_keeps_the_order():
    x_cpu, x = cpu_and_tpu(32, 32, seed=1)

    def program(x):
        a = F.silu(x)
        h = a @ x  # reads silu's result: silu must run first
        return a * h

    fresh_counters()
    result = program(x).cpu()
    assert fusion()["fused_kernels_run"] == 0
    torch.testing.assert_close(result, program(x_cpu), atol=1e-5, rtol=1e-5)


def test_an_op_writing_what_an_earlier_cluster_op_reads_keeps_the_order():
    x_cpu, x = cpu_and_tpu(32, 32, seed=1)
    y_cpu, y = cpu_and_tpu(32, 32, seed=2)

    def program(x, y):
        a = F.silu(x)
        h = y @ y
        torch.mm(y, y, out=x)  # overwrites silu's input: silu must read it first
        return a * h + x

    fresh_counters()
    result = program(x, y).cpu()
    torch.testing.assert_close(result, program(x_cpu, y_cpu), atol=1e-4, rtol=1e-4)


def test_a_buffer_dropped_after_a_moved_op_outlives_the_cluster_that_reads_it():
    """`x` is dropped after the first matmul was issued; that matmul now runs before silu(x),
    but x's memory must not go back (and be taken by the second matmul's result) until silu
    has read it."""
    y_cpu, y = cpu_and_tpu(64, 64, seed=2)
    w_cpu, w = cpu_and_tpu(64, 64, seed=3)

    def program(make_x, y, w):
        x = make_x()
        a = F.silu(x)
        h1 = y @ w
        del x
        h2 = w @ y  # the same size as x: the block x frees would fit it
        return a * h1 + h2

    def make_x_cpu():
        return torch.linspace(-3, 3, 64 * 64).reshape(64, 64)

    def make_x_tpu():
        return torch.linspace(-3, 3, 64 * 64, device="tpu").reshape(64, 64)

    expected = program(make_x_cpu, y_cpu, w_cpu)
    for _ in range(3):
        fresh_counters()
        result = program(make_x_tpu, y, w).cpu()
        assert fusion()["fused_kernels_run"] == 1
        torch.testing.assert_close(result, expected, atol=1e-4, rtol=1e-4)


def test_only_a_few_opaque_ops_are_passed():
    x_cpu, x = cpu_and_tpu(32, 32, seed=1)

    def program(x):
        a = F.silu(x)
        h = x
        for _ in range(5):  # five matmuls between silu and the product: more than the bound
            h = h @ x
        return a * h

    fresh_counters()
    result = program(x).cpu()
    assert fusion()["fused_kernels_run"] == 0
    torch.testing.assert_close(result, program(x_cpu), atol=1e-3, rtol=1e-3)
