"""Checks of the data collectives (all_reduce over ops x dtypes, broadcast, reduce,
all_gather*, reduce_scatter*, all_to_all*, gather, scatter, barrier, point to point,
coalesced), against values computed locally on CPU. Registered in collective_inputs.checks."""

from __future__ import annotations

import time

import torch
import torch.distributed as dist

from collective_inputs import (DTYPES, GLOO_NO_STARTCOALESCING, OPS, all_inputs, checks, rank_input,
                               reduce_all)
from worker_utils import Ctx, expect_equal


# --- all_reduce -----------------------------------------------------------------------------

def _all_reduce_check(op: str, dtype: torch.dtype, n: int = 37):
    def fn(ctx: Ctx) -> None:
        inputs = all_inputs(ctx, n, dtype, op)
        t = inputs[ctx.rank].to(ctx.device, copy=True)
        ret = dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
        assert ret is None, f"blocking all_reduce returned {ret!r}"
        expect_equal(t, reduce_all(inputs, op), f"all_reduce {op} {dtype}", ctx.device)
    return fn


for _dname, _dtype in DTYPES.items():
    for _op in OPS:
        if _op == "AVG" and not _dtype.is_floating_point:
            continue  # AVG is defined for floating dtypes only (NCCL's integer AVG truncates)
        checks.add(f"all_reduce_{_op.lower()}_{_dname}", _all_reduce_check(_op, _dtype))

checks.add("all_reduce_sum_float64", _all_reduce_check("SUM", torch.float64))
checks.add("all_reduce_sum_int32", _all_reduce_check("SUM", torch.int32))
checks.add("all_reduce_max_uint8", _all_reduce_check("MAX", torch.uint8))
# Odd size past 1M elements: chunking, vector tails and bucket boundaries in the backend.
checks.add("all_reduce_sum_float32_large", _all_reduce_check("SUM", torch.float32, n=(1 << 20) + 3))
checks.add("all_reduce_sum_bfloat16_large", _all_reduce_check("SUM", torch.bfloat16, n=(1 << 18) + 5))


@checks()
def all_reduce_0d(ctx: Ctx) -> None:
    t = torch.tensor(float(ctx.rank + 1), device=ctx.device)
    dist.all_reduce(t)
    expect_equal(t, torch.tensor(float(sum(range(1, ctx.world + 1)))), "0-d all_reduce", ctx.device)


@checks()
def all_reduce_complex64(ctx: Ctx) -> None:
    vals = [torch.complex(rank_input(r, 9, torch.float32), rank_input(r, 9, torch.float32, salt=1))
            for r in range(ctx.world)]
    t = vals[ctx.rank].to(ctx.device, copy=True)
    dist.all_reduce(t)
    expect_equal(t, sum(vals), "complex all_reduce", ctx.device)


@checks()
def all_reduce_view_updates_base(ctx: Ctx) -> None:
    """An all_reduce of a view (a storage offset into a bigger buffer) writes through to the
    base, and leaves the rest of the base alone."""
    base = torch.full((4, 8), -1.0, device=ctx.device)
    view = base[1:3]  # contiguous, storage offset 8
    view.copy_(rank_input(ctx.rank, 16, torch.float32).view(2, 8).to(ctx.device, copy=True))
    dist.all_reduce(view)
    expected = torch.full((4, 8), -1.0)
    expected[1:3] = reduce_all(all_inputs(ctx, 16, torch.float32), "SUM").view(2, 8)
    expect_equal(base, expected, "base of the all_reduced view", ctx.device)


@checks()
def all_reduce_repeated_in_place(ctx: Ctx) -> None:
    """Back-to-back collectives on one tensor run in order (each sees the previous result)."""
    t = torch.ones(5, device=ctx.device)
    for _ in range(5):
        dist.all_reduce(t)
    expect_equal(t, torch.full((5,), float(ctx.world) ** 5), "5 chained all_reduces", ctx.device)


# --- broadcast / reduce ---------------------------------------------------------------------

def _broadcast_check(src_of_world, dtype):
    def fn(ctx: Ctx) -> None:
        src = src_of_world(ctx.world)
        t = rank_input(ctx.rank, 23, dtype, salt=10 * ctx.rank).to(ctx.device, copy=True)
        dist.broadcast(t, src=src)
        expect_equal(t, rank_input(src, 23, dtype, salt=10 * src), f"broadcast from {src}", ctx.device)
    return fn


