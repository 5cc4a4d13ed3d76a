import io
import threading

import pytest
import torch

import torch_tpu
from conftest import assert_same, run_python


def test_memory_stats_track_allocations():
    torch.tpu.synchronize()
    before = torch.tpu.memory_allocated()
    x = torch.empty(1 << 20, device="tpu")  # 4 MiB
    assert torch.tpu.memory_allocated() >= before + 4 * 2**20
    assert torch.accelerator.memory_allocated() == torch.tpu.memory_allocated()
    assert torch.tpu.max_memory_allocated() >= torch.tpu.memory_allocated()
    stats = torch.tpu.memory_stats()
    assert stats["allocated_bytes.all.current"] == torch.tpu.memory_allocated()
    del x
    torch.tpu.synchronize()
    assert torch.tpu.memory_allocated() == before
    reserved = torch.tpu.memory_reserved()
    for _ in range(10):
        torch.empty(1 << 20, device="tpu")
    assert torch.tpu.memory_reserved() == reserved  # cached blocks are reused
    torch.tpu.reset_peak_memory_stats()
    assert torch.tpu.max_memory_allocated() == torch.tpu.memory_allocated()
    torch.tpu.empty_cache()
    assert torch.tpu.memory_reserved() <= reserved


def test_out_of_memory_is_a_clear_error_and_recoverable():
    code = """
import torch
try:
    torch.empty(128 * 2**20, dtype=torch.uint8, device="tpu")
except torch.OutOfMemoryError as e:
    print("OOM:", e)
kept = [torch.empty(16 * 2**20, dtype=torch.uint8, device="tpu") for _ in range(3)]
del kept
print(torch.ones(1000, device="tpu").sum().item())
"""
    result = run_python(code, TORCH_TPU_HBM_BYTES="64M")
    assert result.returncode == 0, result.stderr
    assert "OOM:" in result.stdout and "134217728 bytes" in result.stdout
    assert "capacity" in result.stdout and "free" in result.stdout
    assert result.stdout.strip().endswith("1000.0")


def test_modes_api_and_environment():
    assert torch_tpu.get_mode() == "strict"
    with torch_tpu.mode("debug"):
        assert torch_tpu.get_mode() == "debug"
    assert torch_tpu.get_mode() == "strict"
    with pytest.raises(ValueError):
        torch_tpu.set_mode("nonsense")
    with pytest.raises(NotImplementedError, match="not supported on tpu yet"):
        torch_tpu.set_mode("fused")
    for env in ({"TORCH_TPU_MODE": "debug"}, {"TPU_LAUNCH_BLOCKING": "1"}):
        result = run_python("import torch_tpu; print(torch_tpu.get_mode())", **env)
        assert result.stdout.strip() == "debug", result.stderr


def test_async_error_surfaces_at_next_sync_naming_the_op():
    x = torch.randn(4, 3, device="tpu")
    bad = torch.tensor([0, 9], device="tpu")
    y = torch.index_select(x, 0, bad)  # returns at once; fails on the chip
    with pytest.raises(RuntimeError, match="index_select"):
        torch.tpu.synchronize()
    assert_same(x * 2, x.cpu() * 2)  # the device keeps working


def test_debug_mode_raises_at_the_op_and_checks_nans():
    x = torch.randn(4, 3, device="tpu")
    with torch_tpu.mode("debug"):
        with pytest.raises(RuntimeError, match="index_select"):
            torch.index_select(x, 0, torch.tensor([7], device="tpu"))
        torch_tpu.set_check_nans(True)
        with pytest.raises(RuntimeError, match="aten::log"):
            torch.log(-torch.ones(3, device="tpu"))


def test_metrics_count_ops_and_syncs():
    x = torch.ones(3, device="tpu")
    (x + 1).sum().item()
    metrics = torch_tpu.metrics()
    assert metrics["ops_launched"] >= 3
    assert metrics["syncs"].get("item", 0) >= 1


def test_mixing_devices_raises_like_cuda():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.randn(3, device="tpu") + torch.randn(3)
    assert_same(torch.ones(3, device="tpu") + torch.tensor(2.0), torch.full((3,), 3.0))


def test_unsupported_dtype_is_a_clear_error():
    with pytest.raises(TypeError, match="not supported on tpu yet: dtype"):
        torch.empty(2, dtype=torch.complex32, device="tpu")


def test_rng_reproducible_across_runs_and_modes():
    torch.manual_seed(7)
    strict = torch.randn(100, device="tpu").cpu()
    with torch_tpu.mode("debug"):
        torch.manual_seed(7)
        debug = torch.randn(100, device="tpu").cpu()
    assert torch.equal(strict, debug)
    state = torch.tpu.get_rng_state()
    first = torch.rand(10, device="tpu").cpu()
    torch.tpu.set_rng_state(state)
    assert torch.equal(torch.rand(10, device="tpu").cpu(), first)
    generator = torch.Generator(device="tpu").manual_seed(1)
    assert torch.randn(3, device="tpu", generator=generator).device.type == "tpu"


def test_save_and_load():
    model = torch.nn.Linear(3, 2).tpu()
    buffer = io.BytesIO()
    torch.save({"state": model.state_dict(), "t": torch.arange(4.0, device="tpu")}, buffer)
    for location, device_type in ((None, "tpu"), ("cpu", "cpu"), ("tpu", "tpu")):
        buffer.seek(0)
        loaded = torch.load(buffer, map_location=location)
        assert loaded["t"].device.type == device_type
        assert loaded["t"].cpu().tolist() == [0.0, 1.0, 2.0, 3.0]
        assert torch.equal(loaded["state"]["weight"].cpu(), model.weight.detach().cpu())


def test_pinned_memory_and_non_blocking_copies():
    pinned = torch.arange(6.0).pin_memory()
    assert pinned.is_pinned()
    on_chip = pinned.to("tpu", non_blocking=True)
    back = torch.empty(6).pin_memory()
    back.copy_(on_chip * 2, non_blocking=True)
    torch.tpu.synchronize()
    assert back.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    loader = torch.utils.data.DataLoader(torch.arange(8.0), batch_size=4, pin_memory=True)
    assert all(batch.is_pinned() for batch in loader)


def test_streams_and_events_order_work():
    side = torch.tpu.Stream()
    x = torch.ones(1000, device="tpu")
    start, end = torch.tpu.Event(enable_timing=True), torch.tpu.Event(enable_timing=True)
    start.record()
    side.wait_stream(torch.tpu.current_stream())
    with torch.tpu.stream(side):
        y = x * 3
    end.record(side)
    torch.tpu.current_stream().wait_event(end)
    assert (y + 1).sum().item() == 4000
    end.synchronize()
    assert end.query() and start.elapsed_time(end) >= 0


def test_two_threads_share_the_device():
    errors = []

    def work(seed):
        try:
            gen = torch.Generator().manual_seed(seed)
            a = torch.randn(16, 16, generator=gen)
            t = a.tpu()
            for _ in range(200):
                t = t * 0.5 + 1
                a = a * 0.5 + 1
            assert_same(t @ t, a @ a, atol=1e-4, rtol=1e-4)
        except Exception as error:  # noqa: BLE001 (reported below)
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
