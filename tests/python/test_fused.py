"""DeferAndFuse (fused mode): ops are recorded per stream and run as programs at sync points;
pointwise chains become fused kernels; plans are cached by program structure. The counting
tests prove the mechanism through torch_tpu.metrics(); every result is compared with CPU.
(The foundation suite also runs in fused mode through the `mode` fixture.)"""

import os

import pytest
import torch
import torch.nn.functional as F

import torch_tpu
from conftest import assert_tpu_close, cpu_and_tpu, fusion, run_python_ok


pytestmark = pytest.mark.usefixtures("fused_mode")


def strict_then_fused(fn, inputs):
    """fn's results (on CPU) for tpu copies of the CPU tensors `inputs`: first in Strict, then
    in fused mode with fresh counters."""
    torch_tpu.set_mode("strict")
    strict = [t.cpu() for t in fn(*(t.tpu() for t in inputs))]
    torch_tpu.set_mode("fused")
    tensors = [t.tpu() for t in inputs]
    torch.tpu.synchronize()
    torch_tpu.reset_metrics()
    return strict, [t.cpu() for t in fn(*tensors)]


def pointwise_chain(x, links):
    for i in range(links):
        x = (x + 1.0) if i % 3 == 0 else (x * 0.5) if i % 3 == 1 else torch.relu(x - 0.25)
    return x


def test_ops_are_recorded_not_run_until_a_sync_point():
    x_cpu, x = cpu_and_tpu(16, 16)
    y = x * 2
    assert y.shape == (16, 16) and y.dtype == torch.float32  # metadata at once
    assert fusion()["programs_run"] == 0 and fusion()["flushes"] == {}
    assert_tpu_close(y, x_cpu * 2)  # .cpu() is a host read: it flushes
    assert fusion()["flushes"] == {"copy_to_host": 1}


def test_a_chain_of_pointwise_ops_runs_as_one_fused_kernel_without_writing_intermediates():
    links = 12
    x_cpu, x = cpu_and_tpu(256, 64)
    torch.tpu.synchronize()
    torch_tpu.reset_metrics()
    y = pointwise_chain(x, links)
    assert_tpu_close(y, pointwise_chain(x_cpu, links))
    counters = fusion()
    assert counters["fused_kernels_run"] == 1
    # relu(x - c) is two ops: 12 links make 16 ops, all in the one kernel.
    ops = links + links // 3
    assert counters["nodes_executed"] == ops + 1  # + the copy to host
    one_tensor = 256 * 64 * 4
    assert counters["bytes_materialized"] == one_tensor  # only the live result
    assert counters["bytes_avoided"] == (ops - 1) * one_tensor  # every dead intermediate


def test_a_fused_reduction_over_empty_rows_writes_its_result():
    for dim in (-1, 1):
        # Leave non-zero bytes in the allocator's free blocks, where the results will go.
        junk = torch.full((64,), 7.0, device="tpu")
        torch.tpu.synchronize()
        del junk
        x_cpu, x = cpu_and_tpu(5, 0)
        y_cpu, y = cpu_and_tpu(5, 0, seed=3)
        assert_tpu_close(torch.linalg.vecdot(x, y, dim=dim), torch.linalg.vecdot(x_cpu, y_cpu, dim=dim))
        assert_tpu_close((x * 2.0).sum(dim), (x_cpu * 2.0).sum(dim))


def test_in_place_pointwise_ops_fuse_and_0_dim_chains_keep_0_dim_operands():
    results = []
    for device in ("cpu", "tpu"):
        x = torch.full((64,), 3.0, device=device)
        x.mul_(2.0).add_(1.0).div_(7.0)
        # masked_fill_ wants a 0-dim value: here one computed in the same fused kernel.
        s = torch.tensor(4.0, device=device)
        s.masked_fill_(torch.tensor(True, device=device), s / 8)
        results.append((x, s))
    assert_tpu_close(list(results[1]), list(results[0]))
    assert fusion()["fused_kernels_run"] == 2


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("op", [torch.exp, torch.sigmoid, F.silu], ids=["exp", "sigmoid", "silu"])
def test_exp_based_ops_in_a_fused_kernel_are_cpu_bits(op, dtype):
    # A fused kernel calls the vector exp ATen's own kernels call (executors/host/vector_math.h),
    # so these match CPU bit for bit, extreme inputs included. (ATen runs the last few elements
    # of a range, past its last whole pair of vectors, through scalar std::exp: a length that
    # is a multiple of 64 has no such tail.)
    x_cpu = (torch.randn(4096, generator=torch.Generator().manual_seed(0)) * 30).to(dtype)
    x_cpu[:4] = torch.tensor([float("inf"), float("-inf"), float("nan"), 0.0], dtype=dtype)
    y = op(x_cpu.to("tpu") * 1.0)  # a chain: one fused kernel
    assert torch.equal(y.cpu().nan_to_num(), op(x_cpu * 1.0).nan_to_num())
    assert fusion()["fused_kernels_run"] == 1