checks.add("broadcast_src0_float32", _broadcast_check(lambda w: 0, torch.float32))
checks.add("broadcast_srclast_bfloat16", _broadcast_check(lambda w: w - 1, torch.bfloat16))
checks.add("broadcast_src1_int64", _broadcast_check(lambda w: 1, torch.int64))


@checks()
def reduce_sum_to_last(ctx: Ctx) -> None:
    dst = ctx.world - 1
    inputs = all_inputs(ctx, 19, torch.float32)
    t = inputs[ctx.rank].to(ctx.device, copy=True)
    dist.reduce(t, dst=dst)
    if ctx.rank == dst:  # other ranks' buffers are unspecified after reduce (as in NCCL)
        expect_equal(t, reduce_all(inputs, "SUM"), "reduce at dst", ctx.device)


@checks()
def reduce_max_int64_to_0(ctx: Ctx) -> None:
    inputs = all_inputs(ctx, 19, torch.int64)
    t = inputs[ctx.rank].to(ctx.device, copy=True)
    dist.reduce(t, dst=0, op=dist.ReduceOp.MAX)
    if ctx.rank == 0:
        expect_equal(t, reduce_all(inputs, "MAX"), "reduce MAX at dst", ctx.device)


# --- all_gather ----------------------------------------------------------------------------

def _all_gather_list(dtype):
    def fn(ctx: Ctx) -> None:
        inputs = all_inputs(ctx, 11, dtype, salt=3)
        out = [torch.empty(11, dtype=dtype, device=ctx.device) for _ in range(ctx.world)]
        dist.all_gather(out, inputs[ctx.rank].to(ctx.device, copy=True))
        for r in range(ctx.world):
            expect_equal(out[r], inputs[r], f"all_gather slot {r}", ctx.device)
    return fn


checks.add("all_gather_float32", _all_gather_list(torch.float32))
checks.add("all_gather_bfloat16", _all_gather_list(torch.bfloat16))
checks.add("all_gather_int64", _all_gather_list(torch.int64))


@checks()
def all_gather_into_tensor_flat(ctx: Ctx) -> None:
    inputs = all_inputs(ctx, 13, torch.float32)
    out = torch.empty(13 * ctx.world, device=ctx.device)
    dist.all_gather_into_tensor(out, inputs[ctx.rank].to(ctx.device, copy=True))
    expect_equal(out, torch.cat(inputs), "all_gather_into_tensor", ctx.device)


@checks(unsupported={"gloo": "gloo needs a flat output; NCCL also takes a (world, n) one"})
def all_gather_into_tensor_stacked(ctx: Ctx) -> None:
    inputs = all_inputs(ctx, 13, torch.bfloat16)
    out = torch.empty(ctx.world, 13, dtype=torch.bfloat16, device=ctx.device)
    dist.all_gather_into_tensor(out, inputs[ctx.rank].to(ctx.device, copy=True))
    expect_equal(out, torch.stack(inputs), "stacked all_gather_into_tensor", ctx.device)


@checks()
def all_gather_single_2d(ctx: Ctx) -> None:
    """PyTorch 2.13's name for all_gather_into_tensor (what FSDP2 calls), on a 2-D input:
    gathered along dim 0."""
    inputs = [rank_input(r, 12, torch.float32).view(3, 4) for r in range(ctx.world)]
    out = torch.empty(3 * ctx.world, 4, device=ctx.device)
    dist.all_gather_single(out, inputs[ctx.rank].to(ctx.device, copy=True))
    expect_equal(out, torch.cat(inputs), "all_gather_single", ctx.device)


@checks(unsupported={"gloo": "gloo's all_gather needs equal sizes; NCCL's takes uneven ones"})
def all_gather_uneven(ctx: Ctx) -> None:
    inputs = [rank_input(r, r + 2, torch.float32) for r in range(ctx.world)]
    out = [torch.empty(r + 2, device=ctx.device) for r in range(ctx.world)]
    dist.all_gather(out, inputs[ctx.rank].to(ctx.device, copy=True))
    for r in range(ctx.world):
        expect_equal(out[r], inputs[r], f"uneven all_gather slot {r}", ctx.device)


# --- reduce_scatter ------------------------------------------------------------------------

@checks()
def reduce_scatter_list(ctx: Ctx) -> None:
    # rank r's input chunk for destination d is rank_input(r, 7, salt=d)
    chunks = [[rank_input(r, 7, torch.float32, salt=d) for d in range(ctx.world)] for r in range(ctx.world)]
    out = torch.empty(7, device=ctx.device)
    dist.reduce_scatter(out, [c.to(ctx.device, copy=True) for c in chunks[ctx.rank]])
    expected = reduce_all([chunks[r][ctx.rank] for r in range(ctx.world)], "SUM")
    expect_equal(out, expected, "reduce_scatter", ctx.device)


