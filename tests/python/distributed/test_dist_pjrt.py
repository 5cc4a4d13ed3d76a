"""tpu_dist on the PJRT runtime (TORCH_TPU_RUNTIME=pjrt, the CPU plugin): the collectives,
DDP, FSDP2 and tensor-parallel workers of the host-runtime tests, 2 ranks each, with the same
checks. Each rank's tensors live in PJRT buffers on its own tpu device; collectives copy what
they touch to host memory for the transport inside their queued task and back
(csrc/distributed/transport_views.h)."""

import pytest

import launcher
import worker_collectives
import worker_ddp
import worker_fsdp
import worker_tp

PJRT = {"TORCH_TPU_RUNTIME": "pjrt", "TORCH_TPU_PJRT_PLUGIN": "cpu"}
RANKS = 2
# (worker, its checks, launched through torchrun, wall timeout: compiles are cold in CI)
WORKERS = {
    "collectives": ("worker_collectives.py", worker_collectives.checks, False, 300),
    "ddp": ("worker_ddp.py", worker_ddp.checks, True, 300),
    "fsdp": ("worker_fsdp.py", worker_fsdp.checks, False, 300),
    "tp": ("worker_tp.py", worker_tp.checks, False, 300),
}
pytestmark = pytest.mark.skipif(("tpu_dist", "tpu") not in launcher.BACKENDS,
                                reason="tpu_dist:tpu is not among TORCH_TPU_DIST_BACKENDS")

_launches = {}


def launched(worker: str):
    """One launch per worker for all of its checks."""
    if worker not in _launches:
        script, _, torchrun, timeout = WORKERS[worker]
        launch = launcher.launch_torchrun if torchrun else launcher.launch
        _launches[worker] = launch(script, RANKS, "tpu_dist", "tpu", timeout=timeout,
                                   extra_env=PJRT)
    return _launches[worker]


@pytest.mark.parametrize("worker,name", [(worker, name) for worker, (_, checks, _, _) in
                                         WORKERS.items() for name in checks.names()])
def test_check_on_pjrt(worker, name):
    launcher.assert_check(launched(worker), WORKERS[worker][1].get(name), RANKS)


@pytest.mark.parametrize("worker", list(WORKERS))
def test_ranks_exit_cleanly_on_pjrt(worker):
    launched(worker).assert_clean_exit(RANKS)
