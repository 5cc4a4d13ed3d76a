"""Bad input gets a clear Python exception, as on CUDA; and the device is safe to use from
several Python threads at once."""

import json
import threading

import pytest
import torch

import torch_tpu
from conftest import assert_tpu_close, cpu_and_tpu, run_python_ok

SAME_DEVICE = "Expected all tensors to be on the same device"


@pytest.mark.parametrize("op", [
    lambda t, c: t + c,
    lambda t, c: c * t,
    lambda t, c: torch.matmul(t.view(3, 1), c.view(1, 3)),
    lambda t, c: torch.cat([t, c]),
    lambda t, c: torch.where(t > 0, t, c),
    lambda t, c: t.add_(c),
], ids=["add", "mul_reversed", "matmul", "cat", "where", "add_"])
def test_mixing_tpu_and_cpu_tensors_raises(op):
    with pytest.raises(RuntimeError, match=SAME_DEVICE):
        op(torch.randn(3, device="tpu"), torch.randn(3))


def test_cpu_zero_dim_tensors_are_allowed_as_on_cuda():
    x_cpu, x_tpu = cpu_and_tpu(3, 4)
    scalar = torch.tensor(2.5)
    assert_tpu_close(x_tpu + scalar, x_cpu + scalar)
    assert_tpu_close(x_tpu - scalar, x_cpu - scalar)
    assert_tpu_close(x_tpu.clone().mul_(scalar), x_cpu * scalar)
    assert_tpu_close(torch.where(x_tpu > 0, x_tpu, scalar), torch.where(x_cpu > 0, x_cpu, scalar))
    assert_tpu_close(torch.maximum(x_tpu, scalar), torch.maximum(x_cpu, scalar))
    assert_tpu_close(x_tpu.pow(torch.tensor(2)), x_cpu.pow(2))
    assert torch_tpu.metrics()["fallbacks"] == {}  # all ran queued on the chip


FIRST_OPERAND_SCRIPT = """
import json, torch, torch_tpu
x = torch.arange(4.0, device="tpu")
result = {"values": (torch.tensor(2.5) * x).cpu().tolist()}  # CPU 0-dim tensor first
result["fallbacks_of_call"] = torch_tpu.metrics()["fallbacks"]
torch_tpu.reset_metrics()
for _ in range(3):
    y = x * 2                                               # ordinary calls afterwards
result["fallbacks_after"] = torch_tpu.metrics()["fallbacks"]
print(json.dumps(result))
"""


def test_cpu_zero_dim_first_operand_runs_queued_and_demotes_nothing():
    # In a fresh interpreter: the demotion it shows would slow down every later test.
    result = json.loads(run_python_ok(FIRST_OPERAND_SCRIPT))
    assert result["values"] == [0.0, 2.5, 5.0, 7.5]
    assert result["fallbacks_after"] == {}, "aten::mul was demoted to the synchronous fallback"
    assert result["fallbacks_of_call"] == {}


def test_bad_shapes_raise_at_the_call_even_in_strict_mode():
    # Argument checks run when the op is issued (Meta kernels), not at the next sync.
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(2\) must match"):
        torch.ones(2, device="tpu") + torch.ones(3, device="tpu")
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        torch.ones(2, 3, device="tpu") @ torch.ones(2, 3, device="tpu")
    with pytest.raises(RuntimeError, match="shape '\\[7\\]' is invalid"):
        torch.ones(6, device="tpu").view(7)
    with pytest.raises(IndexError, match="out of range"):
        torch.ones(2, device="tpu").sum(dim=3)
    torch.tpu.synchronize()  # nothing was queued that could fail later


@pytest.mark.parametrize("dtype", [torch.bits8, torch.bits16], ids=str)
def test_unsupported_dtype_is_a_clear_error(dtype):
    with pytest.raises(TypeError, match="not supported on tpu yet: dtype"):
        torch.empty(2, dtype=dtype, device="tpu")


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64], ids=str)
def test_unsigned_dtypes_have_the_cpu_kernels_and_its_errors(dtype):
    cpu = torch.arange(4).to(dtype)
    tpu = cpu.to("tpu")
    assert torch.equal(tpu.cpu(), cpu)
    assert torch.equal(torch.cat([tpu, tpu]).cpu(), torch.cat([cpu, cpu]))  # a kernel CPU has
    with pytest.raises(RuntimeError, match="not implemented for 'UInt"):
        (tpu + tpu).cpu()  # CPU has no add for them either


def test_complex32_has_the_cpu_kernels():
    cpu = torch.arange(4).to(torch.complex32)
    got = (cpu.to("tpu") + cpu.to("tpu")).cpu()
    assert got.dtype == torch.complex32
    assert torch.equal(got.to(torch.complex64), (cpu + cpu).to(torch.complex64))