def _reduce_scatter_tensor(op: str, dtype: torch.dtype, stacked: bool = False, fn_name="reduce_scatter_tensor"):
    def fn(ctx: Ctx) -> None:
        n = 6
        inputs = all_inputs(ctx, n * ctx.world, dtype, op)
        inp = inputs[ctx.rank].to(ctx.device, copy=True)
        if stacked:
            inp = inp.view(ctx.world, n)
        out = torch.empty(n, dtype=dtype, device=ctx.device)
        getattr(dist, fn_name)(out, inp, op=getattr(dist.ReduceOp, op))
        expected = reduce_all(inputs, op)[ctx.rank * n:(ctx.rank + 1) * n]
        expect_equal(out, expected, f"{fn_name} {op} {dtype}", ctx.device)
    return fn


checks.add("reduce_scatter_tensor_sum_float32", _reduce_scatter_tensor("SUM", torch.float32))
checks.add("reduce_scatter_tensor_avg_float32", _reduce_scatter_tensor("AVG", torch.float32))
checks.add("reduce_scatter_tensor_sum_bfloat16", _reduce_scatter_tensor("SUM", torch.bfloat16))
checks.add("reduce_scatter_tensor_max_int64", _reduce_scatter_tensor("MAX", torch.int64))
checks.add("reduce_scatter_single_avg_float32",
           _reduce_scatter_tensor("AVG", torch.float32, fn_name="reduce_scatter_single"))
checks.add("reduce_scatter_tensor_stacked", _reduce_scatter_tensor("SUM", torch.float32, stacked=True),
           unsupported={"gloo": "gloo needs a flat input; NCCL also takes a (world, n) one"})


# --- all_to_all ----------------------------------------------------------------------------

def _a2a_payload(src: int, dst: int, n: int) -> torch.Tensor:
    return torch.arange(n, dtype=torch.float32) + 100 * src + 10 * dst


@checks()
def all_to_all_list(ctx: Ctx) -> None:
    r, w = ctx.rank, ctx.world
    out = [torch.empty(3, device=ctx.device) for _ in range(w)]
    dist.all_to_all(out, [_a2a_payload(r, d, 3).to(ctx.device, copy=True) for d in range(w)])
    for s in range(w):
        expect_equal(out[s], _a2a_payload(s, r, 3), f"all_to_all from {s}", ctx.device)


@checks(unsupported={"gloo": "gloo's all_to_all needs equal sizes; NCCL's takes uneven ones"})
def all_to_all_list_uneven(ctx: Ctx) -> None:
    r, w = ctx.rank, ctx.world
    size = lambda s, d: s + 2 * d + 1  # noqa: E731  elements s sends to d
    out = [torch.empty(size(s, r), device=ctx.device) for s in range(w)]
    dist.all_to_all(out, [_a2a_payload(r, d, size(r, d)).to(ctx.device, copy=True) for d in range(w)])
    for s in range(w):
        expect_equal(out[s], _a2a_payload(s, r, size(s, r)), f"uneven all_to_all from {s}", ctx.device)


@checks()
def all_to_all_single_even(ctx: Ctx) -> None:
    r, w = ctx.rank, ctx.world
    inp = torch.cat([_a2a_payload(r, d, 4) for d in range(w)]).view(w * 2, 2)  # split on dim 0
    out = torch.empty(w * 2, 2, device=ctx.device)
    dist.all_to_all_single(out, inp.to(ctx.device, copy=True))
    expected = torch.cat([_a2a_payload(s, r, 4) for s in range(w)]).view(w * 2, 2)
    expect_equal(out, expected, "all_to_all_single", ctx.device)


@checks()
def all_to_all_single_uneven(ctx: Ctx) -> None:
    r, w = ctx.rank, ctx.world
    size = lambda s, d: (s + 1) * (d + 2) % 5  # noqa: E731  rows s sends to d (some are 0)
    in_splits = [size(r, d) for d in range(w)]
    out_splits = [size(s, r) for s in range(w)]
    rows = lambda s, d: _a2a_payload(s, d, 3 * size(s, d)).view(-1, 3)  # noqa: E731
    inp = torch.cat([rows(r, d) for d in range(w)])
    out = torch.empty(sum(out_splits), 3, device=ctx.device)
    dist.all_to_all_single(out, inp.to(ctx.device, copy=True), output_split_sizes=out_splits,
                           input_split_sizes=in_splits)
    expect_equal(out, torch.cat([rows(s, r) for s in range(w)]), "uneven all_to_all_single", ctx.device)


