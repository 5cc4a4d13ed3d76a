"""Rank script: FSDP2 (``fully_shard``) training of tiny_models.Transformer, checked against
single-process training on the concatenated batch, computed on CPU in this worker.

FSDP2 all-gathers parameters (all_gather_single into one flat buffer per layer group),
reduce-scatters gradients (reduce_scatter_single with ReduceOp.AVG for float32/bfloat16
gradients, SUM plus division otherwise), and keeps parameters as DTensors sharded on dim 0
(padded where uneven: the vocabulary is odd).
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.distributed.tensor import DTensor, Shard

from tiny_models import Transformer, lm_loss, token_batch
from worker_utils import Ctx, Registry, compile_backend, expect_close, main

checks = Registry()

STEPS = 3
ROWS = 2  # sequences per rank per micro-batch
TOL = {"rtol": 2e-5, "atol": 2e-6}


def make_optimizer(params, kind: str):
    if kind == "adamw":
        return torch.optim.AdamW(params, lr=1e-2, weight_decay=0.01)
    return torch.optim.SGD(params, lr=0.1, momentum=0.9)


def reference(ctx: Ctx, opt_kind: str, micro: int = 1):
    """Single-process training on every rank's rows (CPU); returns (model, losses)."""
    model = Transformer(seed=7)
    opt = make_optimizer(model.parameters(), opt_kind)
    losses = []
    for step in range(STEPS):
        opt.zero_grad()
        total = 0.0
        for m in range(micro):
            loss = lm_loss(model, token_batch(10 * step + m, ROWS * ctx.world)) / micro
            loss.backward()
            total += loss.item()
        opt.step()
        losses.append(total)
    return model, losses


def shard(ctx: Ctx, model, mesh=None, **kw):
    mesh = mesh if mesh is not None else init_device_mesh(ctx.device_type, (ctx.world,))
    for layer in model.layers:
        fully_shard(layer, mesh=mesh, **kw)
    fully_shard(model, mesh=mesh, **kw)
    return model


def train_fsdp(ctx: Ctx, model, opt_kind: str, micro: int = 1, on_micro=None):
    opt = make_optimizer(model.parameters(), opt_kind)
    rows = slice(ctx.rank * ROWS, (ctx.rank + 1) * ROWS)
    losses = []
    for step in range(STEPS):
        opt.zero_grad()
        local = torch.zeros((), device=ctx.device)
        for m in range(micro):
            last = m == micro - 1
            model.set_requires_gradient_sync(last)  # accumulate unsharded grads until the last
            tokens = token_batch(10 * step + m, ROWS * ctx.world)[rows].to(ctx.device)
            if on_micro is not None:
                with on_micro(step, m):
                    loss = lm_loss(model, tokens) / micro
                    loss.backward()
            else:
                loss = lm_loss(model, tokens) / micro
                loss.backward()
            local += loss.detach()
        opt.step()
        dist.all_reduce(local, op=dist.ReduceOp.AVG)
        losses.append(local.item())
    return losses


def compare(ctx: Ctx, model, losses, ref, ref_losses, what: str, **tol) -> None:
    tol = tol or TOL
    torch.testing.assert_close(torch.tensor(losses), torch.tensor(ref_losses), **tol,
                               msg=lambda m: f"{what}: per-step losses differ: {m}")
    ref_params = dict(ref.named_parameters())
    for name, p in model.named_parameters():
        full = p.full_tensor() if isinstance(p, DTensor) else p
        expect_close(full, ref_params[name], f"{what}: {name}", **tol)


