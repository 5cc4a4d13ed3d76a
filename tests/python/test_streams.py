"""Streams and events (torch.tpu.Stream / Event, torch.Stream / torch.Event on tpu): the
current-stream API, ordering work across streams, timing and queries."""

import pytest
import torch

import torch_tpu
from conftest import assert_tpu_close


def slow_chain(x, steps=6):
    """Dependent 512x512 matmuls: tens of ms of chip work, far longer than the host takes to
    queue what follows, so a missing wait makes the next stream read an unfinished result
    (checked: these tests fail without their wait_stream / wait_event)."""
    weight = torch.linspace(-1, 1, x.shape[1] * x.shape[1], device=x.device)
    weight = weight.view(x.shape[1], x.shape[1]) / x.shape[1] ** 0.5
    for _ in range(steps):
        x = torch.tanh(x @ weight)
    return x


def inputs():
    cpu = torch.randn(512, 512, generator=torch.Generator().manual_seed(0))
    return cpu, cpu.tpu()


def test_stream_and_event_objects():
    side = torch.tpu.Stream()
    assert isinstance(side, torch.Stream)
    assert side.device == torch.device("tpu:0")
    assert side != torch.tpu.default_stream()
    current = torch.tpu.current_stream()
    assert current == torch.tpu.default_stream() == torch.accelerator.current_stream()
    assert torch.tpu.Stream(priority=-1) != torch.tpu.default_stream()
    event = torch.tpu.Event()
    assert isinstance(event, torch.Event)
    assert event.device.type == "tpu"


def test_stream_context_manager_sets_and_restores_the_current_stream():
    side = torch.tpu.Stream()
    with torch.tpu.stream(side):
        assert torch.tpu.current_stream() == side
        assert torch.accelerator.current_stream() == side
    assert torch.tpu.current_stream() == torch.tpu.default_stream()
    with torch.tpu.stream(None):  # a no-op, as torch.cuda.stream(None)
        assert torch.tpu.current_stream() == torch.tpu.default_stream()
    torch.tpu.set_stream(side)
    assert torch.tpu.current_stream() == side
    torch.tpu.set_stream(torch.tpu.default_stream())


def test_wait_stream_orders_work_across_streams():
    x_cpu, x_tpu = inputs()
    expected = slow_chain(x_cpu) * 2 + 1
    side = torch.tpu.Stream()
    produced = slow_chain(x_tpu)                 # default stream, still running
    side.wait_stream(torch.tpu.current_stream())
    with torch.tpu.stream(side):
        doubled = produced * 2                   # must see the finished chain
    torch.tpu.current_stream().wait_stream(side)
    result = doubled + 1                         # default stream again
    assert_tpu_close(result, expected, atol=1e-5, rtol=1e-5)


def test_events_order_work_across_streams():
    x_cpu, x_tpu = inputs()
    expected = slow_chain(x_cpu).sum(0) + 3
    side = torch.tpu.Stream()
    side.wait_stream(torch.tpu.current_stream())  # the inputs were copied on the default stream
    with torch.tpu.stream(side):
        produced = slow_chain(x_tpu)             # on the side stream
        done = torch.tpu.Event()
        done.record()                            # records on the current (side) stream
    torch.tpu.current_stream().wait_event(done)
    result = produced.sum(0) + 3                 # default stream, after the event
    assert_tpu_close(result, expected, atol=1e-4, rtol=1e-5)

    with torch.tpu.stream(side):
        again = slow_chain(x_tpu)
    marker = side.record_event()
    marker.wait(torch.tpu.current_stream())
    assert_tpu_close(again.sum(0) + 3, expected, atol=1e-4, rtol=1e-5)


def test_stream_and_event_synchronize():
    x_cpu, x_tpu = inputs()
    side = torch.tpu.Stream()
    side.wait_stream(torch.tpu.current_stream())  # the inputs were copied on the default stream
    with torch.tpu.stream(side):
        produced = slow_chain(x_tpu)
    side.synchronize()
    assert side.query()
    assert torch_tpu.metrics()["syncs"]["stream_synchronize"] == 1
    event = torch.tpu.Event()
    with torch.tpu.stream(side):
        more = produced + 1
    event.record(side)
    event.synchronize()
    assert event.query()
    assert_tpu_close(more, slow_chain(x_cpu) + 1, atol=1e-5, rtol=1e-5)


def test_query_is_true_after_device_synchronize():
    _, x_tpu = inputs()
    side = torch.tpu.Stream()
    side.wait_stream(torch.tpu.current_stream())  # the inputs were copied on the default stream
    event = torch.tpu.Event()
    with torch.tpu.stream(side):
        slow_chain(x_tpu)
        event.record()
    torch.tpu.synchronize()
    assert event.query()
    assert side.query()
    assert torch.tpu.current_stream().query()
    assert torch.tpu.Event().query()  # never recorded: nothing to wait for


def test_event_elapsed_time():
    _, x_tpu = inputs()
    start = torch.tpu.Event(enable_timing=True)
    end = torch.tpu.Event(enable_timing=True)
    start.record()
    slow_chain(x_tpu)
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 0
    untimed = torch.tpu.Event()
    untimed.record()
    untimed.synchronize()
    with pytest.raises(ValueError, match="enable_timing=True"):
        start.elapsed_time(untimed)


