"""Chip memory as PyTorch reports it (torch.tpu.* and torch.accelerator.memory_*): CUDA-like
caching-allocator statistics, block reuse, empty_cache, and out-of-memory errors."""

import json

import pytest
import torch

from conftest import run_python_ok

MIB = 2**20

# Every test here compares allocator readings: no garbage collection may free memory between.
pytestmark = pytest.mark.usefixtures("no_stray_frees")


def settled_allocated() -> int:
    # A tensor freed by the host stays allocated while queued ops still read it.
    torch.tpu.synchronize()
    return torch.tpu.memory_allocated()


def test_tpu_and_accelerator_report_the_same_numbers():
    keep = torch.empty(MIB, device="tpu")  # noqa: F841 (keeps something allocated)
    torch.tpu.synchronize()
    pairs = [
        (torch.tpu.memory_allocated, torch.accelerator.memory_allocated),
        (torch.tpu.max_memory_allocated, torch.accelerator.max_memory_allocated),
        (torch.tpu.memory_reserved, torch.accelerator.memory_reserved),
        (torch.tpu.max_memory_reserved, torch.accelerator.max_memory_reserved),
    ]
    for via_tpu, via_accelerator in pairs:
        assert via_tpu() == via_accelerator() == via_tpu(0) == via_accelerator(0) > 0
    stats = torch.tpu.memory_stats()
    assert stats == torch.accelerator.memory_stats()
    assert stats["allocated_bytes.all.current"] == torch.tpu.memory_allocated()
    assert stats["allocated_bytes.all.peak"] == torch.tpu.max_memory_allocated()
    assert stats["reserved_bytes.all.current"] == torch.tpu.memory_reserved()
    assert stats["reserved_bytes.all.peak"] == torch.tpu.max_memory_reserved()


def test_memory_stats_keys():
    stats = torch.tpu.memory_stats()
    for key in ["allocated_bytes.all.current", "allocated_bytes.all.peak",
                "allocated_bytes.all.allocated", "allocated_bytes.all.freed",
                "allocated_bytes.small_pool.current", "allocated_bytes.large_pool.current",
                "reserved_bytes.all.current", "active_bytes.all.current",
                "requested_bytes.all.current", "allocation.all.current", "segment.all.current",
                "num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free"]:
        assert key in stats, key


def test_allocating_raises_and_freeing_lowers_memory_allocated():
    before = settled_allocated()
    x = torch.empty(4 * MIB, dtype=torch.uint8, device="tpu")
    assert torch.tpu.memory_allocated() >= before + 4 * MIB
    assert torch.accelerator.memory_allocated() >= before + 4 * MIB
    y = x + 1  # an op output is chip memory too
    assert torch.tpu.memory_allocated() >= before + 8 * MIB
    del x, y
    assert settled_allocated() == before


def test_peak_stats_and_reset():
    torch.tpu.reset_peak_memory_stats()
    before = settled_allocated()
    assert torch.tpu.max_memory_allocated() == before
    x = torch.empty(8 * MIB, dtype=torch.uint8, device="tpu")
    del x
    assert settled_allocated() == before
    assert torch.tpu.max_memory_allocated() >= before + 8 * MIB
    assert torch.tpu.max_memory_reserved() >= torch.tpu.memory_reserved()
    torch.tpu.reset_peak_memory_stats()
    assert torch.tpu.max_memory_allocated() == before
    x = torch.empty(8 * MIB, dtype=torch.uint8, device="tpu")
    del x
    torch.accelerator.reset_peak_memory_stats()
    assert torch.accelerator.max_memory_allocated() == settled_allocated()


def test_same_size_allocations_reuse_cached_blocks():
    x = torch.empty(3 * MIB, dtype=torch.uint8, device="tpu")
    del x
    torch.tpu.synchronize()
    reserved = torch.tpu.memory_reserved()
    device_allocs = torch.tpu.memory_stats()["num_device_alloc"]
    for _ in range(20):
        x = torch.empty(3 * MIB, dtype=torch.uint8, device="tpu")
        del x
    assert torch.tpu.memory_reserved() == reserved
    assert torch.tpu.memory_stats()["num_device_alloc"] == device_allocs


def busy_chip():
    """Queues ~tens of ms of work, so the host runs ahead of the chip for a while."""
    a = torch.randn(256, 256, device="tpu") / 16
    for _ in range(30):
        a = a @ a
    return a