def test_a_dead_result_is_not_computed_at_all():
    x_cpu, x = cpu_and_tpu(64, 64)
    torch.tpu.synchronize()
    torch_tpu.reset_metrics()
    unused = torch.exp(x) * 3  # dropped below before any sync
    del unused
    kept = x + 1
    assert_tpu_close(kept, x_cpu + 1)
    counters = fusion()
    assert counters["bytes_avoided"] >= 2 * 64 * 64 * 4
    assert counters["bytes_materialized"] == 64 * 64 * 4


def peak_allocated_by(run, mode):
    """Bytes of chip memory `run()` had allocated at its peak, above what was live before it."""
    torch_tpu.set_mode(mode)
    torch.tpu.synchronize()
    torch.tpu.reset_peak_memory_stats()
    before = torch.tpu.memory_allocated()
    result = run()
    torch.tpu.synchronize()
    return result, torch.tpu.max_memory_allocated() - before


@pytest.mark.usefixtures("no_stray_frees")
def test_a_dead_intermediate_is_never_allocated():
    """In fused mode a buffer gets chip memory only when a task needs its bytes: the chain's
    intermediates die before the flush and stay in the fused kernel's scratch, so they never
    take chip memory. Strict allocates each of them; peak memory shows the difference."""
    x_cpu, x = cpu_and_tpu(1024, 1024)  # 4 MiB
    one_tensor = x.numel() * x.element_size()

    def chain():
        return ((x + 1.0) * 2.0 - 1.0).sin()

    strict, strict_peak = peak_allocated_by(chain, "strict")
    torch_tpu.reset_metrics()
    fused, fused_peak = peak_allocated_by(chain, "fused")
    assert strict_peak == 2 * one_tensor  # each op's input and output are alive at once
    assert fused_peak == one_tensor  # the result only
    counters = fusion()
    assert counters["buffers_never_allocated"] == 3  # x + 1, * 2, - 1
    assert counters["bytes_never_allocated"] == 3 * one_tensor
    expected = ((x_cpu + 1.0) * 2.0 - 1.0).sin()
    assert_tpu_close(fused, expected)
    assert_tpu_close(strict, expected)


def test_a_buffer_dropped_while_pending_is_freed_after_the_ops_that_read_it():
    """The host drops `a` right after issuing the op that reads it; its memory goes back only
    once that op has run, so a later buffer cannot take it too early (the results stay right)."""
    x_cpu, x = cpu_and_tpu(256, 256)
    torch.tpu.synchronize()
    a = x @ x  # a matmul: not fused, so `a` needs chip memory
    b = a.sum(0)
    del a
    c = (x * 3.0) @ x  # takes memory while `a`'s reader is still pending
    assert_tpu_close(b, (x_cpu @ x_cpu).sum(0), rtol=1e-4, atol=1e-3)
    assert_tpu_close(c, (x_cpu * 3.0) @ x_cpu, rtol=1e-4, atol=1e-3)


