"""Rank script: DistributedDataParallel training of a small MLP, launched the way users do
(``python -m torch.distributed.run --nproc-per-node N worker_ddp.py``), each variant checked
against single-process training on the concatenated batch, computed on CPU in this worker.

Every variant: ranks initialise their model from different seeds (DDP's construction-time
broadcast must make them rank 0's), a tiny ``bucket_cap_mb`` (several buckets), two
micro-batches per step with the first under ``no_sync()`` (gradient accumulation), SGD with
momentum for a few steps; parameters and per-step losses must match the reference.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

from worker_utils import Ctx, Registry, compile_backend, expect_close, main

checks = Registry()

STEPS = 4
MICRO = 2  # micro-batches per optimizer step; all but the last under no_sync()
BATCH = 6  # rows per rank per micro-batch
IN, HID, OUT = 12, 32, 4
# ~0.5 KB: after the first step (PyTorch 2.13 starts with one bucket and rebuilds the buckets
# in gradient-ready order after it) the MLP's 6 parameters land in 3 buckets.
BUCKET_CAP_MB = 0.0005
TOL = {"rtol": 1e-5, "atol": 1e-6}


class MLP(nn.Module):
    def __init__(self, seed: int, unused_branch: bool = False, batch_norm: bool = False):
        super().__init__()
        torch.manual_seed(seed)
        self.fc1 = nn.Linear(IN, HID)
        self.fc2 = nn.Linear(HID, HID)
        self.fc3 = nn.Linear(HID, OUT)
        self.norm = nn.BatchNorm1d(HID) if batch_norm else None
        self.unused = nn.Linear(HID, OUT) if unused_branch else None
        # A buffer that differs per rank until DDP broadcasts rank 0's.
        self.register_buffer("shift", torch.randn(IN) * 0.1)

    def forward(self, x):
        h = F.gelu(self.fc1(x + self.shift))
        if self.norm is not None:
            h = self.norm(h)
        h = torch.tanh(self.fc2(h))
        return self.fc3(h)


def batch(step: int, micro: int, world: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The global micro-batch (all ranks' rows, rank r's are rows r*BATCH:(r+1)*BATCH)."""
    g = torch.Generator().manual_seed(1000 * step + micro)
    return torch.randn(world * BATCH, IN, generator=g), torch.randn(world * BATCH, OUT, generator=g)


def reference(ctx: Ctx, **model_kw) -> tuple[MLP, list[float]]:
    """Single-process training on the concatenated batch (rank 0's initial model), on CPU."""
    model = MLP(seed=100, **model_kw)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for step in range(STEPS):
        opt.zero_grad()
        total = 0.0
        for micro in range(MICRO):
            x, y = batch(step, micro, ctx.world)
            loss = F.mse_loss(model(x), y) / MICRO
            loss.backward()
            total += loss.item()
        opt.step()
        losses.append(total)
    return model, losses


def train_ddp(ctx: Ctx, ddp_kw: dict | None = None, hook=None, hook_state=None,
              model_kw: dict | None = None, convert_sync_bn: bool = False, phase: list | None = None,
              compiled: bool = False):
    """DDP training of this rank's shard; returns (ddp model, per-step global losses).
    ``phase``, if given, holds [step, micro] of the micro-batch being run (for hooks).
    ``compiled``: the DDP module runs under torch.compile (the device's backend)."""
    model_kw = model_kw or {}
    model = MLP(seed=100 + ctx.rank, **model_kw)  # different per rank on purpose
    if convert_sync_bn:
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    model = model.to(ctx.device)
    device_ids = None if ctx.device_type == "cpu" else [ctx.local_rank]
    ddp = DDP(model, device_ids=device_ids, **{"bucket_cap_mb": BUCKET_CAP_MB, **(ddp_kw or {})})
    if hook is not None:
        ddp.register_comm_hook(hook_state, hook)
    forward = torch.compile(ddp, backend=compile_backend(ctx)) if compiled else ddp
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    rows = slice(ctx.rank * BATCH, (ctx.rank + 1) * BATCH)
    losses = []
    for step in range(STEPS):
        opt.zero_grad()
        local = torch.zeros((), device=ctx.device)
        for micro in range(MICRO):
            if phase is not None:
                phase[:] = [step, micro]
            x, y = batch(step, micro, ctx.world)
            x, y = x[rows].to(ctx.device), y[rows].to(ctx.device)
            if micro < MICRO - 1:
                with ddp.no_sync():
                    loss = F.mse_loss(forward(x), y) / MICRO
                    loss.backward()
            else:
                loss = F.mse_loss(forward(x), y) / MICRO
                loss.backward()
            local += loss.detach()
        opt.step()
        dist.all_reduce(local, op=dist.ReduceOp.AVG)  # the global loss, as the reference sees it
        losses.append(local.item())
    return ddp, losses


