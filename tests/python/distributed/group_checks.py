"""Checks of what surrounds the collectives: async work and futures, functional collectives,
object collectives, process groups, monitored barriers and DeviceMesh. Registered in
collective_inputs.checks."""

from __future__ import annotations

import datetime

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

from collective_inputs import all_inputs, checks, rank_input, reduce_all
from worker_utils import Ctx, expect_equal, sync


# --- async work and futures ------------------------------------------------------------------

@checks()
def async_work_wait(ctx: Ctx) -> None:
    inputs = all_inputs(ctx, 21, torch.float32)
    t = inputs[ctx.rank].to(ctx.device, copy=True)
    work = dist.all_reduce(t, async_op=True)
    assert work is not None
    # As with NCCL, wait() orders the current stream after the collective; it need not block
    # the host, so is_completed() is only required once the chip has been synchronized.
    work.wait()
    expect_equal(t, reduce_all(inputs, "SUM"), "async all_reduce", ctx.device)
    sync(ctx)
    assert work.is_completed(), "work not completed after wait() and a device synchronize"


@checks()
def async_future_value_and_then(ctx: Ctx) -> None:
    """The work's future carries the output tensors; ``then`` chains a callback on them."""
    inputs = all_inputs(ctx, 21, torch.float32)
    t = inputs[ctx.rank].to(ctx.device, copy=True)
    work = dist.all_reduce(t, async_op=True)
    fut = work.get_future()
    chained = fut.then(lambda f: f.value()[0] / ctx.world)
    value = fut.wait()
    expected = reduce_all(inputs, "SUM")
    assert isinstance(value, list) and len(value) == 1, f"future value {type(value)} {value!r}"
    expect_equal(value[0], expected, "future value", ctx.device)
    expect_equal(chained.wait(), expected / ctx.world, "then() result", ctx.device)
    expect_equal(t, expected, "tensor after future", ctx.device)


@checks()
def async_many_outstanding(ctx: Ctx) -> None:
    """Several async collectives of different kinds in flight, waited in reverse order."""
    w, r = ctx.world, ctx.rank
    ar_in = [all_inputs(ctx, 8 + i, torch.float32, salt=i) for i in range(3)]
    ar = [p[r].to(ctx.device, copy=True) for p in ar_in]
    ag_out = torch.empty(5 * w, dtype=torch.bfloat16, device=ctx.device)
    ag_in = all_inputs(ctx, 5, torch.bfloat16, salt=9)
    rs_in = all_inputs(ctx, 4 * w, torch.float32, salt=4)
    rs_out = torch.empty(4, device=ctx.device)
    works = [dist.all_reduce(t, async_op=True) for t in ar]
    works.append(dist.all_gather_into_tensor(ag_out, ag_in[r].to(ctx.device, copy=True), async_op=True))
    works.append(dist.reduce_scatter_tensor(rs_out, rs_in[r].to(ctx.device, copy=True), async_op=True))
    for work in reversed(works):
        work.wait()
    for t, p in zip(ar, ar_in):
        expect_equal(t, reduce_all(p, "SUM"), "outstanding all_reduce", ctx.device)
    expect_equal(ag_out, torch.cat(ag_in), "outstanding all_gather", ctx.device)
    expect_equal(rs_out, reduce_all(rs_in, "SUM")[r * 4:(r + 1) * 4], "outstanding reduce_scatter", ctx.device)


@checks()
def async_broadcast_future(ctx: Ctx) -> None:
    t = rank_input(ctx.rank, 7, torch.int64, salt=ctx.rank).to(ctx.device, copy=True)
    work = dist.broadcast(t, src=0, async_op=True)
    work.get_future().wait()
    expect_equal(t, rank_input(0, 7, torch.int64, salt=0), "async broadcast", ctx.device)


# --- functional collectives (what DTensor and torch.compile use) ---------------------------------

@checks()
def functional_collectives(ctx: Ctx) -> None:
    w, r = ctx.world, ctx.rank
    group = dist.group.WORLD
    inputs = all_inputs(ctx, 8 * w, torch.float32)
    x = inputs[r].to(ctx.device, copy=True)
    ar = funcol.wait_tensor(funcol.all_reduce(x, "sum", group))
    expect_equal(ar, reduce_all(inputs, "SUM"), "funcol.all_reduce", ctx.device)
    ag = funcol.wait_tensor(funcol.all_gather_tensor(x.view(4, 2 * w), 0, group))
    expect_equal(ag, torch.cat([p.view(4, 2 * w) for p in inputs]), "funcol.all_gather_tensor", ctx.device)
    rs = funcol.wait_tensor(funcol.reduce_scatter_tensor(x, "sum", 0, group))
    expect_equal(rs, reduce_all(inputs, "SUM")[r * 8:(r + 1) * 8], "funcol.reduce_scatter_tensor", ctx.device)
    a2a = funcol.wait_tensor(funcol.all_to_all_single(x, None, None, group))
    expected = torch.cat([inputs[s][r * 8:(r + 1) * 8] for s in range(w)])
    expect_equal(a2a, expected, "funcol.all_to_all_single", ctx.device)
    x.add_(0)  # the input is still usable after the collectives
    expect_equal(x, inputs[r], "input left intact", ctx.device)


