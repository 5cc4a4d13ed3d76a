import pytest
import torch
import torch.nn.functional as F

import torch_tpu
from conftest import assert_same


def pair(*shape, dtype=torch.float32, seed=0):
    generator = torch.Generator().manual_seed(seed)
    cpu = torch.randn(*shape, generator=generator).to(dtype)
    return cpu.to("tpu"), cpu


CASES = {
    "add_broadcast": lambda a, b: a + b[0],
    "mul_scalar": lambda a, b: a * 3.5 - 1,
    "div": lambda a, b: a / (b.abs() + 1),
    "pow_exp_log": lambda a, b: torch.log(a.abs() + 1).exp().pow(2),
    "sum_mean": lambda a, b: a.sum(0) + a.mean(1),
    "max_argmax": lambda a, b: a.max(dim=1).values + a.argmax(dim=0).float(),
    "var": lambda a, b: a.var(dim=1),
    "matmul": lambda a, b: a @ b.t(),
    "addmm": lambda a, b: torch.addmm(a[:, :6], a, b.t()[:, :6]),
    "bmm": lambda a, b: torch.bmm(a.view(2, 3, 6), b.view(2, 6, 3)),
    "softmax": lambda a, b: torch.softmax(a, -1) + torch.log_softmax(b, 0),
    "activations": lambda a, b: F.gelu(a) + F.silu(b) + F.relu(a),
    "layer_norm": lambda a, b: F.layer_norm(a, (6,)),
    "where_masked_fill": lambda a, b: torch.where(a > b, a, b).masked_fill(a < 0, 0.5),
    "comparisons": lambda a, b: ((a > 0) & (b <= 0)).float() + (a == a).float(),
    "cat_stack_split": lambda a, b: torch.cat([torch.stack([a, b]).sum(0), *a.split(2)], 0),
    "chunk": lambda a, b: torch.chunk(a, 3, dim=0)[1] * 2,
    "gather_scatter": lambda a, b: a.gather(1, (b.abs() * 5).long() % 6).scatter(
        1, torch.zeros(6, 1, dtype=torch.long, device=a.device), 7.0),
    "index_select": lambda a, b: a.index_select(0, torch.tensor([5, 0, 2], device=a.device)),
    "index_tensor": lambda a, b: a[torch.tensor([1, 3], device=a.device)],
    "dtype_roundtrip": lambda a, b: a.to(torch.bfloat16).to(torch.float16).float() + a.long().float(),
    "transpose_contiguous": lambda a, b: a.t().contiguous().view(-1)[::2],
    "embedding": lambda a, b: F.embedding(torch.tensor([[0, 2], [5, 1]], device=a.device), a),
    "sdpa_causal": lambda a, b: F.scaled_dot_product_attention(
        a.view(1, 2, 3, 6), b.view(1, 2, 3, 6), a.view(1, 2, 3, 6), is_causal=True),
    "cross_entropy": lambda a, b: F.cross_entropy(a, torch.tensor([0, 1, 2, 3, 4, 5], device=a.device)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_matches_cpu(name, mode):
    a_tpu, a_cpu = pair(6, 6, seed=1)
    b_tpu, b_cpu = pair(6, 6, seed=2)
    fn = CASES[name]
    assert_same(fn(a_tpu, b_tpu), fn(a_cpu, b_cpu), atol=1e-5, rtol=1e-4)


def test_conv_batchnorm_pool(mode):
    torch.manual_seed(0)
    layers = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4),
                                 torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.AvgPool2d(2))
    x = torch.randn(2, 3, 10, 10)
    expected = layers(x)
    layers_tpu = layers.tpu()
    torch.testing.assert_close(layers_tpu(x.tpu()).cpu(), expected, atol=1e-5, rtol=1e-4)


def test_factories(mode):
    assert torch.arange(5, device="tpu").cpu().tolist() == [0, 1, 2, 3, 4]
    assert torch.full((2, 2), 3.0, device="tpu").cpu().sum().item() == 12.0
    assert torch.zeros(3, device="tpu").cpu().tolist() == [0.0, 0.0, 0.0]
    assert torch.ones(2, 2, device="tpu", dtype=torch.int64).sum().item() == 4
    r = torch.rand(1000, device="tpu")
    assert 0 <= r.min().item() and r.max().item() < 1
    ints = torch.randint(0, 5, (100,), device="tpu")
    assert ints.dtype == torch.int64 and 0 <= ints.min().item() and ints.max().item() < 5


def test_views_and_in_place_alias_exactly(mode):
    base_cpu = torch.arange(12.0).view(3, 4)
    base_tpu = base_cpu.tpu()
    for base in (base_cpu, base_tpu):
        base[:, 1].mul_(10)            # slice view, in place
        base.t()[0].add_(1)            # transposed view
        base.view(-1)[5:7].fill_(-1)   # flat view
        base.as_strided((2,), (5,), 1).sub_(100)
    assert_same(base_tpu, base_cpu)
    expanded = torch.ones(3, device="tpu").expand(2, 3)
    assert expanded.cpu().sum().item() == 6


def test_out_variants_and_resize(mode):
    a_tpu, a_cpu = pair(4, 4)
    out_tpu = torch.empty(0, device="tpu")
    out_cpu = torch.empty(0)
    torch.add(a_tpu, 1, out=out_tpu)
    torch.add(a_cpu, 1, out=out_cpu)
    assert out_tpu.shape == (4, 4)
    assert_same(out_tpu, out_cpu)
    grown = torch.ones(2, device="tpu")
    grown.resize_(10)
    assert grown.shape == (10,) and grown[:2].cpu().tolist() == [1.0, 1.0]
    target = torch.empty(0, device="tpu")
    target.set_(a_tpu)
    assert target.data_ptr() == a_tpu.data_ptr()


def test_data_dependent_ops_use_counted_fallback(mode):
    x_tpu, x_cpu = pair(5, 5)
    assert_same(torch.nonzero(x_tpu > 0), torch.nonzero(x_cpu > 0))
    assert_same(torch.masked_select(x_tpu, x_tpu > 0), torch.masked_select(x_cpu, x_cpu > 0))
    assert_same(torch.unique(torch.tensor([3, 1, 3, 2], device="tpu")), torch.tensor([1, 2, 3]))
    fallbacks = torch_tpu.metrics()["fallbacks"]
    assert "aten::nonzero" in fallbacks and "aten::masked_select" in fallbacks


def test_dropout_train_and_eval(mode):
    x = torch.ones(1000, device="tpu")
    assert torch.equal(F.dropout(x, 0.5, training=False).cpu(), torch.ones(1000))
    torch.manual_seed(3)
    first = F.dropout(x, 0.5).cpu()
    torch.manual_seed(3)
    second = F.dropout(x, 0.5).cpu()
    assert torch.equal(first, second)
    assert 300 < (first == 0).sum().item() < 700
