"""Rank script: DTensor and tensor parallelism (``parallelize_module`` with ColwiseParallel /
RowwiseParallel / SequenceParallel) over ``init_device_mesh(DIST_DEVICE, (world,))``; forward,
backward and an optimizer step match the single-process block on CPU.

DTensor's redistributions run on the functional collectives (``_c10d_functional``:
all_reduce, all_gather_into_tensor, reduce_scatter_tensor, all_to_all_single, wait_tensor),
which reach the backend as allreduce / _allgather_base / _reduce_scatter_base / alltoall_base.
"""

from __future__ import annotations

import torch
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor
from torch.distributed.tensor.parallel import (
    ColwiseParallel,
    PrepareModuleInput,
    RowwiseParallel,
    SequenceParallel,
    parallelize_module,
)

from tiny_models import DIM, SEQ, Block
from worker_utils import Ctx, Registry, expect_close, main

checks = Registry()

TOL = {"rtol": 1e-5, "atol": 1e-6}
BATCH = 3


def mesh_of(ctx: Ctx):
    return init_device_mesh(ctx.device_type, (ctx.world,))


def full(t: torch.Tensor) -> torch.Tensor:
    return t.full_tensor() if isinstance(t, DTensor) else t


@checks()
def dtensor_redistribute(ctx: Ctx) -> None:
    """distribute_tensor and every redistribution: Shard -> Replicate (all_gather),
    Partial -> Replicate (all_reduce), Partial -> Shard (reduce_scatter), Shard(0) -> Shard(1)
    (all_to_all), on shapes that do not divide evenly."""
    mesh = mesh_of(ctx)
    g = torch.Generator().manual_seed(3)
    x = torch.randn(4 * ctx.world + 1, 6 * ctx.world, generator=g)  # dim 0 uneven
    d = distribute_tensor(x.to(ctx.device), mesh, [Shard(0)])
    assert d.to_local().device == ctx.device
    expect_close(d.full_tensor(), x, "Shard(0) -> full", ctx.device, rtol=0, atol=0)
    expect_close(d.redistribute(mesh, [Replicate()]).to_local(), x, "Shard(0) -> Replicate",
                 ctx.device, rtol=0, atol=0)
    s1 = d.redistribute(mesh, [Shard(1)])
    cols = x.shape[1] // ctx.world
    expect_close(s1.to_local(), x[:, ctx.rank * cols:(ctx.rank + 1) * cols], "Shard(0) -> Shard(1)",
                 ctx.device, rtol=0, atol=0)
    # Partial: each rank holds a summand (rank+1)*x; the sum is world*(world+1)/2 * x.
    scale = ctx.world * (ctx.world + 1) / 2
    part = DTensor.from_local((x * (ctx.rank + 1)).to(ctx.device), mesh, [Partial()])
    expect_close(part.redistribute(mesh, [Replicate()]).to_local(), x * scale, "Partial -> Replicate",
                 ctx.device, **TOL)
    part = DTensor.from_local((x * (ctx.rank + 1)).to(ctx.device), mesh, [Partial()])
    rs = part.redistribute(mesh, [Shard(1)]).to_local()
    expect_close(rs, (x * scale)[:, ctx.rank * cols:(ctx.rank + 1) * cols], "Partial -> Shard(1)",
                 ctx.device, **TOL)
    # A sharded matmul and a reduction return the right global values.
    w = torch.randn(6 * ctx.world, 5, generator=g)
    dw = distribute_tensor(w.to(ctx.device), mesh, [Replicate()])
    expect_close((d @ dw).full_tensor(), x @ w, "Shard(0) @ Replicate", ctx.device, **TOL)
    expect_close(d.sum().full_tensor(), x.sum(), "sum of Shard(0)", ctx.device, rtol=1e-5, atol=1e-4)


def gathered_locals(local: torch.Tensor, mesh) -> torch.Tensor:
    """Every rank's local tensor, stacked along dim 0 in rank order (an all-gather)."""
    return DTensor.from_local(local.unsqueeze(0), mesh, [Shard(0)]).full_tensor()


