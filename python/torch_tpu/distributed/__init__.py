"""``tpu_dist``: the c10d backend for ``tpu`` tensors, what ``"nccl"`` is for ``"cuda"``.

``import torch_tpu`` (or just ``import torch``) registers it, so a GPU script runs after
changing ``backend="nccl"`` to ``backend="tpu_dist"`` and ``"cuda"`` to ``"tpu"``. The native
backend (csrc/distributed) moves bytes through c10d's Gloo over the store torchrun sets up; it
orders collectives with tpu streams. It also takes CPU tensors (handed to Gloo as they are),
which object collectives, ``barrier`` and ``monitored_barrier`` use.
"""

from datetime import timedelta

import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

from .. import _C

BACKEND_NAME = "tpu_dist"


def _create_backend(options, backend_options):
    """``Backend.register_backend`` creator (extended API): one backend for both devices."""
    timeout = options.timeout
    if not isinstance(timeout, timedelta):
        timeout = timedelta(seconds=float(timeout))

    def gloo_group(name):  # each in its own key space of the group's store
        store = dist.PrefixStore(f"tpu_dist_{name}/", options.store)
        return dist.ProcessGroupGloo(store, options.group_rank, options.group_size, timeout)

    # tpu data, the ranks' call signatures, and CPU tensors / barriers each get their own Gloo
    # group: each group's calls then go out in program order on every rank.
    return _C._TpuDistBackend(
        gloo_group("transport"), gloo_group("agreement"), gloo_group("host"),
        options.group_rank, options.group_size, timeout,
    )


def _monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """``dist.monitored_barrier`` also on tpu_dist groups. torch allows it only on Gloo groups
    by name; tpu_dist's CPU side is Gloo, whose monitored barrier this runs."""
    if group is not None and c10d._rank_not_in_group(group):
        return None
    if dist.get_backend(group) != BACKEND_NAME:
        return _torch_monitored_barrier(group=group, timeout=timeout, wait_all_ranks=wait_all_ranks)
    if timeout is None:
        timeout = c10d._get_default_timeout(BACKEND_NAME)
    elif isinstance(timeout, (int, float)):
        timeout = timedelta(seconds=timeout)
    group_to_use = c10d._get_default_group() if group is None else group
    return group_to_use.monitored_barrier(timeout, wait_all_ranks=wait_all_ranks)


_torch_monitored_barrier = dist.monitored_barrier


def register() -> None:
    """Registers ``tpu_dist`` with torch.distributed (idempotent)."""
    if BACKEND_NAME.upper() in dist.Backend._plugins:
        return
    dist.Backend.register_backend(
        BACKEND_NAME, _create_backend, extended_api=True, devices=["cpu", "tpu"]
    )
    dist.monitored_barrier = _monitored_barrier
    c10d.monitored_barrier = _monitored_barrier


__all__ = ["BACKEND_NAME", "register"]
