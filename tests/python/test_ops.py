"""ATen ops on tpu against PyTorch's CPU results on the same inputs, in Strict and Debug mode:
math, indexing, joining, nn functionals, factories, dtype conversions, data-dependent ops (the
counted CPU fallback), out= variants, and view / in-place aliasing semantics."""

import pytest
import torch
import torch.nn.functional as F

import torch_tpu
from conftest import assert_tpu_close, cpu_and_tpu

pytestmark = pytest.mark.usefixtures("mode")  # every test here runs in Strict and in Debug


def idx(values, like):
    """An int64 index tensor on ``like``'s device."""
    return torch.tensor(values, device=like.device)


def check_binary(fn, shape_a=(6, 6), shape_b=(6, 6), dtype=torch.float32, **tolerances):
    """fn(a, b) on tpu matches fn(a, b) on CPU for the same random a, b."""
    a_cpu, a_tpu = cpu_and_tpu(*shape_a, dtype=dtype, seed=1)
    b_cpu, b_tpu = cpu_and_tpu(*shape_b, dtype=dtype, seed=2)
    assert_tpu_close(fn(a_tpu, b_tpu), fn(a_cpu, b_cpu), **tolerances)


# --- pointwise math and broadcasting ---------------------------------------------------------

ELEMENTWISE = {
    "add": lambda a, b: a + b,
    "add_alpha": lambda a, b: torch.add(a, b, alpha=-2.5),
    "sub_mul_div": lambda a, b: (a - b) * b / (b.abs() + 1),
    "scalar_ops": lambda a, b: 3.5 * a - 1 + 2 / (a.abs() + 1),
    "pow": lambda a, b: a.pow(2) + a.abs().pow(b),
    "exp_log": lambda a, b: torch.log(a.abs() + 1).exp(),
    "sqrt_rsqrt": lambda a, b: a.abs().sqrt() + (b.abs() + 1).rsqrt(),
    "trig": lambda a, b: torch.sin(a) * torch.cos(b) + torch.atan2(a, b),
    "tanh_sigmoid": lambda a, b: torch.tanh(a) + torch.sigmoid(b),
    "clamp": lambda a, b: a.clamp(-0.5, 0.5) + b.clamp(min=0),
    "floor_round": lambda a, b: torch.floor(a * 3) + torch.round(b * 3) + torch.trunc(a),
    "abs_neg_sign": lambda a, b: a.abs() - b.neg() + a.sign(),
    "maximum_minimum": lambda a, b: torch.maximum(a, b) - torch.minimum(a, b),
    "lerp_addcmul": lambda a, b: torch.lerp(a, b, 0.3) + torch.addcmul(a, a, b, value=0.5),
    "fmod_remainder": lambda a, b: torch.fmod(a, 0.7) + torch.remainder(b, 0.7),
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise(name):
    check_binary(ELEMENTWISE[name])


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int8, torch.uint8])
def test_integer_arithmetic(dtype):
    a_cpu, a_tpu = cpu_and_tpu(5, 7, dtype=dtype, low=1, high=50, seed=1)
    b_cpu, b_tpu = cpu_and_tpu(5, 7, dtype=dtype, low=1, high=50, seed=2)

    def fn(a, b):
        return torch.stack([a + b, a * 3, a // b, a % b, a - b, a.div(b, rounding_mode="floor")])

    assert_tpu_close(fn(a_tpu, b_tpu), fn(a_cpu, b_cpu))
    assert_tpu_close(a_tpu / b_tpu, a_cpu / b_cpu)  # true division promotes to float


def test_bool_logic():
    a_cpu, a_tpu = cpu_and_tpu(4, 5, dtype=torch.bool, seed=1)
    b_cpu, b_tpu = cpu_and_tpu(4, 5, dtype=torch.bool, seed=2)

    def fn(a, b):
        return torch.stack([a & b, a | b, a ^ b, ~a, torch.logical_and(a, ~b)])

    assert_tpu_close(fn(a_tpu, b_tpu), fn(a_cpu, b_cpu))


BROADCASTS = {
    "row": ((4, 6), (6,)),
    "column": ((4, 6), (4, 1)),
    "outer": ((4, 1), (1, 6)),
    "batched": ((2, 3, 4), (3, 1)),
    "zero_dim": ((4, 6), ()),
    "size_one_dims": ((1, 3, 1), (2, 1, 5)),
}


@pytest.mark.parametrize("name", sorted(BROADCASTS))
def test_broadcasting(name):
    shape_a, shape_b = BROADCASTS[name]
    check_binary(lambda a, b: a * b + a - b, shape_a, shape_b)
    check_binary(lambda a, b: torch.where(a > b, a, b), shape_a, shape_b)


def test_in_place_broadcasting_and_type_promotion():
    check_binary(lambda a, b: a.clone().add_(b[0]).mul_(b[:, :1]))
    check_binary(lambda a, b: a.to(torch.bfloat16) + b)  # bf16 + f32 -> f32
    check_binary(lambda a, b: a.long() * 0.5)            # int64 * python float -> f32
    check_binary(lambda a, b: a.half() + b.half().to(torch.bfloat16))  # f16 + bf16 -> f32


# --- reductions ------------------------------------------------------------------------------

REDUCTIONS = {
    "sum": lambda a: a.sum(),
    "sum_dim_keepdim": lambda a: a.sum(1, keepdim=True),
    "sum_dims_dtype": lambda a: a.sum((0, 2), dtype=torch.float64),
    "mean": lambda a: a.mean() + a.mean(0).sum(),
    "max": lambda a: a.max(),
    "max_dim": lambda a: a.max(dim=1),
    "min_dim": lambda a: a.min(dim=2, keepdim=True),
    "argmax": lambda a: torch.stack([a.argmax(), a.argmax(dim=0).sum(), a.argmin()]),
    "argmax_dim": lambda a: a.argmax(dim=-1),
    "var": lambda a: a.var(),
    "var_dim_unbiased_false": lambda a: a.var(dim=1, unbiased=False),
    "std_mean": lambda a: torch.stack(torch.std_mean(a, dim=0)),
    "prod_amax": lambda a: a.prod(2) + a.amax((0, 1)).sum(),
    "logsumexp_norm": lambda a: a.logsumexp(1) + a.norm(dim=1),
    "any_all": lambda a: torch.stack([(a > 2).any(), (a > -5).all(), (a > 0).any(1).all()]),
    "cumsum": lambda a: a.cumsum(1),
    "sort_topk": lambda a: torch.cat([a.sort(-1).values, a.topk(2, -1).values], -1),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction(name):
    a_cpu, a_tpu = cpu_and_tpu(3, 4, 5, seed=3)
    assert_tpu_close(REDUCTIONS[name](a_tpu), REDUCTIONS[name](a_cpu))


def test_integer_reductions():
    a_cpu, a_tpu = cpu_and_tpu(4, 6, dtype=torch.int64, low=-9, high=9)
    for fn in (torch.sum, lambda a: a.sum(0), lambda a: a.max(1).values, lambda a: a.argmax(1),
               lambda a: a.prod(0)):
        assert_tpu_close(fn(a_tpu), fn(a_cpu))


# --- matrix products -------------------------------------------------------------------------

MATMULS = {
    "matmul": ((4, 6), (6, 3), lambda a, b: a @ b),
    "mm": ((4, 6), (6, 3), torch.mm),
    "matmul_transposed": ((4, 6), (3, 6), lambda a, b: a @ b.t()),
    "matmul_broadcast": ((2, 4, 6), (6, 3), torch.matmul),
    "mv_dot": ((4, 6), (6,), lambda a, b: torch.cat([torch.mv(a, b), torch.dot(b, b)[None]])),
    "bmm": ((2, 4, 6), (2, 6, 3), torch.bmm),
    "addmm": ((4, 6), (6, 4), lambda a, b: torch.addmm(a[:, :4], a, b)),
    "addmm_beta_alpha": ((4, 6), (6, 4),
                         lambda a, b: torch.addmm(a[:, 2:], a, b, beta=0.5, alpha=2)),
    "baddbmm": ((2, 4, 6), (2, 6, 4),
                lambda a, b: torch.baddbmm(a[:, :, :4], a, b, beta=0.25, alpha=-1)),
    "einsum": ((2, 4, 6), (2, 6, 3), lambda a, b: torch.einsum("bij,bjk->bik", a, b)),
    "linear": ((4, 6), (3, 6), lambda a, b: F.linear(a, b, b[:, 0])),
}


@pytest.mark.parametrize("name", sorted(MATMULS))
def test_matmul_family(name):
    shape_a, shape_b, fn = MATMULS[name]
    check_binary(fn, shape_a, shape_b, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_low_precision_matmul(dtype):
    check_binary(lambda a, b: a @ b, (8, 16), (16, 4), dtype=dtype)


# --- nn functionals --------------------------------------------------------------------------

def test_embedding():
    weight_cpu, weight_tpu = cpu_and_tpu(10, 4)
    ids = [[0, 3, 9], [3, 3, 1]]
    assert_tpu_close(F.embedding(idx(ids, weight_tpu), weight_tpu),
                     F.embedding(torch.tensor(ids), weight_cpu))
    assert_tpu_close(F.embedding(idx(ids, weight_tpu), weight_tpu, padding_idx=3),
                     F.embedding(torch.tensor(ids), weight_cpu, padding_idx=3))


def test_linear_module():
    torch.manual_seed(0)
    layer = torch.nn.Linear(6, 3)
    x_cpu, x_tpu = cpu_and_tpu(2, 5, 6)
    assert_tpu_close(layer.tpu()(x_tpu), layer.cpu()(x_cpu))


def test_layer_norm():
    x_cpu, x_tpu = cpu_and_tpu(3, 4, 8)
    w_cpu, w_tpu = cpu_and_tpu(8, seed=5)
    b_cpu, b_tpu = cpu_and_tpu(8, seed=6)
    assert_tpu_close(F.layer_norm(x_tpu, (8,), w_tpu, b_tpu, eps=1e-6),
                     F.layer_norm(x_cpu, (8,), w_cpu, b_cpu, eps=1e-6))
    assert_tpu_close(F.layer_norm(x_tpu, (4, 8)), F.layer_norm(x_cpu, (4, 8)))


@pytest.mark.parametrize("fn", [
    lambda x: torch.softmax(x, -1), lambda x: torch.softmax(x, 0), lambda x: F.log_softmax(x, 1),
    F.gelu, lambda x: F.gelu(x, approximate="tanh"), F.silu, F.relu,
    lambda x: F.softplus(x) + F.elu(x) + F.leaky_relu(x, 0.1) + F.hardswish(x),
], ids=["softmax", "softmax_dim0", "log_softmax", "gelu", "gelu_tanh", "silu", "relu", "misc"])
def test_activation(fn):
    x_cpu, x_tpu = cpu_and_tpu(4, 3, 7)
    assert_tpu_close(fn(x_tpu), fn(x_cpu))


@pytest.mark.parametrize("kwargs", [
    {}, {"is_causal": True}, {"scale": 0.3}, {"attn_mask": "bool"}, {"attn_mask": "float"},
], ids=["plain", "causal", "scale", "bool_mask", "float_mask"])
def test_scaled_dot_product_attention(kwargs):
    q_cpu, q_tpu = cpu_and_tpu(2, 3, 5, 8, seed=1)
    k_cpu, k_tpu = cpu_and_tpu(2, 3, 5, 8, seed=2)
    v_cpu, v_tpu = cpu_and_tpu(2, 3, 5, 8, seed=3)
    cpu_kwargs, tpu_kwargs = dict(kwargs), dict(kwargs)
    if kwargs.get("attn_mask") == "bool":
        mask = torch.rand(5, 5, generator=torch.Generator().manual_seed(4)) > 0.3
        mask.fill_diagonal_(True)
        cpu_kwargs["attn_mask"], tpu_kwargs["attn_mask"] = mask, mask.tpu()
    elif kwargs.get("attn_mask") == "float":
        mask, mask_tpu = cpu_and_tpu(5, 5, seed=4)
        cpu_kwargs["attn_mask"], tpu_kwargs["attn_mask"] = mask, mask_tpu
    assert_tpu_close(F.scaled_dot_product_attention(q_tpu, k_tpu, v_tpu, **tpu_kwargs),
                     F.scaled_dot_product_attention(q_cpu, k_cpu, v_cpu, **cpu_kwargs),
                     atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("kwargs", [
    {}, {"reduction": "sum"}, {"reduction": "none"}, {"ignore_index": 2},
    {"label_smoothing": 0.1}, {"weight": True},
], ids=["mean", "sum", "none", "ignore_index", "label_smoothing", "weight"])
def test_cross_entropy(kwargs):
    logits_cpu, logits_tpu = cpu_and_tpu(6, 5)
    target = [0, 1, 2, 3, 4, 2]
    cpu_kwargs, tpu_kwargs = dict(kwargs), dict(kwargs)
    if kwargs.get("weight"):
        cpu_kwargs["weight"], tpu_kwargs["weight"] = cpu_and_tpu(5, seed=9)
        cpu_kwargs["weight"] = cpu_kwargs["weight"].abs()
        tpu_kwargs["weight"] = tpu_kwargs["weight"].abs()
    assert_tpu_close(F.cross_entropy(logits_tpu, idx(target, logits_tpu), **tpu_kwargs),
                     F.cross_entropy(logits_cpu, torch.tensor(target), **cpu_kwargs))


def test_nll_and_l1_losses():
    x_cpu, x_tpu = cpu_and_tpu(6, 5)
    y_cpu, y_tpu = cpu_and_tpu(6, 5, seed=7)
    target = [0, 1, 2, 3, 4, 2]
    assert_tpu_close(F.nll_loss(F.log_softmax(x_tpu, 1), idx(target, x_tpu)),
                     F.nll_loss(F.log_softmax(x_cpu, 1), torch.tensor(target)))
    assert_tpu_close(F.l1_loss(x_tpu, y_tpu), F.l1_loss(x_cpu, y_cpu))
    assert_tpu_close(F.mse_loss(x_tpu, y_tpu, reduction="none"),
                     F.mse_loss(x_cpu, y_cpu, reduction="none"))


@pytest.mark.parametrize("loss", [
    lambda x, y: F.mse_loss(x, y),
    lambda x, y: F.mse_loss(x, y, reduction="sum"),
    lambda x, y: F.smooth_l1_loss(x, y),
    lambda x, y: F.huber_loss(x, y),
    lambda x, y: F.binary_cross_entropy(torch.sigmoid(x), torch.sigmoid(y)),
], ids=["mse_mean", "mse_sum", "smooth_l1", "huber", "binary_cross_entropy"])
def test_reduced_losses(loss):
    check_binary(loss)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("batched", [False, True], ids=["unbatched", "batched"])
def test_multilabel_margin_loss_has_cpu_shape(reduction, batched):
    # PyTorch's Meta kernel returns [1] for an unbatched input without reduction; CPU a 0-dim
    # loss. The loss must have CPU's shape (found by the ModuleInfo sweep).
    x_cpu, x_tpu = cpu_and_tpu(3, 4) if batched else cpu_and_tpu(4)
    target = torch.tensor([[1, 0, -1, 2], [3, -1, 0, 0], [2, 2, 1, -1]])
    target = target if batched else target[0]
    expected = F.multilabel_margin_loss(x_cpu, target, reduction=reduction)
    actual = F.multilabel_margin_loss(x_tpu, target.to("tpu"), reduction=reduction)
    assert actual.shape == expected.shape
    assert_tpu_close(actual, expected)


# Chains of two ops (fused mode builds one program of them) with Scalars and alpha in half
# precision. ATen's CPU kernels round add's and sub's Scalars and alpha to the dtype and keep
# mul's and div's in float; results must be CPU's bit for bit.
HALF_PRECISION_SCALAR_CHAINS = {
    "add_scalar": lambda t: (t * t) + 0.049999999999999996,
    "add_alpha": lambda t: torch.add(t * t, t, alpha=0.3),
    "add_scalar_alpha": lambda t: torch.add(t * t, 0.0371, alpha=0.3),
    "sub_scalar": lambda t: (t * t) - 0.0173,
    "rsub_scalar": lambda t: 0.0173 - (t * t),
    "mul_scalar": lambda t: (t + t) * 0.85,
    "div_scalar": lambda t: (t + t) / 0.37,
    "label_smoothing": lambda t: t * 0.85 + 0.049999999999999996,
}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
@pytest.mark.parametrize("name", sorted(HALF_PRECISION_SCALAR_CHAINS))
def test_half_precision_scalar_arithmetic_equals_cpu_bitwise(name, dtype):
    # 4096 elements: whole vectors, so every CPU element takes the vectorized path.
    t = (torch.rand(4096, generator=torch.Generator().manual_seed(0)) * 3).to(dtype)
    fn = HALF_PRECISION_SCALAR_CHAINS[name]
    assert torch.equal(fn(t.to("tpu")).cpu(), fn(t))


def test_embedding_bag():
    weight_cpu, weight_tpu = cpu_and_tpu(10, 3)
    ids, offsets = [0, 1, 2, 3], [0, 2]
    assert_tpu_close(
        F.embedding_bag(idx(ids, weight_tpu), weight_tpu, idx(offsets, weight_tpu)),
        F.embedding_bag(torch.tensor(ids), weight_cpu, torch.tensor(offsets)))


# --- dropout ---------------------------------------------------------------------------------

def test_dropout_in_eval_is_identity():
    x_cpu, x_tpu = cpu_and_tpu(50, 20)
    layer = torch.nn.Dropout(0.5).eval()
    assert_tpu_close(layer(x_tpu), x_cpu, rtol=0, atol=0)
    assert_tpu_close(F.dropout(x_tpu, 0.5, training=False), x_cpu, rtol=0, atol=0)


def test_dropout_in_training_same_seed_same_mask():
    x_cpu, x_tpu = cpu_and_tpu(50, 20)
    torch.manual_seed(11)
    first = F.dropout(x_tpu, 0.3, training=True).cpu()
    torch.manual_seed(11)
    second = F.dropout(x_tpu, 0.3, training=True).cpu()
    third = F.dropout(x_tpu, 0.3, training=True).cpu()
    torch.testing.assert_close(first, second, rtol=0, atol=0)
    assert not torch.equal(first != 0, third != 0)  # the generator advanced
    kept = first != 0
    assert 0.55 < kept.float().mean().item() < 0.85
    torch.testing.assert_close(first[kept], x_cpu[kept] / 0.7)  # survivors scaled by 1/(1-p)


# --- indexing --------------------------------------------------------------------------------

INDEXING = {
    "index_tensor": lambda a: a[idx([1, 3, 3], a)],
    "index_cpu_indices": lambda a: a[torch.tensor([0, 2])],  # CPU indices are allowed (as CUDA)
    "index_2d": lambda a: a[idx([0, 2], a)][:, idx([1, 5], a)] + a[idx([1, 2], a), idx([0, 4], a)],
    "index_slice_mix": lambda a: a[1:, idx([0, 5], a)],
    "gather": lambda a: a.gather(1, idx([[0, 0, 5], [1, 2, 3], [5, 4, 3], [0, 1, 1]], a)),
    "scatter": lambda a: a.scatter(1, idx([[0], [2], [4], [5]], a), -1.0),
    "scatter_src": lambda a: torch.zeros_like(a).scatter_(0, idx([[3, 2, 1, 0, 1, 2]], a), a),
    "scatter_add": lambda a: torch.zeros(4, 6, device=a.device).scatter_add(
        1, idx([[0, 0, 1], [2, 2, 2], [5, 0, 5], [1, 1, 1]], a), a[:, :3]),
    "scatter_reduce": lambda a: torch.ones(4, 6, device=a.device).scatter_reduce(
        1, idx([[0, 0, 1], [2, 2, 2], [5, 0, 5], [1, 1, 1]], a), a[:, :3], "amax"),
    "index_select": lambda a: a.index_select(0, idx([3, 0, 0], a)) + a.index_select(
        1, idx([5, 1, 2, 3, 4, 0], a))[:3],
    "index_put": lambda a: a.index_put((idx([0, 3], a),), torch.tensor(5.0, device=a.device)),
    "index_put_accumulate": lambda a: a.index_put(
        (idx([0, 0, 2], a), idx([1, 1, 5], a)), torch.ones(3, device=a.device), accumulate=True),
    "index_add_copy_fill": lambda a: a.index_add(0, idx([0, 0, 1, 3], a), a).index_copy(
        1, idx([2, 0], a), a[:, :2]).index_fill(1, idx([4], a), -3.0),
}


@pytest.mark.parametrize("name", sorted(INDEXING))
def test_indexing(name):
    a_cpu, a_tpu = cpu_and_tpu(4, 6)
    assert_tpu_close(INDEXING[name](a_tpu), INDEXING[name](a_cpu))


def test_setitem():
    results = []
    for device in ("cpu", "tpu"):
        a = torch.arange(24.0, device=device).view(4, 6)
        a[1] = -1
        a[:, 2] = torch.arange(4.0, device=device)
        a[torch.tensor([0, 3], device=device), 5] = 7.0
        a[2:, :2] += 100
        results.append(a)
    assert_tpu_close(results[1], results[0])


# --- joining and splitting -------------------------------------------------------------------

JOINING = {
    "cat": lambda a, b: torch.cat([a, b, a[:1]]),
    "cat_dim1": lambda a, b: torch.cat([a, b[:, :2]], dim=1),
    "stack": lambda a, b: torch.stack([a, b], dim=1),
    "split": lambda a, b: torch.stack(a.split(2)),
    "split_sizes": lambda a, b: torch.cat([t.sum(0) for t in a.split([1, 2, 3], dim=0)]),
    "chunk": lambda a, b: torch.cat(a.chunk(4, dim=1), dim=0),
    "unbind": lambda a, b: sum(a.unbind(1)),
    "narrow_flip_roll": lambda a, b: a.narrow(1, 1, 3).flip(0) + a.roll(1, 0)[:, :3],
    "repeat_tril": lambda a, b: a.repeat(2, 1).tril() + a.repeat_interleave(2, 0).triu(),
}


@pytest.mark.parametrize("name", sorted(JOINING))
def test_joining(name):
    check_binary(JOINING[name])


# --- selection and comparisons ---------------------------------------------------------------

SELECTION = {
    "where": lambda a, b: torch.where(a > b, a, b),
    "where_scalars": lambda a, b: torch.where(a > 0, 1.0, -1.0),
    "where_cpu_scalar_tensor": lambda a, b: torch.where(a > 0, a, torch.tensor(0.5)),
    "masked_fill": lambda a, b: a.masked_fill(a < b, 0.25),
    "masked_fill_tensor_value": lambda a, b: a.masked_fill(a < 0, b.sum()),
    "comparisons": lambda a, b: torch.stack([a == b, a != b, a < b, a <= b, a > b, a >= b,
                                             a.eq(a), torch.isclose(a, b, atol=0.5)]),
    "compare_scalar": lambda a, b: torch.stack([a > 0.1, a == 0, b.le(-0.2)]),
}


@pytest.mark.parametrize("name", sorted(SELECTION))
def test_selection(name):
    check_binary(SELECTION[name])


# --- dtype conversions -----------------------------------------------------------------------

DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.bool]


@pytest.mark.parametrize("src", DTYPES, ids=str)
@pytest.mark.parametrize("dst", DTYPES, ids=str)
def test_dtype_conversion(src, dst):
    cpu = (torch.randn(5, 7, generator=torch.Generator().manual_seed(0)) * 4).to(src)
    tpu = cpu.to("tpu")
    assert tpu.dtype == src
    converted = tpu.to(dst)
    assert converted.dtype == dst and converted.is_tpu
    assert_tpu_close(converted, cpu.to(dst), rtol=0, atol=0)


def test_conversion_chain_round_trip():
    cpu = torch.randn(64, generator=torch.Generator().manual_seed(0)) * 10
    chain = (torch.bfloat16, torch.float16, torch.int64, torch.bool, torch.float32)
    expected, actual = cpu, cpu.tpu()
    for dtype in chain:
        expected, actual = expected.to(dtype), actual.to(dtype)
    assert_tpu_close(actual, expected, rtol=0, atol=0)
    assert_tpu_close(actual.type(torch.float64), expected.double(), rtol=0, atol=0)


# --- convolution, normalization, pooling -----------------------------------------------------

CONVS = {
    "plain": {},
    "stride_padding": {"stride": 2, "padding": 1},
    "dilation": {"dilation": 2, "padding": 2},
    "groups": {"groups": 2},
    "no_bias": {"bias": False},
}


@pytest.mark.parametrize("name", sorted(CONVS))
def test_conv2d(name):
    options = dict(CONVS[name])
    use_bias = options.pop("bias", True)
    groups = options.get("groups", 1)
    x_cpu, x_tpu = cpu_and_tpu(2, 4, 9, 9, seed=1)
    w_cpu, w_tpu = cpu_and_tpu(6, 4 // groups, 3, 3, seed=2)
    b_cpu, b_tpu = cpu_and_tpu(6, seed=3) if use_bias else (None, None)
    assert_tpu_close(F.conv2d(x_tpu, w_tpu, b_tpu, **options),
                     F.conv2d(x_cpu, w_cpu, b_cpu, **options), atol=1e-5, rtol=1e-5)


def test_batch_norm_training_updates_running_stats_like_cpu():
    x_cpu, x_tpu = cpu_and_tpu(4, 3, 5, 5)
    bn_cpu = torch.nn.BatchNorm2d(3)
    bn_tpu = torch.nn.BatchNorm2d(3).tpu()
    assert_tpu_close(bn_tpu(x_tpu), bn_cpu(x_cpu))
    assert_tpu_close(bn_tpu.running_mean, bn_cpu.running_mean)
    assert_tpu_close(bn_tpu.running_var, bn_cpu.running_var)
    assert bn_tpu.num_batches_tracked.item() == 1
    bn_cpu.eval()
    bn_tpu.eval()
    assert_tpu_close(bn_tpu(x_tpu), bn_cpu(x_cpu))


POOLS = {
    "max_pool2d": lambda x: F.max_pool2d(x, 2),
    "max_pool2d_stride_padding": lambda x: F.max_pool2d(x, 3, stride=2, padding=1),
    "max_pool2d_indices": lambda x: F.max_pool2d(x, 2, return_indices=True)[1],
    "avg_pool2d": lambda x: F.avg_pool2d(x, 2),
    "avg_pool2d_padding": lambda x: F.avg_pool2d(x, 3, stride=2, padding=1,
                                                 count_include_pad=False),
    "adaptive_avg_pool2d": lambda x: F.adaptive_avg_pool2d(x, (2, 3)),
}


@pytest.mark.parametrize("name", sorted(POOLS))
def test_pooling(name):
    x_cpu, x_tpu = cpu_and_tpu(2, 3, 8, 7)
    assert_tpu_close(POOLS[name](x_tpu), POOLS[name](x_cpu))


# --- factories -------------------------------------------------------------------------------

FACTORIES = {
    "arange": lambda d: torch.arange(7, device=d),
    "arange_float_step": lambda d: torch.arange(1.0, 3.0, 0.25, device=d),
    "full": lambda d: torch.full((2, 3), 3.5, device=d),
    "full_int": lambda d: torch.full((2, 3), 7, dtype=torch.int32, device=d),
    "zeros": lambda d: torch.zeros(3, 4, device=d),
    "ones_int64": lambda d: torch.ones(2, 2, dtype=torch.int64, device=d),
    "eye_linspace": lambda d: torch.cat([torch.eye(3, device=d).flatten(),
                                         torch.linspace(0, 1, 5, device=d)]),
    "like": lambda d: torch.stack([torch.zeros_like(torch.ones(3, device=d)),
                                   torch.ones_like(torch.zeros(3, device=d)),
                                   torch.full_like(torch.zeros(3, device=d), 2)]),
}


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_factory(name):
    result = FACTORIES[name]("tpu")
    assert_tpu_close(result, FACTORIES[name]("cpu"), rtol=0, atol=0)


def test_empty_has_shape_and_dtype():
    x = torch.empty(3, 4, dtype=torch.bfloat16, device="tpu")
    assert x.shape == (3, 4) and x.dtype == torch.bfloat16 and x.is_tpu
    y = torch.empty_strided((2, 3), (1, 2), device="tpu")
    assert y.stride() == (1, 2)
    assert torch.empty_like(y).stride() == (1, 2)  # preserve_format keeps dense strides


def test_random_factories():
    torch.manual_seed(0)
    uniform = torch.rand(20000, device="tpu")
    normal = torch.randn(20000, device="tpu")
    ints = torch.randint(3, 9, (20000,), device="tpu")
    perm = torch.randperm(50, device="tpu")
    assert uniform.is_tpu and normal.is_tpu and ints.is_tpu and perm.is_tpu
    assert uniform.dtype == normal.dtype == torch.float32 and ints.dtype == torch.int64
    u, n, i = uniform.cpu(), normal.cpu(), ints.cpu()
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.02
    assert abs(n.mean()) < 0.05 and abs(n.std() - 1) < 0.05
    assert i.min() == 3 and i.max() == 8
    assert sorted(perm.cpu().tolist()) == list(range(50))
    assert torch.randn(3, 4, dtype=torch.bfloat16, device="tpu").dtype == torch.bfloat16


def tpu_kernel_of(op_name):
    lines = torch._C._dispatch_dump(op_name).splitlines()
    return next(line for line in lines if line.startswith("PrivateUse1:"))


def test_structured_ops_take_the_generic_kernel_and_hot_ones_are_unboxed():
    # Not the composite wrapper (host meta per call): our kernel, registered explicitly.
    for op in ("aten::add.Tensor", "aten::mm", "aten::atan2", "aten::add_.Tensor"):
        assert "ops/registration.cpp" in tpu_kernel_of(op)
    # The hottest functional ops box their tensors borrowed (no GIL round trip per input).
    for op in ("aten::add.Tensor", "aten::mul.Tensor", "aten::mm", "aten::silu_backward"):
        assert "[ boxed unboxed ]" in tpu_kernel_of(op)
    assert "[ boxed ]" in tpu_kernel_of("aten::atan2")


# --- data-dependent output shapes: the counted CPU fallback ----------------------------------

def test_data_dependent_ops_use_the_counted_fallback():
    x_cpu, x_tpu = cpu_and_tpu(5, 6)
    assert_tpu_close(torch.nonzero(x_tpu > 0), torch.nonzero(x_cpu > 0))
    assert_tpu_close(torch.masked_select(x_tpu, x_tpu > 0), torch.masked_select(x_cpu, x_cpu > 0))
    values = [3, 1, 3, 2, 1, 7]
    assert_tpu_close(torch.unique(torch.tensor(values, device="tpu")),
                     torch.unique(torch.tensor(values)))
    assert_tpu_close(torch.unique(torch.tensor(values, device="tpu"), return_counts=True,
                                  return_inverse=True),
                     torch.unique(torch.tensor(values), return_counts=True, return_inverse=True))
    metrics = torch_tpu.metrics()
    assert metrics["fallbacks"].get("aten::nonzero") == 1
    assert metrics["fallbacks"].get("aten::masked_select") == 1
    assert metrics["fallbacks"].get("aten::_unique2") == 2
    assert metrics["syncs"].get("cpu_fallback", 0) >= 4


def test_data_dependent_ops_see_queued_writes():
    results = []
    for device in ("cpu", "tpu"):
        x = torch.zeros(10, device=device)
        x[::3] = 1          # queued on tpu; the fallback must wait for it
        x.mul_(2)
        results.append((torch.nonzero(x).flatten(), x[x > 0], x.nonzero(as_tuple=True)[0]))
    assert_tpu_close(list(results[1]), list(results[0]))


def test_cpu_boolean_masks_of_one_shape_select_their_own_counts():
    # Output shapes are cached by the arguments' structure; a CPU mask's count is data.
    x_cpu, x_tpu = cpu_and_tpu(5, 4)
    for mask in ([True, False, True, True, False], [False] * 5, [True] * 5):
        mask = torch.tensor(mask)
        assert_tpu_close(x_tpu[mask], x_cpu[mask])
        assert_tpu_close(torch.ops.aten.index.Tensor(x_tpu, [mask]), x_cpu[mask])


def test_python_numbers_and_0_dim_tensors_promote_like_cpu():
    # A wrapped Python number and a 0-dim float64 tensor share dtype and shape but promote
    # differently; both calls have the same structure otherwise.
    ints = torch.arange(4)
    for other in (2.5, torch.tensor(2.5, dtype=torch.float64), 2.5):
        want = ints * other
        got = ints.to("tpu") * other
        assert got.dtype == want.dtype
        assert_tpu_close(got, want)


@pytest.mark.parametrize("op", ["nonzero", "masked_select"])
def test_data_dependent_out_variants_resize_their_output(op):
    x_cpu, x_tpu = cpu_and_tpu(5, 6)
    if op == "nonzero":
        out = torch.empty(0, dtype=torch.long, device="tpu")
        torch.nonzero(x_tpu > 0, out=out)
        assert_tpu_close(out, torch.nonzero(x_cpu > 0))
    else:
        out = torch.empty(0, device="tpu")
        torch.masked_select(x_tpu, x_tpu > 0, out=out)
        assert_tpu_close(out, torch.masked_select(x_cpu, x_cpu > 0))


# --- out= variants ---------------------------------------------------------------------------

def test_out_variants_write_into_the_given_tensor():
    a_cpu, a_tpu = cpu_and_tpu(4, 6)
    out = torch.empty(4, 6, device="tpu")
    assert torch.add(a_tpu, 1, out=out) is out
    assert_tpu_close(out, a_cpu + 1)
    sums = torch.empty(4, device="tpu")
    torch.sum(a_tpu, 1, out=sums)
    assert_tpu_close(sums, a_cpu.sum(1))
    product = torch.empty(4, 4, device="tpu")
    torch.matmul(a_tpu, a_tpu.t(), out=product)
    assert_tpu_close(product, a_cpu @ a_cpu.t())
    values, indices = torch.empty(4, device="tpu"), torch.empty(4, dtype=torch.long, device="tpu")
    result = torch.max(a_tpu, 1, out=(values, indices))
    assert result.values is values and result.indices is indices
    assert_tpu_close((values, indices), tuple(a_cpu.max(1)))
    joined = torch.empty(8, 6, device="tpu")
    torch.cat([a_tpu, a_tpu * 2], out=joined)
    assert_tpu_close(joined, torch.cat([a_cpu, a_cpu * 2]))


def test_out_variants_resize_empty_outputs():
    a_cpu, a_tpu = cpu_and_tpu(4, 6)
    out = torch.empty(0, device="tpu")
    torch.mul(a_tpu, 2, out=out)
    assert out.shape == (4, 6)
    assert_tpu_close(out, a_cpu * 2)
    values, indices = torch.empty(0, device="tpu"), torch.empty(0, dtype=torch.long, device="tpu")
    torch.sort(a_tpu, dim=1, out=(values, indices))
    assert_tpu_close((values, indices), tuple(a_cpu.sort(dim=1)))


def test_out_variants_into_views_and_aliases():
    results = []
    for device in ("cpu", "tpu"):
        base = torch.arange(24.0, device=device).view(4, 6)
        torch.mul(base[:, :3], 2, out=base[:, ::2])  # non-contiguous out aliasing the input
        torch.add(base, 1, out=base)                 # out is the input
        product = torch.ones(4, 4, device=device)
        torch.addmm(product, base[:, :4], base[:, 2:].t(), out=product)
        results.append(torch.cat([base.flatten(), product.flatten()]))
    assert_tpu_close(results[1], results[0])


def test_out_variant_dtype_mismatch_raises_like_cpu():
    for device in ("cpu", "tpu"):
        x = torch.ones(3, device=device)
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                               "output type Long"):
            torch.add(x, 1, out=torch.empty(3, dtype=torch.long, device=device))


# --- views and in-place aliasing (exactly as on CPU) -----------------------------------------

def on_both(program):
    """Runs ``program(device)`` on CPU and on tpu; it returns a list of tensors (compared bit
    for bit, the tpu ones must be tpu tensors) and metadata (sizes, strides: compared with ==)."""
    expected = program("cpu")
    actual = program("tpu")
    assert len(actual) == len(expected)
    for position, (a, e) in enumerate(zip(actual, expected)):
        if isinstance(e, torch.Tensor):
            assert_tpu_close(a, e, rtol=0, atol=0, msg=lambda m: f"result {position}: {m}")
        else:
            assert a == e, f"result {position}: {a} != {e}"


def base(device):
    return torch.arange(24.0, device=device).view(4, 6)


ALIASING = {
    "slice_in_place_modifies_base": lambda b: b[1:3, 2:5].add_(100),
    "strided_slice": lambda b: b[::2, 1::2].zero_(),
    "transpose_view": lambda b: b.t()[0].fill_(-1),
    "view_and_reshape": lambda b: (b.view(2, 12)[1].mul_(2), b.reshape(3, 8)[0, :4].neg_()),
    "flatten_detach": lambda b: (b.flatten()[::5].sub_(1), b.detach()[0].zero_()),
    "as_strided_view": lambda b: b.as_strided((3, 2), (7, 1), 1).mul_(10),
    "diagonal": lambda b: b.diagonal().fill_(42),
    "unbind_split_chunk": lambda b: (b.unbind(0)[2].zero_(), b.split(2, 1)[1].fill_(7),
                                     b.chunk(2)[1].mul_(-1)),
    "add_through_view_chain": lambda b: b.view(-1)[3:9].view(2, 3).t().add_(1),
    "copy_into_view": lambda b: (b[1:3].copy_(b[0:2].clone()), b[:, 0].copy_(b[:, 5])),
    "dtype_view": lambda b: b.view(torch.int32)[0].fill_(0),
    "metadata_in_place": lambda b: (b.unsqueeze_(0), b.squeeze_(0), b.t_(), b.add_(1)),
    "in_place_with_broadcast_view_arg": lambda b: b.add_(b[0].clone()),
}


@pytest.mark.parametrize("name", sorted(ALIASING))
def test_view_aliasing(name):
    def program(device):
        b = base(device)
        views = ALIASING[name](b)
        views = views if isinstance(views, tuple) else (views,)
        return [b, *[v.contiguous() for v in views], b.shape, b.stride()]

    on_both(program)


def test_expand_is_a_zero_stride_view():
    def program(device):
        row = torch.arange(3.0, device=device)
        expanded = row.expand(4, 3)
        assert expanded.stride() == (0, 1)
        assert expanded.data_ptr() == row.data_ptr()
        row.mul_(10)  # visible through the expanded view
        return [expanded.contiguous(), expanded + 1, expanded.sum(0)]

    on_both(program)


def test_views_share_storage_and_data_ptr():
    flat = torch.arange(24.0, device="tpu")
    b = flat.view(4, 6)
    assert b._base is flat and b.t()._base is flat
    assert b[1:].untyped_storage().data_ptr() == flat.untyped_storage().data_ptr()
    assert b.t().data_ptr() == b.data_ptr()
    assert b[2].data_ptr() == b.data_ptr() + 12 * 4


def test_resize_():
    def program(device):
        grown = torch.arange(4.0, device=device)
        grown.resize_(3, 3)  # keeps the first 4 elements; the rest is uninitialised
        shrunk = base(device)
        row = shrunk[1]      # a view still pointing into the old storage
        shrunk.resize_(2, 2)
        shrunk.fill_(0)
        emptied = torch.ones(5, device=device).resize_(0)
        return [grown.flatten()[:4], grown.shape, shrunk, row, emptied.shape]

    on_both(program)


def test_resize_beyond_capacity_then_write():
    def program(device):
        x = torch.ones(2, device=device)
        x.resize_(1000)
        x[2:].fill_(3)
        return [x, x.untyped_storage().nbytes()]

    on_both(program)


def test_set_():
    def program(device):
        source = base(device)
        whole = torch.zeros(3, device=device)
        whole.set_(source)             # shares storage, sizes and strides
        whole[0, 0] = 99
        window = torch.empty(0, device=device)
        window.set_(source.untyped_storage(), 6, (2, 3), (1, 2))
        window.add_(1000)
        cleared = torch.ones(3, device=device)
        cleared.set_()
        assert whole.data_ptr() == source.data_ptr()
        return [source, window, cleared.shape, window.stride()]

    on_both(program)


@pytest.mark.parametrize("view", [torch.view_as_real, lambda z: z.real, lambda z: z.imag],
                         ids=["view_as_real", "real", "imag"])
def test_complex_views(view):
    def program(device):
        z = torch.complex(torch.arange(6.0), -torch.arange(6.0)).to(device)
        v = view(z)
        v.mul_(2)  # through the view into the complex storage
        return [v, torch.view_as_real(z)]

    on_both(program)


def test_histc_counts_integers_as_cuda_does():
    """CPU's histc takes only floating types; tpu also counts integers (as CUDA does, and as
    transformers' mixture-of-experts routing expects), returning counts in the input's dtype."""
    values = torch.tensor([0, 1, 1, 3, 5, 2, 2, 2], dtype=torch.int32)
    counts = torch.histc(values.to("tpu"), bins=4, min=0, max=3)
    assert counts.dtype == torch.int32
    assert torch.equal(counts.cpu(), torch.histc(values.float(), bins=4, min=0, max=3).int())
    floats = torch.randn(100)
    assert torch.equal(torch.histc(floats.to("tpu"), bins=7).cpu(), torch.histc(floats, bins=7))