def test_near_capacity_an_allocation_fails_at_the_call_as_in_strict():
    """Lazy buffers are owed memory: once they could not all fit, fused mode runs the pending
    work and allocates at the call, so running out of memory raises torch.OutOfMemoryError
    there (naming the request), and work goes on after tensors are freed."""
    code = """
import torch, torch_tpu
torch_tpu.set_mode("fused")
tensors = []
try:
    for _ in range(10):
        tensors.append(torch.ones(8 << 20, device="tpu"))  # 32 MiB each
    raise SystemExit("expected torch.OutOfMemoryError")
except torch.OutOfMemoryError as error:
    assert "tried to allocate 32.00 MiB" in str(error), error
    assert len(tensors) == 4, len(tensors)  # 4 x 32 MiB fill the 128 MiB chip
del tensors
y = torch.ones(8 << 20, device="tpu") * 2
assert y.sum().item() == 2 * (8 << 20)
print("ok")
"""
    assert run_python_ok(code, env={"TORCH_TPU_HBM_BYTES": "128M"}).strip() == "ok"


def test_broadcasting_type_promotion_and_in_place_views_match_cpu():
    a_cpu, a = cpu_and_tpu(32, 8)
    b_cpu, b = cpu_and_tpu(8, seed=1)
    c_cpu, c = cpu_and_tpu(32, 8, dtype=torch.bfloat16, seed=2)
    out_cpu = ((a_cpu + b_cpu) * c_cpu).sigmoid() - torch.tensor(0.5)
    out = ((a + b) * c).sigmoid() - torch.tensor(0.5)
    assert_tpu_close(out, out_cpu)
    base_cpu, base = cpu_and_tpu(4, 32, seed=3)
    view_cpu, view = base_cpu[1:3], base[1:3]
    for v in (view_cpu, view):
        v.mul_(2).add_(1)
        v.clamp_(min=0)
    assert_tpu_close(base, base_cpu)


def test_numbers_outside_float_range_and_user_scalars_in_fused_kernels_match_cpu():
    # A float32 op converts a Python number to float as CPU does (1e300 becomes inf, 1e-300
    # zero); fused mode raised that the value "cannot be converted to type float".
    results = []
    for device in ("cpu", "tpu"):
        x = torch.linspace(-2, 2, 64, device=device)
        # A user's CPU 0-dim tensor is read as it was at the call: changed right after, the
        # pending kernel must not see the change (wrapped Python numbers need no copy).
        scale = torch.tensor(3.0, dtype=torch.float64)
        scaled = x * scale
        scale.fill_(100.0)
        results.append([x + 1e300, (x * 1e-300).exp(), (x - 1e39) * 0.5, scaled * 2 + 1])
    assert_tpu_close(results[1], results[0])
    assert fusion()["fused_kernels_run"] >= 1


def test_a_training_loop_hits_the_program_cache_every_step_after_warm_up():
    torch.manual_seed(0)
    model_cpu = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))
    model.load_state_dict(model_cpu.state_dict())
    model = model.tpu()
    opt_cpu = torch.optim.AdamW(model_cpu.parameters(), lr=1e-2)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    data = torch.Generator().manual_seed(1)
    planned_after_step = []
    for _ in range(6):
        x, target = torch.randn(8, 16, generator=data), torch.randn(8, 4, generator=data)
        for m, o, device in ((model_cpu, opt_cpu, "cpu"), (model, opt, "tpu")):
            loss = F.mse_loss(m(x.to(device)), target.to(device))
            o.zero_grad()
            loss.backward()
            o.step()
            loss.item()
        planned_after_step.append(fusion()["programs_planned"])
    # Warm-up plans (the optimizer's state appears in step 1); then nothing new is planned.
    assert planned_after_step[2:] == [planned_after_step[2]] * 4
    counters = fusion()
    assert counters["flushes"]["backward"] >= 6 and counters["flushes"]["item"] >= 6
    assert counters["cache_hits"] >= 8  # two programs a step (backward, then step + loss)
    for p_cpu, p in zip(model_cpu.parameters(), model.parameters()):
        assert_tpu_close(p, p_cpu, rtol=1e-4, atol=1e-5)


def test_flush_reasons_are_counted():
    x = torch.ones(8, device="tpu")
    (x + 1).sum().item()
    (x * 2).cpu()
    y = x - 1
    torch.tpu.synchronize()
    del y
    stream = torch.tpu.Stream()
    z = x * 3
    event = torch.tpu.Event()
    event.record()
    stream.wait_event(event)  # another stream waits for this one: it must run
    flushes = fusion()["flushes"]
    assert flushes["item"] == 1 and flushes["copy_to_host"] == 1
    assert flushes["device_synchronize"] >= 1
    assert flushes["cross_stream_wait"] == 1
    assert_tpu_close(z, torch.full((8,), 3.0))