def test_record_stream():
    side = torch.tpu.Stream()
    x = torch.ones(4, device="tpu")
    side.wait_stream(torch.tpu.current_stream())  # x is filled on the default stream (as on CUDA)
    with torch.tpu.stream(side):
        y = x * 2
    x.record_stream(side)
    y.record_stream(torch.tpu.current_stream())
    torch.tpu.current_stream().wait_stream(side)
    assert_tpu_close(y, torch.full((4,), 2.0))


@pytest.mark.usefixtures("no_stray_frees")
def test_freed_block_is_reused_by_its_own_stream_at_once():
    x = torch.empty(1024, device="tpu")
    address = x.data_ptr()
    del x  # nothing queued on another stream uses it
    assert torch.empty(1024, device="tpu").data_ptr() == address


@pytest.mark.usefixtures("no_stray_frees")
def test_record_stream_defers_reuse_until_that_stream_has_run():
    side = torch.tpu.Stream()
    x = torch.ones(512, 512, device="tpu")
    address = x.data_ptr()
    side.wait_stream(torch.tpu.current_stream())
    with torch.tpu.stream(side):
        y = slow_chain(x)  # queued on the side stream, reads x later
    x.record_stream(side)
    del x
    # The default stream must not get x's block while the side stream may still read it.
    early = torch.empty(512, 512, device="tpu")
    assert early.data_ptr() != address
    side.synchronize()
    # Now the default stream may reuse it. Blocks of the same size that earlier tests left in
    # partly used segments may be handed out first, so take a few.
    taken = [torch.empty(512, 512, device="tpu") for _ in range(16)]
    assert address in [t.data_ptr() for t in taken]
    assert_tpu_close(y, slow_chain(torch.ones(512, 512)))


def test_record_stream_rejects_a_stream_of_another_device_type():
    x = torch.ones(4, device="tpu")
    with pytest.raises(RuntimeError, match="expected a tpu stream"):
        x.record_stream(torch.Stream("cpu"))


# Only the main thread may own an OpenMP team: a second one (on the stream worker or the
# autograd thread) makes libgomp throttle every team, and CPU eager then runs ~2x slower for
# the rest of the process. Threads are counted, not timed: a second team shows up as an extra
# OpenMP helper thread.
ONE_OPENMP_TEAM_SCRIPT = """
import os, torch, torch_tpu
torch.set_num_threads(2)
a = torch.randn(256, 256)
for _ in range(3):
    a @ a                                   # the main thread's team (one helper thread)
threads_before = len(os.listdir("/proc/self/task"))
w = torch.randn(256, 256, device="tpu", requires_grad=True)
for mode in ("strict", "debug", "fused"):
    torch_tpu.set_mode(mode)
    for _ in range(3):
        # worker, host takeover, autograd thread; in fused mode the worker also runs fused
        # kernels, whose parallel loops are compiled into torch_tpu, not libtorch
        ((w @ w).relu() * 2 + 1).sum().backward()
        torch.tpu.synchronize()
        (w * 3 + 1).tanh().sum().item()     # flushed while the worker may still be busy
    torch.tpu.synchronize()
threads_after = len(os.listdir("/proc/self/task"))
print(threads_after - threads_before)
"""


def test_kernels_never_start_a_second_openmp_team():
    from conftest import run_python_ok
    added = int(run_python_ok(ONE_OPENMP_TEAM_SCRIPT).strip())
    # The stream worker and the autograd engine's device thread; no OpenMP helpers.
    assert added <= 2, f"{added} threads appeared: a second OpenMP team was started"


# After a long takeover in Strict mode the host frees its OpenMP team, so its helper does not
# spin on the core the worker needs while the host issues the next ops (engine/host_team.cpp).
# Debug mode has no worker running alongside the host: its team stays. With the team's size
# fixed: on a machine other programs keep busy, the governor (TORCH_TPU_HOST_TEAM=auto) would
# rightly shrink and free Debug's team too (test_host_team.py).
RELEASE_AFTER_TAKEOVER_SCRIPT = """
import os, time, torch, torch_tpu
torch.set_num_threads(2)

def threads():
    return len(os.listdir("/proc/self/task"))

def long_takeover():
    x = torch.randn(512, 512, device="tpu")
    w = torch.randn(512, 512, device="tpu") / 512 ** 0.5
    for _ in range(12):                    # ~10 ms each on one core: the host takes over
        x = torch.tanh(x @ w)
    x.sum().item()

a = torch.randn(512, 512)
for mode in ("strict", "debug"):
    torch_tpu.set_mode(mode)
    long_takeover()                        # starts the stream worker
    a @ a                                  # the main thread's team, one helper thread
    with_team = threads()
    long_takeover()
    deadline = time.monotonic() + 1        # a freed helper exits on its own schedule
    while threads() >= with_team and time.monotonic() < deadline:
        time.sleep(0.01)
    print(mode, with_team - threads())
"""


def test_strict_host_frees_its_openmp_team_after_a_long_takeover():
    from conftest import run_python_ok
    out = run_python_ok(RELEASE_AFTER_TAKEOVER_SCRIPT, env={"TORCH_TPU_HOST_TEAM": "fixed"})
    released = dict(line.split() for line in out.split("\n") if line)
    assert released == {"strict": "1", "debug": "0"}, released