def test_blocks_are_reused_in_stream_order_while_the_host_runs_ahead():
    x = torch.empty(3 * MIB, dtype=torch.uint8, device="tpu")
    del x
    busy_chip()  # once, so its own blocks are cached before the baseline
    torch.tpu.synchronize()
    reserved = torch.tpu.memory_reserved()
    pending = busy_chip()
    for _ in range(10):
        x = torch.empty(3 * MIB, dtype=torch.uint8, device="tpu")
        x.fill_(1)  # queued behind the matmuls
        del x
    grown = torch.tpu.memory_reserved() - reserved
    del pending
    torch.tpu.synchronize()
    assert grown == 0, f"memory_reserved grew by {grown // MIB} MiB"


@pytest.mark.parametrize("empty_cache", [torch.tpu.empty_cache, torch.accelerator.empty_cache],
                         ids=["tpu", "accelerator"])
def test_empty_cache_returns_free_segments(empty_cache):
    empty_cache()
    baseline = torch.tpu.memory_reserved()
    x = torch.empty(16 * MIB, dtype=torch.uint8, device="tpu")
    del x
    torch.tpu.synchronize()
    assert torch.tpu.memory_reserved() >= baseline + 16 * MIB  # cached, not returned
    empty_cache()
    assert torch.tpu.memory_reserved() == baseline


def test_mem_get_info():
    free, total = torch.tpu.mem_get_info()
    assert total == torch.tpu.get_device_properties(0).total_memory
    assert free == total - torch.tpu.memory_reserved()
    assert torch.accelerator.get_memory_info() == (free, total)


OOM_SCRIPT = """
import json, torch
result = {}
try:
    torch.empty(128 * 2**20, dtype=torch.uint8, device="tpu")
except torch.OutOfMemoryError as error:
    result["error"] = str(error)
    result["is_runtime_error"] = isinstance(error, RuntimeError)
result["num_ooms"] = torch.tpu.memory_stats()["num_ooms"]
x = torch.arange(1000.0, device="tpu")
result["after"] = (x * 2).sum().item()
print(json.dumps(result))
"""


@pytest.fixture(scope="module")
def oom_result():
    """OOM_SCRIPT's findings on a 64 MiB chip (one interpreter for the tests that read them)."""
    return json.loads(run_python_ok(OOM_SCRIPT, env={"TORCH_TPU_HBM_BYTES": "64M"}))


def test_out_of_memory_names_the_sizes_and_the_chip_keeps_working(oom_result):
    result = oom_result
    assert "error" in result, "allocating 128 MiB on a 64 MiB chip did not raise OutOfMemoryError"
    assert result["is_runtime_error"]
    message = result["error"]
    assert "134217728 bytes" in message  # requested
    assert "64.00 MiB free" in message   # free
    assert "64.00 MiB capacity" in message
    assert "tpu:0" in message
    assert result["num_ooms"] >= 1
    assert result["after"] == 2 * sum(range(1000))


FILL_SCRIPT = """
import json, torch
MIB = 2**20
result = {}
kept = [torch.full((8 * MIB,), i, dtype=torch.uint8, device="tpu") for i in range(6)]  # 48 MiB
try:
    torch.empty(32 * MIB, dtype=torch.uint8, device="tpu")
except torch.OutOfMemoryError as error:
    result["error"] = str(error)
result["kept_intact"] = [t[0].item() for t in kept] == list(range(6))
del kept
big = torch.ones(48 * MIB, dtype=torch.uint8, device="tpu")  # fits once the others are freed
result["big_sum"] = big.sum().item()
result["compute"] = (torch.arange(10.0, device="tpu") ** 2).tolist()
print(json.dumps(result))
"""


def test_out_of_memory_after_filling_then_freeing_recovers():
    result = json.loads(run_python_ok(FILL_SCRIPT, env={"TORCH_TPU_HBM_BYTES": "64M"}))
    assert "33554432 bytes" in result["error"]
    assert "64.00 MiB capacity" in result["error"]
    assert result["kept_intact"]
    assert result["big_sum"] == 48 * MIB
    assert result["compute"] == [float(i * i) for i in range(10)]


def test_one_out_of_memory_error_counts_once(oom_result):
    assert oom_result["num_ooms"] == 1