@pytest.mark.parametrize("dtype", [torch.quint8, torch.qint8], ids=str)
def test_quantized_dtype_is_a_clear_error(dtype):
    with pytest.raises(NotImplementedError, match="not supported on tpu yet: dtype"):
        torch.empty(2, dtype=dtype, device="tpu")
    # Quantizing a tpu tensor is refused at the call, not answered with a float tensor.
    x = torch.randn(4, device="tpu")
    with pytest.raises(NotImplementedError, match=r"dtype Q\w+ \(quantized, in aten::quantize_per_tensor\)"):
        torch.quantize_per_tensor(x, 0.1, 0, dtype)
    with pytest.raises(NotImplementedError, match="quantize_per_channel"):
        torch.quantize_per_channel(x, torch.ones(4), torch.zeros(4, dtype=torch.long), 0, dtype)
    # Any op asked for a quantized dtype, or whose CPU kernel makes a quantized tensor.
    with pytest.raises(NotImplementedError, match=r"quantized, in aten::quantize_per_tensor_dynamic"):
        torch.quantize_per_tensor_dynamic(x, torch.quint8, False)
    with pytest.raises(NotImplementedError, match=r"quantized, in aten::_make_per_tensor_quantized"):
        torch._make_per_tensor_quantized_tensor(x.to(torch.int8), 0.1, 1)
    assert torch.equal(x.cpu(), x.cpu())  # the device still works


def test_threads_share_the_device():
    """Two Python threads, each with its own inputs, doing 200 small dependent ops and a
    matmul on tpu at the same time; each matches the same computation on CPU."""
    results, errors = {}, []
    start = threading.Barrier(2)

    def work(seed):
        try:
            generator = torch.Generator().manual_seed(seed)
            a_cpu = torch.randn(16, 16, generator=generator)
            a_tpu = a_cpu.tpu()
            start.wait()
            for step in range(200):
                a_tpu = a_tpu * 0.99 + 0.01 * step
                a_cpu = a_cpu * 0.99 + 0.01 * step
            results[seed] = (a_tpu @ a_tpu.t(), a_cpu @ a_cpu.t())
        except Exception as error:  # noqa: BLE001 (re-raised in the main thread below)
            errors.append(error)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    assert sorted(results) == [1, 2]
    for seed, (actual, expected) in results.items():
        assert_tpu_close(actual, expected, atol=1e-4, rtol=1e-5)
    assert not torch.equal(results[1][1], results[2][1])  # the threads computed different data


# --- writes into overlapping memory ------------------------------------------------------------

OVERLAPPING_WRITES = {
    "in-place op on an expanded view": lambda d: torch.ones(1, device=d).expand(4).mul_(2),
    "out= an expanded view": lambda d: torch.add(torch.ones(4, device=d), 1,
                                                  out=torch.ones(1, device=d).expand(4)),
    "out= partly overlapping the input": lambda d: (lambda b: torch.add(b[:3], 1, out=b[1:]))(
        torch.arange(4.0, device=d)),
    "copy_ into an expanded view": lambda d: torch.ones(1, device=d).expand(4).copy_(
        torch.arange(4.0, device=d)),
    "copy_ partly overlapping its source": lambda d: (lambda b: b[1:].copy_(b[:3]))(
        torch.arange(4.0, device=d)),
}


@pytest.mark.parametrize("mode", ["strict", "fused"], indirect=True)
@pytest.mark.parametrize("case", list(OVERLAPPING_WRITES))
def test_writes_into_overlapping_memory_raise_at_the_call_as_on_cpu(mode, case):
    """ATen checks these on the host (TensorIterator), so CUDA raises at the call; so must the
    tpu, before the op is queued (a partial overlap used to run and give a result)."""
    write = OVERLAPPING_WRITES[case]
    with pytest.raises(RuntimeError) as cpu_error:
        write("cpu")
    with pytest.raises(RuntimeError) as tpu_error:
        write("tpu")  # raises here, not at the sync below
    torch.tpu.synchronize()
    assert str(tpu_error.value) == str(cpu_error.value)
    assert "Please clone() the tensor" in str(tpu_error.value)


@pytest.mark.filterwarnings("ignore:Use of masked_fill_ on expanded tensors is deprecated")
@pytest.mark.parametrize("mode", ["strict", "fused"], indirect=True)
def test_writes_aten_allows_into_overlapping_memory_still_run(mode):
    """fill_ writes one value (ATen allows it into an expanded view), masked_fill_ there is only
    deprecated, and an in-place op on itself overlaps fully: all as on CPU."""
    results = {}
    for device in ("cpu", "tpu"):
        filled = torch.zeros(1, device=device)
        filled.expand(4).fill_(3)
        base = torch.zeros(1, device=device)
        base.expand(4).masked_fill_(torch.tensor([True, False, True, False], device=device), 5)
        x = torch.arange(4.0, device=device)
        x.add_(x)
        results[device] = [t.cpu() for t in (filled, base, x)]
    for cpu, tpu in zip(results["cpu"], results["tpu"]):
        torch.testing.assert_close(tpu, cpu, rtol=0, atol=0)


