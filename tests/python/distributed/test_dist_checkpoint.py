"""torch.distributed.checkpoint save/load of an FSDP2-sharded model and optimizer
(worker_dcp.py): exact round trips into freshly initialised models, exact resumption, full
state dicts on rank 0."""

import pytest

import launcher
import worker_dcp

CHECKS = worker_dcp.checks


@pytest.fixture(scope="module", params=launcher.configs(slow_nprocs=None))
def run(request, tmp_path_factory):
    backend, device, nprocs = request.param
    tmp = tmp_path_factory.mktemp(f"dcp_{backend}_{device}")
    result = launcher.launch("worker_dcp.py", nprocs, backend, device, timeout=120,
                             extra_env={"DIST_TMPDIR": str(tmp)})
    return result, nprocs


@pytest.mark.parametrize("name", CHECKS.names())
def test_checkpoint(run, name):
    result, nprocs = run
    launcher.assert_check(result, CHECKS.get(name), nprocs)


def test_ranks_exit_cleanly(run):
    result, nprocs = run
    result.assert_clean_exit(nprocs)
