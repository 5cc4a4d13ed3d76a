"""The launcher itself: torchrun's environment, every rank's output, the wall timeout and
the grace period kill every rank and what it spawned."""

import json
import os
import time

import launcher


def _gone(pid: int) -> bool:
    """True once ``pid`` no longer runs (absent, or a zombie waiting to be reaped)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(")")[-1].split()[0] in ("Z", "X"):
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def test_environment_and_outputs(monkeypatch):
    monkeypatch.setenv("TORCH_TPU_MODE", "debug")  # inherited TORCH_TPU_* must not leak in
    result = launcher.launch("worker_selftest.py", 3, "gloo", "cpu", args=["ok"], timeout=30).assert_ok()
    ports = set()
    for rank, r in enumerate(result.ranks):
        env = json.loads(result.marker(rank, "ENV ")[4:])
        assert env["RANK"] == env["LOCAL_RANK"] == str(rank)
        assert env["WORLD_SIZE"] == env["LOCAL_WORLD_SIZE"] == "3"
        assert env["MASTER_ADDR"] == "127.0.0.1" and env["DIST_BACKEND"] == "gloo"
        assert env["DIST_DEVICE"] == "cpu" and env["OMP_NUM_THREADS"] == "1"
        assert env["TORCH_TPU_MODE"] is None
        assert f"stderr of rank {rank}" in r.stderr
        ports.add(env["MASTER_PORT"])
    assert len(ports) == 1


def test_wall_timeout_kills_every_rank_and_its_children():
    start = time.monotonic()
    result = launcher.launch("worker_selftest.py", 2, "gloo", "cpu", args=["hang"], timeout=3)
    assert time.monotonic() - start < 15
    assert result.timed_out and not result.ok
    assert all(r.killed and r.returncode is None for r in result.ranks)
    for rank in range(2):
        assert _gone(result.ranks[rank].pid), f"rank {rank} still running"
        child = int(result.marker(rank, "CHILD ").split()[1])
        assert _gone(child), f"rank {rank}'s child {child} still running"
    report = result.report()
    assert "TIMED OUT" in report and "stderr of rank 0" in report and "stderr of rank 1" in report
    try:
        result.assert_ok()
    except launcher.LaunchError as e:
        assert "CHILD" in str(e)
    else:
        raise AssertionError("assert_ok passed on a timed-out launch")


def test_grace_period_after_a_rank_fails():
    start = time.monotonic()
    result = launcher.launch("worker_selftest.py", 2, "gloo", "cpu", args=["one_fails"],
                             timeout=60, grace_after_failure=1.0)
    assert time.monotonic() - start < 20
    assert not result.timed_out
    assert result.ranks[1].returncode == 3 and result.ranks[0].killed
    assert _gone(result.ranks[0].pid)


def test_free_ports_are_distinct():
    ports = launcher.free_ports(8)
    assert len(set(ports)) == 8 and all(p > 0 for p in ports)
    assert os.environ.get("DIST_BACKEND") is None  # the launching process is not a rank