def test_a_long_op_stream_flushes_at_the_size_bound():
    x = torch.zeros(4, device="tpu")
    for _ in range(600):
        x = x + 1
    assert fusion()["flushes"].get("size_bound", 0) >= 1
    assert_tpu_close(x, torch.full((4,), 600.0))


def test_switching_modes_mid_program_flushes():
    x = torch.ones(3, device="tpu")
    y = x + 2  # recorded in fused mode
    torch_tpu.set_mode("strict")
    z = y * 2  # strict: runs after the flushed program
    assert_tpu_close(z, torch.full((3,), 6.0))


def test_an_error_in_a_program_names_the_op_and_later_work_runs():
    x = torch.randn(4, 3, device="tpu")
    bad = torch.index_select(x, 0, torch.tensor([0, 9], device="tpu"))
    good = x * 2
    with pytest.raises(RuntimeError, match="index_select"):
        torch.tpu.synchronize()
    del bad
    assert_tpu_close(good, x.cpu() * 2)


def test_dropout_masks_match_strict_with_the_same_seed():
    def masks(mode):
        with torch_tpu.mode(mode):
            torch.manual_seed(7)
            x = torch.ones(64, 64, device="tpu")
            return (F.dropout(x, 0.5) * 2 + 1).cpu()
    torch.testing.assert_close(masks("fused"), masks("strict"), rtol=0, atol=0)


def test_dump_programs_writes_each_new_program_with_its_flush_reason(tmp_path):
    code = """
import torch, torch_tpu
x = torch.ones(8, device="tpu")
for _ in range(3):
    ((x + 1) * 2).relu().sum().item()
"""
    run_python_ok(code, env={"TORCH_TPU_MODE": "fused", "TORCH_TPU_DUMP_PROGRAMS": tmp_path})
    dumps = sorted(os.listdir(tmp_path))
    assert 1 <= len(dumps) <= 2  # planned once (plus the first copy), then cache hits
    text = "".join((tmp_path / name).read_text() for name in dumps)
    assert "flushed by item" in text
    assert "fused kernel over [8]" in text and "aten::relu" in text


def test_a_fused_program_is_recorded_as_ir_with_views_and_in_place_writes_explicit(tmp_path):
    """The dump's IR names each op by schema, its values' layouts and storages, and what each
    node reads and writes: a write through a view is a write to the base's storage, and later
    reads of the base name the same storage."""
    code = """
import torch, torch_tpu
x = torch.ones(8, 4, device="tpu")
torch.tpu.synchronize()
y = (x * 2).relu()
y[1:3].add_(x[0])
y.sum(0).cpu()
"""
    run_python_ok(code, env={"TORCH_TPU_MODE": "fused", "TORCH_TPU_DUMP_PROGRAMS": tmp_path})
    text = "".join((tmp_path / name).read_text() for name in sorted(os.listdir(tmp_path)))
    assert "%0 = input : f32[8, 4]{4, 1} s0\n" in text
    assert "= aten::mul.Tensor(%0, %" in text
    relu = next(line for line in text.splitlines() if "aten::relu(" in line)
    relu_value, relu_storage = relu.split(" = ")[0], relu.split(" : f32[8, 4]{4, 1} ")[1].split()[0]
    assert relu.endswith(f"writes {relu_storage}")
    view = next(line for line in text.splitlines() if line.endswith(f": f32[2, 4]{{4, 1}}+4 {relu_storage}"))
    assert view.split(" = ")[1].startswith("view")  # y[1:3]: made without an op
    add = next(line for line in text.splitlines() if "aten::add_.Tensor(" in line)
    assert f"writes {relu_storage}" in add and f"reads {relu_storage}" in add
    total = next(line for line in text.splitlines() if "aten::sum.dim_IntList(" in line)
    assert f"aten::sum.dim_IntList({relu_value}, [0]" in total  # the base, read after the write


def test_a_dead_tensor_updated_in_place_is_still_read_before_the_update():
    """`a` dies after its in-place update, but the fused kernel must still read its old
    contents for `y` (only storages a cluster writes before reading may stay in scratch)."""
    x_cpu, x = cpu_and_tpu(64, 64)
    a_cpu, a = cpu_and_tpu(64, 64, seed=1)
    torch.tpu.synchronize()
    y = x * a
    a.add_(1)
    del a
    assert_tpu_close(y, x_cpu * a_cpu)


