"""Every op runs as a program of the IR through the executor interface: in Strict and Debug
each op is a one-node program, compiled once per op structure and run through the active
executor (the host executor); in fused mode ops are planned into multi-node programs. The
counters in torch_tpu.metrics()["programs"] prove it."""

import torch

import torch_tpu
from conftest import assert_tpu_close


def step(x, w):
    return torch.relu(x @ w + 1.0).sum(dim=1) * 0.5


def test_the_host_executor_runs_programs():
    assert torch_tpu.metrics()["programs"]["executor"] == "host"


def test_strict_and_debug_compile_each_op_structure_once(mode):
    if mode == "fused":
        return  # planned programs: test_fused_ops_run_as_planned_programs
    x_cpu, w_cpu = torch.randn(8, 16), torch.randn(16, 4)
    x, w = x_cpu.to("tpu"), w_cpu.to("tpu")
    step(x, w).cpu()  # warm-up: compiles this structure's one-node programs
    torch_tpu.reset_metrics()
    for _ in range(5):
        out = step(x, w)
    assert_tpu_close(out, step(x_cpu, w_cpu))
    programs = torch_tpu.metrics()["programs"]
    assert programs["compiled"] == 0  # every op structure seen before
    assert programs["one_node_runs"] >= 5 * 5  # mm, add, relu, sum, mul per step
    assert programs["one_node_runs"] == torch_tpu.metrics()["ops_launched"]  # every op, copy too

    torch_tpu.reset_metrics()
    batch = {"strict": 3, "debug": 5}[mode]  # a batch size not seen before: new structures
    step(torch.randn(batch, 16, device="tpu"), w).cpu()
    assert torch_tpu.metrics()["programs"]["compiled"] >= 5


def test_copies_between_host_and_chip_are_one_node_programs():
    torch_tpu.reset_metrics()
    x = torch.arange(6.0).to("tpu")
    assert x.cpu().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    programs = torch_tpu.metrics()["programs"]
    assert programs["one_node_runs"] == 2
    assert programs["compiled"] + programs["cache_hits"] == 2


def test_fused_ops_run_as_planned_programs(fused_mode):
    x = torch.randn(8, 16, device="tpu")
    torch_tpu.reset_metrics()
    (x.exp() + 1).cpu()
    metrics = torch_tpu.metrics()
    assert metrics["programs"]["one_node_runs"] == 0
    assert metrics["fusion"]["programs_run"] >= 1
