"""Multi-tensor (`torch._foreach_*`) ops on tpu against CPU, in every mode.

Each op of PyTorch's own foreach OpInfo lists (the ones its CUDA tests use) runs on each of its
samples: functional, in place, and into out= lists where the op has them. A whole list is one
queued op on tpu (as one multi-tensor kernel on CUDA), running the CPU kernel's own loop, so
results match CPU bit for bit. Also: one queued op per call, aliasing inside a list, and bad
input raising the CPU kernel's error.
"""

import pytest
import torch
from torch.testing._internal.common_methods_invocations import (
    foreach_binary_op_db,
    foreach_other_op_db,
    foreach_pointwise_op_db,
    foreach_reduce_op_db,
    foreach_unary_op_db,
)

import torch_tpu

FOREACH_OPS = (foreach_unary_op_db + foreach_binary_op_db + foreach_pointwise_op_db
               + foreach_reduce_op_db + foreach_other_op_db)
TENSORS_PER_LIST = 4


def to_tpu(value):
    if isinstance(value, torch.Tensor):
        return value.to("tpu")
    if isinstance(value, (list, tuple)):
        return type(value)(to_tpu(v) for v in value)
    return value


def cpu_copy(value):
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, (list, tuple)):
        return type(value)(cpu_copy(v) for v in value)
    return value


def assert_same(tpu_value, cpu_value):
    if isinstance(cpu_value, (list, tuple)):
        assert isinstance(tpu_value, (list, tuple)) and len(tpu_value) == len(cpu_value)
        for t, c in zip(tpu_value, cpu_value):
            assert_same(t, c)
        return
    if not isinstance(cpu_value, torch.Tensor):
        assert tpu_value == cpu_value
        return
    assert tpu_value.device.type == "tpu"
    torch.testing.assert_close(tpu_value.cpu(), cpu_value, atol=0, rtol=0, equal_nan=True)


def samples_of(op, dtype):
    try:
        return list(op.sample_inputs("cpu", dtype, num_input_tensors=[TENSORS_PER_LIST]))
    except (RuntimeError, ValueError, TypeError):
        return []


def run_both(function, sample):
    """(tpu result, tpu inputs, CPU result, CPU inputs), or the CPU kernel's error."""
    cpu_input, cpu_args = cpu_copy(sample.input), cpu_copy(list(sample.args))
    tpu_input, tpu_args = to_tpu(sample.input), to_tpu(list(sample.args))
    try:
        expected = function(cpu_input, *cpu_args, **sample.kwargs)
    except (RuntimeError, ValueError, TypeError) as cpu_error:
        # A kernel's own error (an unsupported dtype) surfaces at the next sync as a
        # RuntimeError naming the op, as every asynchronous error does (DESIGN §4).
        expected_error = RuntimeError if isinstance(cpu_error, RuntimeError) else type(cpu_error)
        with pytest.raises(expected_error):
            function(tpu_input, *tpu_args, **sample.kwargs)
            torch.tpu.synchronize()
        return None
    actual = function(tpu_input, *tpu_args, **sample.kwargs)
    return actual, (tpu_input, tpu_args), expected, (cpu_input, cpu_args)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64], ids=str)
@pytest.mark.parametrize("op", FOREACH_OPS, ids=lambda op: op.name)
def test_foreach_op_matches_cpu(op, dtype, mode):
    samples = samples_of(op, dtype)
    if not samples:
        pytest.skip(f"{op.name} has no {dtype} samples")
    variants = [op.op] + ([op.inplace_variant] if op.inplace_variant is not None else [])
    for sample in samples:
        for function in variants:
            outcome = run_both(function, sample)
            if outcome is None:
                continue
            actual, tpu_inputs, expected, cpu_inputs = outcome
            assert_same(actual, expected)
            assert_same(tpu_inputs, cpu_inputs)  # what in-place variants wrote


