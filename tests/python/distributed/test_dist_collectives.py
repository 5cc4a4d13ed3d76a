"""c10d collectives (all_reduce over ops x dtypes, broadcast, reduce, all_gather*,
reduce_scatter*, all_to_all*, gather, scatter, barrier, p2p, coalesced, async work and
futures, functional collectives, object collectives, groups, monitored_barrier, DeviceMesh)
in one launch per configuration; one pytest item per check (worker_collectives.py)."""

import pytest

import launcher
import worker_collectives

CHECKS = worker_collectives.checks


@pytest.fixture(scope="module", params=launcher.configs(slow_nprocs=4))
def run(request):
    backend, device, nprocs = request.param
    result = launcher.launch("worker_collectives.py", nprocs, backend, device,
                             timeout=90 if nprocs == 2 else 180)
    return result, nprocs


@pytest.mark.parametrize("name", CHECKS.names())
def test_collective(run, name):
    result, nprocs = run
    launcher.assert_check(result, CHECKS.get(name), nprocs)


def test_ranks_exit_cleanly(run):
    """After the checks, destroy_process_group and interpreter exit succeed on every rank (a
    non-zero exit with no failed check means a crash or hang at teardown)."""
    result, nprocs = run
    result.assert_clean_exit(nprocs)
