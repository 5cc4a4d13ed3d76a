"""DTensor redistributions and tensor parallelism (ColwiseParallel / RowwiseParallel /
SequenceParallel via parallelize_module) on a transformer block (worker_tp.py) match the
single-process block: outputs, input and parameter gradients, a step of SGD."""

import pytest

import launcher
import worker_tp

CHECKS = worker_tp.checks


@pytest.fixture(scope="module", params=launcher.configs(slow_nprocs=None))
def run(request):
    backend, device, nprocs = request.param
    return launcher.launch("worker_tp.py", nprocs, backend, device, timeout=120), nprocs


@pytest.mark.parametrize("name", CHECKS.names())
def test_tensor_parallel(run, name):
    result, nprocs = run
    launcher.assert_check(result, CHECKS.get(name), nprocs)


def test_ranks_exit_cleanly(run):
    result, nprocs = run
    result.assert_clean_exit(nprocs)