# --- gather / scatter ----------------------------------------------------------------------

@checks()
def gather_to_last(ctx: Ctx) -> None:
    dst = ctx.world - 1
    inputs = all_inputs(ctx, 9, torch.float32, salt=5)
    gather_list = [torch.empty(9, device=ctx.device) for _ in range(ctx.world)] if ctx.rank == dst else None
    dist.gather(inputs[ctx.rank].to(ctx.device, copy=True), gather_list, dst=dst)
    if ctx.rank == dst:
        for r in range(ctx.world):
            expect_equal(gather_list[r], inputs[r], f"gather slot {r}", ctx.device)


@checks()
def scatter_from_last(ctx: Ctx) -> None:
    src = ctx.world - 1
    pieces = [rank_input(d, 9, torch.int64, salt=7) for d in range(ctx.world)]
    out = torch.empty(9, dtype=torch.int64, device=ctx.device)
    dist.scatter(out, [p.to(ctx.device, copy=True) for p in pieces] if ctx.rank == src else None, src=src)
    expect_equal(out, pieces[ctx.rank], "scatter", ctx.device)


# --- barrier -------------------------------------------------------------------------------

@checks()
def barrier_blocks(ctx: Ctx) -> None:
    """The barrier really waits: rank 0 arrives 0.5 s late, everyone leaves after it."""
    dist.barrier()  # align
    if ctx.rank == 0:
        time.sleep(0.5)
    start = time.monotonic()
    dist.barrier()
    waited = time.monotonic() - start
    if ctx.rank != 0 and waited < 0.4:
        raise AssertionError(f"barrier returned after {waited:.3f}s while rank 0 was 0.5 s late")


@checks(unsupported={"gloo": "device_ids name accelerator chips (c10d pairs them with the current "
                            "accelerator, tpu once torch_tpu is loaded); gloo has no tpu backend"})
def barrier_device_ids(ctx: Ctx) -> None:
    """The NCCL idiom ``barrier(device_ids=[local_rank])``: c10d passes
    ``BarrierOptions.device = torch.device(<current accelerator>, local_rank)``."""
    dist.barrier(device_ids=[ctx.local_rank])


# --- point to point ------------------------------------------------------------------------

@checks()
def send_recv_pairs(ctx: Ctx) -> None:
    """Blocking send/recv between pairs (0<->1, 2<->3): even ranks send first."""
    r = ctx.rank
    peer = r ^ 1
    if peer >= ctx.world:
        return
    mine = rank_input(r, 10, torch.float32, salt=1).to(ctx.device, copy=True)
    got = torch.empty(10, device=ctx.device)
    if r % 2 == 0:
        dist.send(mine, dst=peer)
        dist.recv(got, src=peer)
    else:
        dist.recv(got, src=peer)
        dist.send(mine, dst=peer)
    expect_equal(got, rank_input(peer, 10, torch.float32, salt=1), "recv from peer", ctx.device)


@checks()
def isend_irecv_ring(ctx: Ctx) -> None:
    r, w = ctx.rank, ctx.world
    got = torch.empty(10, dtype=torch.bfloat16, device=ctx.device)
    reqs = [dist.irecv(got, src=(r - 1) % w),
            dist.isend(rank_input(r, 10, torch.bfloat16).to(ctx.device, copy=True), dst=(r + 1) % w)]
    for req in reqs:
        req.wait()
    expect_equal(got, rank_input((r - 1) % w, 10, torch.bfloat16), "irecv from left", ctx.device)