def test_row_reductions_end_a_fused_kernel_and_its_rows_feed_later_ops():
    """softmax written out (max, subtract, exp, sum, divide over the last dim) runs as one fused
    kernel by chunks of rows, with Strict's bits; a reduction over dim 0 does not join."""
    def softmax_pieces(x):
        e = (x - x.amax(-1, keepdim=True)).exp()
        return e / e.sum(-1, keepdim=True)

    for dtype in (torch.float32, torch.bfloat16):
        x_cpu = torch.randn(300, 77, generator=torch.Generator().manual_seed(3)).to(dtype)
        torch_tpu.set_mode("strict")
        strict = softmax_pieces(x_cpu.tpu()).cpu()
        torch_tpu.set_mode("fused")
        x = x_cpu.tpu()
        torch.tpu.synchronize()
        torch_tpu.reset_metrics()
        fused = softmax_pieces(x).cpu()
        assert torch.equal(fused, strict), dtype
        assert_tpu_close(softmax_pieces(x), softmax_pieces(x_cpu.float()).to(dtype), rtol=2e-2, atol=1e-3)
        counters = fusion()
        assert counters["fused_kernels_run"] >= 1
        # exp's result and x - max stay in scratch: never written to chip memory.
        assert counters["bytes_avoided"] >= 2 * x.numel() * x.element_size()

    # Reduced dims of size 1: the result has the input's shape, and the cluster still runs by
    # rows (its dims would not exist in flat chunks).
    y_cpu = torch.randn(8, 5, 1)
    assert_tpu_close(((y_cpu.tpu() * 2).sum(2, keepdim=True) + 1) * 3, ((y_cpu * 2).sum(2, keepdim=True) + 1) * 3)

    x_cpu = torch.randn(64, 32)
    x = x_cpu.tpu()
    torch.tpu.synchronize()
    torch_tpu.reset_metrics()
    column_sums = (x * 2).sum(0)  # reduces the rows themselves: stays a kernel of its own
    assert_tpu_close(column_sums, (x_cpu * 2).sum(0))
    assert fusion()["fused_kernels_run"] == 0


@pytest.mark.parametrize("shape", [(37, 5), (300, 77), (1100, 257)], ids=["tiny", "one-chunk-per-thread", "cache-sized-chunks"])
def test_clusters_of_aten_kernels_give_strict_bits_at_every_chunking(shape):
    """A cluster with a row sum runs its ops' CPU kernels on chunk views (the register loop has
    no reductions). A small iteration runs one chunk per thread, a large one cache-sized chunks
    (rows not a multiple of the chunk); either way the bits are Strict's."""
    def optimizer_like(p, m, g):
        m.lerp_(g, 0.1)
        p.addcdiv_(m, g.abs() + 1e-8, value=-1e-3)
        q = m * g
        return p, m, q / q.sum(-1, keepdim=True)

    generator = torch.Generator().manual_seed(5)
    strict, fused = strict_then_fused(optimizer_like, [torch.randn(shape, generator=generator) for _ in range(3)])
    for got, expected in zip(fused, strict):
        assert torch.equal(got, expected)
    assert fusion()["fused_kernels_run"] >= 1