@pytest.mark.parametrize("mode", ["strict", "fused"], indirect=True)
@pytest.mark.parametrize("write", [
    lambda d: torch.ones(3, dtype=torch.long, device=d).mul_(torch.full((3,), 0.5, device=d)),
    lambda d: torch.add(torch.ones(3, device=d), 0.5, out=torch.ones(3, dtype=torch.int32, device=d)),
    lambda d: torch.ones(2, 3, dtype=torch.bool, device=d).add_(torch.ones(3, device=d)),
], ids=["long.mul_(float)", "add(out=int32)", "bool.add_(float)"])
def test_an_in_place_result_of_a_wider_type_raises_at_the_call_as_on_cpu(mode, write):
    """ATen's elementwise kernels refuse on the host to store a result the output's dtype
    cannot hold, so CUDA raises at the call; so must the tpu, every time (not only before the
    call's signature is cached)."""
    with pytest.raises(RuntimeError) as cpu_error:
        write("cpu")
    for _ in range(2):
        with pytest.raises(RuntimeError) as tpu_error:
            write("tpu")  # raises here, not at the sync below
        torch.tpu.synchronize()
        assert str(tpu_error.value) == str(cpu_error.value)
    assert "can't be cast to the desired output type" in str(tpu_error.value)


@pytest.mark.parametrize("mode", ["strict", "fused"], indirect=True)
@pytest.mark.parametrize("write", [
    lambda d: (lambda b: torch.cumsum(b[:3], 0, out=b[1:]))(torch.arange(4.0, device=d)),
    lambda d: (lambda b: torch.index_select(b[:3], 0, torch.tensor([2, 1, 0], device=d),
                                            out=b[1:]))(torch.arange(4.0, device=d)),
], ids=["cumsum", "index_select"])
def test_other_kernels_see_their_arguments_alias_as_on_cpu(mode, write):
    """Non-elementwise kernels check overlap themselves, inside the kernel, which runs on the
    chip's queue: the tpu raises their error at the next sync point (their CPU views share one
    storage, so the kernel sees the aliasing), where it used to return a result."""
    with pytest.raises(RuntimeError) as cpu_error:
        write("cpu")
    with pytest.raises(RuntimeError) as tpu_error:
        write("tpu")
        torch.tpu.synchronize()
    assert str(cpu_error.value) in str(tpu_error.value)


@pytest.mark.parametrize("mode", ["strict", "fused"], indirect=True)
@pytest.mark.parametrize("write", [
    lambda d: (lambda x: torch.nonzero(x, out=x))(torch.tensor([[1, 0], [2, 3]], device=d)),
    lambda d: (lambda b: torch.nonzero(b[:4].view(2, 2), out=b[2:]))(
        torch.tensor([1, 0, 2, 3, 0, 0, 0, 0, 0, 0], device=d)),
    lambda d: (lambda x: torch.masked_select(x, x > 1, out=x))(torch.tensor([1.0, 2, 3, 4], device=d)),
    lambda d: (lambda b: torch.masked_select(b[:4], torch.tensor([True, False, True, True], device=d),
                                             out=b[2:5]))(torch.arange(6.0, device=d)),
], ids=["nonzero_self", "nonzero_slice", "masked_select_self", "masked_select_slice"])
def test_data_dependent_ops_see_their_arguments_alias_as_on_cpu(mode, write):
    """Ops whose output shape needs data run synchronously on CPU views of chip memory; an out=
    over their own input raises CPU's error there, where it used to write through the input
    (masked_select into a slice of its source gave other numbers than any CPU run)."""
    with pytest.raises(RuntimeError) as cpu_error:
        write("cpu")
    with pytest.raises(RuntimeError) as tpu_error:
        write("tpu")
    assert str(cpu_error.value) in str(tpu_error.value)


@pytest.mark.filterwarnings("ignore:An output with one or more elements was resized")
@pytest.mark.parametrize("mode", ["strict", "fused"], indirect=True)
def test_data_dependent_ops_still_resize_outputs_that_overlap_nothing(mode):
    results = {}
    for device in ("cpu", "tpu"):
        x = torch.tensor([[1, 0], [2, 3]], device=device)
        found = torch.empty(0, dtype=torch.long, device=device)
        torch.nonzero(x, out=found)  # grows from empty
        values = torch.arange(6.0, device=device)
        picked = torch.full((1,), -1.0, device=device)
        torch.masked_select(values, values > 2, out=picked)  # grows past its storage
        same = torch.masked_select(values, values > 2)  # reads one tensor twice
        results[device] = [t.cpu() for t in (found, picked, same, x, values)]
    for cpu, tpu in zip(results["cpu"], results["tpu"]):
        torch.testing.assert_close(tpu, cpu, rtol=0, atol=0)


@pytest.mark.parametrize("mode", ["strict", "fused"], indirect=True)
def test_kernels_given_one_tensor_twice_match_cpu(mode):
    results = {}
    for device in ("cpu", "tpu"):
        x = torch.arange(1.0, 7.0, device=device).view(2, 3)
        y = torch.arange(4.0, device=device)
        torch.cumsum(y, 0, out=y)  # fully overlapping out=: allowed
        parts = [torch.cat([x, x]), torch.mm(x, x.t()), torch.where(x > 2, x, x.flip(0))]
        x.addcmul_(x, x)
        results[device] = [t.cpu() for t in (*parts, x, y)]
    for cpu, tpu in zip(results["cpu"], results["tpu"]):
        torch.testing.assert_close(tpu, cpu, rtol=0, atol=0)
