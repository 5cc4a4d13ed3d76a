"""DistributedDataParallel training (worker_ddp.py) launched through the real
``python -m torch.distributed.run --standalone --nproc-per-node N``, one pytest item per
variant: plain, allreduce_hook, custom fut.then hook (bucket count, no_sync), unused
parameters, SyncBatchNorm. Each matches single-process training on the concatenated batch."""

import pytest

import launcher
import worker_ddp

CHECKS = worker_ddp.checks


@pytest.fixture(scope="module", params=launcher.configs(slow_nprocs=4))
def run(request):
    backend, device, nprocs = request.param
    result = launcher.launch_torchrun("worker_ddp.py", nprocs, backend, device,
                                      timeout=120 if nprocs == 2 else 240)
    return result, nprocs


@pytest.mark.parametrize("name", CHECKS.names())
def test_ddp(run, name):
    result, nprocs = run
    launcher.assert_check(result, CHECKS.get(name), nprocs)


def test_torchrun_exits_cleanly(run):
    result, nprocs = run
    result.assert_clean_exit(nprocs)
