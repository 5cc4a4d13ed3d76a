"""Fused clusters over strided and broadcast tensors (transposed views, every other element,
expanded inputs, a [seq, dim] table broadcast over batch and heads): the register loop gathers
and scatters them block by block instead of running PyTorch's kernels on chunks, for the ops
whose result does not depend on which of ATen's loops computes it. Results are compared with
Strict's bit for bit (a cluster left on the chunked path: within ATen's own last-bit caveat)."""

import pytest
import torch
import torch.nn.functional as F

import torch_tpu


@pytest.fixture(autouse=True)
def _strict_after():
    yield
    torch_tpu.set_mode("strict")


def run_in(mode, fn, inputs):
    torch_tpu.set_mode(mode)
    tensors = [t.tpu() for t in inputs]
    torch.tpu.synchronize()
    torch_tpu.reset_metrics()
    results = [t.cpu() for t in fn(*tensors)]
    return results, torch_tpu.metrics()["fusion"]


def rotary_halves(qkv, cos, sin):
    """The demo's rotary embedding: every other element of a transposed head view, times a
    [seq, head_dim / 2] table broadcast over batch and heads."""
    q = qkv[..., :64].view(2, 8, 4, 16).transpose(1, 2)
    even, odd = q[..., 0::2], q[..., 1::2]
    return even * cos - odd * sin, even * sin + odd * cos


def transposed_chain(x, y):
    return ((x.t() * 2.0 + y) / (y.abs() + 1.0)).neg().abs().sqrt().rsqrt().exp(),


def expanded_input(row, y):
    return (row.expand(32, 48) * y - y.reciprocal(),)


def in_place_on_a_transposed_view(x, y):
    view = x.t()
    view.mul_(y).sub_(y)  # written through the transpose: scattered back
    return x, view + 1.0


CASES = {
    "rotary": (rotary_halves, [(2, 8, 192), (8, 8), (8, 8)]),
    "transposed": (transposed_chain, [(40, 24), (24, 40)]),
    "expanded": (expanded_input, [(1, 48), (32, 48)]),
    "in_place_transposed": (in_place_on_a_transposed_view, [(40, 24), (24, 40)]),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("case", sorted(CASES))
def test_strided_clusters_run_in_the_register_loop_with_strict_bits(case, dtype):
    fn, shapes = CASES[case]
    generator = torch.Generator().manual_seed(3)
    inputs = [torch.rand(shape, generator=generator).add_(0.5).to(dtype) for shape in shapes]
    strict, _ = run_in("strict", fn, inputs)
    fused, counters = run_in("fused", fn, inputs)
    for got, expected in zip(fused, strict):
        assert torch.equal(got, expected)
    assert counters["fused_kernels_run"] >= 1
    assert counters["interpreted_kernel_runs"] == counters["fused_kernels_run"]


def test_a_strided_cluster_with_exp_keeps_pytorchs_kernels():
    """ATen computes silu on a strided view in its scalar loop (std::exp) and on a contiguous
    one with vector exp, which can differ in the last bit: a strided cluster with silu runs
    ATen's own kernels on chunks, not the register loop (docs/fused.md: within an ulp of
    Strict, where a chunk boundary moves ATen's scalar tail)."""
    def strided_silu(x, y):
        return (F.silu(x.t()) * y + 1.0,)

    generator = torch.Generator().manual_seed(4)
    inputs = [torch.randn(64, 48, generator=generator), torch.randn(48, 64, generator=generator)]
    strict, _ = run_in("strict", strided_silu, inputs)
    fused, counters = run_in("fused", strided_silu, inputs)
    torch.testing.assert_close(fused[0], strict[0], rtol=3e-7, atol=1e-7)
    assert counters["fused_kernels_run"] >= 1
    assert counters["interpreted_kernel_runs"] == 0


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "every_other"])
def test_float32_sqrt_gives_strict_bits_in_every_layout(layout):
    """ATen's float32 sqrt is MKL's vector sqrt in every layout, which differs from the
    correctly rounded one in the last bit for ~18% of inputs: the register loop calls the
    same function."""
    view = {"contiguous": lambda t: t, "transposed": lambda t: t.t(),
            "every_other": lambda t: t[:, ::2]}[layout]

    def fn(x):
        return (view(x).sqrt() * 3.0,)

    inputs = [torch.rand(301, 70, generator=torch.Generator().manual_seed(6)) * 100]
    strict, _ = run_in("strict", fn, inputs)
    fused, counters = run_in("fused", fn, inputs)
    assert torch.equal(fused[0], strict[0])
    assert counters["interpreted_kernel_runs"] == counters["fused_kernels_run"] == 1


def test_a_large_strided_cluster_splits_into_many_blocks_correctly():
    """Blocks of the register loop start mid-row and run in parallel: an iteration of many
    blocks with a short, strided last dim checks the index arithmetic at every block edge."""
    def fn(x, table):
        even = x.transpose(0, 1)[..., 0::2]  # [300, 40, 7] of [40, 300, 14]
        return (even * table + even,)

    generator = torch.Generator().manual_seed(5)
    inputs = [torch.randn(40, 300, 14, generator=generator), torch.randn(40, 7, generator=generator)]
    strict, _ = run_in("strict", fn, inputs)
    fused, counters = run_in("fused", fn, inputs)
    assert torch.equal(fused[0], strict[0])
    assert counters["interpreted_kernel_runs"] == counters["fused_kernels_run"] >= 1