# --- object collectives ----------------------------------------------------------------------

def _obj(r: int):
    return {"rank": r, "payload": list(range(r * 3)), "name": f"r{r}" * (r + 1)}


@checks()
def all_gather_object(ctx: Ctx) -> None:
    out = [None] * ctx.world
    dist.all_gather_object(out, _obj(ctx.rank))
    assert out == [_obj(r) for r in range(ctx.world)], out


@checks()
def broadcast_object_list(ctx: Ctx) -> None:
    objs = [_obj(1), "hello", 3.5] if ctx.rank == 1 else [None, None, None]
    dist.broadcast_object_list(objs, src=1)
    assert objs == [_obj(1), "hello", 3.5], objs


@checks()
def gather_and_scatter_object(ctx: Ctx) -> None:
    dst = ctx.world - 1
    out = [None] * ctx.world if ctx.rank == dst else None
    dist.gather_object(_obj(ctx.rank), out, dst=dst)
    if ctx.rank == dst:
        assert out == [_obj(r) for r in range(ctx.world)], out
    got = [None]
    dist.scatter_object_list(got, [_obj(10 + r) for r in range(ctx.world)] if ctx.rank == 0 else None, src=0)
    assert got == [_obj(10 + ctx.rank)], got


# --- groups, monitored barrier, device mesh ----------------------------------------------------

@checks()
def process_group_metadata(ctx: Ctx) -> None:
    assert dist.is_initialized()
    assert dist.is_backend_available(ctx.backend)
    assert dist.get_backend() == ctx.backend, dist.get_backend()
    world = dist.group.WORLD
    assert world.size() == ctx.world and world.rank() == ctx.rank
    assert dist.get_process_group_ranks(world) == list(range(ctx.world))
    devices = [d.type for d in world._device_types]
    assert ctx.device_type in devices, f"default group's device types {devices} lack {ctx.device_type}"


@checks()
def new_group_same_backend(ctx: Ctx) -> None:
    """A second group over all ranks, and a subgroup of the even ranks (non-members skip)."""
    group = dist.new_group()
    inputs = all_inputs(ctx, 6, torch.float32, salt=1)
    t = inputs[ctx.rank].to(ctx.device, copy=True)
    dist.all_reduce(t, group=group)
    expect_equal(t, reduce_all(inputs, "SUM"), "all_reduce on new_group()", ctx.device)
    members = list(range(0, ctx.world, 2))
    sub = dist.new_group(ranks=members)
    if ctx.rank in members:
        assert dist.get_backend(sub) == ctx.backend
        t = inputs[ctx.rank].to(ctx.device, copy=True)
        dist.all_reduce(t, group=sub)
        expect_equal(t, reduce_all([inputs[m] for m in members], "SUM"), "all_reduce on subgroup", ctx.device)
        assert dist.get_rank(sub) == members.index(ctx.rank)
    dist.destroy_process_group(sub)
    dist.destroy_process_group(group)


@checks()
def monitored_barrier_gloo_side_group(ctx: Ctx) -> None:
    """How NCCL scripts do it: a gloo side group for monitored_barrier."""
    side = dist.new_group(backend="gloo")
    dist.monitored_barrier(group=side, timeout=datetime.timedelta(seconds=20))
    dist.monitored_barrier(group=side, timeout=datetime.timedelta(seconds=20), wait_all_ranks=True)
    dist.destroy_process_group(side)


@checks()
def monitored_barrier_default_group(ctx: Ctx) -> None:
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=20))


@checks()
def device_mesh_1d(ctx: Ctx) -> None:
    from torch.distributed.device_mesh import init_device_mesh

    mesh = init_device_mesh(ctx.device_type, (ctx.world,))
    assert mesh.device_type == ctx.device_type and mesh.size() == ctx.world
    assert mesh.get_local_rank() == ctx.rank
    inputs = all_inputs(ctx, 10, torch.float32, salt=2)
    t = inputs[ctx.rank].to(ctx.device, copy=True)
    dist.all_reduce(t, group=mesh.get_group())
    expect_equal(t, reduce_all(inputs, "SUM"), "all_reduce on the mesh's group", ctx.device)


@checks(min_world=4)
def device_mesh_2d(ctx: Ctx) -> None:
    """(2, world/2) mesh: reductions along each dimension reach exactly that dimension's ranks."""
    from torch.distributed.device_mesh import init_device_mesh

    mesh = init_device_mesh(ctx.device_type, (2, ctx.world // 2), mesh_dim_names=("dp", "tp"))
    inputs = all_inputs(ctx, 10, torch.float32, salt=3)
    grid = torch.arange(ctx.world).view(2, ctx.world // 2)
    for dim, name in enumerate(("dp", "tp")):
        pos = (grid == ctx.rank).nonzero()[0].tolist()
        peers = grid[:, pos[1]].tolist() if dim == 0 else grid[pos[0], :].tolist()
        t = inputs[ctx.rank].to(ctx.device, copy=True)
        dist.all_reduce(t, group=mesh.get_group(name))
        expect_equal(t, reduce_all([inputs[p] for p in peers], "SUM"), f"all_reduce along {name}", ctx.device)
