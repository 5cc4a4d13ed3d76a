"""Rank script: torch.distributed.checkpoint (DCP) save and load of an FSDP2-sharded model and
its optimizer (state dicts from torch.distributed.checkpoint.state_dict), into a freshly
initialised model. DIST_TMPDIR (shared by all ranks) holds the checkpoints.

DCP plans over the default group with object collectives (gather_object / scatter_object_list
/ broadcast_object_list / all_gather_object, on the group's object device) and barriers; each
rank writes and reads only its own shards.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_state_dict,
    set_model_state_dict,
    set_state_dict,
)
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor

from tiny_models import Transformer, lm_loss, token_batch
from worker_utils import Ctx, Registry, expect_equal, main

checks = Registry()


def tmpdir(name: str) -> str:
    return os.path.join(os.environ["DIST_TMPDIR"], name)


def sharded_model(ctx: Ctx, seed: int):
    model = Transformer(seed=seed).to(ctx.device)
    mesh = init_device_mesh(ctx.device_type, (ctx.world,))
    for layer in model.layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model


def train_step(ctx: Ctx, model, opt, step: int) -> None:
    rows = slice(ctx.rank * 2, (ctx.rank + 1) * 2)
    opt.zero_grad()
    lm_loss(model, token_batch(step, 2 * ctx.world)[rows].to(ctx.device)).backward()
    opt.step()


def local_values(sd: dict) -> dict:
    """Flattened {key: this rank's local tensor} of a (nested) state dict."""
    out = {}

    def walk(prefix, obj):
        if isinstance(obj, dict):
            for k, v in obj.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        elif isinstance(obj, DTensor):
            out[prefix] = obj.to_local()
        elif isinstance(obj, torch.Tensor):
            out[prefix] = obj
        else:
            out[prefix] = obj
    walk("", sd)
    return out


def assert_same_state(ctx: Ctx, got: dict, want: dict, what: str) -> None:
    got, want = local_values(got), local_values(want)
    assert got.keys() == want.keys(), f"{what}: keys differ: {sorted(got.keys() ^ want.keys())[:10]}"
    for k, w in want.items():
        if isinstance(w, torch.Tensor):
            expect_equal(got[k], w.cpu(), f"{what}: {k}")
        else:
            assert got[k] == w, f"{what}: {k}: {got[k]!r} != {w!r}"


@checks()
def dcp_model_roundtrip(ctx: Ctx) -> None:
    """Save the sharded model's state dict; load it into a model initialised from another
    seed; every local shard is bitwise equal; the checkpoint has one data file per rank."""
    model = sharded_model(ctx, seed=1)
    path = tmpdir("model")
    sd = get_model_state_dict(model)
    assert all(isinstance(v, DTensor) for v in sd.values()), "state dict entries are not DTensors"
    dcp.save(sd, checkpoint_id=path)
    dist.barrier()
    files = sorted(os.listdir(path))
    assert ".metadata" in files and sum(f.endswith(".distcp") for f in files) == ctx.world, files

    fresh = sharded_model(ctx, seed=2)
    fresh_sd = get_model_state_dict(fresh)
    dcp.load(fresh_sd, checkpoint_id=path)
    set_model_state_dict(fresh, fresh_sd)
    assert_same_state(ctx, get_model_state_dict(fresh), sd, "reloaded model")
    ref = dict(Transformer(seed=1).named_parameters())
    for name, p in fresh.named_parameters():
        expect_equal(p.full_tensor(), ref[name].detach(), f"full {name} after load", ctx.device)


@checks()
def dcp_model_and_optimizer_resume(ctx: Ctx) -> None:
    """Train a step with AdamW, save model + optimizer, load both into fresh ones, then one
    more step on each: identical parameters (training resumes exactly)."""
    model = sharded_model(ctx, seed=3)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    train_step(ctx, model, opt, step=0)
    path = tmpdir("model_optim")
    msd, osd = get_state_dict(model, opt)
    dcp.save({"model": msd, "optim": osd}, checkpoint_id=path)

    fresh = sharded_model(ctx, seed=4)
    fresh_opt = torch.optim.AdamW(fresh.parameters(), lr=1e-2)
    train_step(ctx, fresh, fresh_opt, step=5)  # materialise different optimizer state first
    fmsd, fosd = get_state_dict(fresh, fresh_opt)
    state = {"model": fmsd, "optim": fosd}
    dcp.load(state, checkpoint_id=path)
    set_state_dict(fresh, fresh_opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
    got_m, got_o = get_state_dict(fresh, fresh_opt)
    assert_same_state(ctx, got_m, msd, "reloaded model")
    assert_same_state(ctx, got_o, osd, "reloaded optimizer")

    train_step(ctx, model, opt, step=1)
    train_step(ctx, fresh, fresh_opt, step=1)
    for (name, a), (_, b) in zip(model.named_parameters(), fresh.named_parameters()):
        expect_equal(b.to_local(), a.to_local().cpu(), f"{name} one step after resume", ctx.device)


@checks()
def dcp_full_state_dict(ctx: Ctx) -> None:
    """``StateDictOptions(full_state_dict=True, cpu_offload=True)``: rank 0 gets the whole
    unsharded state on CPU (an all-gather of every parameter); it equals the model's."""
    model = sharded_model(ctx, seed=5)
    full = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    if ctx.rank == 0:
        ref = Transformer(seed=5).state_dict()
        assert full.keys() == ref.keys(), sorted(full.keys() ^ ref.keys())
        for k, v in ref.items():
            assert full[k].device.type == "cpu", f"{k} on {full[k].device}"
            expect_equal(full[k], v, f"full state {k}")
    else:
        assert full == {}, f"non-zero rank got {len(full)} entries with cpu_offload"


if __name__ == "__main__":
    main(checks)