@checks()
def dtensor_random_ops(ctx: Ctx) -> None:
    """Random ops on DTensors (the initialisers FSDP2's reset_parameters calls): a sharded
    tensor's shards draw different numbers, a replicated one the same numbers on every rank,
    the same seed draws the same tensor again, and every rank's generator ends at the same
    offset, so later draws agree too."""
    mesh = mesh_of(ctx)
    rows = 4 * ctx.world

    def sharded_normal(seed: int) -> torch.Tensor:
        torch.manual_seed(seed)
        return torch.nn.init.normal_(distribute_tensor(torch.empty(rows, 6, device=ctx.device), mesh, [Shard(0)]))

    first = sharded_normal(0)
    assert first.to_local().device == ctx.device
    whole = first.full_tensor().cpu()
    assert 0.3 < whole.std().item() < 3.0, whole.std()
    expect_close(sharded_normal(0).full_tensor(), whole, "the same seed, the same sharded draw",
                 rtol=0, atol=0)
    if ctx.device_type != "cpu":  # on CPU DTensor keeps no RNG offsets: every shard draws alike
        shards = whole.chunk(ctx.world)
        for i in range(1, ctx.world):
            assert not torch.equal(shards[0], shards[i]), f"shards 0 and {i} drew the same numbers"
        offsets = gathered_locals(torch.tpu.get_rng_state().to(ctx.device), mesh).cpu()
        assert all(torch.equal(offsets[0], o) for o in offsets), f"generator states differ: {offsets}"
    replicated = distribute_tensor(torch.empty(5, 3, device=ctx.device), mesh, [Replicate()])
    torch.nn.init.uniform_(replicated, -1, 1)
    copies = gathered_locals(replicated.to_local(), mesh).cpu()
    for i in range(1, ctx.world):
        expect_close(copies[i], copies[0], f"replica {i} of a replicated draw", rtol=0, atol=0)
    assert -1 <= copies.min().item() and copies.max().item() <= 1


def tp_plan(sequence_parallel: bool) -> dict:
    if not sequence_parallel:
        return {"attn.wq": ColwiseParallel(), "attn.wk": ColwiseParallel(), "attn.wv": ColwiseParallel(),
                "attn.wo": RowwiseParallel(), "mlp.w1": ColwiseParallel(), "mlp.w2": RowwiseParallel()}
    # Megatron-style sequence parallelism: norms on sequence shards (Shard(1)), the
    # projections gather the sequence in and reduce-scatter it out.
    return {"norm1": SequenceParallel(), "norm2": SequenceParallel(),
            "attn": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
            "attn.wq": ColwiseParallel(), "attn.wk": ColwiseParallel(), "attn.wv": ColwiseParallel(),
            "attn.wo": RowwiseParallel(output_layouts=Shard(1)),
            "mlp": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
            "mlp.w1": ColwiseParallel(), "mlp.w2": RowwiseParallel(output_layouts=Shard(1))}


def _tp_block_check(sequence_parallel: bool):
    def fn(ctx: Ctx) -> None:
        torch.manual_seed(11)
        ref = Block()
        torch.manual_seed(11)
        block = Block().to(ctx.device)
        mesh = mesh_of(ctx)
        parallelize_module(block, mesh, tp_plan(sequence_parallel))
        for name, p in block.named_parameters():
            if name.startswith(("attn.w", "mlp.w")) and name.endswith("weight"):
                assert isinstance(p, DTensor), f"{name} not a DTensor"
        g = torch.Generator().manual_seed(5)
        x = torch.randn(BATCH, SEQ * ctx.world, DIM, generator=g)
        ref_x = x.clone().requires_grad_()
        ref_out = ref(ref_x)
        ref_out.pow(2).mean().backward()

        # With sequence parallelism each rank feeds and gets back its own sequence shard (plain
        # tensors: SequenceParallel / RowwiseParallel convert at the module boundaries);
        # without, every rank feeds the whole input and gets the whole (replicated) output.
        seq = x.shape[1] // ctx.world
        mine = slice(ctx.rank * seq, (ctx.rank + 1) * seq) if sequence_parallel else slice(None)
        inp = x[:, mine].to(ctx.device).requires_grad_()
        out = block(inp)
        assert not isinstance(out, DTensor), type(out)
        # Every rank's loss term is its share of the reference's mean.
        loss = out.pow(2).sum() / ref_out.numel() if sequence_parallel else out.pow(2).mean()
        loss.backward()
        expect_close(out, ref_out[:, mine], "TP block output", ctx.device, **TOL)
        expect_close(inp.grad, ref_x.grad[:, mine], "TP input gradient", ctx.device, **TOL)
        ref_params = dict(ref.named_parameters())
        for name, p in block.named_parameters():
            expect_close(full(p.grad), ref_params[name].grad, f"TP grad {name}", **TOL)
        # One optimizer step on the sharded parameters, then another forward.
        # foreach=False: without sequence parallelism the LayerNorm parameters stay plain
        # tensors beside DTensors, a mix the foreach kernels (the default on accelerators,
        # CUDA included) reject.
        opt = torch.optim.SGD(block.parameters(), lr=0.1, foreach=False)
        ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
        opt.step()
        ref_opt.step()
        for name, p in block.named_parameters():
            expect_close(full(p), ref_params[name], f"TP param {name} after step", **TOL)
        with torch.no_grad():
            expect_close(block(inp.detach()), ref(x)[:, mine], "TP output after step", ctx.device, **TOL)
    return fn


checks.add("tp_block_colwise_rowwise", _tp_block_check(sequence_parallel=False))
checks.add("tp_block_sequence_parallel", _tp_block_check(sequence_parallel=True))


if __name__ == "__main__":
    main(checks)