def assert_sharded(ctx: Ctx, model) -> None:
    """Every parameter is a DTensor sharded on dim 0 over all ranks, its local shard on this
    rank's device and at most ceil(dim0 / world) rows."""
    for name, p in model.named_parameters():
        assert isinstance(p, DTensor), f"{name} is {type(p).__name__}, not a DTensor"
        assert tuple(p.placements) == (Shard(0),), f"{name}: placements {p.placements}"
        local = p.to_local()
        assert local.device == ctx.device, f"{name}: local shard on {local.device}"
        rows = -(-p.shape[0] // ctx.world)
        assert local.shape[0] <= rows, f"{name}: local shard {tuple(local.shape)} of {tuple(p.shape)}"


@checks()
def fsdp2_train_sgd(ctx: Ctx) -> None:
    ref, ref_losses = reference(ctx, "sgd")
    model = shard(ctx, Transformer(seed=7).to(ctx.device))
    assert_sharded(ctx, model)
    losses = train_fsdp(ctx, model, "sgd")
    assert_sharded(ctx, model)  # resharded after the steps
    compare(ctx, model, losses, ref, ref_losses, "FSDP2 SGD")


@checks()
def fsdp2_compiled(ctx: Ctx) -> None:
    """torch.compile of an FSDP2 model: its all-gathers and reduce-scatters run between the
    compiled graphs of the layers."""
    ref, ref_losses = reference(ctx, "sgd")
    model = shard(ctx, Transformer(seed=7).to(ctx.device))
    losses = train_fsdp(ctx, torch.compile(model, backend=compile_backend(ctx)), "sgd")
    compare(ctx, model, losses, ref, ref_losses, "compiled FSDP2")


@checks()
def fsdp2_train_adamw_no_reshard(ctx: Ctx) -> None:
    """AdamW (optimizer state sharded like the parameters), reshard_after_forward=False
    (parameters stay gathered between forward and backward)."""
    ref, ref_losses = reference(ctx, "adamw")
    model = shard(ctx, Transformer(seed=7).to(ctx.device), reshard_after_forward=False)
    losses = train_fsdp(ctx, model, "adamw")
    compare(ctx, model, losses, ref, ref_losses, "FSDP2 AdamW", rtol=1e-4, atol=1e-5)


@checks()
def fsdp2_gradient_accumulation(ctx: Ctx) -> None:
    """Two micro-batches per step, the first with set_requires_gradient_sync(False): no
    reduce-scatter then (counted with CommDebugMode), one per layer group on the last."""
    from contextlib import contextmanager

    from torch.distributed.tensor.debug import CommDebugMode

    counts: dict[tuple[int, int], int] = {}

    @contextmanager
    def count(step, m):
        with CommDebugMode() as mode:
            yield
        counts[(step, m)] = sum(n for op, n in mode.get_comm_counts().items()
                                if "reduce_scatter" in str(op))

    ref, ref_losses = reference(ctx, "sgd", micro=2)
    model = shard(ctx, Transformer(seed=7).to(ctx.device))
    losses = train_fsdp(ctx, model, "sgd", micro=2, on_micro=count)
    compare(ctx, model, losses, ref, ref_losses, "FSDP2 grad accumulation")
    for step in range(STEPS):
        assert counts[(step, 0)] == 0, f"reduce-scatter during a no-sync micro-batch: {counts}"
        assert counts[(step, 1)] >= 1, f"no reduce-scatter on the syncing micro-batch: {counts}"


@checks()
def fsdp2_unshard_reshard(ctx: Ctx) -> None:
    """Explicit ``unshard()`` of every FSDP module: parameters become full plain tensors equal
    to the initial model; ``reshard()`` makes them sharded DTensors again."""
    ref = Transformer(seed=7)
    model = shard(ctx, Transformer(seed=7).to(ctx.device))
    fsdp_modules = [*model.layers, model]
    handles = [m.unshard(async_op=True) for m in fsdp_modules]
    for handle in handles:
        handle.wait()
    ref_params = dict(ref.named_parameters())
    for name, p in model.named_parameters():
        assert not isinstance(p, DTensor), f"{name} still a DTensor after unshard()"
        expect_close(p, ref_params[name], f"unsharded {name}", ctx.device, rtol=0, atol=0)
    for m in fsdp_modules:
        m.reshard()
    assert_sharded(ctx, model)


@checks()
def fsdp2_mixed_precision_bf16(ctx: Ctx) -> None:
    """bfloat16 parameters for compute (bf16 all-gathers), float32 gradient reduction: a smoke
    test against the float32 reference with bf16-sized tolerances."""
    ref, ref_losses = reference(ctx, "sgd")
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    model = shard(ctx, Transformer(seed=7).to(ctx.device), mp_policy=policy)
    losses = train_fsdp(ctx, model, "sgd")
    compare(ctx, model, losses, ref, ref_losses, "FSDP2 bf16", rtol=5e-2, atol=2e-2)


@checks(unsupported={"gloo": "the default mesh follows torch.accelerator, which is tpu once "
                             "torch_tpu is imported; gloo has no tpu backend"})
def fsdp2_default_mesh(ctx: Ctx) -> None:
    """``fully_shard(model)`` without a mesh, as most scripts call it: FSDP2 builds a mesh over
    the current accelerator."""
    ref, ref_losses = reference(ctx, "sgd")
    model = Transformer(seed=7).to(ctx.device)
    for layer in model.layers:
        fully_shard(layer)
    fully_shard(model)
    losses = train_fsdp(ctx, model, "sgd")
    compare(ctx, model, losses, ref, ref_losses, "FSDP2 default mesh")


@checks()
def fsdp2_meta_init_reset_parameters(ctx: Ctx) -> None:
    """PyTorch's FSDP2 example's initialisation: the model built on the meta device, sharded,
    materialised with ``to_empty`` and initialised by each module's ``reset_parameters`` (random
    ops on DTensor shards); then it trains. Every rank's shard is initialised (finite, within
    nn.Linear's bound, not all alike), and the same seed gives the same model."""
    def initialised():
        with torch.device("meta"):
            model = Transformer(seed=7)
        shard(ctx, model)
        model.to_empty(device=ctx.device)
        torch.manual_seed(3)
        for module in model.modules():
            if hasattr(module, "reset_parameters"):
                module.reset_parameters()
        torch.nn.init.normal_(model.pos, std=0.02)  # a bare parameter: its owner initialises it
        return model

    model = initialised()
    weight = model.layers[0].attn.wq.weight
    assert isinstance(weight, DTensor) and weight.to_local().device == ctx.device
    full = weight.full_tensor().cpu()
    bound = 1 / full.shape[1] ** 0.5  # nn.Linear's kaiming_uniform_(a=sqrt(5)) bound
    assert torch.isfinite(full).all() and full.abs().max().item() <= bound, full.abs().max()
    assert full.std().item() > bound / 4, full.std()  # drawn, not left as it was allocated
    again = initialised().layers[0].attn.wq.weight.full_tensor()
    expect_close(again, full, "the same seed initialises the same model", rtol=0, atol=0)
    losses = train_fsdp(ctx, model, "sgd")
    assert all(torch.isfinite(torch.tensor(losses))), losses  # it trains from that start


if __name__ == "__main__":
    main(checks)
