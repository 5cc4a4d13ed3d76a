"""Faults (worker_faults.py, 2 ranks, direct launcher): a collective that cannot complete
times out, a SIGKILLed or raising peer makes the others raise (never hang), mismatched
shapes/dtypes raise clearly, and destroy_process_group releases everything so that a new
group works in the same process.

Every fault must surface within the process group's timeout (5 s) plus SLACK_S, as an
exception the surviving ranks catch (``FAULT_RAISED`` lines), after which they still tear
down and exit cleanly.
"""

import re

import pytest

import launcher

PG_TIMEOUT_S = 5.0
SLACK_S = 15.0
WALL_S = 60.0

# Backends that get a fault wrong in a way that is not safe to run (hang, abort, silent
# corruption): the fault is a tpu_dist requirement and is skipped there, with the reason.
UNSAFE = {
    ("gloo", "mismatch_shape"): "gloo aborts the process on mismatched sizes "
                                "(gloo::EnforceNotMet from a transport thread: std::terminate)",
    ("gloo", "mismatch_dtype"): "gloo silently mixes the bytes of float32 and int32 inputs "
                                "(wrong results, no error)",
    ("gloo", "mismatch_after_a_burst"): "gloo aborts the process on mismatched sizes",
}
# Backends whose timeout error does not name the collective: the op-name assertion is a
# tpu_dist requirement.
TIMEOUT_ERROR_LACKS_OP = {
    "gloo": "gloo's timeout error is 'Timed out waiting 5000ms for recv operation to complete'",
}

PAIRS = [pytest.param(p, id=launcher.backend_id(p)) for p in launcher.BACKENDS]
_runs: dict = {}


def run_fault(pair, mode: str) -> launcher.Launch:
    """One launch per (backend, fault), shared by the tests that judge it."""
    backend, device = pair
    if (backend, mode) in UNSAFE:
        pytest.skip(f"tpu_dist-only: {UNSAFE[(backend, mode)]}")
    key = (backend, device, mode)
    if key not in _runs:
        extra = {"FAULT_PG_TIMEOUT_S": PG_TIMEOUT_S}
        if mode == "reinit":
            extra["DIST_SPARE_PORT"] = launcher.free_ports(1)[0]
        _runs[key] = launcher.launch("worker_faults.py", 2, backend, device, timeout=WALL_S,
                                     args=[mode], extra_env=extra, grace_after_failure=None)
    result = _runs[key]
    if result.timed_out:
        raise launcher.LaunchError("ranks still running at the wall timeout (a hang):\n" + result.report())
    return result


def fault_of(result: launcher.Launch, rank: int) -> tuple[float, str]:
    """(seconds, first line of the error) from rank's FAULT_RAISED line; fails if absent."""
    line = result.marker(rank, "FAULT_RAISED ")
    if line is None:
        raise AssertionError(f"rank {rank} did not raise (no FAULT_RAISED line):\n{result.report()}")
    _, seconds, *message = line.split(" ", 2)
    return float(seconds), (message[0] if message else "")


def assert_survivor_ok(result: launcher.Launch, rank: int) -> None:
    """The rank saw the fault in time, then tore down and exited cleanly."""
    seconds, message = fault_of(result, rank)
    assert seconds < PG_TIMEOUT_S + SLACK_S, f"rank {rank} raised after {seconds}s:\n{result.report()}"
    assert message.strip(), f"rank {rank} raised an error with an empty message:\n{result.report()}"
    assert result.marker(rank, "DESTROY_OK") is not None, \
        f"rank {rank}: destroy_process_group after the fault did not return:\n{result.report()}"
    assert result.ranks[rank].returncode == 0, f"rank {rank} exit:\n{result.report()}"


@pytest.mark.parametrize("pair", PAIRS)
def test_collective_timeout_raises(pair):
    """Only rank 0 calls all_reduce (rank 1 stays alive): it raises after the group's
    timeout, not before, not much after, with an error saying it timed out."""
    result = run_fault(pair, "timeout")
    assert_survivor_ok(result, 0)
    seconds, message = fault_of(result, 0)
    assert seconds >= PG_TIMEOUT_S * 0.8, f"raised after {seconds}s, before the {PG_TIMEOUT_S}s timeout: {message}"
    assert re.search(r"time[ds]? ?out|timeout", message, re.I), f"error does not say it timed out: {message}"
    assert result.marker(1, "PEER_WAITED_OK") is not None and result.ranks[1].returncode == 0, result.report()


@pytest.mark.parametrize("pair", PAIRS)
def test_collective_timeout_error_names_the_op(pair):
    if pair[0] in TIMEOUT_ERROR_LACKS_OP:
        pytest.skip(f"tpu_dist-only: {TIMEOUT_ERROR_LACKS_OP[pair[0]]}")
    result = run_fault(pair, "timeout")
    _, message = fault_of(result, 0)
    assert re.search(r"all_?reduce", message, re.I), f"timeout error does not name the collective: {message}"


@pytest.mark.parametrize("pair", PAIRS)
def test_sigkilled_rank_mid_training(pair):
    """Rank 1 is SIGKILLed at step 2 of DDP training; rank 0 raises instead of hanging."""
    result = run_fault(pair, "sigkill")
    assert result.ranks[1].returncode == -9, f"rank 1 was not SIGKILLed:\n{result.report()}"
    assert result.marker(0, "STEP_OK 1") is not None, f"training did not run before the kill:\n{result.report()}"
    assert_survivor_ok(result, 0)


@pytest.mark.parametrize("pair", PAIRS)
def test_raising_rank_does_not_hang_the_others(pair):
    result = run_fault(pair, "raise")
    assert result.ranks[1].returncode not in (0, None), result.report()
    assert "intentional failure on rank 1" in result.ranks[1].stderr, result.report()
    assert_survivor_ok(result, 0)


@pytest.mark.parametrize("mode", ["mismatch_shape", "mismatch_dtype", "mismatch_after_a_burst"])
@pytest.mark.parametrize("pair", PAIRS)
def test_mismatched_collective_raises(pair, mode):
    """all_reduce with different shapes (dtypes) on the two ranks: every rank raises a clear
    error (naming the size/shape/dtype mismatch on at least one rank), none hangs or returns
    a wrong result."""
    result = run_fault(pair, mode)
    messages = []
    for rank in range(2):
        assert_survivor_ok(result, rank)
        messages.append(fault_of(result, rank)[1])
    assert any(re.search(r"mismatch|shape|size|dtype|type", m, re.I) for m in messages), \
        f"no rank's error names the mismatch: {messages}"
    if mode == "mismatch_after_a_burst":
        for rank in range(2):
            assert result.marker(rank, "BURST_OK") is not None, result.report()
        if pair[0] == "tpu_dist":
            # Issued faster than they run, the burst's signatures went out in batches.
            counts = re.search(r"COLLECTIVES (\d+) EXCHANGES (\d+)", result.ranks[0].stdout)
            assert counts is not None, result.report()
            collectives, exchanges = map(int, counts.groups())
            assert exchanges < collectives, result.report()


@pytest.mark.parametrize("pair", PAIRS)
def test_destroy_releases_everything_and_reinit_works(pair):
    result = run_fault(pair, "reinit")
    for rank in range(2):
        assert result.marker(rank, "REINIT_OK") is not None, result.report()
        assert result.marker(rank, "USE_AFTER_DESTROY_RAISED") is not None, result.report()
    result.assert_ok()