def compare(ctx: Ctx, ddp: DDP, losses: list[float], ref: MLP, ref_losses: list[float], what: str) -> None:
    torch.testing.assert_close(torch.tensor(losses), torch.tensor(ref_losses), **TOL,
                               msg=lambda m: f"{what}: per-step losses differ: {m}")
    ref_state = ref.state_dict()
    for name, value in ddp.module.state_dict().items():
        expect_close(value, ref_state[name], f"{what}: {name}", ctx.device, **TOL)


@checks()
def ddp_default_allreduce(ctx: Ctx) -> None:
    ref, ref_losses = reference(ctx)
    ddp, losses = train_ddp(ctx)
    compare(ctx, ddp, losses, ref, ref_losses, "DDP")
    # DDP's step timer (a device's own, registered by the backend) fed its logging data.
    timings = ddp._get_ddp_logging_data()
    assert timings.get("avg_forward_compute_time", 0) > 0, f"no DDP timings: {timings}"


@checks()
def ddp_compiled(ctx: Ctx) -> None:
    """torch.compile of the DDP module: Dynamo's DDP optimizer splits the graph at DDP's
    gradient buckets, so the buckets' all-reduces run between compiled backward graphs. It
    refuses buckets smaller than DDP's first (1 MiB), which this model fits in whole."""
    ref, ref_losses = reference(ctx)
    ddp, losses = train_ddp(ctx, ddp_kw={"bucket_cap_mb": 1}, compiled=True)
    compare(ctx, ddp, losses, ref, ref_losses, "compiled DDP")


@checks()
def ddp_allreduce_hook(ctx: Ctx) -> None:
    """``default_hooks.allreduce_hook``: divide by world size, then an async all_reduce whose
    future's value becomes the bucket's gradients."""
    ref, ref_losses = reference(ctx)
    ddp, losses = train_ddp(ctx, hook=default_hooks.allreduce_hook, hook_state=None)
    compare(ctx, ddp, losses, ref, ref_losses, "DDP + allreduce_hook")


@checks()
def ddp_custom_hook_buckets(ctx: Ctx) -> None:
    """A hook that all_reduces the bucket and divides by world size in ``fut.then``, with
    gradient_as_bucket_view; it also counts buckets: several per synchronised step, none
    during no_sync() micro-batches."""
    calls: list[tuple[int, int, int]] = []  # (step, micro, bucket index)
    phase = [-1, -1]

    def hook(state, bucket):
        calls.append((*phase, bucket.index()))
        work = dist.all_reduce(bucket.buffer(), async_op=True)
        return work.get_future().then(lambda fut: fut.value()[0].div_(ctx.world))

    ref, ref_losses = reference(ctx)
    ddp, losses = train_ddp(ctx, ddp_kw={"gradient_as_bucket_view": True}, hook=hook, phase=phase)
    compare(ctx, ddp, losses, ref, ref_losses, "DDP + custom hook")
    assert all(micro == MICRO - 1 for _, micro, _ in calls), \
        f"the hook ran during a no_sync() micro-batch: (step, micro, bucket) = {calls}"
    for step in range(1, STEPS):  # step 0 runs before the buckets are rebuilt
        buckets = sorted(b for s, _, b in calls if s == step)
        assert buckets == list(range(len(buckets))) and len(buckets) >= 3, \
            f"step {step}: buckets {buckets}, expected 0..k-1 with k >= 3 (bucket_cap_mb={BUCKET_CAP_MB})"


@checks()
def ddp_find_unused_parameters(ctx: Ctx) -> None:
    """An unused branch with find_unused_parameters=True (DDP all_reduces its used-parameter
    bitmap, an int32 tensor on the device, each step): used parameters match the reference,
    the unused ones never move."""
    ref, ref_losses = reference(ctx, unused_branch=True)
    ddp, losses = train_ddp(ctx, ddp_kw={"find_unused_parameters": True},
                            model_kw={"unused_branch": True})
    compare(ctx, ddp, losses, ref, ref_losses, "DDP find_unused_parameters")


@checks(unsupported={
    "gloo": "SyncBatchNorm runs only on accelerators (GPU/XPU/privateuse1), not CPU",
    "tpu_dist": "not supported on tpu yet: SyncBatchNorm's kernels (batch_norm_stats, "
                "batch_norm_gather_stats_with_counts, batch_norm_elemt, ...) exist only for CUDA",
})
def ddp_sync_batch_norm(ctx: Ctx) -> None:
    """SyncBatchNorm statistics over all ranks' rows equal BatchNorm1d over the concatenated
    batch (its all_gather_into_tensor / all_reduce in forward and backward); the running
    statistics too (compared as buffers)."""
    ref, ref_losses = reference(ctx, batch_norm=True)
    ddp, losses = train_ddp(ctx, model_kw={"batch_norm": True}, convert_sync_bn=True)
    compare(ctx, ddp, losses, ref, ref_losses, "DDP + SyncBatchNorm")


if __name__ == "__main__":
    main(checks, bind_device=True)  # init_process_group(..., device_id=tpu:LOCAL_RANK) on chips
