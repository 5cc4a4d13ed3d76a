"""FSDP2 (``fully_shard``) training of a small transformer (worker_fsdp.py) matches
single-process training; one pytest item per variant."""

import pytest

import launcher
import worker_fsdp

CHECKS = worker_fsdp.checks


@pytest.fixture(scope="module", params=launcher.configs(slow_nprocs=4))
def run(request):
    backend, device, nprocs = request.param
    result = launcher.launch("worker_fsdp.py", nprocs, backend, device,
                             timeout=120 if nprocs == 2 else 240)
    return result, nprocs


@pytest.mark.parametrize("name", CHECKS.names())
def test_fsdp2(run, name):
    result, nprocs = run
    launcher.assert_check(result, CHECKS.get(name), nprocs)


def test_ranks_exit_cleanly(run):
    result, nprocs = run
    result.assert_clean_exit(nprocs)