@pytest.mark.parametrize("name", ["add", "mul", "sqrt", "lerp"])
def test_out_lists_are_written_as_on_cpu(name, mode):
    cpu = [torch.randn(n, 3, generator=torch.Generator().manual_seed(n)) for n in (1, 4, 7)]
    weights = [torch.rand(n, 3, generator=torch.Generator().manual_seed(9 + n)) for n in (1, 4, 7)]
    arguments = {"add": (cpu, cpu), "mul": (cpu, 2.5), "sqrt": ([t.abs() for t in cpu],),
                 "lerp": (cpu, weights, 0.3)}[name]
    overload_name = {"add": "List_out", "mul": "Scalar_out", "sqrt": "out", "lerp": "Scalar_out"}[name]
    overload = getattr(getattr(torch.ops.aten, f"_foreach_{name}"), overload_name)
    cpu_out = [torch.empty_like(t) for t in cpu]
    tpu_out = [t.to("tpu") for t in cpu_out]
    overload(*arguments, out=cpu_out)
    overload(*to_tpu(list(arguments)), out=tpu_out)
    assert_same(tpu_out, cpu_out)


def test_gradients_flow_through_functional_foreach_ops(mode):
    cpu = [torch.randn(n, 3, requires_grad=True) for n in (2, 5)]
    tpu = [t.detach().to("tpu").requires_grad_() for t in cpu]
    for tensors in (cpu, tpu):
        scaled = torch._foreach_mul(tensors, 3.0)
        summed = torch._foreach_add(scaled, tensors, alpha=0.5)
        sum(s.sin().sum() for s in summed).backward()
    for c, t in zip(cpu, tpu):
        assert_same(t.grad, c.grad)


def test_a_list_is_one_queued_op(mode):
    params = [torch.randn(n, 8, device="tpu") for n in range(1, 25)]
    torch.tpu.synchronize()
    torch_tpu.reset_metrics()
    torch._foreach_mul_(params, 0.5)
    torch._foreach_add_(params, params, alpha=2.0)
    torch.tpu.synchronize()
    assert torch_tpu.metrics()["ops_launched"] == 2


def test_a_tensor_twice_in_a_list_is_updated_twice(mode):
    cpu = torch.randn(5)
    tpu = cpu.to("tpu")
    torch._foreach_mul_([cpu, cpu], 3.0)
    torch._foreach_mul_([tpu, tpu], 3.0)
    assert_same(tpu, cpu)


def test_views_in_a_list_write_their_base(mode):
    cpu = torch.randn(6, 4)
    tpu = cpu.to("tpu")
    torch._foreach_add_([cpu[0], cpu[2:4], cpu.t()[1]], 1.0)
    torch._foreach_add_([tpu[0], tpu[2:4], tpu.t()[1]], 1.0)
    assert_same(tpu, cpu)


def test_lists_of_different_lengths_raise(mode):
    a = [torch.randn(3, device="tpu") for _ in range(3)]
    b = [torch.randn(3, device="tpu") for _ in range(2)]
    with pytest.raises(RuntimeError, match="same number of tensors|same length"):
        torch._foreach_add(a, b)


def test_a_list_mixing_devices_runs_tensor_by_tensor(mode):
    """As CUDA's slow path: each tensor is updated where it lies (one op per tensor)."""
    cpu = [torch.randn(3), torch.randn(2, 2)]
    mixed = [cpu[0].to("tpu"), cpu[1].clone()]
    torch._foreach_mul_(cpu, 1.5)
    torch._foreach_mul_(mixed, 1.5)
    assert mixed[0].is_tpu and mixed[1].device.type == "cpu"
    assert_same(mixed[0], cpu[0])
    torch.testing.assert_close(mixed[1], cpu[1], atol=0, rtol=0)