def test_fused_float32_tanh_is_atens_vector_tanh():
    """ATen's tanh is SLEEF's vector tanh (Vectorized<float>::tanh) but for the scalar tail of
    each range it splits work into; the register loop calls the same function. (Its former
    std::tanh, which GCC vectorizes into glibc's own vector tanhf, differed from Strict in ~14%
    of elements.)"""
    x_cpu = torch.randn(1000, 1000, generator=torch.Generator().manual_seed(3)) * 3
    torch_tpu.set_mode("strict")
    strict = (x_cpu.tpu().tanh() * 1.0).cpu()
    torch_tpu.set_mode("fused")
    fused = (x_cpu.tpu().tanh() * 1.0).cpu()
    differing = (fused != strict).sum().item()
    assert differing < x_cpu.numel() // 100
    torch.testing.assert_close(fused, strict, rtol=2.5e-7, atol=0)  # the tails: within an ulp


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_fused_relu_keeps_a_negative_zero_as_aten_does(dtype):
    """ATen's relu is clamp_min(x, 0): -0.0 stays -0.0 (the loop used to give +0.0)."""
    values = torch.tensor([-0.0, 0.0, -1.5, 2.5, -3.0e-38, 1.0e-3] * 50).to(dtype)
    torch_tpu.set_mode("strict")
    strict = (torch.relu(values.tpu()) * 2.0).cpu()
    torch_tpu.set_mode("fused")
    fused = (torch.relu(values.tpu()) * 2.0).cpu()
    assert torch.equal(fused, strict) and torch.equal(fused.signbit(), strict.signbit())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_small_integer_powers_run_in_the_register_loop_with_atens_bits(dtype):
    """ATen copies for pow(x, 1) and multiplies for pow(x, 2) and pow(x, 3), left to right (for
    bf16 with x * x rounded first, so a bf16 cube stays with ATen's kernel). RMSNorm's clusters,
    a square with a row-broadcast scale and its backward's cube, run in the register loop."""
    generator = torch.Generator().manual_seed(3)
    x = torch.randn(8, 64, 128, generator=generator) * 3
    x.view(-1)[:7] = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e-39, 3e15])
    scale = torch.rand(8, 64, 1, generator=generator) + 0.5

    def powers(x, scale):
        return (x.pow(2) * scale + x.pow(1), x.pow(2.0) - x.pow(3) * scale)

    strict, fused = strict_then_fused(powers, [x.to(dtype), scale.to(dtype)])
    for got, expected in zip(fused, strict):
        torch.testing.assert_close(got, expected, rtol=0, atol=0, equal_nan=True)
    assert fusion()["fused_kernels_run"] == 1
    # float32: one register loop; bf16: the cube keeps the cluster on ATen's kernels
    assert fusion()["interpreted_kernel_runs"] == (1 if dtype == torch.float32 else 0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
def test_fused_lerp_addcmul_addcdiv_are_atens_fused_multiply_adds(dtype):
    """ATen computes lerp and addcmul with fused multiply-adds (lerp's two forms on either side
    of weight 0.5) and addcdiv as a + (value * b) / c; the register loop does the same, so an
    Adam-like update runs as one fused kernel with Strict's bits."""
    generator = torch.Generator().manual_seed(7)
    inputs = [torch.randn(1000, 37, generator=generator).to(dtype) for _ in range(4)]
    inputs[2] = inputs[2].abs()

    def update(p, m, v, grad):
        m.lerp_(grad, 0.1)
        v.mul_(0.999).addcmul_(grad, grad, value=0.001)
        p.addcdiv_(m, v.sqrt() + 1e-3, value=-0.01)
        w = torch.lerp(p, grad, 0.75) + torch.lerp(m, p, v.clamp(0, 1)) - torch.addcmul(p, m, v)
        return p, m, v, w

    strict, fused = strict_then_fused(update, inputs)
    for got, expected in zip(fused, strict):
        assert torch.equal(got, expected)
    assert fusion()["fused_kernels_run"] == 1
    assert fusion()["interpreted_kernel_runs"] == 1  # the register loop, not ATen's kernels


@pytest.mark.parametrize("bounds", ["tensors", "scalars"])
def test_clamp_with_tensor_bounds_fuses_with_its_neighbours_and_gives_strict_results(bounds):
    """clamp.Tensor's bounds may be whole tensors: they must not be read as the register
    loop's constant bounds (they were: a 4.0 error against CPU)."""
    torch.manual_seed(0)
    x, lo = torch.randn(64, 32), torch.randn(64, 32) - 1
    hi = lo + 1.5
    if bounds == "scalars":
        lo, hi = -0.5, 0.75
    expected = ((x * 2).clamp(min=lo, max=hi) + 1)
    with torch_tpu.mode("fused"):
        tpu = [t.to("tpu") if isinstance(t, torch.Tensor) else t for t in (x, lo, hi)]
        got = ((tpu[0] * 2).clamp(min=tpu[1], max=tpu[2]) + 1).cpu()
    torch.testing.assert_close(got, expected, rtol=0, atol=0)
