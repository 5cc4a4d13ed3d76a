"""MPMD: ranks run different code between collectives (worker_mpmd.py) without deadlock or
wrong results."""

import pytest

import launcher
import worker_mpmd

CHECKS = worker_mpmd.checks


@pytest.fixture(scope="module", params=launcher.configs(slow_nprocs=None))
def run(request):
    backend, device, nprocs = request.param
    return launcher.launch("worker_mpmd.py", nprocs, backend, device, timeout=90), nprocs


@pytest.mark.parametrize("name", CHECKS.names())
def test_mpmd(run, name):
    result, nprocs = run
    launcher.assert_check(result, CHECKS.get(name), nprocs)


def test_ranks_exit_cleanly(run):
    result, nprocs = run
    result.assert_clean_exit(nprocs)