def test_a_cpu_tensor_of_scalars_is_read_as_on_cpu(mode):
    """addcdiv_'s per-tensor `scalars` as a 1-D CPU tensor (the .Tensor overload)."""
    cpu = [torch.randn(4), torch.randn(2, 3)]
    num = [torch.randn(4), torch.randn(2, 3)]
    den = [torch.rand(4) + 1, torch.rand(2, 3) + 1]
    tpu = to_tpu(cpu)
    scalars = torch.tensor([0.5, -2.0])
    torch._foreach_addcdiv_(cpu, num, den, scalars)
    torch._foreach_addcdiv_(tpu, to_tpu(num), to_tpu(den), scalars)
    assert_same(tpu, cpu)


# --- fused mode: consecutive multi-tensor ops fuse lane by lane -----------------------------

def adamw_like(params, grads, exp_avgs, exp_avg_sqs):
    torch._foreach_mul_(params, 1 - 1e-3 * 0.01)
    torch._foreach_lerp_(exp_avgs, grads, 0.1)
    torch._foreach_mul_(exp_avg_sqs, 0.999)
    torch._foreach_addcmul_(exp_avg_sqs, grads, grads, 0.001)
    denominators = torch._foreach_sqrt(exp_avg_sqs)
    torch._foreach_div_(denominators, [0.9 + 0.01 * i for i in range(len(params))])
    torch._foreach_add_(denominators, 1e-8)
    torch._foreach_addcdiv_(params, exp_avgs, denominators, [-1e-3 * (i + 1) for i in range(len(params))])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_fused_mode_runs_an_adamw_update_as_one_kernel_per_parameter(dtype):
    shapes = [(64, 32), (32,), (7, 5, 3), (1,)]
    generator = torch.Generator().manual_seed(3)
    state = [[torch.randn(shape, generator=generator).to(dtype) for shape in shapes] for _ in range(4)]
    state[3] = [t.abs() for t in state[3]]
    strict = to_tpu(state)
    adamw_like(*strict)
    strict = [[t.cpu() for t in group] for group in strict]
    torch_tpu.set_mode("fused")
    fused = to_tpu(state)
    torch.tpu.synchronize()
    torch_tpu.reset_metrics()
    adamw_like(*fused)
    torch.tpu.synchronize()
    counters = torch_tpu.metrics()["fusion"]
    assert counters["fused_kernels_run"] == len(shapes)  # one per parameter, all 8 ops in it
    assert counters["interpreted_kernel_runs"] == len(shapes)  # in the register loop
    # The square roots never take chip memory.
    assert counters["bytes_never_allocated"] >= sum(t.numel() * t.element_size() for t in state[0])
    for got, expected in zip(fused, strict):
        for g, e in zip(got, expected):
            assert torch.equal(g.cpu(), e)


def test_functional_lanes_and_lanes_without_a_register_form_match_strict():
    cpu = [torch.rand(n, 4) + 0.5 for n in (3, 1, 6)]
    def chain(xs):
        ys = torch._foreach_add(xs, 1.0)
        zs = torch._foreach_pow(ys, 1.5)  # no register form: runs its CPU kernel per lane
        return torch._foreach_mul(zs, ys)
    strict = [t.cpu() for t in chain(to_tpu(cpu))]
    torch_tpu.set_mode("fused")
    torch_tpu.reset_metrics()
    fused = [t.cpu() for t in chain(to_tpu(cpu))]
    assert torch_tpu.metrics()["fusion"]["fused_kernels_run"] == len(cpu)
    for f, s in zip(fused, strict):
        assert torch.equal(f, s)


def test_lanes_that_share_a_written_tensor_do_not_fuse():
    cpu = torch.randn(5)
    def chain(t):
        torch._foreach_mul_([t, t], 2.0)
        torch._foreach_add_([t, t], 1.0)
        return t
    expected = chain(cpu.clone())
    torch_tpu.set_mode("fused")
    torch_tpu.reset_metrics()
    assert_same(chain(cpu.to("tpu")), expected)
    assert torch_tpu.metrics()["fusion"]["fused_kernels_run"] == 0