@checks()
def batch_isend_irecv_ring(ctx: Ctx) -> None:
    """Both directions around the ring, two dtypes, in one batch."""
    r, w = ctx.rank, ctx.world
    left, right = (r - 1) % w, (r + 1) % w
    from_left = torch.empty(6, device=ctx.device)
    from_right = torch.empty(4, dtype=torch.int64, device=ctx.device)
    ops = [dist.P2POp(dist.isend, rank_input(r, 6, torch.float32).to(ctx.device, copy=True), right),
           dist.P2POp(dist.isend, rank_input(r, 4, torch.int64, salt=2).to(ctx.device, copy=True), left),
           dist.P2POp(dist.irecv, from_left, left),
           dist.P2POp(dist.irecv, from_right, right)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    expect_equal(from_left, rank_input(left, 6, torch.float32), "batch recv from left", ctx.device)
    expect_equal(from_right, rank_input(right, 4, torch.int64, salt=2), "batch recv from right", ctx.device)


# --- coalesced -----------------------------------------------------------------------------

def _sizes():
    return [5, 17, 3]


@checks()
def all_reduce_coalesced(ctx: Ctx) -> None:
    per = [all_inputs(ctx, n, torch.float32, salt=n) for n in _sizes()]
    ts = [p[ctx.rank].to(ctx.device, copy=True) for p in per]
    dist.all_reduce_coalesced(ts)
    for t, p in zip(ts, per):
        expect_equal(t, reduce_all(p, "SUM"), "all_reduce_coalesced", ctx.device)


@checks()
def all_gather_coalesced(ctx: Ctx) -> None:
    per = [all_inputs(ctx, n, torch.float32, salt=n) for n in _sizes()]
    # output_tensor_lists[r][i]: rank r's i-th input
    outs = [[torch.empty(n, device=ctx.device) for n in _sizes()] for _ in range(ctx.world)]
    dist.all_gather_coalesced(outs, [p[ctx.rank].to(ctx.device, copy=True) for p in per])
    for r in range(ctx.world):
        for i, p in enumerate(per):
            expect_equal(outs[r][i], p[r], f"all_gather_coalesced [{r}][{i}]", ctx.device)


def _coalescing_manager_check(async_ops: bool, with_device: bool):
    """``dist._coalescing_manager`` as FSDP-style code uses it: the fast path (all_reduce,
    all_gather_into_tensor and reduce_scatter_tensor each fused into one *_coalesced call), or
    with ``device=`` (start/endCoalescing, NCCL style, what batch_isend_irecv uses when the
    backend says supports_coalescing)."""
    def fn(ctx: Ctx) -> None:
        try:
            _coalesced_ops(ctx, async_ops, with_device)
        finally:
            # A _coalescing_manager whose start raised (a backend without startCoalescing) leaves
            # the group registered as coalescing: every later collective on it would be
            # recorded and never run. Undo that so one failed check cannot poison the others.
            dist.distributed_c10d._world.pg_coalesce_state.pop(dist.group.WORLD, None)
    return fn


def _coalesced_ops(ctx: Ctx, async_ops: bool, with_device: bool) -> None:
    w, r = ctx.world, ctx.rank
    kw = {"async_ops": async_ops}
    if with_device:
        kw["device"] = ctx.device
    sizes = _sizes()
    # all_reduce
    per = [all_inputs(ctx, n, torch.float32, salt=n) for n in sizes]
    ts = [p[r].to(ctx.device, copy=True) for p in per]
    with dist._coalescing_manager(**kw) as cm:
        for t in ts:
            dist.all_reduce(t)
    if async_ops:
        cm.wait()
    for t, p in zip(ts, per):
        expect_equal(t, reduce_all(p, "SUM"), "coalesced all_reduce", ctx.device)
    # all_gather_into_tensor
    outs = [torch.empty(n * w, device=ctx.device) for n in sizes]
    with dist._coalescing_manager(**kw) as cm:
        for o, p in zip(outs, per):
            dist.all_gather_into_tensor(o, p[r].to(ctx.device, copy=True))
    if async_ops:
        cm.wait()
    for o, p in zip(outs, per):
        expect_equal(o, torch.cat(p), "coalesced all_gather_into_tensor", ctx.device)
    # reduce_scatter_tensor
    per_rs = [all_inputs(ctx, n * w, torch.float32, salt=n) for n in sizes]
    outs = [torch.empty(n, device=ctx.device) for n in sizes]
    with dist._coalescing_manager(**kw) as cm:
        for o, p in zip(outs, per_rs):
            dist.reduce_scatter_tensor(o, p[r].to(ctx.device, copy=True))
    if async_ops:
        cm.wait()
    for o, p, n in zip(outs, per_rs, sizes):
        expect_equal(o, reduce_all(p, "SUM")[r * n:(r + 1) * n], "coalesced reduce_scatter", ctx.device)


checks.add("coalescing_manager_async", _coalescing_manager_check(True, False))
checks.add("coalescing_manager_sync", _coalescing_manager_check(False, False))
checks.add("coalescing_manager_device", _coalescing_manager_check(True, True),
           unsupported={"gloo": GLOO_NO_STARTCOALESCING})
